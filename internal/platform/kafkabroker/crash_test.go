//go:build unix

package kafkabroker_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
)

// childDirEnv makes the test binary act as a broker process that the test
// can kill: only a real SIGKILL shows what survives a crash, since Close
// writes a clean snapshot that a crash never gets to write.
const childDirEnv = "SWITCHBACK_TEST_KAFKABROKER_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		b, err := kafkabroker.Start(context.Background(), kafkabroker.Options{DataDir: dir})
		if err != nil {
			os.Stderr.WriteString("start: " + err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString(b.Addr() + "\n")
		select {} // until killed
	}
	os.Exit(m.Run())
}

func TestBroker_AcknowledgedRecordsAndCommittedOffsetsSurviveAKill(t *testing.T) {
	dir := t.TempDir()
	const topic, group, total, committed = "crash", "crash-group", 20, 7

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("read child broker address: %v", err)
	}
	addr := strings.TrimSpace(line)

	createTopic(t, addr, topic, 1)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: &kafka.Transport{}}
	for i := range total {
		if err := w.WriteMessages(t.Context(), kafka.Message{Value: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	_ = w.Close()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{addr}, GroupID: group, Topic: topic,
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond,
	})
	for range committed {
		m, err := r.FetchMessage(t.Context())
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if err := r.CommitMessages(t.Context(), m); err != nil { // synchronous
			t.Fatalf("commit: %v", err)
		}
	}
	_ = r.Close()

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true

	b := start(t, kafkabroker.Options{DataDir: dir})
	if got := committedOffset(t, b.Addr(), group, topic, 0); got != committed {
		t.Errorf("committed offset after kill = %d, want %d", got, committed)
	}
	pr := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: topic, MaxWait: 100 * time.Millisecond})
	defer pr.Close()
	for i := range total {
		m, err := pr.FetchMessage(t.Context())
		if err != nil {
			t.Fatalf("read after kill: %v", err)
		}
		if string(m.Value) != strconv.Itoa(i) {
			t.Fatalf("record %d after kill = %q", i, m.Value)
		}
	}
}

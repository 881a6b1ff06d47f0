package kafkabroker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
)

const (
	protectedTopic = "guarded.principals"
	freeTopic      = "guarded.free"
	helperEnv      = "KAFKABROKER_GUARD_HELPER_ADDR"
)

// helperResult is what the helper process reports.
type helperResult struct {
	Protected, Free, ProtectedNoAck string // "" ok, else the error
}

// TestGuardHelper is not a test: run by the guard tests as another
// process (the test binary again), it writes to both topics of the broker
// at $KAFKABROKER_GUARD_HELPER_ADDR and prints what happened.
func TestGuardHelper(t *testing.T) {
	addr := os.Getenv(helperEnv)
	if addr == "" {
		t.Skip("the guard tests' other process")
	}
	var r helperResult
	write := func(topic string, acks kafka.RequiredAcks) string {
		w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: acks, MaxAttempts: 1, BatchTimeout: time.Millisecond,
			WriteTimeout: 5 * time.Second}
		defer w.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("admin-from-elsewhere"), Value: []byte(`{"role":"admin"}`)}); err != nil {
			return err.Error()
		}
		return ""
	}
	r.Protected = write(protectedTopic, kafka.RequireAll)
	r.Free = write(freeTopic, kafka.RequireAll)
	r.ProtectedNoAck = write(protectedTopic, kafka.RequireNone)
	b, _ := json.Marshal(r)
	fmt.Println("RESULT " + string(b))
}

// runHelper runs TestGuardHelper as another process against addr.
func runHelper(t *testing.T, addr string) helperResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "RESULT "); ok {
			var r helperResult
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("helper printed no result:\n%s", out)
	return helperResult{}
}

func produce(t *testing.T, addr, topic, key string) error {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: kafka.RequireAll, MaxAttempts: 1, BatchTimeout: time.Millisecond}
	defer w.Close()
	return w.WriteMessages(t.Context(), kafka.Message{Key: []byte(key), Value: []byte(`{}`)})
}

func keysOf(t *testing.T, addr, topic string) []string {
	t.Helper()
	conn, err := kafka.DialLeader(t.Context(), "tcp", addr, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	last, err := conn.ReadLastOffset()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for off := int64(0); off < last; off++ {
		if _, err := conn.Seek(off, kafka.SeekAbsolute); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		m, err := conn.ReadMessage(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, string(m.Key))
	}
	return keys
}

// TestGuard_OnlyTheProcessItselfWritesAProtectedTopic: issue 18, finding 8.
// With TrustProcess (switchback run), this process writes the protected
// topic; another process (the test binary run again, same user) is
// refused with TOPIC_AUTHORIZATION_FAILED at once, its acks=0 write is
// dropped, and it still writes the other topics. Nothing of it lands on
// the protected topic.
func TestGuard_OnlyTheProcessItselfWritesAProtectedTopic(t *testing.T) {
	b := start(t, kafkabroker.Options{Protected: []string{protectedTopic}, Trust: kafkabroker.TrustProcess})
	createTopic(t, b.Addr(), protectedTopic, 1)
	createTopic(t, b.Addr(), freeTopic, 1)
	if err := produce(t, b.Addr(), protectedTopic, "from-the-process"); err != nil {
		t.Fatalf("the process itself: %v", err)
	}
	r := runHelper(t, b.Addr())
	t.Logf("the other process: %+v", r)
	if !strings.Contains(r.Protected, "Topic Authorization Failed") {
		t.Errorf("another process writing the protected topic: %q, want TOPIC_AUTHORIZATION_FAILED", r.Protected)
	}
	if r.Free != "" {
		t.Errorf("another process writing another topic: %q, want ok", r.Free)
	}
	if got := keysOf(t, b.Addr(), protectedTopic); len(got) != 1 || got[0] != "from-the-process" {
		t.Fatalf("the protected topic holds %v, want only the process's record", got)
	}
	if got := keysOf(t, b.Addr(), freeTopic); len(got) != 1 {
		t.Fatalf("the free topic holds %v, want the other process's record", got)
	}
	// The refusal left the connection usable: the process writes again.
	if err := produce(t, b.Addr(), protectedTopic, "again"); err != nil {
		t.Fatalf("the process after the refusal: %v", err)
	}
}

// TestGuard_TrustUserAdmitsProcessesOfThisUser: switchback broker runs the
// tiers as other processes of the same user.
func TestGuard_TrustUserAdmitsProcessesOfThisUser(t *testing.T) {
	b := start(t, kafkabroker.Options{Protected: []string{protectedTopic}, Trust: kafkabroker.TrustUser})
	createTopic(t, b.Addr(), protectedTopic, 1)
	createTopic(t, b.Addr(), freeTopic, 1)
	r := runHelper(t, b.Addr())
	if r.Protected != "" || r.Free != "" {
		t.Fatalf("a process of this user: %+v, want both written", r)
	}
}

// TestStart_RefusesAnyAddressButLoopback: development only.
func TestStart_RefusesAnyAddressButLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.10:0", "example.com:0"} {
		b, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: addr})
		if err == nil {
			b.Close()
			t.Fatalf("Start(%s) listened", addr)
		}
		if !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Start(%s): %v, want the loopback refusal", addr, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "127.0.0.2", "::1", "localhost", "LOCALHOST."} {
		if !kafkabroker.Loopback(host) {
			t.Errorf("Loopback(%s) = false", host)
		}
	}
}

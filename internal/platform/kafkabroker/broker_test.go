package kafkabroker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

func start(t *testing.T, opts kafkabroker.Options) *kafkabroker.Broker {
	t.Helper()
	b, err := kafkabroker.Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close) // Close is idempotent: tests may close earlier
	return b
}

func createTopic(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr}
	resp, err := c.CreateTopics(t.Context(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: partitions, ReplicationFactor: -1},
	}})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := resp.Errors[topic]; err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// topicExists asks the broker directly (a fresh transport: kafka-go serves
// metadata from a cache).
func topicExists(t *testing.T, addr, topic string) bool {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr}
	md, err := c.Metadata(t.Context(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	for _, tp := range md.Topics {
		if tp.Name == topic && tp.Error == nil {
			return true
		}
	}
	return false
}

func committedOffset(t *testing.T, addr, group, topic string, partition int) int64 {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr}
	resp, err := c.OffsetFetch(t.Context(), &kafka.OffsetFetchRequest{
		GroupID: group,
		Topics:  map[string][]int{topic: {partition}},
	})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Partition == partition {
			if p.Error != nil {
				t.Fatalf("offset fetch partition %d: %v", partition, p.Error)
			}
			return p.CommittedOffset
		}
	}
	t.Fatalf("offset fetch: partition %d missing", partition)
	return 0
}

func TestBroker_DataAndGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	const topic, group, total, committed = "survive", "survive-group", 10, 4

	b := start(t, kafkabroker.Options{DataDir: dir})
	createTopic(t, b.Addr(), topic, 1)

	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: &kafka.Transport{}}
	msgs := make([]kafka.Message, total)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte("k"), Value: []byte(strconv.Itoa(i))}
	}
	if err := w.WriteMessages(t.Context(), msgs...); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close writer: %v", err)
	}

	// Commit through a real group member, as the consumers do. A short
	// MaxWait because Reader.Close waits for the fetch in flight, which
	// kafka-go's default (10s) keeps open at the end of the log.
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{b.Addr()}, GroupID: group, Topic: topic,
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond,
	})
	for range committed {
		m, err := r.FetchMessage(t.Context())
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if err := r.CommitMessages(t.Context(), m); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("close reader: %v", err)
	}
	b.Close()

	// A new port on purpose: clients must not depend on the old address.
	b2 := start(t, kafkabroker.Options{DataDir: dir})
	if got := committedOffset(t, b2.Addr(), group, topic, 0); got != committed {
		t.Errorf("committed offset after restart = %d, want %d", got, committed)
	}
	pr := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b2.Addr()}, Topic: topic, MaxWait: 100 * time.Millisecond})
	defer pr.Close()
	for i := range total {
		m, err := pr.FetchMessage(t.Context())
		if err != nil {
			t.Fatalf("read after restart: %v", err)
		}
		if m.Offset != int64(i) || string(m.Value) != strconv.Itoa(i) {
			t.Fatalf("record %d after restart: offset %d value %q", i, m.Offset, m.Value)
		}
	}
}

func TestStart_ListensOnTheGivenAddress(t *testing.T) {
	free := testharness.FreeAddr(t)
	tests := []struct {
		name string
		addr string
		want func(string) error
	}{
		{"random port on loopback", "127.0.0.1:0", func(got string) error {
			host, port, _ := net.SplitHostPort(got)
			if host != "127.0.0.1" || port == "0" {
				return fmt.Errorf("got %s, want 127.0.0.1 and a real port", got)
			}
			return nil
		}},
		{"fixed port", free, func(got string) error {
			if got != free {
				return fmt.Errorf("got %s, want %s", got, free)
			}
			return nil
		}},
		{"default", "", func(got string) error {
			if host, _, _ := net.SplitHostPort(got); host != "127.0.0.1" {
				return fmt.Errorf("got %s, want 127.0.0.1", got)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := start(t, kafkabroker.Options{Addr: tt.addr})
			if err := tt.want(b.Addr()); err != nil {
				t.Fatal(err)
			}
			createTopic(t, b.Addr(), "reachable", 1) // it serves on that address
		})
	}
}

func TestBroker_DoesNotAutoCreateTopics(t *testing.T) {
	b := start(t, kafkabroker.Options{})
	w := &kafka.Writer{
		Addr: kafka.TCP(b.Addr()), Topic: "never-created", AllowAutoTopicCreation: true,
		MaxAttempts: 1, Transport: &kafka.Transport{},
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("x")}); err == nil {
		t.Fatal("write to a missing topic succeeded; want an error")
	}
	if topicExists(t, b.Addr(), "never-created") {
		t.Fatal("topic was auto-created")
	}
}

func TestStart_RefusesADataDirInUse(t *testing.T) {
	dir := t.TempDir()
	b := start(t, kafkabroker.Options{DataDir: dir})
	if _, err := kafkabroker.Start(t.Context(), kafkabroker.Options{DataDir: dir}); !errors.Is(err, kafkabroker.ErrDataDirLocked) {
		t.Fatalf("second Start on the same dir: err = %v, want ErrDataDirLocked", err)
	}
	b.Close()
	// Closing releases the directory.
	start(t, kafkabroker.Options{DataDir: dir})
}

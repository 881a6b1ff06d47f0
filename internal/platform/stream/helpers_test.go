package stream_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// startBroker starts an embedded broker persisted under dir ("" = a new
// temp dir) and closes it when the test ends.
func startBroker(t *testing.T, dir string) *kafkabroker.Broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	b, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

func ensureTopics(t *testing.T, brokers []string, topics ...schemas.Topic) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := stream.EnsureTopics(ctx, brokers, topics); err != nil {
		t.Fatalf("ensure topics: %v", err)
	}
}

func newProducer(t *testing.T, brokers []string, m *stream.Metrics) *stream.Producer {
	t.Helper()
	p := stream.NewProducer(stream.ProducerConfig{Brokers: brokers, Metrics: m})
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func publish(t *testing.T, p stream.Publisher, msgs ...stream.Message) {
	t.Helper()
	if err := p.Publish(t.Context(), msgs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// runConsumer runs c until the returned stop is called (or the test ends);
// stop cancels Run and returns its error.
func runConsumer(t *testing.T, c *stream.Consumer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = fmt.Errorf("consumer did not stop within 20s")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// committedOffsets returns the group's committed offset per partition
// (-1 when none).
func committedOffsets(t *testing.T, brokers []string, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	resp, err := c.OffsetFetch(t.Context(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	got := make(map[int]int64, partitions)
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("offset fetch partition %d: %v", p.Partition, p.Error)
		}
		got[p.Partition] = p.CommittedOffset
	}
	return got
}

// readTopic returns everything on topic now.
func readTopic(t *testing.T, brokers []string, topic string) []stream.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var got []stream.Message
	if err := stream.ReadAll(ctx, brokers, topic, func(m stream.Message) error {
		got = append(got, m)
		return nil
	}); err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	return got
}

// topicName is a topic name unique to the test.
func topicName(t *testing.T, suffix string) string {
	name := strings.NewReplacer("/", ".", " ", "_").Replace(t.Name())
	return "test." + name + "." + suffix
}

// recorder collects handled messages, safe for concurrent use.
type recorder struct {
	mu   sync.Mutex
	msgs []stream.Message
}

func (r *recorder) add(m stream.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func (r *recorder) all() []stream.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stream.Message(nil), r.msgs...)
}

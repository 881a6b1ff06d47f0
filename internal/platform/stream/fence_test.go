package stream_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// fakeFence is a views epoch the test sets: "" is "views lost".
type fakeFence struct {
	mu    sync.Mutex
	epoch string
	reads int
}

func (f *fakeFence) Epoch(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.epoch, nil
}

func (f *fakeFence) set(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch = e
}

// TestConsumer_FenceChangedDuringHandlingHandlesAgainWithoutDeadLettering:
// Redis lost its views while a message (or batch) was handled; the
// consumer does not commit it, waits until the views are complete again
// and handles the same messages again. With MaxAttempts 1 and a
// dead-letter topic, counting that redo as an attempt would dead-letter a
// valid message (or fall back to one-by-one for a batch): it must not.
func TestConsumer_FenceChangedDuringHandlingHandlesAgainWithoutDeadLettering(t *testing.T) {
	tests := []struct {
		name  string
		batch bool
		// during is what the handler does on its first call for v1, after
		// the views were lost: return nil, fail, or see the change itself
		// through CheckFence.
		during string
	}{
		{"one by one, handler succeeds on the lost view", false, "succeed"},
		{"one by one, handler fails because of the lost view", false, "fail"},
		{"one by one, handler sees the change through CheckFence", false, "check"},
		{"batch, handler succeeds on the lost view", true, "succeed"},
		{"batch, handler sees the change through CheckFence", true, "check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startBroker(t, "")
			brokers := []string{b.Addr()}
			topic := topicName(t, "events")
			ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1}, deadLetterTopic)
			reg := prometheus.NewRegistry()
			metrics := stream.NewMetrics(reg)
			p := newProducer(t, brokers, metrics)
			for i := range 3 {
				publish(t, p, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("v" + strconv.Itoa(i))})
			}

			fence := &fakeFence{epoch: "e1"}
			var mu sync.Mutex
			calls := map[string]int{}
			flushed := false
			// handle is the work on one message; it returns what the
			// handler returns.
			handle := func(ctx context.Context, m stream.Message) error {
				mu.Lock()
				calls[string(m.Value)]++
				first := string(m.Value) == "v1" && !flushed
				if first {
					flushed = true
				}
				mu.Unlock()
				if !first {
					return nil
				}
				fence.set("") // FLUSHALL while handling
				switch tt.during {
				case "fail":
					return errors.New("no rule found")
				case "check":
					if err := stream.CheckFence(ctx); !errors.Is(err, stream.ErrFenced) {
						t.Errorf("CheckFence = %v, want ErrFenced", err)
					}
					return stream.CheckFence(ctx)
				}
				return nil
			}
			cfg := stream.ConsumerConfig{
				Brokers: brokers, GroupID: "fenced", Topics: []string{topic},
				MaxAttempts: 1, RetryDelay: time.Millisecond, DeadLetter: p, Metrics: metrics, CommitInterval: -1,
				Fence:   fence,
				Handler: handle,
			}
			var batchCalls, oneByOne int
			if tt.batch {
				cfg.Handler = func(ctx context.Context, m stream.Message) error {
					mu.Lock()
					oneByOne++
					mu.Unlock()
					return handle(ctx, m)
				}
				cfg.BatchSize, cfg.BatchWait = 10, 50*time.Millisecond
				cfg.BatchHandler = func(ctx context.Context, ms []stream.Message) error {
					mu.Lock()
					batchCalls++
					mu.Unlock()
					for _, m := range ms {
						if err := handle(ctx, m); err != nil {
							return err
						}
					}
					return nil
				}
			}
			stop := runConsumer(t, stream.NewConsumer(cfg))

			testharness.Eventually(t, 15*time.Second, "v1 handled while the views were lost", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return flushed
			})
			// The views are rebuilt under a new epoch: the consumer,
			// polling meanwhile, handles v1 again.
			fence.set("e2")
			testharness.Eventually(t, 15*time.Second, "every message handled after the rebuild", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return calls["v1"] >= 2 && calls["v2"] >= 1
			})
			if err := stop(); err != nil {
				t.Fatalf("run: %v", err)
			}

			if dl := readTopic(t, brokers, schemas.TopicDeadLetter); len(dl) != 0 {
				t.Errorf("%d messages dead-lettered, want none: a lost view is not a poison message", len(dl))
			}
			if got := committedOffsets(t, brokers, "fenced", topic, 1)[0]; got != 3 {
				t.Errorf("committed offset = %d, want 3", got)
			}
			if got := testharness.MetricValue(t, reg, "switchback_stream_fenced_total", map[string]string{"topic": topic, "group": "fenced"}); got != 1 {
				t.Errorf("fenced_total = %v, want 1", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if calls["v1"] != 2 {
				t.Errorf("v1 handled %d times, want 2 (once on the lost view, once after)", calls["v1"])
			}
			if tt.batch && oneByOne != 0 {
				t.Errorf("the batch fell back to one-by-one handling (%d calls): the redo was counted as an attempt", oneByOne)
			}
		})
	}
}

// TestConsumer_FenceMissingWaitsBeforeHandling: while the views are being
// rebuilt (no epoch), a fetched message is not handled (a handler would
// read an incomplete view); it is once they are complete.
func TestConsumer_FenceMissingWaitsBeforeHandling(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1})
	reg := prometheus.NewRegistry()
	metrics := stream.NewMetrics(reg)
	p := newProducer(t, brokers, metrics)
	publish(t, p, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("v")})

	fence := &fakeFence{}
	var handled recorder
	stop := runConsumer(t, stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "waits", Topics: []string{topic}, Metrics: metrics, CommitInterval: -1, Fence: fence,
		Handler: func(_ context.Context, m stream.Message) error { handled.add(m); return nil },
	}))
	labels := map[string]string{"topic": topic, "group": "waits"}
	testharness.Eventually(t, 15*time.Second, "the message fetched", func() bool {
		return testharness.MetricValue(t, reg, "switchback_stream_consumed_total", labels) == 1
	})
	testharness.Eventually(t, 5*time.Second, "the consumer polling the fence", func() bool {
		fence.mu.Lock()
		defer fence.mu.Unlock()
		return fence.reads >= 2
	})
	if handled.len() != 0 {
		t.Fatal("handled while the views were being rebuilt")
	}
	fence.set("e1")
	testharness.Eventually(t, 15*time.Second, "the message handled once the views are complete", func() bool { return handled.len() == 1 })
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := committedOffsets(t, brokers, "waits", topic, 1)[0]; got != 1 {
		t.Errorf("committed offset = %d, want 1", got)
	}
}

// TestCheckFence_WithoutAFenceIsNil: handlers of consumers without a fence
// (and code called outside a consumer) are never refused.
func TestCheckFence_WithoutAFenceIsNil(t *testing.T) {
	if err := stream.CheckFence(context.Background()); err != nil {
		t.Fatalf("CheckFence = %v, want nil", err)
	}
}

// TestReadCommitted_ReadsWhatTheGroupCommittedOnly: the records past the
// group's committed offsets (not handled yet) are not read; a group that
// never committed reads nothing.
func TestReadCommitted_ReadsWhatTheGroupCommittedOnly(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 2})
	p := newProducer(t, brokers, nil)
	var first []stream.Message
	for i := range 10 {
		first = append(first, stream.Message{Topic: topic, Key: []byte("k" + strconv.Itoa(i%4)), Value: []byte("a" + strconv.Itoa(i))})
	}
	publish(t, p, first...)
	var handled recorder
	stop := runConsumer(t, stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "committed", Topics: []string{topic}, CommitInterval: -1,
		Handler: func(_ context.Context, m stream.Message) error { handled.add(m); return nil },
	}))
	testharness.Eventually(t, 15*time.Second, "the first records handled", func() bool { return handled.len() == 10 })
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	for i := range 5 {
		publish(t, p, stream.Message{Topic: topic, Key: []byte("k" + strconv.Itoa(i%4)), Value: []byte("b" + strconv.Itoa(i))})
	}

	tests := []struct {
		group string
		want  int
	}{
		{"committed", 10},
		{"never-ran", 0},
	}
	for _, tt := range tests {
		t.Run(tt.group, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var got []string
			err := stream.ReadCommitted(ctx, brokers, topic, tt.group, func(m stream.Message) error {
				got = append(got, string(m.Value))
				return nil
			})
			if err != nil {
				t.Fatalf("ReadCommitted: %v", err)
			}
			if len(got) != tt.want {
				t.Fatalf("read %d records %v, want %d", len(got), got, tt.want)
			}
			for _, v := range got {
				if v[0] != 'a' {
					t.Errorf("read %s, a record past the committed offsets", v)
				}
			}
		})
	}
}

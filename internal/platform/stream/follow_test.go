package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestFollow_SeesExistingThenNewRecords(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "principals")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 3, Compacted: true})
	p := newProducer(t, brokers, nil)
	for i := range 10 {
		publish(t, p, stream.Message{Topic: topic, Key: []byte("p" + strconv.Itoa(i)), Value: []byte("v1")})
	}

	// The view Follow rebuilds: latest value per key. mu is for the test's
	// reads; calls has no lock on purpose: Follow must never call fn
	// concurrently, and the race detector would see it if it did.
	view := map[string]string{}
	var mu sync.Mutex
	calls := 0
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- stream.Follow(ctx, brokers, topic, func(m stream.Message) error {
			calls++
			mu.Lock()
			view[string(m.Key)] = string(m.Value)
			mu.Unlock()
			return nil
		})
	}()
	snapshot := func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]string, len(view))
		for k, v := range view {
			out[k] = v
		}
		return out
	}
	testharness.Eventually(t, 10*time.Second, "existing records", func() bool { return len(snapshot()) == 10 })

	publish(t, p,
		stream.Message{Topic: topic, Key: []byte("p3"), Value: []byte("v2")},
		stream.Message{Topic: topic, Key: []byte("new"), Value: []byte("v1")},
	)
	testharness.Eventually(t, 10*time.Second, "new records", func() bool {
		v := snapshot()
		return v["p3"] == "v2" && v["new"] == "v1"
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow returned %v after ctx ended, want nil", err)
	}
	if calls != 12 {
		t.Errorf("fn called %d times, want 12", calls)
	}
}

func TestFollow_StopsWithTheHandlerError(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 2})
	publish(t, newProducer(t, brokers, nil), stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("v")})

	boom := errors.New("boom")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := stream.Follow(ctx, brokers, topic, func(stream.Message) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Follow() = %v, want the handler's error", err)
	}
}

func TestReadAll_ReadsUpToTheHighWatermarkAndReturns(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "entities")
	empty := topicName(t, "empty")
	ensureTopics(t, brokers,
		schemas.Topic{Name: topic, Partitions: 4, Compacted: true},
		schemas.Topic{Name: empty, Partitions: 2},
	)
	p := newProducer(t, brokers, nil)
	var msgs []stream.Message
	for i := range 50 {
		// Two keys only: some partitions stay empty, which must not block.
		msgs = append(msgs, stream.Message{Topic: topic, Key: []byte("k" + strconv.Itoa(i%2)), Value: []byte(strconv.Itoa(i))})
	}
	publish(t, p, msgs...)

	tests := []struct {
		name  string
		topic string
		want  int
	}{
		{"records on some partitions", topic, 50},
		{"empty topic", empty, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readTopic(t, brokers, tt.topic)
			if len(got) != tt.want {
				t.Fatalf("read %d records, want %d", len(got), tt.want)
			}
			last := map[string]int{}
			for _, m := range got {
				v, _ := strconv.Atoi(string(m.Value))
				if prev, ok := last[string(m.Key)]; ok && v <= prev {
					t.Fatalf("key %s: %d after %d, want offset order", m.Key, v, prev)
				}
				last[string(m.Key)] = v
			}
		})
	}

	t.Run("unknown topic", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := stream.ReadAll(ctx, brokers, "no.such.topic", func(stream.Message) error { return nil }); err == nil {
			t.Fatal("ReadAll of a missing topic succeeded")
		}
	})
}

// A follower outlives a broker restart: it resumes after the last record it
// handed over, so every record reaches fn once, in offset order per
// partition, and Follow does not return. (It used to return the first
// failed fetch, which took the whole query process down with the catalog
// view when the broker restarted under load.)
func TestFollow_OutlivesABrokerRestartWithoutSkippingOrRepeating(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	addr := b.Addr()
	brokers := []string{addr}
	topic := topicName(t, "catalog")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 3})
	publishRange := func(from, to int) {
		p := newProducer(t, brokers, nil)
		for i := from; i < to; i++ {
			publish(t, p, stream.Message{Topic: topic, Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
		}
		_ = p.Close()
	}
	publishRange(0, 10)

	var (
		mu      sync.Mutex
		seen    = map[int]int{}   // value → times handed to fn
		lastOff = map[int]int64{} // partition → last offset
		order   []string
	)
	var logs syncBuffer
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- stream.Follow(ctx, brokers, topic, func(m stream.Message) error {
			v, _ := strconv.Atoi(string(m.Value))
			mu.Lock()
			defer mu.Unlock()
			seen[v]++
			if last, ok := lastOff[m.Partition]; ok && m.Offset <= last {
				order = append(order, fmt.Sprintf("partition %d: offset %d after %d", m.Partition, m.Offset, last))
			}
			lastOff[m.Partition] = m.Offset
			return nil
		}, stream.FollowLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	testharness.Eventually(t, 10*time.Second, "the records before the restart", func() bool { return count() == 10 })

	b.Close()
	testharness.Eventually(t, 10*time.Second, "the follower noticing the broker is gone", func() bool {
		return strings.Contains(logs.String(), "the broker failed; retrying")
	})
	b2, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: addr, DataDir: dir})
	if err != nil {
		t.Fatalf("restart broker on %s: %v", addr, err)
	}
	t.Cleanup(b2.Close)
	publishRange(10, 20)
	testharness.Eventually(t, 30*time.Second, "the records after the restart", func() bool { return count() == 20 })

	select {
	case err := <-done:
		t.Fatalf("Follow returned %v during the restart, want it to keep following", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow returned %v after ctx ended, want nil", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %d handed to fn %d times, want once", v, n)
		}
	}
	if len(order) > 0 {
		t.Errorf("records out of offset order: %v", order)
	}
	if !strings.Contains(logs.String(), "reading again") {
		t.Errorf("the recovery was not logged; logs:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer the follower's log and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

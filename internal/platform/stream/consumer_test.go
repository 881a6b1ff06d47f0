package stream_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

var deadLetterTopic = schemas.Topic{Name: schemas.TopicDeadLetter, Partitions: 1, RetentionHours: 24}

func TestProducerConsumer_RoundTripKeepsPerKeyOrder(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	events, other := topicName(t, "events"), topicName(t, "other")
	ensureTopics(t, brokers,
		schemas.Topic{Name: events, Partitions: 3},
		schemas.Topic{Name: other, Partitions: 2},
	)
	reg := prometheus.NewRegistry()
	metrics := stream.NewMetrics(reg)
	p := newProducer(t, brokers, metrics)

	const keys, perKey = 8, 25
	// Interleave keys and topics, several Publish calls each spanning both
	// topics, as a stage publishing an entity and its history would.
	for round := range perKey {
		var batch []stream.Message
		for k := range keys {
			topic := events
			if k%4 == 3 {
				topic = other
			}
			batch = append(batch, stream.Message{
				Topic:   topic,
				Key:     []byte("key-" + strconv.Itoa(k)),
				Value:   []byte(strconv.Itoa(round)),
				Headers: map[string]string{"round": strconv.Itoa(round)},
			})
		}
		publish(t, p, batch...)
	}

	var got recorder
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "roundtrip", Topics: []string{events, other},
		Metrics: metrics,
		Handler: func(_ context.Context, m stream.Message) error {
			got.add(m)
			return nil
		},
	})
	stop := runConsumer(t, c)
	testharness.Eventually(t, 15*time.Second, "all messages consumed", func() bool { return got.len() >= keys*perKey })
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	next := map[string]int{}        // key -> next expected round
	partitionOf := map[string]int{} // key -> the one partition it lands on
	for _, m := range got.all() {
		k := m.Topic + "/" + string(m.Key)
		if p, seen := partitionOf[k]; seen && p != m.Partition {
			t.Errorf("key %s on partitions %d and %d", k, p, m.Partition)
		}
		partitionOf[k] = m.Partition
		round, _ := strconv.Atoi(string(m.Value))
		if round != next[k] {
			t.Fatalf("key %s: got round %d, want %d (order broken or message lost/duplicated)", k, round, next[k])
		}
		if m.Headers["round"] != string(m.Value) {
			t.Errorf("key %s: header round=%q, want %q", k, m.Headers["round"], m.Value)
		}
		next[k]++
	}
	if len(next) != keys {
		t.Errorf("got %d keys, want %d", len(next), keys)
	}

	produced := testharness.MetricValue(t, reg, "switchback_stream_produced_total", map[string]string{"topic": events})
	if want := float64(perKey * 6); produced != want {
		t.Errorf("produced_total{topic=events} = %v, want %v", produced, want)
	}
	for part := range 3 {
		lag := testharness.MetricValue(t, reg, "switchback_stream_lag_messages", map[string]string{"topic": events, "partition": strconv.Itoa(part), "group": "roundtrip"})
		if lag != 0 {
			t.Errorf("lag of partition %d = %v after consuming everything, want 0", part, lag)
		}
	}
	consumed := testharness.MetricValue(t, reg, "switchback_stream_consumed_total", map[string]string{"topic": other, "group": "roundtrip"})
	if want := float64(perKey * 2); consumed != want {
		t.Errorf("consumed_total{topic=other} = %v, want %v", consumed, want)
	}
}

func TestConsumer_AfterCrashAndBrokerRestartSkipsNothingAndRedeliversOnlyUncommitted(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	topic := topicName(t, "events")
	ensureTopics(t, []string{b.Addr()}, schemas.Topic{Name: topic, Partitions: 3})

	const total, crashAfter = 120, 50
	p := stream.NewProducer(stream.ProducerConfig{Brokers: []string{b.Addr()}})
	var msgs []stream.Message
	for i := range total {
		msgs = append(msgs, stream.Message{Topic: topic, Key: []byte("k" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))})
	}
	publish(t, p, msgs...)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// First run: handle crashAfter messages, then "crash": cancel while the
	// next message is in the handler, which then fails with ctx's error.
	var first recorder
	ctx1, cancel1 := context.WithCancel(t.Context())
	c1 := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: []string{b.Addr()}, GroupID: "restart", Topics: []string{topic},
		Handler: func(ctx context.Context, m stream.Message) error {
			if first.len() >= crashAfter {
				cancel1()
				<-ctx.Done()
				return ctx.Err()
			}
			first.add(m)
			return nil
		},
	})
	if err := c1.Run(ctx1); err != nil {
		t.Fatalf("first run: %v", err)
	}
	cancel1()
	b.Close()

	// Restart the broker from the same directory, and a new consumer.
	b2 := startBroker(t, dir)
	var second recorder
	c2 := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: []string{b2.Addr()}, GroupID: "restart", Topics: []string{topic},
		Handler: func(_ context.Context, m stream.Message) error {
			second.add(m)
			return nil
		},
	})
	stop := runConsumer(t, c2)
	testharness.Eventually(t, 10*time.Second, "the rest consumed (a skipped message never arrives)", func() bool { return second.len() >= total-crashAfter })
	if err := stop(); err != nil {
		t.Fatalf("second run: %v", err)
	}

	handledFirst := map[string]bool{}
	for _, m := range first.all() {
		handledFirst[string(m.Value)] = true
	}
	seen := map[string]bool{}
	for _, m := range second.all() {
		if handledFirst[string(m.Value)] {
			// Run returned after committing it: a redelivery means a
			// commit was lost across the restart.
			t.Errorf("message %s handled in the first run was delivered again", m.Value)
		}
		seen[string(m.Value)] = true
	}
	for i := range total {
		v := strconv.Itoa(i)
		if !handledFirst[v] && !seen[v] {
			t.Errorf("message %s was never handled", v)
		}
	}
}

func TestConsumer_DeadLettersAfterMaxAttemptsAndMovesOn(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1}, deadLetterTopic)
	reg := prometheus.NewRegistry()
	metrics := stream.NewMetrics(reg)
	p := newProducer(t, brokers, metrics)
	for i := range 5 {
		publish(t, p, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("v" + strconv.Itoa(i)), Headers: map[string]string{"trace": "t" + strconv.Itoa(i)}})
	}

	var mu sync.Mutex
	attempts := map[string]int{}
	var handled recorder
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "dlq", Topics: []string{topic},
		MaxAttempts: 3, RetryDelay: time.Millisecond,
		DeadLetter: p, Metrics: metrics, CommitInterval: -1,
		Handler: func(_ context.Context, m stream.Message) error {
			mu.Lock()
			attempts[string(m.Value)]++
			mu.Unlock()
			if string(m.Value) == "v2" {
				return errors.New("poisoned: " + strings.Repeat("x", 5000))
			}
			handled.add(m)
			return nil
		},
	})
	stop := runConsumer(t, c)
	testharness.Eventually(t, 15*time.Second, "the messages after the poisoned one", func() bool { return handled.len() == 4 })
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	if got := attempts["v2"]; got != 3 {
		t.Errorf("poisoned message attempted %d times, want 3", got)
	}
	if got := committedOffsets(t, brokers, "dlq", topic, 1)[0]; got != 5 {
		t.Errorf("committed offset = %d, want 5 (past the dead-lettered message)", got)
	}
	dl := readTopic(t, brokers, schemas.TopicDeadLetter)
	if len(dl) != 1 {
		t.Fatalf("dead-letter topic has %d messages, want 1", len(dl))
	}
	m := dl[0]
	wantHeaders := map[string]string{
		stream.HeaderDeadLetterTopic:     topic,
		stream.HeaderDeadLetterPartition: "0",
		stream.HeaderDeadLetterOffset:    "2",
		stream.HeaderDeadLetterGroup:     "dlq",
		stream.HeaderDeadLetterAttempts:  "3",
		"trace":                          "t2", // the original headers are kept
	}
	for k, want := range wantHeaders {
		if got := m.Headers[k]; got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if e := m.Headers[stream.HeaderDeadLetterError]; !strings.HasPrefix(e, "poisoned: ") || len(e) > 1100 {
		t.Errorf("error header: want the truncated error, got %d bytes starting %.20q", len(e), e)
	}
	if string(m.Key) != "k" || string(m.Value) != "v2" {
		t.Errorf("dead-lettered key/value = %q/%q, want the original k/v2", m.Key, m.Value)
	}
	if got := testharness.MetricValue(t, reg, "switchback_stream_dead_lettered_total", map[string]string{"topic": topic, "group": "dlq"}); got != 1 {
		t.Errorf("dead_lettered_total = %v, want 1", got)
	}
	if got := testharness.MetricValue(t, reg, "switchback_stream_handler_failures_total", map[string]string{"topic": topic, "group": "dlq"}); got != 3 {
		t.Errorf("handler_failures_total = %v, want 3", got)
	}
}

func TestConsumer_RetrySucceedsOnSecondAttemptWithoutDeadLetter(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1}, deadLetterTopic)
	p := newProducer(t, brokers, nil)
	publish(t, p,
		stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("flaky")},
		stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("after")},
	)

	var mu sync.Mutex
	attempts := map[string]int{}
	var handled recorder
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "retry", Topics: []string{topic},
		MaxAttempts: 3, RetryDelay: time.Millisecond, DeadLetter: p, CommitInterval: -1,
		Handler: func(_ context.Context, m stream.Message) error {
			mu.Lock()
			attempts[string(m.Value)]++
			n := attempts[string(m.Value)]
			mu.Unlock()
			if string(m.Value) == "flaky" && n == 1 {
				return errors.New("transient")
			}
			handled.add(m)
			return nil
		},
	})
	stop := runConsumer(t, c)
	testharness.Eventually(t, 15*time.Second, "both messages handled", func() bool { return handled.len() == 2 })
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := handled.all(); string(got[0].Value) != "flaky" || string(got[1].Value) != "after" {
		t.Errorf("handled %q then %q, want flaky then after", got[0].Value, got[1].Value)
	}
	if attempts["flaky"] != 2 {
		t.Errorf("flaky attempted %d times, want 2", attempts["flaky"])
	}
	if dl := readTopic(t, brokers, schemas.TopicDeadLetter); len(dl) != 0 {
		t.Errorf("dead-letter topic has %d messages, want none", len(dl))
	}
	if got := committedOffsets(t, brokers, "retry", topic, 1)[0]; got != 2 {
		t.Errorf("committed offset = %d, want 2", got)
	}
}

func TestConsumer_WithoutDeadLetterKeepsRetryingAndCommitsNothingPastTheFailure(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1})
	p := newProducer(t, brokers, nil)
	publish(t, p,
		stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("ok")},
		stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("bad")},
		stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("blocked")},
	)

	var mu sync.Mutex
	badAttempts := 0
	var handled recorder
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "nodlq", Topics: []string{topic},
		MaxAttempts: 2, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond,
		Handler: func(_ context.Context, m stream.Message) error {
			if string(m.Value) == "bad" {
				mu.Lock()
				badAttempts++
				mu.Unlock()
				return errors.New("always fails")
			}
			handled.add(m)
			return nil
		},
	})
	stop := runConsumer(t, c)
	// Well past MaxAttempts: it keeps retrying instead of giving up.
	testharness.Eventually(t, 15*time.Second, "retries beyond MaxAttempts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return badAttempts >= 10
	})
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, m := range handled.all() {
		if string(m.Value) == "blocked" {
			t.Error("the message after the failing one was handled: order within the partition broken")
		}
	}
	if got := committedOffsets(t, brokers, "nodlq", topic, 1)[0]; got != 1 {
		t.Errorf("committed offset = %d, want 1 (only the message before the failure)", got)
	}
}

func TestConsumer_RunRejectsIncompleteConfig(t *testing.T) {
	handler := func(context.Context, stream.Message) error { return nil }
	tests := []struct {
		name string
		cfg  stream.ConsumerConfig
		want string
	}{
		{"no brokers", stream.ConsumerConfig{GroupID: "g", Topics: []string{"t"}, Handler: handler}, "no brokers"},
		{"no group", stream.ConsumerConfig{Brokers: []string{"x:1"}, Topics: []string{"t"}, Handler: handler}, "no group id"},
		{"no topics", stream.ConsumerConfig{Brokers: []string{"x:1"}, GroupID: "g", Handler: handler}, "no topics"},
		{"no handler", stream.ConsumerConfig{Brokers: []string{"x:1"}, GroupID: "g", Topics: []string{"t"}}, "no handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := stream.NewConsumer(tt.cfg).Run(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

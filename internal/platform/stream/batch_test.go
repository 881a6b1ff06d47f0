package stream_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestConsumer_BatchHandlerKeepsPartitionOrderAndCommitsEverything(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 3})
	p := newProducer(t, brokers, nil)
	const keys, perKey, batchSize = 7, 40, 50
	var msgs []stream.Message
	for round := range perKey {
		for k := range keys {
			msgs = append(msgs, stream.Message{Topic: topic, Key: []byte("k" + strconv.Itoa(k)), Value: []byte(strconv.Itoa(round))})
		}
	}
	publish(t, p, msgs...)

	var mu sync.Mutex
	var sizes []int
	var got recorder
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "batch", Topics: []string{topic}, CommitInterval: -1,
		BatchSize: batchSize, BatchWait: 50 * time.Millisecond,
		Handler: func(context.Context, stream.Message) error {
			t.Error("Handler called although every batch succeeded")
			return nil
		},
		BatchHandler: func(_ context.Context, ms []stream.Message) error {
			mu.Lock()
			sizes = append(sizes, len(ms))
			mu.Unlock()
			for _, m := range ms {
				got.add(m)
			}
			return nil
		},
	})
	stop := runConsumer(t, c)
	testharness.Eventually(t, 15*time.Second, "all messages consumed", func() bool { return got.len() >= keys*perKey })
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	next := map[string]int{}
	for _, m := range got.all() {
		round, _ := strconv.Atoi(string(m.Value))
		if round != next[string(m.Key)] {
			t.Fatalf("key %s: got round %d, want %d (order broken, or lost or duplicated)", m.Key, round, next[string(m.Key)])
		}
		next[string(m.Key)]++
	}
	if got.len() != keys*perKey {
		t.Errorf("handled %d messages, want %d", got.len(), keys*perKey)
	}
	if slices.Max(sizes) > batchSize || slices.Max(sizes) < 2 {
		t.Errorf("batch sizes %v: want some above 1, none above %d", sizes, batchSize)
	}
	var committed int64
	for _, off := range committedOffsets(t, brokers, "batch", topic, 3) {
		committed += off
	}
	if committed != keys*perKey {
		t.Errorf("committed offsets add up to %d, want %d", committed, keys*perKey)
	}
}

func TestConsumer_FailingBatchFallsBackToOneByOneAndDeadLettersThePoisonAlone(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1}, deadLetterTopic)
	p := newProducer(t, brokers, nil)
	var msgs []stream.Message
	for i := range 5 {
		msgs = append(msgs, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("v" + strconv.Itoa(i))})
	}
	publish(t, p, msgs...)

	var mu sync.Mutex
	batchAttempts, singleAttempts := 0, map[string]int{}
	var handled recorder
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "batch-dlq", Topics: []string{topic},
		MaxAttempts: 3, RetryDelay: time.Millisecond, DeadLetter: p, CommitInterval: -1,
		BatchSize: 100, BatchWait: 100 * time.Millisecond,
		BatchHandler: func(_ context.Context, ms []stream.Message) error {
			for _, m := range ms {
				if string(m.Value) == "v2" {
					mu.Lock()
					batchAttempts++
					mu.Unlock()
					return errors.New("poisoned batch")
				}
			}
			for _, m := range ms {
				handled.add(m)
			}
			return nil
		},
		Handler: func(_ context.Context, m stream.Message) error {
			mu.Lock()
			singleAttempts[string(m.Value)]++
			mu.Unlock()
			if string(m.Value) == "v2" {
				return errors.New("poisoned")
			}
			handled.add(m)
			return nil
		},
	})
	stop := runConsumer(t, c)
	testharness.Eventually(t, 15*time.Second, "the messages around the poisoned one", func() bool { return handled.len() >= 4 })
	testharness.Eventually(t, 15*time.Second, "the commit past the poisoned one", func() bool {
		return committedOffsets(t, brokers, "batch-dlq", topic, 1)[0] == 5
	})
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if batchAttempts != 3 {
		t.Errorf("the poisoned batch was attempted %d times, want 3", batchAttempts)
	}
	if singleAttempts["v2"] != 3 {
		t.Errorf("the poisoned message was attempted alone %d times, want 3", singleAttempts["v2"])
	}
	var values []string
	for _, m := range handled.all() {
		values = append(values, string(m.Value))
	}
	if !slices.Equal(values, []string{"v0", "v1", "v3", "v4"}) {
		t.Errorf("handled %v, want v0 v1 v3 v4 once each, in order", values)
	}
	dl := readTopic(t, brokers, schemas.TopicDeadLetter)
	if len(dl) != 1 || string(dl[0].Value) != "v2" || dl[0].Headers[stream.HeaderDeadLetterOffset] != "2" {
		t.Fatalf("dead-letter topic: %d messages, want v2 alone", len(dl))
	}
}

func TestConsumer_BatchInterruptedByShutdownIsNotCommitted(t *testing.T) {
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1})
	p := newProducer(t, brokers, nil)
	publish(t, p, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("v0")}, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte("v1")})

	entered := make(chan struct{}, 1)
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers: brokers, GroupID: "batch-stop", Topics: []string{topic}, CommitInterval: -1,
		Handler: func(context.Context, stream.Message) error { return nil },
		BatchHandler: func(ctx context.Context, _ []stream.Message) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		},
	})
	stop := runConsumer(t, c)
	select {
	case <-entered:
	case <-time.After(15 * time.Second):
		t.Fatal("the batch handler was never called")
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if got := committedOffsets(t, brokers, "batch-stop", topic, 1)[0]; got >= 0 {
		t.Fatalf("committed offset %d after an interrupted batch, want none", got)
	}
}

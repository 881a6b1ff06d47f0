package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// TestKafkaFirst_WritePathEndToEnd runs the registry against the embedded
// Kafka broker and a real redis-server (the Lua scripts as production runs
// them): every write is on the topics, keyed by slot; a flushed Redis is
// rebuilt from the topics with the same answers; a second instance
// following the topics converges; and with Kafka gone a create is
// ErrUnavailable and leaves nothing in Redis.
func TestKafkaFirst_WritePathEndToEnd(t *testing.T) {
	rdb := testharness.RedisClient(t, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	broker, err := kafkabroker.Start(ctx, kafkabroker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close) // Close is idempotent
	brokers := []string{broker.Addr()}
	var topics []schemas.Topic
	for _, tp := range schemas.Topics() {
		if tp.Name == schemas.TopicRules || tp.Name == schemas.TopicMetadata {
			topics = append(topics, tp)
		}
	}
	if err := stream.EnsureTopics(ctx, brokers, topics); err != nil {
		t.Fatal(err)
	}
	producer := stream.NewProducer(stream.ProducerConfig{Brokers: brokers, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = producer.Close() })

	secrets := testharness.Keyring(t)
	reg := New(Options{Redis: rdb, Publisher: producer, Secrets: secrets})

	// A second instance with its own view (Redis database 1; on a cluster,
	// which has database 0 only, keys of another prefix), following.
	var follower *Registry
	if c, ok := rdb.(*redis.Client); ok {
		opts1 := *c.Options()
		opts1.DB = 1
		rdb1 := redis.NewClient(&opts1)
		t.Cleanup(func() { _ = rdb1.Close() })
		follower = New(Options{Redis: rdb1, Secrets: secrets})
	} else {
		follower = New(Options{Redis: rdb, Secrets: secrets, KeyPrefix: "follower:{registry}:"})
	}
	followCtx, stopFollow := context.WithCancel(ctx)
	followDone := make(chan error, 1)
	go func() { followDone <- follower.Follow(followCtx, brokers) }()
	t.Cleanup(func() {
		stopFollow()
		if err := <-followDone; err != nil {
			t.Errorf("follow: %v", err)
		}
	})

	// Writes.
	sup := mustCreate(t, reg, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", `{"supplierIDs":["S1"]}`))
	mustCreate(t, reg, subA, schemas.TypeBooking, ruleIn("https://hooks.example.com/b", ""))
	av := mustCreate(t, reg, subB, schemas.TypeAvailability, ruleIn("https://hooks.example.com/a", `{"vacanciesUnder":2}`))
	if _, err := reg.Create(ctx, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", "")); !errors.Is(err, ErrConflict) {
		t.Fatalf("second supplier rule: %v", err)
	}
	if _, err := reg.Update(ctx, subA, schemas.TypeSupplier, RuleInput{ID: sup.ID, URL: "https://hooks.example.com/s2", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Delete(ctx, subB, schemas.TypeAvailability, av.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.UpdateMetadata(ctx, subA, MetadataInput{ThrottleDelay: ptr("1.5s")}); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetDisableAll(ctx, subB, true, "backlog full"); err != nil {
		t.Fatal(err)
	}

	// The topics hold every write, keyed by slot / subscriber.
	var keys []string
	for _, topic := range Topics() {
		err := stream.ReadAll(ctx, brokers, topic, func(m stream.Message) error {
			var env schemas.Envelope
			if err := json.Unmarshal(m.Value, &env); err != nil {
				return err
			}
			if env.Key != string(m.Key) {
				t.Errorf("envelope key %q on record key %q", env.Key, m.Key)
			}
			keys = append(keys, topic+" "+string(m.Key)+" "+env.Type)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		schemas.TopicRules + " sub-a/supplier " + schemas.RegistryRuleCreated,
		schemas.TopicRules + " sub-a/supplier " + schemas.RegistryRuleUpdated,
		schemas.TopicRules + " sub-a/booking " + schemas.RegistryRuleCreated,
		schemas.TopicRules + " sub-b/availability " + schemas.RegistryRuleDeleted,
		schemas.TopicMetadata + " sub-a " + schemas.RegistryMetadataUpdated,
		schemas.TopicMetadata + " sub-b " + schemas.RegistryMetadataUpdated,
	} {
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("topic lacks %q; has %v", want, keys)
		}
	}
	if len(keys) != 7 {
		t.Errorf("%d records, want 7 (the refused create publishes nothing): %v", len(keys), keys)
	}

	subs := []string{subA, subB}
	want := readView(t, reg, subs)

	// Flush and rebuild from the topics.
	if c, ok := rdb.(*redis.Client); ok {
		if err := c.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		lost, err := testharness.Keys(ctx, rdb, "switchback:{registry}:*")
		if err != nil || len(lost) == 0 {
			t.Fatalf("the view's keys on the cluster: %v %v", lost, err)
		}
		if err := rdb.Del(ctx, lost...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Rebuild(ctx, brokers); err != nil {
		t.Fatal(err)
	}
	if got := readView(t, reg, subs); !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt view differs\n got %+v\nwant %+v", got, want)
	}

	// The follower converged on the same view.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := readView(t, follower, subs)
		if reflect.DeepEqual(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower view\n got %+v\nwant %+v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Kafka down: a create fails with ErrUnavailable and leaves nothing.
	// (A producer whose broker is gone; closing the test's broker instead
	// would make the producer's Close wait out its retries.)
	dead := stream.NewProducer(stream.ProducerConfig{Brokers: []string{deadAddr(t)}, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = dead.Close() })
	down := New(Options{Redis: rdb, Publisher: dead, Secrets: testharness.Keyring(t)})
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	defer wcancel()
	_, err = down.Create(wctx, subA, schemas.TypeProduct, ruleIn("https://hooks.example.com/p", ""))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("create with Kafka down: %v", err)
	}
	if _, err := reg.Rule(ctx, subA, schemas.TypeProduct); !errors.Is(err, ErrNotFound) {
		t.Fatalf("product rule after failed create: %v", err)
	}
	all, err := testharness.Keys(ctx, rdb, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range all {
		if strings.Contains(k, ":lock:") {
			t.Fatalf("marker %s left after a failed create", k)
		}
	}
}

// deadAddr is a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

package availchange_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/views"
	"github.com/switchbackhq/switchback/processors/availchange"
	"github.com/switchbackhq/switchback/schemas"
)

// TestRun_NotifiesAChangeThatStraddlesAFlush: a rate's snapshot (5
// vacancies) is handled, Redis is flushed, and the next snapshot (1
// vacancy) must be notified: the diff state is rebuilt from the records
// the processor's group committed (not from an empty Redis, where the
// second snapshot would be a baseline, and not from the whole topic, where
// a snapshot not handled yet would be folded in and never notified). Both
// orders: the second snapshot arrives after the rebuild, or while the
// views are being rebuilt (the processor is fenced meanwhile).
func TestRun_NotifiesAChangeThatStraddlesAFlush(t *testing.T) {
	tests := []struct {
		name          string
		duringRebuild bool
	}{
		{"second snapshot after the rebuild", false},
		{"second snapshot while the views are being rebuilt", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			brokers, producer := startStreams(t, ctx)
			opts, err := redis.ParseURL(testharness.Redis(t))
			if err != nil {
				t.Fatal(err)
			}
			guard := views.New(views.Options{PollInterval: 20 * time.Millisecond, Logger: testharness.Logger(t)})
			opts.OnConnect = guard.OnConnect
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { _ = rdb.Close() })
			guard.Bind(rdb)
			// A view rebuilt before the state, held by the test while it
			// publishes the second snapshot.
			var gateMu sync.Mutex
			var gate chan struct{}
			entered := make(chan struct{}, 4)
			guard.Register(views.View{Name: "held", Rebuild: func(ctx context.Context) error {
				gateMu.Lock()
				g := gate
				gateMu.Unlock()
				if g == nil {
					return nil
				}
				entered <- struct{}{}
				select {
				case <-g:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}})
			guard.Register(views.View{Name: "availability-state", OnlyWhenLost: true, Rebuild: func(ctx context.Context) error {
				return availchange.RebuildState(ctx, availchange.StateOptions{Brokers: brokers, Redis: rdb, Marker: guard.Key(),
					Clock: func() time.Time { return t0 }, Logger: testharness.Logger(t)})
			}})
			if err := guard.Start(ctx); err != nil {
				t.Fatal(err)
			}
			runBackground(t, guard.Run)

			reg := prometheus.NewRegistry()
			p := availchange.New(availchange.Options{Brokers: brokers, Redis: rdb, Bindings: world{}, Subscribers: world{}, Rules: world{},
				Publisher: producer, Clock: func() time.Time { return t0 }, Fence: guard, Registerer: reg, Consumers: 1,
				Logger: testharness.Logger(t)})
			runBackground(t, p.Run)
			got := followNotifications(t, ctx, brokers)

			if err := producer.Publish(ctx, snapshotMsg(t, "R1", t0, 5)); err != nil {
				t.Fatal(err)
			}
			consumed := func() float64 {
				return metricSum(t, reg, "switchback_stream_consumed_total")
			}
			testharness.Eventually(t, 20*time.Second, "the first snapshot handled and committed", func() bool {
				n, _ := rdb.Exists(ctx, "sb:avstate:{S1}:P1:R1").Result()
				return n == 1 && committed(t, brokers) == 1
			})

			release := func() {}
			if tt.duringRebuild {
				ch := make(chan struct{})
				gateMu.Lock()
				gate = ch
				gateMu.Unlock()
				release = sync.OnceFunc(func() { close(ch) })
				t.Cleanup(release)
			}
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if tt.duringRebuild {
				<-entered // the guard is rebuilding, held before the state
				if err := producer.Publish(ctx, snapshotMsg(t, "R1", t0.Add(time.Minute), 1)); err != nil {
					t.Fatal(err)
				}
				testharness.Eventually(t, 20*time.Second, "the second snapshot fetched (and held by the fence)", func() bool { return consumed() >= 2 })
				if c := committed(t, brokers); c != 1 {
					t.Fatalf("committed offset %d while the views are rebuilt, want 1", c)
				}
				release()
			} else {
				testharness.Eventually(t, 20*time.Second, "the views rebuilt", func() bool {
					e, err := guard.Epoch(ctx)
					return err == nil && e != "" && guard.Ready()
				})
				if err := producer.Publish(ctx, snapshotMsg(t, "R1", t0.Add(time.Minute), 1)); err != nil {
					t.Fatal(err)
				}
			}
			testharness.Eventually(t, 20*time.Second, "the change notified", func() bool {
				got.mu.Lock()
				defer got.mu.Unlock()
				return len(got.subs) >= 2
			})
			got.mu.Lock()
			subs := slices.Clone(got.subs)
			got.mu.Unlock()
			slices.Sort(subs)
			if !slices.Equal(subs, []string{"sub-a", "sub-b"}) {
				t.Fatalf("notified %v, want sub-a and sub-b (5 -> 1 vacancies)", subs)
			}
		})
	}
}

// TestRebuildState_WritesNothingOnceTheViewsAreComplete: a slow rebuild
// that finishes after another process set the marker must not set back
// the states the resumed processors moved on.
func TestRebuildState_WritesNothingOnceTheViewsAreComplete(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	brokers, producer := startStreams(t, ctx)
	rdb := redisClient(t)
	p := availchange.New(availchange.Options{Brokers: brokers, Redis: rdb, Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: producer, Clock: func() time.Time { return t0 }, Consumers: 1})
	runBackground(t, p.Run)
	if err := producer.Publish(ctx, snapshotMsg(t, "R1", t0, 5)); err != nil {
		t.Fatal(err)
	}
	testharness.Eventually(t, 20*time.Second, "the snapshot committed", func() bool { return committed(t, brokers) == 1 })
	const key = "sb:avstate:{S1}:P1:R1"
	tests := []struct {
		name      string
		marker    bool
		wantState bool
	}{
		{"views marked complete: nothing written", true, false},
		{"views lost: the state is written", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := testharness.FlushAll(ctx, rdb); err != nil {
				t.Fatal(err)
			}
			opts := availchange.StateOptions{Brokers: brokers, Redis: rdb, Clock: func() time.Time { return t0 }}
			if _, ok := rdb.(*redis.ClusterClient); ok {
				// On a cluster the fold reads the epoch (no one marker).
				opts.Fence = fixedEpoch(map[bool]string{true: "-/e", false: ""}[tt.marker])
			} else {
				opts.Marker = views.DefaultKey
				if tt.marker {
					if err := rdb.Set(ctx, views.DefaultKey, "-/e", 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := availchange.RebuildState(ctx, opts); err != nil {
				t.Fatal(err)
			}
			n, err := rdb.Exists(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if (n == 1) != tt.wantState {
				t.Fatalf("state written = %v, want %v", n == 1, tt.wantState)
			}
		})
	}
}

// startStreams starts a broker with the processor's topics and a producer.
func startStreams(t *testing.T, ctx context.Context) ([]string, *stream.Producer) {
	t.Helper()
	broker, err := kafkabroker.Start(ctx, kafkabroker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	brokers := []string{broker.Addr()}
	var topics []schemas.Topic
	for _, tp := range schemas.Topics() {
		if tp.Name == schemas.TopicAvailability || tp.Name == schemas.TopicNotifications || tp.Name == schemas.TopicHistory {
			topics = append(topics, tp)
		}
	}
	if err := stream.EnsureTopics(ctx, brokers, topics); err != nil {
		t.Fatal(err)
	}
	producer := stream.NewProducer(stream.ProducerConfig{Brokers: brokers, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = producer.Close() })
	return brokers, producer
}

// runBackground runs fn until the test ends.
func runBackground(t *testing.T, fn func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

type subscribers struct {
	mu   sync.Mutex
	subs []string
}

// followNotifications collects the subscribers of the notifications
// published from now on.
func followNotifications(t *testing.T, ctx context.Context, brokers []string) *subscribers {
	got := &subscribers{}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = stream.Follow(fctx, brokers, schemas.TopicNotifications, func(m stream.Message) error {
			n, err := schemas.DecodeNotification(m.Value)
			if err == nil {
				got.mu.Lock()
				got.subs = append(got.subs, n.Subscriber)
				got.mu.Unlock()
			}
			return nil
		})
	}()
	t.Cleanup(func() { stop(); <-done })
	return got
}

// committed is the processor group's committed offset on the topic (one
// partition holds S1/P1/R1; the others stay at -1 or 0).
func committed(t *testing.T, brokers []string) int64 {
	t.Helper()
	var n int64
	err := stream.ReadCommitted(t.Context(), brokers, schemas.TopicAvailability, "switchback-processors-availability",
		func(stream.Message) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// fixedEpoch is a views fence that always answers the same epoch.
type fixedEpoch string

func (f fixedEpoch) Epoch(context.Context) (string, error) { return string(f), nil }

package stream

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/views"
	"github.com/switchbackhq/switchback/schemas"
)

// BenchmarkConsumeBatches: b.N messages of ~300 bytes, published before
// the timer on 12 partitions, consumed by one group member with a batch
// handler that does nothing (batches of up to 500), so the figure is the
// consumer's own cost:
//
//   - commit-async: offsets committed every second (the default);
//   - commit-sync: committed after every batch, synchronously (what the
//     availability processor does, so that its committed offsets are
//     exactly what it handled: processors/availchange.RebuildState);
//   - commit-sync-fence: the same with the views fence of
//     internal/platform/views.Guard on a real redis-server: one GET of the marker
//     before and one after every batch.
//
// Command: go test -run '^$' -bench BenchmarkConsumeBatches -benchtime 200000x ./bench/stream/
func BenchmarkConsumeBatches(b *testing.B) {
	brokers := broker(b)
	value := make([]byte, 300)
	guard := benchGuard(b)
	for _, bc := range []struct {
		name     string
		interval time.Duration
		fence    stream.Fence
	}{
		{"commit-async", 0, nil},
		{"commit-sync", -1, nil},
		{"commit-sync-fence", -1, guard},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tp := fmt.Sprintf("bench.consume.%s.%d", bc.name, b.N)
			ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
			defer cancel()
			if err := stream.EnsureTopics(ctx, brokers, []schemas.Topic{{Name: tp, Partitions: 12}}); err != nil {
				b.Fatal(err)
			}
			p := stream.NewProducer(stream.ProducerConfig{Brokers: brokers})
			defer p.Close()
			msgs := make([]stream.Message, 0, 1000)
			for i := range b.N {
				msgs = append(msgs, stream.Message{Topic: tp, Key: fmt.Appendf(nil, "entity-%d", i%5000), Value: value})
				if len(msgs) == cap(msgs) || i == b.N-1 {
					if err := p.Publish(ctx, msgs...); err != nil {
						b.Fatal(err)
					}
					msgs = msgs[:0]
				}
			}
			var handled atomic.Int64
			done := make(chan struct{})
			c := stream.NewConsumer(stream.ConsumerConfig{
				Brokers: brokers, GroupID: "bench-" + tp, Topics: []string{tp}, CommitInterval: bc.interval, Fence: bc.fence,
				Handler: func(context.Context, stream.Message) error { return nil },
				BatchHandler: func(_ context.Context, ms []stream.Message) error {
					if handled.Add(int64(len(ms))) >= int64(b.N) {
						select {
						case <-done:
						default:
							close(done)
						}
					}
					return nil
				},
			})
			rctx, stop := context.WithCancel(ctx)
			runDone := make(chan error, 1)
			b.ResetTimer()
			go func() { runDone <- c.Run(rctx) }()
			select {
			case <-done:
			case <-ctx.Done():
				b.Fatalf("consumed %d of %d", handled.Load(), b.N)
			}
			b.StopTimer()
			stop()
			if err := <-runDone; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// benchGuard is a views guard over a redis-server of the benchmark's own,
// with its marker set (the views complete).
func benchGuard(b *testing.B) *views.Guard {
	b.Helper()
	opts, err := redis.ParseURL(testharness.Redis(b))
	if err != nil {
		b.Fatal(err)
	}
	g := views.New(views.Options{})
	opts.OnConnect = g.OnConnect
	rdb := redis.NewClient(opts)
	b.Cleanup(func() { _ = rdb.Close() })
	g.Bind(rdb)
	if err := g.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	return g
}

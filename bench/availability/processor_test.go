package availability

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/processors/availchange"
	"github.com/switchbackhq/switchback/processors/catalogchange"
	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// counting is a Publisher that keeps nothing: the benchmark measures the
// processor, not a broker.
type counting struct{ notes, history atomic.Int64 }

func (c *counting) Publish(_ context.Context, msgs ...stream.Message) error {
	for _, m := range msgs {
		switch m.Topic {
		case schemas.TopicNotifications:
			c.notes.Add(1)
		case schemas.TopicHistory:
			c.history.Add(1)
		}
	}
	return nil
}

// BenchmarkSnapshotsThroughProcessor: partner snapshots (21 windows over
// 7 days, one window changing each time) through
// processors/availchange.Processor with a real redis-server, the real
// catalog's bindings and principals (two resellers of the channel with an
// availability rule): decode, diff, match, build notifications and
// history, save the state. Snapshots are encoded before the timer.
//
//   - handle: Processor.Handle, one snapshot at a time (state GET and a
//     compare-and-set per snapshot, one Publish each); 64 rates over 16
//     goroutines, each handling its rates' snapshots in order (as a
//     consumer handles one partition).
//   - batch256: Processor.HandleBatch with 256 snapshots per call, as the
//     batch consumer hands them over; 1024 rates over 4 goroutines (4
//     partitions' consumers), so a batch holds 256 different rates: one
//     state read and write per snapshot, pipelined, no in-batch chaining to
//     flatter the figure.
//   - batch256-1consumer: the same with one goroutine, as one consumer
//     runs (one batch at a time: Redis and CPU do not overlap).
//   - batch256-2consumers: two, as processors/availchange.Run starts by
//     default in one process.
func BenchmarkSnapshotsThroughProcessor(b *testing.B) {
	e := querytest.Start(b, querytest.Options{Quiet: true})
	e.Must(b, 201, "POST", querytest.Ch+"/supplier", e.Operator, catalogtest.SupplierBody("s1", "Supplier", "C1", "k", "s"))
	e.Must(b, 201, "POST", querytest.Ch+"/suppliers/s1/products", e.Operator, catalogtest.ProductBody("p1", "Tour", "d"))
	const maxRates = 1024
	for from := 0; from < maxRates; from += 512 {
		var body strings.Builder
		body.WriteString(`{"rates":[`)
		for i := from; i < from+512; i++ {
			if i > from {
				body.WriteByte(',')
			}
			body.WriteString(catalogtest.RateBody("r"+strconv.Itoa(i), "Rate"))
		}
		body.WriteString(`]}`)
		e.Must(b, 200, "POST", querytest.Ch+"/bulk/suppliers/s1/products/p1/rates", e.Operator, body.String())
	}
	e.Must(b, 201, "POST", querytest.Ch+"/suppliers/s1/products/p1/channels/"+catalogtest.ChannelA, e.Operator, `{}`)

	tests := []struct {
		name           string
		rates, workers int
		batch          int // 0: Handle
	}{
		{"handle", 64, 16, 0},
		{"batch256", maxRates, 4, 256},
		{"batch256-1consumer", maxRates, 1, 256},
		{"batch256-2consumers", maxRates, 2, 256}, // what Run starts by default
	}
	for i, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			// Own state keys per run, so each starts from baselines.
			t0 := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
			prefix := "bench" + strconv.Itoa(i) + "." + strconv.Itoa(b.N) + ":"
			benchProcessor(b, e, t0, prefix, tt.rates, tt.workers, tt.batch)
		})
	}
}

func benchProcessor(b *testing.B, e *querytest.Env, t0 time.Time, prefix string, rates, workers, batch int) {
	clock := func() time.Time { return t0 }
	pub := &counting{}
	proc := availchange.New(availchange.Options{Redis: e.Redis, Bindings: e.Store, Subscribers: catalogchange.Resellers{Principals: e.Principals},
		Rules: oneRule{registry.Config{MaxLookAheadDays: 7}}, Publisher: pub, Clock: clock, KeyPrefix: prefix})

	msgs := make([][]stream.Message, workers)
	for i := range b.N {
		rate, round := i%rates, i/rates
		s := schemas.Snapshot{SupplierID: "s1", ProductID: "p1", RateID: "r" + strconv.Itoa(rate), Start: t0, End: t0.AddDate(0, 0, 7),
			Retrieved: t0.Add(time.Duration(round) * time.Second), Expires: t0.Add(time.Hour)}
		for d := range 7 {
			for _, h := range []int{9, 13, 17} {
				c := 10
				if d == 1 && h == 13 {
					c = 2 + round%2 // the window that changes every round
				}
				start := t0.Add(time.Duration(d*24+h) * time.Hour)
				s.Availabilities = append(s.Availabilities, schemas.Availability{ID: "a" + strconv.Itoa(d*24+h), Start: start, End: start.Add(2 * time.Hour), Capacity: c})
			}
		}
		m, err := availcache.SnapshotMessage(s, t0)
		if err != nil {
			b.Fatal(err)
		}
		msgs[rate%workers] = append(msgs[rate%workers], m)
	}
	ctx := context.Background()
	var failed atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			if batch == 0 {
				for _, m := range msgs[w] {
					if err := proc.Handle(ctx, m); err != nil {
						failed.Store(err)
						return
					}
				}
				return
			}
			for ms := range slices.Chunk(msgs[w], batch) {
				if err := proc.HandleBatch(ctx, ms); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	// Every snapshot after a rate's first (its baseline) changes one
	// window: two resellers hear of it.
	if changed := int64(b.N - min(b.N, rates)); pub.notes.Load() != 2*changed {
		b.Fatalf("notifications = %d, want %d", pub.notes.Load(), 2*changed)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "snapshots/s")
	b.ReportMetric(float64(pub.notes.Load())/elapsed.Seconds(), "notifications/s")
}

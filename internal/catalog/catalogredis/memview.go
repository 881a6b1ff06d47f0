package catalogredis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// View is a query process's own copy of the catalog's view, for reseller
// reads (issue 21): suppliers, products, rates, bindings, channels and
// price schedules (not the availability sets, which reseller reads take
// from the availability cache), kept current by following the catalog
// topics from their start, applied with the same versioned upserts as
// Redis (memkv.go). A warm reseller read then costs no Redis round trip.
//
// Freshness is bounded, not hoped for. Every ProbeInterval the view asks
// the broker for the end offsets of those topics (at time t0); once it has
// applied every record below them, everything acknowledged before t0 is in
// it, and t0 becomes its freshness. A read uses the view only while that
// is within Bound of now; otherwise (a slow follower, a broker away, the
// start) it reads Redis, which writers update synchronously. So a change
// acknowledged to an operator is visible to every reader within Bound,
// whichever source answers (TestView_NoStaleReadPastTheBound).
type View struct {
	o     ViewOptions
	kv    *memKV
	lists *listCache // memoized supplier lists of kv
	k     keys
	fresh atomic.Int64 // unix nanos: records acknowledged before it are applied
	// wrote is the latest write of this process to the view's topics
	// (unix nanos, its acknowledgement): the view is not fresh until a
	// probe taken after it is caught up (NoteWrite).
	wrote   atomic.Int64
	mu      sync.Mutex // applied
	applied map[string]map[int]int64
	m       viewMetrics
	log     *slog.Logger
}

// ViewOptions configures NewView.
type ViewOptions struct {
	Brokers []string
	// Bound is how stale the view may be and still answer (default 1 s).
	Bound time.Duration
	// ProbeInterval is how often the end offsets are read (default a
	// tenth of Bound, at least 10 ms). It does not loosen the bound (a read
	// answers from memory only while the last caught-up probe is within
	// it); it sets how much of the time the copy is fresh enough, and what
	// the probes cost: at 20 ms, 50 ListOffsets a second were 1.7 % of the
	// query tier's CPU under read load (bench/RESULTS.md, issue 21).
	ProbeInterval time.Duration
	// KeyPrefix as the Store's (default DefaultKeyPrefix).
	KeyPrefix  string
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Clock is the time of freshness and of reads (default time.Now).
	Clock func() time.Time
}

// viewTopics are the catalog topics the view follows: all but the
// availability sets (and the partner snapshots that share their topic).
func viewTopics() []string {
	return []string{schemas.TopicChannels, schemas.TopicSuppliers, schemas.TopicProducts, schemas.TopicRates,
		schemas.TopicBindings, schemas.TopicPrices}
}

type viewMetrics struct {
	reads      *prometheus.CounterVec
	fromMemory prometheus.Counter
	fromRedis  prometheus.Counter
	staleness  prometheus.GaugeFunc
	visibility prometheus.Histogram
	applied    prometheus.Counter
}

// NewView returns a view; Run fills it and keeps it current.
func NewView(o ViewOptions) *View {
	if o.Bound <= 0 {
		o.Bound = time.Second
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = max(o.Bound/10, 10*time.Millisecond)
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	v := &View{o: o, kv: newMemKV(), lists: newListCache(), k: keys{p: o.KeyPrefix}, applied: map[string]map[int]int64{}, log: o.Logger.With("part", "catalog-view")}
	v.m = viewMetrics{
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_catalog_view_reads_total",
			Help: "Reseller catalog reads by the view that answered: memory (the process's copy, fresh within its bound) or redis (the copy was not fresh).",
		}, []string{"source"}),
		visibility: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchback_catalog_view_visibility_seconds",
			Help:    "From a catalog event's write to its application in the process's copy of the view.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_catalog_view_events_total",
			Help: "Catalog events applied to the process's copy of the view.",
		}),
	}
	v.m.staleness = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchback_catalog_view_staleness_seconds",
		Help: "How old the process's copy of the catalog view may be: now minus the time before which every acknowledged write is applied.",
	}, func() float64 {
		f := v.fresh.Load()
		if f == 0 {
			return -1
		}
		return v.o.Clock().Sub(time.Unix(0, f)).Seconds()
	})
	if o.Registerer != nil {
		v.m.reads = instrument.Register(o.Registerer, v.m.reads)
		v.m.visibility = instrument.Register(o.Registerer, v.m.visibility)
		v.m.applied = instrument.Register(o.Registerer, v.m.applied)
		if err := o.Registerer.Register(v.m.staleness); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				v.log.Warn("catalog view staleness gauge not registered", "err", err)
			}
		}
	}
	v.m.fromMemory, v.m.fromRedis = v.m.reads.WithLabelValues("memory"), v.m.reads.WithLabelValues("redis")
	return v
}

// Fresh reports whether the view may answer a read now: everything
// acknowledged before now - Bound is in it, and every write this process
// had acknowledged.
func (v *View) Fresh() bool {
	f := v.fresh.Load()
	return f != 0 && f >= v.wrote.Load() && v.o.Clock().Sub(time.Unix(0, f)) <= v.o.Bound
}

// NoteWrite records that this process just had a write to the view's
// topics acknowledged. Until a probe taken after it is caught up (one
// ProbeInterval and the follower's lag), reads go to Redis, which the
// writer updated before answering: whoever wrote through this process
// reads the write back at once (an operator binds, then lists through
// the same instance). Writes through other instances are visible within
// Bound, as before. Writes are rare next to reads; the cost is a few
// Redis reads after each.
func (v *View) NoteWrite() {
	now := v.o.Clock().UnixNano()
	for {
		w := v.wrote.Load()
		if w >= now || v.wrote.CompareAndSwap(w, now) {
			return
		}
	}
}

// follows reports whether the view follows topic.
func (v *View) follows(topic string) bool { return slices.Contains(viewTopics(), topic) }

// Freshness is the time before which every acknowledged write is applied
// (zero before the view's first load).
func (v *View) Freshness() time.Time {
	f := v.fresh.Load()
	if f == 0 {
		return time.Time{}
	}
	return time.Unix(0, f)
}

// Run follows the topics until ctx ends (then nil), and probes their end
// offsets. The followers ride out broker failures (stream.Follow); while
// they do, the probes fail too and reads go to Redis. Only an error of
// the view itself stops it.
func (v *View) Run(ctx context.Context) error {
	topics := viewTopics()
	var probe *stream.OffsetProbe
	for {
		p, err := stream.NewOffsetProbe(ctx, v.o.Brokers, topics)
		if err == nil {
			probe = p
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		v.log.Warn("catalog view: reading the topics' partitions failed; retrying", "err", err)
		if backoff.Sleep(ctx, time.Second) != nil {
			return nil
		}
	}
	defer probe.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, t := range topics {
		wg.Go(func() {
			if err := stream.Follow(ctx, v.o.Brokers, t, v.apply, stream.FollowLogger(v.log)); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("catalog view: %w", err))
			}
		})
	}
	wg.Go(func() { v.probe(ctx, probe) })
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// apply applies one record (Follow serialises the calls per topic).
func (v *View) apply(m stream.Message) error {
	defer v.markApplied(m.Topic, m.Partition, m.Offset)
	env, ok, err := DecodeMessage(m)
	if err != nil || !ok {
		if err != nil {
			v.log.Warn("catalog view: skipping an unusable record", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
		}
		return nil
	}
	ev, err := catalog.DecodeEvent(env)
	if err != nil {
		v.log.Warn("catalog view: skipping an unusable event", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
		return nil
	}
	c, err := applyCallOf(v.k, env, &ev)
	if err != nil {
		v.log.Warn("catalog view: skipping an event", "topic", m.Topic, "offset", m.Offset, "err", err)
		return nil
	}
	if _, err := v.kv.apply(c); err != nil {
		v.log.Warn("catalog view: skipping an event", "topic", m.Topic, "offset", m.Offset, "err", err)
		return nil
	}
	v.m.applied.Inc()
	if d := v.o.Clock().Sub(env.Time); d >= 0 && d < time.Hour {
		v.m.visibility.Observe(d.Seconds())
	}
	return nil
}

func (v *View) markApplied(topic string, partition int, offset int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.applied[topic]
	if m == nil {
		m = map[int]int64{}
		v.applied[topic] = m
	}
	if offset+1 > m[partition] {
		m[partition] = offset + 1
	}
}

// covers reports whether every record below ends is applied.
func (v *View) covers(ends map[string]map[int]int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for t, parts := range ends {
		for p, end := range parts {
			if end > 0 && v.applied[t][p] < end {
				return false
			}
		}
	}
	return true
}

// probeFailuresToWarn is how many probes in a row must fail before a
// warning (at the default interval, 100 ms of failure).
const probeFailuresToWarn = 5

// probe reads the end offsets every ProbeInterval and moves the view's
// freshness to the time of the newest probe it has caught up with.
func (v *View) probe(ctx context.Context, p *stream.OffsetProbe) {
	type pending struct {
		at   time.Time
		ends map[string]map[int]int64
	}
	var waiting []pending
	t := time.NewTicker(v.o.ProbeInterval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := v.o.Clock()
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		ends, err := p.End(pctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return // stopping: the broker may already be gone
			}
			// One failed probe is routine (a broker restarting, a leader
			// moving); reads use Redis while it lasts either way. A warning
			// is for a failure that persists.
			if failures++; failures == probeFailuresToWarn || failures%(100*probeFailuresToWarn) == 0 {
				v.log.Warn("catalog view: reading the end offsets keeps failing (reads use Redis meanwhile)", "err", err, "failures", failures)
			}
		} else {
			if failures >= probeFailuresToWarn {
				v.log.Info("catalog view: end offsets read again", "failures", failures)
			}
			failures = 0
			waiting = append(waiting, pending{at: at, ends: ends})
		}
		// The newest probe caught up with wins; older ones go with it.
		for i := len(waiting) - 1; i >= 0; i-- {
			if v.covers(waiting[i].ends) {
				v.fresh.Store(waiting[i].at.UnixNano())
				waiting = waiting[i+1:]
				break
			}
		}
		// Bound the backlog of a view that cannot keep up: it is stale
		// anyway, and the oldest probes matter least.
		if len(waiting) > 256 {
			waiting = waiting[len(waiting)-256:]
		}
	}
}

// reads is where a reseller read's batch goes: the view when the Store has
// one and it is fresh, else Redis.
func (s *Store) reads() kvBatch {
	if v := s.view; v != nil {
		if v.Fresh() {
			v.m.fromMemory.Inc()
			return v.kv.batch()
		}
		v.m.fromRedis.Inc()
	}
	return newRedisBatch(s.rdb)
}

package dispatcher_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/dispatcher"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// These tests push thousands of deliveries through a real redis-server;
// they do not run in parallel with the rest, whose timings they would
// skew on a small machine.

// busySink wraps a sink's answers with a delay and counts the requests in
// flight (the most seen at once).
type busySink struct {
	inflight, most atomic.Int64
}

func (b *busySink) around(delay func(id string) time.Duration, status func(id string, nth int) int) func(string, int) (int, http.Header) {
	return func(id string, nth int) (int, http.Header) {
		n := b.inflight.Add(1)
		for {
			m := b.most.Load()
			if n <= m || b.most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(delay(id))
		b.inflight.Add(-1)
		return status(id, nth), nil
	}
}

// deliveredOrder is the order in which ids were first answered 2xx.
func deliveredOrder(s *sink) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s.requests() {
		if r.status >= 200 && r.status < 300 && !seen[r.id] {
			seen[r.id] = true
			out = append(out, r.id)
		}
	}
	return out
}

// checkEntityOrder fails unless, for every entity, its notifications were
// delivered in the order they were published.
func checkEntityOrder(t *testing.T, order []string, entities map[string][]string) {
	t.Helper()
	pos := make(map[string]int, len(order))
	for i, id := range order {
		pos[id] = i
	}
	for ent, ids := range entities {
		for i := 1; i < len(ids); i++ {
			a, okA := pos[ids[i-1]]
			b, okB := pos[ids[i]]
			if !okA || !okB {
				t.Fatalf("entity %s: notification %d or %d not delivered", ent, i-1, i)
			}
			if a > b {
				t.Fatalf("entity %s: notification %d delivered after notification %d", ent, i-1, i)
			}
		}
	}
}

// TestDispatcher_KeepsEachEntitysOrderUnderConcurrencyAndRetries: many
// entities in flight at once, answers of random speed, the first attempt
// of some notifications refused: every entity's notifications still arrive
// in their order, and different entities do overlap.
func TestDispatcher_KeepsEachEntitysOrderUnderConcurrencyAndRetries(t *testing.T) {
	e := newRealEnv(t)
	var mu sync.Mutex
	refuseFirst := map[string]bool{}
	bs := &busySink{}
	s := newSink(t, bs.around(
		func(string) time.Duration { return time.Duration(rand.IntN(3000)) * time.Microsecond },
		func(id string, nth int) int {
			mu.Lock()
			defer mu.Unlock()
			if refuseFirst[id] && nth == 1 {
				return 503
			}
			return 200
		}))
	e.subs.setRule("sub", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	e.start(func(o *dispatcher.Options) {
		o.LaneConcurrency = 16
		o.Schedule = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}
	})
	const entities, each = 40, 5
	byEntity := map[string][]string{}
	var all []schemas.Notification
	for round := range each {
		for k := range entities {
			n := note("sub", schemas.TypeRate, fmt.Sprintf("E%02d", k))
			n.Supplier = fmt.Sprintf("S%d", k%4)
			if (round+k)%7 == 0 {
				mu.Lock()
				refuseFirst[n.ID] = true
				mu.Unlock()
			}
			byEntity[n.EntityKey] = append(byEntity[n.EntityKey], n.ID)
			all = append(all, n)
		}
	}
	e.publish(all...)
	testharness.Eventually(t, 30*time.Second, "all delivered", func() bool { return len(s.deliveredIDs()) == len(all) })
	checkEntityOrder(t, deliveredOrder(s), byEntity)
	if m := bs.most.Load(); m < 2 {
		t.Errorf("at most %d request in flight: entities did not proceed in parallel", m)
	}
	if m := bs.most.Load(); m > 16 {
		t.Errorf("%d requests in flight, more than LaneConcurrency 16", m)
	}
}

// TestDispatcher_KeepsEachEntitysOrderAcrossARestart: a dispatcher stopped
// while an entity's notifications are queued, and another started on the
// same schedule, still delivers each entity's notifications in order.
func TestDispatcher_KeepsEachEntitysOrderAcrossARestart(t *testing.T) {
	e := newRealEnv(t)
	bs := &busySink{}
	s := newSink(t, bs.around(func(string) time.Duration { return 2 * time.Millisecond },
		func(string, int) int { return 200 }))
	e.subs.setRule("sub", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	opt := func(o *dispatcher.Options) { o.LaneConcurrency = 4 }
	first := e.start(opt)
	byEntity := map[string][]string{}
	var all []schemas.Notification
	for round := range 20 {
		for k := range 10 {
			n := note("sub", schemas.TypeRate, fmt.Sprintf("E%d", k))
			_ = round
			byEntity[n.EntityKey] = append(byEntity[n.EntityKey], n.ID)
			all = append(all, n)
		}
	}
	e.publish(all...)
	testharness.Eventually(t, 15*time.Second, "some delivered", func() bool { return len(s.deliveredIDs()) >= 20 })
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	if got := len(s.deliveredIDs()); got == len(all) {
		t.Fatalf("all %d delivered before the stop: the restart proves nothing", got)
	}
	e.start(opt)
	testharness.Eventually(t, 30*time.Second, "all delivered after the restart", func() bool { return len(s.deliveredIDs()) == len(all) })
	checkEntityOrder(t, deliveredOrder(s), byEntity)
}

// TestDispatcher_AFloodFromOneSupplierDoesNotHoldUpAnother: fairness within
// one subscriber. Supplier A floods 6,000 notifications; a notification of
// supplier B published afterwards is delivered within a few rounds of the
// lane (bounded by LaneConcurrency), not behind A's flood, and the
// subscriber, which answers, is not disabled.
func TestDispatcher_AFloodFromOneSupplierDoesNotHoldUpAnother(t *testing.T) {
	e := newRealEnv(t)
	bs := &busySink{}
	s := newSink(t, bs.around(func(string) time.Duration { return time.Millisecond }, func(string, int) int { return 200 }))
	e.subs.setRule("res", schemas.TypeAvailability, rule{url: s.url("/a"), key: "k"})
	const conc = 4
	r := e.start(func(o *dispatcher.Options) {
		o.LaneConcurrency = conc
		o.BacklogLimit = 100 // far below the flood: a healthy subscriber is not disabled for it
	})
	var flood []schemas.Notification
	for i := range 6000 {
		n := note("res", schemas.TypeAvailability, fmt.Sprintf("A/p/r%d", i))
		n.Supplier = "A"
		flood = append(flood, n)
	}
	e.publish(flood...)
	// The whole flood taken in (the intake is FIFO per subscriber, as
	// the notifications topic is): from here on only the lane decides.
	testharness.Eventually(t, 30*time.Second, "the flood taken in", func() bool {
		return testharness.MetricValue(t, r.reg, "switchback_dispatcher_intake_total", map[string]string{"result": "scheduled"}) >= float64(len(flood))
	})
	before := len(s.requests())
	var calm []schemas.Notification
	for i := range 3 {
		n := note("res", schemas.TypeAvailability, fmt.Sprintf("B/p/r%d", i))
		n.Supplier = "B"
		calm = append(calm, n)
	}
	e.publish(calm...)
	testharness.Eventually(t, 30*time.Second, "B delivered", func() bool {
		got := s.deliveredIDs()
		for _, n := range calm {
			if got[n.ID] == 0 {
				return false
			}
		}
		return true
	})
	order := deliveredOrder(s)
	last := 0
	for _, n := range calm {
		last = max(last, slices.Index(order, n.ID))
	}
	// Between B's publish and its delivery only what the intake and one
	// claim round take (B is first at the next claim: its source was
	// never served), not A's queue.
	queued := len(flood) - before // A's, when B was published
	waited := last - before
	t.Logf("B delivered %d requests after it was published, when %d of A's %d were queued", waited, queued, len(flood))
	if queued < 1000 {
		t.Fatalf("only %d of A's flood were queued when B was published: the test proves nothing", queued)
	}
	if waited > queued/4 {
		t.Errorf("B waited for %d of A's %d queued notifications: not fair", waited, queued)
	}
	if got := e.subs.disableCallsOf("res"); got != 0 {
		t.Errorf("a subscriber answering 200 was disabled %d times", got)
	}
}

// TestDispatcher_HealthySubscriberBehindTheBoundIsNeverDisabled: the
// backlog bound disables a failing subscriber only (spec doc 1: "all
// notifications are in a retry state"); one that answers 2xx but is behind
// (here: one request at a time, each slow) keeps everything.
func TestDispatcher_HealthySubscriberBehindTheBoundIsNeverDisabled(t *testing.T) {
	e := newRealEnv(t)
	bs := &busySink{}
	s := newSink(t, bs.around(func(string) time.Duration { return 3 * time.Millisecond }, func(string, int) int { return 200 }))
	e.subs.setRule("slow", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	r := e.start(func(o *dispatcher.Options) {
		o.BacklogLimit = 5
		o.LaneConcurrency = 1
	})
	var ns []schemas.Notification
	for i := range 200 {
		ns = append(ns, note("slow", schemas.TypeRate, fmt.Sprintf("R%d", i)))
	}
	e.publish(ns...)
	testharness.Eventually(t, 15*time.Second, "the backlog is past the bound", func() bool {
		return testharness.MetricValue(t, r.reg, "switchback_dispatcher_subscribers_past_bound", nil) >= 1
	})
	testharness.Eventually(t, 30*time.Second, "all delivered", func() bool { return len(s.deliveredIDs()) == len(ns) })
	if got := e.subs.disableCallsOf("slow"); got != 0 {
		t.Errorf("DisableAll called %d times for a subscriber answering 200", got)
	}
	if sup := e.suppressed(); len(sup) != 0 {
		t.Errorf("%d notifications suppressed", len(sup))
	}
}

// TestDispatcher_HoldsAtMostLaneConcurrencyWhateverTheBacklog: the memory
// bound. Whatever a subscriber's backlog, the process holds at most
// LaneConcurrency of its deliveries (in flight) plus one intake batch; the
// rest waits in Redis (and Kafka). A subscriber whose endpoint hangs: the
// requests in flight stop at the bound while the backlog is all there.
func TestDispatcher_HoldsAtMostLaneConcurrencyWhateverTheBacklog(t *testing.T) {
	e := newRealEnv(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	unhang := func() { releaseOnce.Do(func() { close(release) }) }
	bs := &busySink{}
	s := newSink(t, bs.around(func(string) time.Duration { <-release; return 0 }, func(string, int) int { return 200 }))
	t.Cleanup(unhang) // before the sink's cleanup: a failed test does not hang on it
	e.subs.setRule("hang", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	const conc = 8
	r := e.start(func(o *dispatcher.Options) {
		o.LaneConcurrency = conc
		// The hanging requests must not time out during the test: a
		// timed-out one frees its slot (and is retried), as it should.
		o.Sender = webhook.NewSender(webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true, Timeout: time.Minute}), nil)
		o.Lease = 2 * time.Minute
	})
	var ns []schemas.Notification
	for i := range 1000 {
		ns = append(ns, note("hang", schemas.TypeRate, fmt.Sprintf("R%d", i)))
	}
	e.publish(ns...)
	testharness.Eventually(t, 15*time.Second, "the lane is full", func() bool { return bs.inflight.Load() == conc })
	testharness.Eventually(t, 15*time.Second, "the whole backlog is in the schedule", func() bool {
		return testharness.MetricValue(t, r.reg, "switchback_dispatcher_backlog", nil) == float64(len(ns))
	})
	if got := bs.most.Load(); got != conc {
		t.Errorf("%d requests in flight at most, want exactly LaneConcurrency %d", got, conc)
	}
	if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_inflight", nil); got > conc {
		t.Errorf("inflight gauge %v above %d", got, conc)
	}
	// The lane claims ahead of its sends, 3x its concurrency at most; the
	// rest of the backlog stays in Redis.
	testharness.Eventually(t, 15*time.Second, "the lane has claimed ahead", func() bool {
		return testharness.MetricValue(t, r.reg, "switchback_dispatcher_claimed_ahead", nil) == 3*conc
	})
	for range 20 {
		if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_claimed_ahead", nil); got > 3*conc {
			t.Fatalf("claimed ahead %v, more than 3x the concurrency %d", got, conc)
		}
		time.Sleep(10 * time.Millisecond)
	}
	unhang()
	testharness.Eventually(t, 30*time.Second, "all delivered", func() bool { return len(s.deliveredIDs()) == len(ns) })
}

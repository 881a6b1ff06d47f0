package httpapi_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// costlyRoute registers GET /registry/v1.1/deliveries as a costly route
// whose handler waits on release (a ClickHouse scan that takes as long as
// the test wants) and records how many run at once.
type costlyRoute struct {
	release         chan struct{}
	running, maxRun atomic.Int64
	calls           atomic.Int64
}

func (c *costlyRoute) register(s *httpapi.Server) {
	s.Group(httpapi.BaseRegistryV11).HandleCostly(http.MethodGet, "/deliveries", nil, func(r *httpapi.Request) error {
		n := c.running.Add(1)
		defer c.running.Add(-1)
		for m := c.maxRun.Load(); n > m && !c.maxRun.CompareAndSwap(m, n); m = c.maxRun.Load() {
		}
		c.calls.Add(1)
		if c.release != nil {
			<-c.release
		}
		return r.JSON(http.StatusOK, map[string]bool{"ok": true})
	})
}

// TestCostly_AFloodOfHistoryByOneKeyIs429WhileOthersProceed: issue 18's
// finding 6. One key floods the history route from many connections while
// every scan is slow: only its share runs (CostlyPerKey), the rest is 429
// with Retry-After at once; another key's history request still gets a
// slot and its ordinary reads are answered meanwhile.
func TestCostly_AFloodOfHistoryByOneKeyIs429WhileOthersProceed(t *testing.T) {
	route := &costlyRoute{release: make(chan struct{})}
	e := startLimited(t, httpapi.Options{RateLimit: 1000, RateBurst: 1000, CostlyRateLimit: 1000, CostlyRateBurst: 1000,
		CostlyPerKey: 2, CostlyTotal: 3}, route.register)

	const flood = 12
	var wg sync.WaitGroup
	statuses := make(chan response, flood)
	for range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- e.get(t, "127.0.0.2", "/registry/v1.1/deliveries", &e.a)
		}()
	}
	// The refused ones come back while the admitted ones wait.
	refused := 0
	for refused < flood-2 {
		r := <-statuses
		if r.status != http.StatusTooManyRequests {
			t.Fatalf("a request of the flood answered %d while the scans were held: %s", r.status, r.body)
		}
		if r.header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		mustErrorObject(t, r, http.StatusTooManyRequests, apierror.RateLimited)
		refused++
	}
	waitFor(t, func() bool { return route.running.Load() == 2 })

	// Another key: its history request takes the last slot, its reads
	// are answered at once.
	bDone := make(chan response, 1)
	go func() { bDone <- e.get(t, "127.0.0.3", "/registry/v1.1/deliveries", &e.b) }()
	waitFor(t, func() bool { return route.running.Load() == 3 })
	for range 5 {
		if r := e.get(t, "127.0.0.3", "/v1.3/items/1", &e.b); r.status != http.StatusOK {
			t.Fatalf("B's read during A's flood: %d %s", r.status, r.body)
		}
	}
	// The whole is full now: even B's next history request waits its turn.
	if r := e.get(t, "127.0.0.3", "/registry/v1.1/deliveries", &e.b); r.status != http.StatusTooManyRequests {
		t.Fatalf("a history request past the total bound: %d, want 429", r.status)
	}
	close(route.release)
	wg.Wait()
	if r := <-bDone; r.status != http.StatusOK {
		t.Fatalf("B's history request: %d %s", r.status, r.body)
	}
	for range 2 {
		if r := <-statuses; r.status != http.StatusOK {
			t.Fatalf("an admitted request of A: %d", r.status)
		}
	}
	if m := route.maxRun.Load(); m != 3 {
		t.Fatalf("at most %d scans ran at once, want 3 (A's 2 and B's 1)", m)
	}
	// Slots are given back: A is admitted again.
	if r := e.get(t, "127.0.0.2", "/registry/v1.1/deliveries", &e.a); r.status != http.StatusOK {
		t.Fatalf("A after its scans ended: %d", r.status)
	}
}

// TestCostly_HistoryHasItsOwnSmallerBudget: with the clock frozen, a key
// gets exactly its costly burst of history requests; past it 429, while
// its ordinary requests still draw on the general bucket, and another
// key's history budget is untouched. The clock moving on refills it.
func TestCostly_HistoryHasItsOwnSmallerBudget(t *testing.T) {
	route := &costlyRoute{}
	e := startLimited(t, httpapi.Options{RateLimit: 1000, RateBurst: 1000, CostlyRateLimit: 2, CostlyRateBurst: 4}, route.register)
	admitted := 0
	for range 20 {
		switch r := e.get(t, "", "/registry/v1.1/deliveries", &e.a); r.status {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("history request: %d %s", r.status, r.body)
		}
	}
	if admitted != 4 {
		t.Fatalf("%d history requests admitted at one instant, want the costly burst, 4", admitted)
	}
	if r := e.get(t, "", "/v1.3/items/1", &e.a); r.status != http.StatusOK {
		t.Fatalf("A's ordinary read after its history budget ran out: %d", r.status)
	}
	if r := e.get(t, "", "/registry/v1.1/deliveries", &e.b); r.status != http.StatusOK {
		t.Fatalf("B's history request: %d", r.status)
	}
	e.clock.Advance(time.Second) // two tokens at 2/s
	for i := range 3 {
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if r := e.get(t, "", "/registry/v1.1/deliveries", &e.a); r.status != want {
			t.Fatalf("request %d after a second: %d, want %d", i, r.status, want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

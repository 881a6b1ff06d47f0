// Package availcachetest is the availability cache's test fixture, shared
// by the cache's own tests (internal/availcache) and the reseller reads'
// (query/availapi): a settable clock, a catalog of one partner
// supplier, the partner simulator and a Redis of the test's own.
//
// It builds no availcache.Service (the cache's internal tests could not
// import a package that imports it), and no partner client (that is
// ingest/partner, a stage, which nothing under internal/ imports outside
// tests): each test wires those two lines itself.
package availcachetest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
)

// AllowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var AllowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

// T0 is where every Clock starts.
var T0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// Clock is a settable test clock.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock at T0.
func NewClock() *Clock { c := &Clock{}; c.ns.Store(T0.UnixNano()); return c }

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Add moves the clock on.
func (c *Clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// Catalog is the cache's view of the catalog: supplier S1 (a partner at
// URL) with product P1 whose rates R1 and R2 are bound to chan-a, and R3
// bound to chan-c only.
type Catalog struct{ URL string }

// AppendRates appends the rates of pid that channel sells.
func (f Catalog) AppendRates(_ context.Context, dst []byte, channel, sid, pid string, _ time.Time) ([]byte, error) {
	if channel == "chan-c" && sid == "S1" && pid == "P1" {
		return append(dst, `[{"id":"R3"}]`...), nil
	}
	if channel != "chan-a" || sid != "S1" || pid != "P1" {
		return dst, fmt.Errorf("product %s: %w", pid, catalog.ErrNotFound)
	}
	return append(dst, `[{"id":"R1","prices":[{"id":"x"}]},{"id":"R2"}]`...), nil
}

// Supplier is S1 to the system scope, nothing to anyone else.
func (f Catalog) Supplier(_ context.Context, sc catalog.Scope, sid string) (catalog.Supplier, error) {
	if sid != "S1" || !sc.All() {
		return catalog.Supplier{}, catalog.ErrNotFound
	}
	var s catalog.Supplier
	s.ID = "S1"
	s.Connection = catalog.Connection{Kind: catalog.ConnectionPartner, BaseURL: f.URL,
		Credentials: catalog.Credentials{APIKey: "k", APISecret: "s"}}
	return s, nil
}

// Availabilities: S1 is a partner supplier, no operator pushes any.
func (f Catalog) Availabilities(context.Context, catalog.Scope, string, string, string) (catalog.AvailabilitySet, error) {
	return catalog.AvailabilitySet{}, catalog.ErrNotFound
}

// Env is one test's world: its clock, the partner simulator serving S1
// (key "k", secret "s"), the catalog pointing at it, a Redis and a
// recording publisher.
type Env struct {
	Clock *Clock
	Sim   *partnersim.Server
	Redis redis.UniversalClient
	Pub   *catalogtest.Recorder
	Cat   Catalog
}

// NewEnv starts the simulator and a Redis for t; both stop with it.
func NewEnv(t *testing.T) *Env {
	t.Helper()
	e := &Env{Clock: NewClock(), Pub: &catalogtest.Recorder{}}
	e.Sim = partnersim.New(partnersim.Config{APIKey: "k", APISecret: "s", Clock: e.Clock.Now,
		Rates: map[string][]string{"P1": {"R1", "R2", "R3"}}})
	ts := httptest.NewServer(e.Sim)
	t.Cleanup(ts.Close)
	e.Cat = Catalog{URL: ts.URL}
	e.Redis = testharness.RedisClient(t, 0)
	return e
}

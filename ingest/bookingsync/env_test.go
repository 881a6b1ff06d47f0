package bookingsync

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// allowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var allowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

func TestMain(m *testing.M) { testharness.Main(m) }

const (
	simKey = "bs-key-5f0c-never-shown"
	sid    = "S1"
)

var ctx = context.Background()

// t0 is the tests' "now": a Sunday morning in UTC.
var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// clock is a settable clock shared by the simulator and the package.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock     { c := &clock{}; c.ns.Store(t.UnixNano()); return c }
func (c *clock) now() time.Time       { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) add(d time.Duration)  { c.ns.Add(int64(d)) }
func (c *clock) set(t time.Time)      { c.ns.Store(t.UnixNano()) }
func (c *clock) today(n int) string   { return c.now().AddDate(0, 0, n).Format(time.DateOnly) }
func (c *clock) date(n int) time.Time { d, _ := time.Parse(time.DateOnly, c.today(n)); return d }

// call is one request the booking system received.
type call struct {
	Method, Path string
	Query        map[string]string
}

// faultFunc answers a request in place of the simulator (a status, 0 to
// let it through).
type faultFunc func(r *http.Request) int

// rewriteFunc changes the simulator's decoded JSON answer (a misbehaving
// booking system).
type rewriteFunc func(r *http.Request, body any) any

// env is a real catalog (redis-server, the store publishing to a
// recorder) with supplier S1 connected to a simulated booking system.
type env struct {
	*catalogtest.Env
	sim   *bookingsim.Server
	url   string
	clock *clock
	bsc   *bookingsystem.Client
	reg   *prometheus.Registry

	mu      sync.Mutex
	calls   []call
	fault   faultFunc
	rewrite rewriteFunc
}

type envOptions struct {
	sim     bookingsim.Config
	dialect string // catalog connection kind: "bookingsystem" (default) or "octo"
	kafka   bool
}

func start(t *testing.T, o envOptions) *env {
	t.Helper()
	e := &env{clock: newClock(t0), reg: prometheus.NewRegistry()}
	cfg := o.sim
	cfg.APIKey, cfg.Clock = simKey, e.clock.now
	if cfg.Suppliers == 0 {
		cfg.Suppliers = 1
	}
	if o.dialect == catalog.ConnectionOCTO {
		cfg.Dialect = bookingsim.DialectOCTO
	}
	e.sim = bookingsim.New(cfg)
	ts := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(ts.Close)
	e.url = ts.URL
	e.Env = catalogtest.Start(t, catalogtest.Options{Kafka: o.kafka})
	kind, base := catalog.ConnectionBookingSystem, ts.URL
	if o.dialect == catalog.ConnectionOCTO {
		kind, base = catalog.ConnectionOCTO, ts.URL+"/"+sid
	}
	if _, err := e.Store.CreateSupplier(ctx, catalog.SystemScope(), catalog.SupplierInput{
		SupplierData: catalog.SupplierData{ID: sid, Name: "Sim Tours", Code: "SIM"},
		Connection:   &catalog.ConnectionInput{Kind: kind, BaseURL: base, Credentials: &catalog.CredentialsInput{BearerToken: simKey}},
	}); err != nil {
		t.Fatal(err)
	}
	e.bsc = bookingsystem.NewClient(bookingsystem.Options{Outbound: allowLoopback, Registerer: e.reg, BreakerFailures: 1000})
	if e.Rec != nil {
		e.Rec.Reset()
	}
	return e
}

// serve records the call, applies the fault and the rewrite, else lets
// the simulator answer.
func (e *env) serve(w http.ResponseWriter, r *http.Request) {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	e.mu.Lock()
	e.calls = append(e.calls, call{r.Method, r.URL.Path, q})
	fault, rewrite := e.fault, e.rewrite
	e.mu.Unlock()
	if fault != nil {
		if st := fault(r); st != 0 {
			http.Error(w, `{"error":"INTERNAL_SERVER_ERROR"}`, st)
			return
		}
	}
	testharness.ServeRewritten(w, r, e.sim, rewrite)
}

func (e *env) setFault(f faultFunc)     { e.mu.Lock(); e.fault = f; e.mu.Unlock() }
func (e *env) setRewrite(f rewriteFunc) { e.mu.Lock(); e.rewrite = f; e.mu.Unlock() }

// takeCalls returns the calls since the last take.
func (e *env) takeCalls() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.calls
	e.calls = nil
	return out
}

// availabilityCalls are the GET availability calls among cs (v2 dialect).
func availabilityCalls(cs []call) []call {
	var out []call
	for _, c := range cs {
		if c.Method == http.MethodGet && strings.HasSuffix(c.Path, "/availability") {
			out = append(out, c)
		}
	}
	return out
}

// syncer builds a Syncer on the env, with a schedule when sch is set.
func (e *env) syncer(sch *Schedule) *Syncer {
	return New(Options{Catalog: e.Store, Client: e.bsc, Schedule: sch, Clock: e.clock.now, Logger: e.Logger, Registerer: e.reg,
		LockWait: 200 * time.Millisecond})
}

// schedule is a Schedule on the env's Redis.
func (e *env) schedule(horizon int) *Schedule {
	return NewSchedule(ScheduleOptions{Redis: e.Redis, HorizonDays: horizon})
}

// published is the number of records the catalog published since the
// last reset, and resets.
func (e *env) published() int {
	n := len(e.Rec.Messages())
	e.Rec.Reset()
	return n
}

func (e *env) availabilities(t *testing.T, pid, rid string) []catalog.Availability {
	t.Helper()
	set, err := e.Store.Availabilities(ctx, catalog.SystemScope(), sid, pid, rid)
	if err != nil {
		t.Fatal(err)
	}
	return set.Availabilities
}

func (e *env) product(t *testing.T, pid string) catalog.Product {
	t.Helper()
	p, err := e.Store.Product(ctx, catalog.SystemScope(), sid, pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// noSecret fails when the simulator's key shows in s.
func noSecret(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, simKey) || strings.Contains(s, "Bearer ") {
		t.Fatalf("%s shows a credential: %s", what, s)
	}
}

// mapAvailabilities rewrites every availability object of an answer.
func mapAvailabilities(body any, f func(a map[string]any)) any {
	if list, ok := body.([]any); ok {
		for _, x := range list {
			if a, ok := x.(map[string]any); ok {
				f(a)
			}
		}
	}
	return body
}

func jsonString(v any) string {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	return b.String()
}

// counter is the value of a counter or gauge.
func counter(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	case d.Histogram != nil:
		return float64(d.Histogram.GetSampleCount())
	}
	return 0
}

// seed writes the booking system's products and options into the catalog
// without reading any availability (what a schedule starts from).
func (e *env) seed(t *testing.T) {
	t.Helper()
	sy := e.syncer(nil)
	sup, conn, err := sy.resolve(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	prods, _, err := e.bsc.Products(ctx, conn, sid, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := sy.newMerge(sup)
	if err := m.loadProducts(ctx); err != nil {
		t.Fatal(err)
	}
	ls, err := m.upsertProducts(ctx, prods)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if _, _, err := m.upsertOptions(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.errs) > 0 {
		t.Fatal(m.errs)
	}
	e.takeCalls()
	e.Rec.Reset()
}

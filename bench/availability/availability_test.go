// Package availability benchmarks the availability read path and the
// snapshot diff:
//
//   - warm-cache reseller reads (GET .../availabilities and
//     .../availability) over fasthttp with the real catalog and a real
//     redis-server, next to the fasthttp static-response ceiling measured
//     by the same client at the same concurrency in the same run;
//
//   - snapshot diffs per second through processors/availchange.Diff.
//
//     go test -run '^$' -bench . -benchtime 3s ./bench/availability/
package availability

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/views"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/processors/availchange"
	"github.com/switchbackhq/switchback/query/availapi"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

// allowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var allowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

// Concurrency is the number of client connections (and goroutines).
const Concurrency = 64

var staticBody = []byte(`{"meta":{"reqId":"00000000-0000-4000-8000-000000000000"},"supplier":{"id":"s1","name":"Static","code":"S1","version":1,"partnerId":"p-S1","title":"A static response of two hundred bytes, pad"}}`)

// run sends b.N GETs from Concurrency goroutines; reports req/s and p99.
func run(b *testing.B, addr string, cred catalogtest.Cred, path string) {
	b.Helper()
	hc := &fasthttp.HostClient{Addr: addr, MaxConns: Concurrency, MaxIdleConnDuration: time.Minute}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, Concurrency)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range Concurrency {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			mine := make([]time.Duration, 0, b.N/Concurrency+1)
			for {
				if int(next.Add(1)) > b.N {
					break
				}
				req.Reset()
				req.SetRequestURI("http://" + addr + path)
				req.Header.Set(httpapi.HeaderAPIKey, cred.Key)
				req.Header.Set(httpapi.HeaderAPISecret, cred.Secret)
				t := time.Now()
				err := hc.Do(req, resp)
				mine = append(mine, time.Since(t))
				if err != nil || resp.StatusCode() != 200 {
					if failed.Add(1) == 1 {
						firstErr.Store(fmt.Sprintf("%v status %d %s", err, resp.StatusCode(), resp.Body()))
					}
				}
			}
			lat[w] = mine
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed; first: %v", n, b.N, firstErr.Load())
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

func staticServer(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(staticBody)
	}}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// lazyCatalog lets the availability routes be registered before the
// catalog store exists (catalogtest builds both in Start).
type lazyCatalog struct {
	st *atomic.Pointer[catalogredis.Store]
}

func (l lazyCatalog) AppendRates(ctx context.Context, dst []byte, ch, sid, pid string, now time.Time) ([]byte, error) {
	return l.st.Load().AppendRates(ctx, dst, ch, sid, pid, now)
}
func (l lazyCatalog) Supplier(ctx context.Context, sc catalog.Scope, sid string) (catalog.Supplier, error) {
	return l.st.Load().Supplier(ctx, sc, sid)
}
func (l lazyCatalog) Availabilities(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.AvailabilitySet, error) {
	return l.st.Load().Availabilities(ctx, sc, sid, pid, rid)
}

func BenchmarkAvailabilityReads(b *testing.B) {
	sim := partnersim.New(partnersim.Config{APIKey: "k", APISecret: "s", Rates: map[string][]string{"p1": {"r1", "r2", "r3"}}})
	ts := httptest.NewServer(sim)
	b.Cleanup(ts.Close)
	var st atomic.Pointer[catalogredis.Store]
	var svc *availcache.Service
	var rec catalogtest.Recorder
	e := querytest.Start(b, querytest.Options{Quiet: true, Routes: func(s *httpapi.Server) {
		s.Handle("GET", "/v1.2/static", nil, func(r *httpapi.Request) error {
			r.Ctx.SetContentType("application/json")
			r.Ctx.SetBody(staticBody)
			return nil
		})
	}})
	st.Store(e.Store)
	svc = availcache.New(availcache.Options{Redis: e.Redis, Catalog: lazyCatalog{&st}, Partner: partner.NewClient(partner.Options{Outbound: allowLoopback}), Publisher: &rec})
	// A second server with the availability routes, same principals, and
	// the Redis views guard as cmd/switchback/internal/app wires it (its marker set: the
	// views are complete, so a found answer costs no Redis round trip).
	guard := views.New(views.Options{})
	guard.Bind(e.Redis)
	if err := guard.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	srv := httpapi.New(httpapi.Options{Principals: e.Principals, Views: guard})
	availapi.Register(srv, svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })

	e.Must(b, 201, "POST", querytest.Ch+"/supplier", e.Operator,
		strings.Replace(catalogtest.SupplierBody("s1", "Supplier", "C1", "k", "s"), "https://partner.example.com/api/", ts.URL, 1))
	e.Must(b, 201, "POST", querytest.Ch+"/suppliers/s1/products", e.Operator, catalogtest.ProductBody("p1", "Tour", "d"))
	e.Must(b, 200, "POST", querytest.Ch+"/bulk/suppliers/s1/products/p1/rates", e.Operator,
		`{"rates":[`+catalogtest.RateBody("r1", "A")+`,`+catalogtest.RateBody("r2", "B")+`,`+catalogtest.RateBody("r3", "C")+`]}`)
	e.Must(b, 201, "POST", querytest.Ch+"/suppliers/s1/products/p1/channels/chan-a", e.Operator, `{"rateIds":["r1","r2"]}`)

	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	q := "?start=" + day.Format(time.RFC3339) + "&end=" + day.AddDate(0, 0, 2).Format(time.RFC3339)
	list := "/v1.2/suppliers/s1/products/p1/availabilities" + q
	one := "/v1.2/suppliers/s1/products/p1/availability?at=" + day.Add(9*time.Hour+30*time.Minute).Format(time.RFC3339) + "&qty=1&rate_id=r1"
	addr := ln.Addr().String()
	for _, p := range []string{list, list + "&rate_id=r1", one} { // warm the cache
		run(&testing.B{N: 1}, addr, e.Reseller1, p)
	}
	calls := sim.Calls()
	static := staticServer(b)
	b.Run("ceiling-fasthttp-static-200B", func(b *testing.B) { run(b, static, e.Reseller1, "/static") })
	b.Run("availabilities-2-rates", func(b *testing.B) { run(b, addr, e.Reseller1, list) })
	b.Run("availabilities-rate_id", func(b *testing.B) { run(b, addr, e.Reseller1, list+"&rate_id=r1") })
	b.Run("availability-at-qty", func(b *testing.B) { run(b, addr, e.Reseller1, one) })
	// The ceiling again: the machine is shared, a drift shows here.
	b.Run("ceiling-again", func(b *testing.B) { run(b, static, e.Reseller1, "/static") })
	if sim.Calls() != calls {
		b.Fatalf("warm reads called the partner %d times", sim.Calls()-calls)
	}
}

// BenchmarkSnapshotDiffs: one snapshot of a rate (3 windows a day over 7
// days, one changed) against its state, on every core.
func BenchmarkSnapshotDiffs(b *testing.B) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var prev, snap []availchange.Slot
	for d := range 7 {
		for _, h := range []int{9, 13, 17} {
			s := availchange.Slot{Start: t0.Add(time.Duration(d*24+h) * time.Hour), End: t0.Add(time.Duration(d*24+h+2) * time.Hour), Vacancies: 10}
			prev = append(prev, s)
			snap = append(snap, s)
		}
	}
	snap[4].Vacancies = 2
	st := availchange.State{Slots: prev, Coverage: []availchange.Span{{From: t0, To: t0.AddDate(0, 0, 7)}}}
	scope := availchange.Span{From: t0, To: t0.AddDate(0, 0, 7)}
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			changes, _ := availchange.Diff(st, scope, snap)
			spans := availchange.Coalesce(availchange.Filter(changes, t0, 7, 0), 24*time.Hour)
			if len(spans) != 1 {
				panic("unexpected diff")
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "diffs/s")
}

// Package fullsync benchmarks the scheduled full synchronization of a
// booking-system supplier (ingest/bookingsync.Syncer.SyncSupplier, spec
// doc 3) against the simulated booking system (internal/simulators/bookingsim) with real
// catalog writes: the catalog store publishing to the embedded Kafka
// broker (acks=all) and applying to a real redis-server when one is on
// PATH (internal/platform/testharness), else to miniredis (the log says which).
//
//	go test -run '^$' -bench . -benchtime 3x ./bench/fullsync/
//
// One b.N iteration is one supplier's whole synchronization; products/s
// and availabilities/s are reported as metrics (what was read and
// written per second of the sync), with allocations per sync.
//
//   - cold: a supplier seen for the first time (every product, rate and
//     availability set is created); each iteration syncs another supplier
//     of the simulator.
//   - unchanged: the same supplier again, nothing changed (nothing is
//     published: the cost of reading and comparing).
//   - changing: the same supplier again after the simulator moved 5 % of
//     the slots' capacities (most availability sets change).
package fullsync

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/switchbackhq/switchback/ingest/bookingsync"
	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// allowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var allowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

type bench struct {
	env     *catalogtest.Env
	sim     *bookingsim.Server
	url     string
	clock   atomic.Int64
	syncer  *bookingsync.Syncer
	backend string
	next    int // next supplier number for a cold sync
}

// start runs a catalog on the embedded broker and a real redis-server
// (miniredis when none is installed), and a simulator of `products`
// products with `options` options each, for many suppliers.
func start(b *testing.B, products, options, concurrency int) *bench {
	b.Helper()
	be := &bench{}
	be.clock.Store(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, be.clock.Load()).UTC() }
	be.sim = bookingsim.New(bookingsim.Config{Suppliers: 10000, ProductsPerSupplier: products, OptionsPerProduct: options,
		APIKey: "bench-key", Clock: now, ChangeRate: 0.05, ChangeEvery: time.Hour})
	ts := httptest.NewServer(be.sim)
	b.Cleanup(ts.Close)
	be.url = ts.URL
	opts := catalogtest.Options{Kafka: true, Quiet: true}
	be.backend = "redis-server"
	if _, err := exec.LookPath("redis-server"); err != nil {
		mr := miniredis.RunT(b)
		opts.RedisURL, be.backend = "redis://"+mr.Addr(), "miniredis"
	}
	be.env = catalogtest.Start(b, opts)
	be.syncer = bookingsync.New(bookingsync.Options{Catalog: be.env.Store, Client: bookingsystem.NewClient(bookingsystem.Options{Outbound: allowLoopback}),
		Clock: now, Concurrency: concurrency})
	return be
}

// supplier creates catalog supplier S<n> connected to the simulator.
func (be *bench) supplier(b *testing.B) string {
	b.Helper()
	be.next++
	sid := "S" + strconv.Itoa(be.next)
	if _, err := be.env.Store.CreateSupplier(context.Background(), catalog.SystemScope(), catalog.SupplierInput{
		SupplierData: catalog.SupplierData{ID: sid, Name: "Bench " + sid, Code: sid},
		Connection: &catalog.ConnectionInput{Kind: catalog.ConnectionBookingSystem, BaseURL: be.url,
			Credentials: &catalog.CredentialsInput{BearerToken: "bench-key"}},
	}); err != nil {
		b.Fatal(err)
	}
	return sid
}

// sync runs one full synchronization of sid over days days and fails on
// any error.
func (be *bench) sync(b *testing.B, sid string, days int) (products, availabilities int) {
	b.Helper()
	from := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	res, err := be.syncer.SyncSupplier(context.Background(), sid, from, from.AddDate(0, 0, days))
	if err != nil || len(res.Errors) > 0 {
		b.Fatalf("sync %s: %v %q", sid, err, res.Errors)
	}
	return res.Products, res.Availabilities
}

func report(b *testing.B, products, availabilities int) {
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(products)/s, "products/s")
	b.ReportMetric(float64(availabilities)/s, "availabilities/s")
	b.ReportMetric(float64(availabilities)/float64(b.N), "availabilities/sync")
}

func BenchmarkFullSync(b *testing.B) {
	cases := []struct {
		products, options, days, concurrency int
	}{
		{500, 2, 90, 4},
		{500, 2, 90, 16},
		{2000, 2, 90, 4},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%dx%dx%dd/c%d", c.products, c.options, c.days, c.concurrency)
		b.Run("cold/"+name, func(b *testing.B) {
			be := start(b, c.products, c.options, c.concurrency)
			b.Logf("catalog on %s + embedded Kafka", be.backend)
			sids := make([]string, b.N)
			for i := range sids {
				sids[i] = be.supplier(b)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var p, a int
			for i := 0; i < b.N; i++ {
				np, na := be.sync(b, sids[i], c.days)
				p, a = p+np, a+na
			}
			report(b, p, a)
		})
		if c.concurrency != 4 {
			continue
		}
		b.Run("unchanged/"+name, func(b *testing.B) {
			be := start(b, c.products, c.options, c.concurrency)
			sid := be.supplier(b)
			be.sync(b, sid, c.days)
			b.ReportAllocs()
			b.ResetTimer()
			var p, a int
			for i := 0; i < b.N; i++ {
				np, na := be.sync(b, sid, c.days)
				p, a = p+np, a+na
			}
			report(b, p, a)
		})
		b.Run("changing/"+name, func(b *testing.B) {
			be := start(b, c.products, c.options, c.concurrency)
			sid := be.supplier(b)
			be.sync(b, sid, c.days)
			b.ReportAllocs()
			b.ResetTimer()
			var p, a int
			for i := 0; i < b.N; i++ {
				be.clock.Add(int64(time.Hour)) // the simulator moves 5 % of the slots
				np, na := be.sync(b, sid, c.days)
				p, a = p+np, a+na
			}
			report(b, p, a)
		})
	}
}

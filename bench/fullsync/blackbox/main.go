// Command blackbox is the black-box twin of bench/fullsync: the binary as
// `make run` starts it synchronizes booking-system suppliers it was just
// connected to (the operator's POST /channel/v1.2/suppliers with a
// connection; the cron scheduler's "connected" run picks it up), against
// the simulated booking system (internal/simulators/bookingsim, v2
// dialect) served by this tool on loopback. Each round alternates with the
// ceiling measured in the same run: this tool reading the same amount
// from the simulator with the binary's client and the same concurrency,
// writing nothing (what the booking system alone allows).
//
//	go build -o bin/switchback ./cmd/switchback
//	go run ./bench/fullsync/blackbox -bin bin/switchback -rounds 3
//
// A synchronization's duration is the binary's own
// switchback_cronsync_sync_seconds (sum and count before and after), read
// from its ops listener as an SRE would: the time from the connection to
// the first run (up to the scheduler's 5 s look for new connections) is
// not the synchronization's.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/bench/internal/demoapi"
	"github.com/switchbackhq/switchback/ingest/bookingsync"
	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

type config struct {
	bin                     string
	products, options, days int
	rounds, concurrency     int
	cpuprofile, env         string
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "bin/switchback", "the switchback binary to start")
	flag.IntVar(&c.products, "products", 500, "products per supplier")
	flag.IntVar(&c.options, "options", 2, "options per product")
	flag.IntVar(&c.days, "days", 90, "days synchronized (SWITCHBACK_SYNC_HORIZON_DAYS)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds (the ceiling, then the binary)")
	flag.IntVar(&c.concurrency, "concurrency", 16, "the ceiling's concurrent availability reads (bench/fullsync's c16)")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "save a 10 s CPU profile of the binary, taken from the first round's connection on, here")
	flag.StringVar(&c.env, "env", "", "extra environment for the binary, comma-separated NAME=value (SWITCHBACK_SYNC_CONCURRENCY=16)")
	flag.Parse()
	if err := run(c); err != nil {
		log.Fatal(err)
	}
}

// result is one measured synchronization (or the ceiling's read).
type result struct {
	seconds                  float64
	products, availabilities int
}

func (r result) perSecond() float64 { return float64(r.products) / r.seconds }

func run(c config) error {
	sim := bookingsim.New(bookingsim.Config{Suppliers: 2*c.rounds + 1, ProductsPerSupplier: c.products, OptionsPerProduct: c.options,
		APIKey: "bench-key"})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	dir, err := os.MkdirTemp("", "fullsync-blackbox-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := []string{fmt.Sprintf("SWITCHBACK_SYNC_HORIZON_DAYS=%d", c.days)}
	if c.env != "" {
		env = append(env, strings.Split(c.env, ",")...)
	}
	b, err := demoapi.StartBinary(c.bin, dir, false, env...)
	if err != nil {
		return err
	}
	defer b.Stop()
	client := bookingsystem.NewClient(bookingsystem.Options{Outbound: outbound.Policy{AllowHTTP: true, AllowPrivate: true}})
	conn := bookingsystem.Connection{Endpoint: ts.URL, APIKey: "bench-key"}
	fmt.Printf("full sync, black-box: %d products × %d options × %d days per supplier, %d rounds\n", c.products, c.options, c.days, c.rounds)
	var ceilings, syncs []result
	next := 1
	for round := 1; round <= c.rounds; round++ {
		ceil, err := ceiling(client, conn, fmt.Sprintf("S%d", next), c)
		if err != nil {
			return fmt.Errorf("ceiling: %w", err)
		}
		var profiled sync.WaitGroup
		if round == 1 && c.cpuprofile != "" {
			profiled.Go(func() { saveProfile(b, c.cpuprofile) })
		}
		s, err := syncOne(b, ts.URL, fmt.Sprintf("S%d", next+1))
		profiled.Wait()
		if err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		next += 2
		ceilings, syncs = append(ceilings, ceil), append(syncs, s)
		fmt.Printf("  round %d: ceiling %.0f products/s (%.2f s, %d availabilities)   binary %.0f products/s (%.2f s, %d availabilities)   ratio %.2f\n",
			round, ceil.perSecond(), ceil.seconds, ceil.availabilities, s.perSecond(), s.seconds, s.availabilities, s.perSecond()/ceil.perSecond())
	}
	report(ceilings, syncs)
	if w := b.Warnings(5); len(w) > 0 {
		fmt.Println("binary WARN/ERROR lines:")
		for _, l := range w {
			fmt.Println("  ", l)
		}
	}
	return nil
}

// saveProfile saves a 10 s CPU profile of the binary at path.
func saveProfile(b *demoapi.Binary, path string) {
	p, err := b.Profile(10 * time.Second)
	if err == nil {
		err = os.WriteFile(path, p, 0o644)
	}
	if err != nil {
		log.Printf("cpu profile: %v", err)
	}
}

// ceiling reads supplier sid's products and every option's availability
// over the days, concurrency at a time, as a synchronization reads them,
// and writes nothing.
func ceiling(client *bookingsystem.Client, conn bookingsystem.Connection, sid string, c config) (result, error) {
	ctx := context.Background()
	began := time.Now()
	prods, _, err := client.Products(ctx, conn, sid, bookingsync.Capabilities)
	if err != nil {
		return result{}, err
	}
	type job struct{ p, o int }
	jobs := make(chan job)
	var read atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	from := time.Now().UTC().Format(time.DateOnly)
	until := time.Now().UTC().AddDate(0, 0, c.days).Format(time.DateOnly)
	for range c.concurrency {
		wg.Go(func() {
			for j := range jobs {
				p := prods[j.p]
				as, _, err := client.Availability(ctx, conn, bookingsystem.AvailabilityRequest{SupplierID: sid, ProductID: p.ID,
					OptionID: p.Options[j.o].ID, LocalDateStart: from, LocalDateEnd: until, AvailabilityType: p.AvailabilityType, TimeZone: p.TimeZone})
				if err != nil {
					once.Do(func() { firstErr = err })
				}
				read.Add(int64(len(as)))
			}
		})
	}
	for p := range prods {
		for o := range prods[p].Options {
			jobs <- job{p, o}
		}
	}
	close(jobs)
	wg.Wait()
	return result{seconds: time.Since(began).Seconds(), products: len(prods), availabilities: int(read.Load())}, firstErr
}

// syncOne connects supplier sid to the simulator through the operator API
// and waits for the binary's synchronization of it to finish: its
// duration and what it read from the binary's metrics, its cron report
// checked.
func syncOne(b *demoapi.Binary, endpoint, sid string) (result, error) {
	before, err := demoapi.Scrape(b.Ops)
	if err != nil {
		return result{}, err
	}
	body := fmt.Sprintf(`{"id":%q,"name":"Bench %s","code":%q,"connection":{"kind":"bookingsystem","baseUrl":%q,"credentials":{"bearerToken":"bench-key"}}}`,
		sid, sid, sid, endpoint)
	if status, resp, err := b.Call(demoapi.Operator, "POST", "/channel/v1.2/suppliers", body); err != nil || status != 201 {
		return result{}, fmt.Errorf("create supplier %s: %d %s %v", sid, status, resp, err)
	}
	const count, sum = "switchback_cronsync_sync_seconds_count", "switchback_cronsync_sync_seconds_sum"
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		m, err := demoapi.Scrape(b.Ops)
		if err == nil && m[count] > before[count] {
			if m[count] != before[count]+1 {
				return result{}, fmt.Errorf("%v synchronizations ran meanwhile, want 1", m[count]-before[count])
			}
			if err := cronReport(b, sid); err != nil {
				return result{}, err
			}
			// Where a synchronization's time goes, as an SRE reads it.
			fmt.Printf("    %s: mean per call", sid)
			for _, h := range []string{"switchback_bookingsync_option_refresh_seconds", "switchback_ingest_bookingsystem_seconds", "switchback_stream_produce_seconds"} {
				if n := m[h+"_count"] - before[h+"_count"]; n > 0 {
					fmt.Printf("  %s %.1f ms (%.0f calls)", h, 1000*(m[h+"_sum"]-before[h+"_sum"])/n, n)
				}
			}
			fmt.Println()
			if series, err := demoapi.ScrapeSeries(b.Ops); err == nil {
				var lines []string
				for k, v := range series {
					if strings.HasPrefix(k, "switchback_bookingsync_option_refreshes_total") {
						lines = append(lines, fmt.Sprintf("    %s %.0f (since start)", k, v))
					}
				}
				sort.Strings(lines)
				fmt.Println(strings.Join(lines, "\n"))
			}
			// What the synchronization read, as the binary counts it.
			const prods, avails = "switchback_bookingsync_products_total", "switchback_bookingsync_availabilities_total"
			return result{seconds: m[sum] - before[sum], products: int(m[prods] - before[prods]), availabilities: int(m[avails] - before[avails])}, nil
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("supplier %s: no synchronization within 5 min", sid)
		}
	}
}

// cronReport checks supplier sid's cron report: one, without errors.
func cronReport(b *demoapi.Binary, sid string) error {
	status, body, err := b.Call(demoapi.Operator, "GET", "/operator/v2/cron/reports?externalSystemID="+sid, "")
	if err != nil || status != 200 {
		return fmt.Errorf("cron reports of %s: %d %s %v", sid, status, body, err)
	}
	var reports []struct {
		ErrorCount int `json:"errorCount"`
	}
	if err := json.Unmarshal(body, &reports); err != nil || len(reports) != 1 || reports[0].ErrorCount != 0 {
		return fmt.Errorf("cron reports of %s: %s (%v), want one without errors", sid, body, err)
	}
	return nil
}

func report(ceilings, syncs []result) {
	med := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	ratios := make([]float64, len(syncs))
	for i := range syncs {
		ratios[i] = syncs[i].perSecond() / ceilings[i].perSecond()
	}
	sort.Float64s(ratios)
	fmt.Println()
	fmt.Println("| | products/s (median) | s per sync (median) | min–max products/s |")
	fmt.Println("|---|---|---|---|")
	for _, row := range []struct {
		name string
		rs   []result
	}{{"ceiling (the simulator read, nothing written)", ceilings}, {"binary (cold sync, `make run`)", syncs}} {
		lo, hi := row.rs[0].perSecond(), row.rs[0].perSecond()
		for _, r := range row.rs {
			lo, hi = min(lo, r.perSecond()), max(hi, r.perSecond())
		}
		fmt.Printf("| %s | %.0f | %.2f | %.0f–%.0f |\n", row.name, med(row.rs, result.perSecond), med(row.rs, func(r result) float64 { return r.seconds }), lo, hi)
	}
	fmt.Printf("(binary / ceiling, round by round: median %.2f)\n", ratios[len(ratios)/2])
}

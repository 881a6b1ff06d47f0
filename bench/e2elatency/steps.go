package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/bench/internal/demoapi"
)

// stepResult is one step's figures.
type stepResult struct {
	Asked       int
	SentPerSec  float64
	Sent        int
	Errors      int64
	Waited      int64 // changes that found every worker busy
	Webhooks    int
	Missing     int
	Duplicates  int64
	BadSig      int64
	P50, P90    time.Duration
	P99, Max    time.Duration
	DisableAll  bool
	RSSMax      float64 // the binary's resident memory, bytes
	ChildRSSMax float64 // its children's (redis-server, clickhouse-server)
	CPU         float64 // the binary's CPU seconds per second during the step
	// ChildCPU is each child's (redis-server, clickhouse-server) CPU
	// seconds per second during the step, by command name.
	ChildCPU     map[string]float64
	RedisMemory  float64 // used_memory after the step
	DrainedAfter time.Duration
	Outage       *outageResult
}

// outageResult is what a subscriber outage ended in.
type outageResult struct {
	AutoDisabled  bool
	RefusedPosts  int64
	Suppressed    float64 // switchback_dispatcher_deliveries_total{outcome="suppressed"}
	Replayed      int
	ReplayAnswer  string
	RSSDuring     float64
	ReenabledWait time.Duration
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "switchback-e2elatency-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("data and log kept in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	b, err := startBinary(o, dir)
	if err != nil {
		return err
	}
	defer b.Stop()
	sk, err := newSink()
	if err != nil {
		return err
	}
	defer sk.close()

	l := newLoad(o)
	pc := newPutClient(b.API, o.workers)
	fmt.Printf("setup: %d suppliers × %d rates, rule at %s\n", o.suppliers, o.ratesPer, sk.url())
	if err := setup(b, l, sk, pc); err != nil {
		return err
	}
	// The baselines pass through the processor (no news for a new rule's
	// window: they are the first state seen); wait until quiet.
	settle(sk)
	sk.take()

	if o.writes > 0 {
		profs := startProfiles(o, b.Ops, o.writes)
		err := writes(o, b, l, pc)
		profs.save(o)
		return err
	}
	mon := newMonitor(b)
	defer mon.stop()
	var results []stepResult
	for i, r := range o.rates {
		var profs profiles
		if i == len(o.rates)-1 {
			profs = startProfiles(o, b.Ops, o.step)
		}
		res := step(o, b, l, sk, pc, mon, r)
		profs.save(o)
		results = append(results, res)
		printStep(res)
	}
	if w := b.Warnings(20); len(w) > 0 {
		fmt.Printf("binary WARN/ERROR lines (first %d):\n", len(w))
		for _, line := range w {
			fmt.Println("  ", line)
		}
	}
	printTable(results)
	if o.chart != "" {
		if err := os.WriteFile(o.chart, chart(results), 0o644); err != nil {
			return err
		}
		fmt.Println("chart:", o.chart)
	}
	return nil
}

// settle waits until no webhook arrived for a second (at most 30 s).
func settle(sk *sink) {
	last, quiet := sk.total.Load(), time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		if n := sk.total.Load(); n != last {
			last, quiet = n, time.Now()
		} else if time.Since(quiet) > time.Second {
			return
		}
	}
}

// step sends rate changes/s for o.step, open loop, then waits for the
// webhooks (at most o.drain) and reports.
func step(o options, b *demoapi.Binary, l *load, sk *sink, pc *putClient, mon *monitor, rate int) stepResult {
	res := stepResult{Asked: rate}
	if o.outage > 0 {
		sk.failing.Store(true)
		time.AfterFunc(o.outage, func() { sk.failing.Store(false) })
	}
	mon.reset()
	if o.watch > 0 {
		stopWatch := make(chan struct{})
		go watch(b.Ops, o.watch, stopWatch)
		defer close(stopWatch)
	}
	cpu0, t0 := demoapi.CPUSeconds(b.Pid()), time.Now()
	kids0 := childCPU(b)
	dups0, bad0 := sk.dups.Load(), sk.badSig.Load()

	var (
		mu     sync.Mutex
		sent   = map[string][]time.Time{}
		errs   atomic.Int64
		waited atomic.Int64
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, o.workers)
	// Ticks every 10 ms with rate/100 changes each (the remainder spread
	// over the ticks): a 1 ms ticker drops ticks when the sender is late,
	// which undercounts the rate.
	const tickEvery = 10 * time.Millisecond
	tick := time.NewTicker(tickEvery)
	start := time.Now()
	n, next := 0, 0
	for time.Since(start) < o.step {
		<-tick.C
		due := int(time.Since(start).Seconds() * float64(rate))
		for ; n < due; n++ {
			i := l.order(next)
			next++
			c := l.capacity[i].Add(1)
			body := l.body(i, c)
			select {
			case sem <- struct{}{}:
			default:
				waited.Add(1) // every worker busy: the change waits (counted)
				sem <- struct{}{}
			}
			wg.Go(func() {
				defer func() { <-sem }()
				at := time.Now()
				if err := pc.put(l.paths[i], body); err != nil {
					if errs.Add(1) <= 3 {
						fmt.Println("PUT failed:", err)
					}
					return
				}
				mu.Lock()
				sent[l.ids[i]] = append(sent[l.ids[i]], at)
				mu.Unlock()
			})
		}
	}
	tick.Stop()
	wg.Wait()
	took := time.Since(start)
	res.Sent = n
	res.SentPerSec = float64(n) / took.Seconds()
	res.Errors, res.Waited = errs.Load(), waited.Load()
	cpu1, t1 := demoapi.CPUSeconds(b.Pid()), time.Now()
	res.CPU = (cpu1 - cpu0) / t1.Sub(t0).Seconds()
	res.ChildCPU = map[string]float64{}
	for name, v := range childCPU(b) {
		res.ChildCPU[name] = (v - kids0[name]) / t1.Sub(t0).Seconds()
	}

	want := int64(n) - errs.Load()
	drainStart := time.Now()
	wait := o.drain
	if o.outage > 0 {
		// A subscriber outage must end in the spec's auto-disable, with
		// every notification kept: re-enable, replay what was suppressed
		// or failed, and every change must then arrive.
		for time.Since(start) < o.outage {
			time.Sleep(100 * time.Millisecond)
		}
		res.Outage = outageAndReplay(b, start, sk)
	}
	for deadline := time.Now().Add(wait); sk.total.Load() < want && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	res.DrainedAfter = time.Since(drainStart)
	arrived := sk.take()
	lat, missing := match(sent, arrived)
	for _, a := range arrived {
		res.Webhooks += len(a)
	}
	res.Missing = missing
	res.Duplicates, res.BadSig = sk.dups.Load()-dups0, sk.badSig.Load()-bad0
	res.P50, res.P90, res.P99 = percentile(lat, 0.5), percentile(lat, 0.9), percentile(lat, 0.99)
	res.Max = percentile(lat, 1)
	res.RSSMax, res.ChildRSSMax = mon.peak()
	res.DisableAll = disableAll(b)
	if rdb, err := demoapi.RedisOf(b.Ops); err == nil {
		if info, err := rdb.Info(ctxBG(), "memory").Result(); err == nil {
			res.RedisMemory = demoapi.InfoField(info, "used_memory")
		}
		rdb.Close()
	}
	return res
}

// outageAndReplay runs after the sink came back: it checks that the
// subscriber was disabled automatically, re-enables it, and replays its
// availability notifications of the step that were never delivered
// (suppressed or failed) through the registry's replay route, waiting for
// history to hold them all (the replay reads ClickHouse).
func outageAndReplay(b *demoapi.Binary, from time.Time, sk *sink) *outageResult {
	or := &outageResult{RefusedPosts: sk.refused.Load(), AutoDisabled: disableAll(b)}
	if m, err := demoapi.ScrapeSeries(b.Ops); err == nil {
		for k, v := range m {
			if strings.HasPrefix(k, "switchback_dispatcher_deliveries_total") && strings.Contains(k, `outcome="suppressed"`) {
				or.Suppressed += v
			}
		}
	}
	if err := demoapi.Expect(b.Call(demoapi.Reseller, "PUT", "/registry/v1.1/metadata", `{"throttleDelay":"0s","disableAll":false}`)); err != nil {
		or.ReplayAnswer = "re-enable: " + err.Error()
		return or
	}
	// The suppressed records reach ClickHouse through the history sink
	// (batches of up to a second); replay once they stop growing.
	t0 := time.Now()
	quiet := 0
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline) && quiet < 3; {
		time.Sleep(time.Second)
		m, err := demoapi.Scrape(b.Ops)
		if err != nil {
			continue
		}
		if m["switchback_history_lag_messages"] == 0 && m["switchback_dispatcher_inflight"] == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	or.ReenabledWait = time.Since(t0)
	// The registry caps one replay (100,000 notifications: "narrow
	// from/to"), so a long outage is replayed window by window, as a
	// subscriber would; a window refused as too large is halved.
	end := time.Now().Add(time.Minute)
	var answers []string
	for at, win := from.Add(-time.Minute), 30*time.Second; at.Before(end); {
		to := at.Add(win)
		if to.After(end) {
			to = end
		}
		body := fmt.Sprintf(`{"type":"availability","from":%q,"to":%q,"outcomes":["suppressed","failed"]}`,
			at.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
		status, raw, err := b.Call(demoapi.Reseller, "POST", "/registry/v1.1/deliveries/replay", body)
		if err == nil && status == 400 && strings.Contains(string(raw), "narrow from/to") && win > 2*time.Second {
			win /= 2
			continue
		}
		if err != nil || status >= 300 {
			or.ReplayAnswer = fmt.Sprintf("replay of [%s, %s): %d %v %.300s", at.Format(time.RFC3339), to.Format(time.RFC3339), status, err, raw)
			return or
		}
		var ans struct {
			Replayed int `json:"replayed"`
			Count    int `json:"count"`
		}
		_ = json.Unmarshal(raw, &ans)
		or.Replayed += max(ans.Replayed, ans.Count)
		answers = append(answers, strconv.Itoa(status))
		at = to
	}
	or.ReplayAnswer = fmt.Sprintf("%d windows answered %s", len(answers), strings.Join(slices.Compact(answers), ","))
	return or
}

// disableAll reads the demo reseller's metadata.
func disableAll(b *demoapi.Binary) bool {
	_, body, err := b.Call(demoapi.Reseller, "GET", "/registry/v1.1/metadata", "")
	if err != nil {
		return false
	}
	var md struct {
		DisableAll bool `json:"disableAll"`
	}
	_ = json.Unmarshal(body, &md)
	return md.DisableAll
}

// writes sends PUTs closed-loop (every worker sends its next as soon as
// its last was answered) and reports accepted writes/s.
func writes(o options, b *demoapi.Binary, l *load, pc *putClient) error {
	var (
		n, errs atomic.Int64
		next    atomic.Int64
		wg      sync.WaitGroup
	)
	stop := time.Now().Add(o.writes)
	cpu0, t0 := demoapi.CPUSeconds(b.Pid()), time.Now()
	kids0 := childCPU(b)
	for range o.workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				i := l.order(int(next.Add(1) - 1))
				c := l.capacity[i].Add(1)
				if err := pc.put(l.paths[i], l.body(i, c)); err != nil {
					if errs.Add(1) <= 3 {
						fmt.Println("PUT failed:", err)
					}
					continue
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	cpu := (demoapi.CPUSeconds(b.Pid()) - cpu0) / took.Seconds()
	fmt.Printf("writes: %d accepted in %s = %.0f/s over %d rates of %d supplier(s), %d workers; errors %d; binary CPU %.2f cores%s\n",
		n.Load(), took.Round(time.Millisecond), float64(n.Load())/took.Seconds(), len(l.paths), o.suppliers, o.workers, errs.Load(), cpu,
		childCPUText(kids0, childCPU(b), took))
	return nil
}

// childCPU is the CPU seconds used so far by each child of the binary, by
// command name.
func childCPU(b *demoapi.Binary) map[string]float64 {
	out := map[string]float64{}
	for _, c := range demoapi.Children(b.Pid()) {
		out[demoapi.Comm(c)] += demoapi.CPUSeconds(c)
	}
	return out
}

func childCPUText(before, after map[string]float64, took time.Duration) string {
	var b strings.Builder
	for name, v := range after {
		fmt.Fprintf(&b, ", %s %.2f cores", name, (v-before[name])/took.Seconds())
	}
	return b.String()
}

// profile is a CPU profile of the binary being taken from its ops listener.
type profile struct {
	done chan struct{}
	data []byte
	err  error
}

// profiles are the CPU and allocation profiles the options ask for, taken
// over one step or the writes.
type profiles struct{ cpu, allocs *profile }

func startProfiles(o options, ops string, d time.Duration) profiles {
	var p profiles
	if o.cpuprofile != "" {
		p.cpu = startProfile(ops, "profile", d)
	}
	if o.allocprofile != "" {
		p.allocs = startProfile(ops, "allocs", d)
	}
	return p
}

// save writes the profiles taken; a failure is reported, not fatal.
func (p profiles) save(o options) {
	if p.cpu != nil {
		if err := p.cpu.save(o.cpuprofile); err != nil {
			fmt.Println("cpu profile:", err)
		}
	}
	if p.allocs != nil {
		if err := p.allocs.save(o.allocprofile); err != nil {
			fmt.Println("allocation profile:", err)
		}
	}
}

// startProfile takes a profile of kind ("profile": CPU; "allocs": the
// allocations made meanwhile, a delta) over d, less a second.
func startProfile(ops, kind string, d time.Duration) *profile {
	p := &profile{done: make(chan struct{})}
	secs := max(int(d.Seconds())-1, 1)
	go func() {
		defer close(p.done)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", ops, kind, secs))
		if err != nil {
			p.err = err
			return
		}
		defer resp.Body.Close()
		p.data, p.err = io.ReadAll(resp.Body)
	}()
	return p
}

func (p *profile) save(path string) error {
	<-p.done
	if p.err != nil {
		return p.err
	}
	return os.WriteFile(path, p.data, 0o644)
}

func printStep(r stepResult) {
	if o := r.Outage; o != nil {
		fmt.Printf("outage: auto-disabled %v, POSTs refused by the sink %d, suppressed %.0f; re-enabled and replayed %d (answer %s) after %s\n",
			o.AutoDisabled, o.RefusedPosts, o.Suppressed, o.Replayed, o.ReplayAnswer, o.ReenabledWait.Round(time.Second))
	}
	fmt.Printf("asked %d/s: sent %.0f/s (%d, errors %d, waited for a worker %d); webhooks %d, missing %d, duplicates %d, bad signatures %d; "+
		"p50 %s p90 %s p99 %s max %s; disableAll %v; RSS max %.0f MiB (children %.0f MiB), binary CPU %.2f cores, Redis %.0f MiB; drained in %s\n",
		r.Asked, r.SentPerSec, r.Sent, r.Errors, r.Waited, r.Webhooks, r.Missing, r.Duplicates, r.BadSig,
		r.P50.Round(time.Millisecond), r.P90.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond),
		r.DisableAll, r.RSSMax/(1<<20), r.ChildRSSMax/(1<<20), r.CPU, r.RedisMemory/(1<<20), r.DrainedAfter.Round(time.Millisecond))
	fmt.Printf("CPU per change sent: binary %.0f µs", r.cpuPerChange(r.CPU))
	for _, name := range slices.Sorted(maps.Keys(r.ChildCPU)) {
		fmt.Printf(", %s %.0f µs", name, r.cpuPerChange(r.ChildCPU[name]))
	}
	fmt.Println()
}

// cpuPerChange turns cores during the step into CPU µs per change sent:
// the cost of one change whatever the rate, which separates what batching
// shares from what every change pays (a fixed cost per change shows as a
// figure that falls as the rate rises).
func (r stepResult) cpuPerChange(cores float64) float64 {
	if r.SentPerSec <= 0 {
		return 0
	}
	return cores * 1e6 / r.SentPerSec
}

// totalCPU is the binary's and its children's cores during the step.
func (r stepResult) totalCPU() float64 {
	t := r.CPU
	for _, v := range r.ChildCPU {
		t += v
	}
	return t
}

func printTable(rs []stepResult) {
	fmt.Println()
	fmt.Println("| asked/s | sent/s | webhooks | missing | dup ids | p50 | p90 | p99 | max | disableAll | RSS max | binary CPU | CPU µs/change (binary + children) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Printf("| %d | %.0f | %d | %d | %d | %s | %s | %s | %s | %v | %.0f MiB | %.2f | %.0f |\n", r.Asked, r.SentPerSec, r.Webhooks, r.Missing, r.Duplicates,
			r.P50.Round(time.Millisecond), r.P90.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond),
			r.DisableAll, r.RSSMax/(1<<20), r.CPU, r.cpuPerChange(r.totalCPU()))
	}
}

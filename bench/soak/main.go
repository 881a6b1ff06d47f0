// Command soak runs the binary for a long time under a realistic mix of
// work and checks that it holds steady (issue 9, "Load"): resident memory,
// heap in use, goroutines, open file descriptors and sockets, and consumer
// lag are sampled from the process's own /metrics and /proc, and must end
// within a stated tolerance of where they were after the warm-up.
//
//	go build -o bin/switchback ./cmd/switchback
//	go run ./bench/soak -bin bin/switchback -duration 1h      (make soak)
//	go run ./bench/soak -bin bin/switchback -duration 2m      (CI's short form)
//
// It starts `switchback broker` and `switchback run` against it (demo
// principals without demo data, data in a temp dir, free loopback ports,
// the redis-server and clickhouse-server children when installed; the
// broker runs apart as Kafka does in production, -embedded-broker puts it
// back inside), a simulated partner
// (internal/simulators/partnersim, inventory changing a little every minute) behind a set
// of partner suppliers, a push supplier whose operator changes
// availabilities, and a webhook sink. The mix, open loop:
//
//   - reseller reads (-reads per second): availabilities of a partner
//     product over one to three days within the next 30 (cache hits, and
//     misses that call the partner), and one in ten a catalog read;
//   - operator changes (-changes per second): a push rate's window moves
//     between two capacities, each one an availability notification;
//   - change notifications (-changerequests per minute) on partner
//     products, refreshing 14 days from the partner at once;
//   - webhooks: every notification of the reseller's availability rule
//     (30 days ahead) is POSTed to the sink, which answers 200.
//
// After the load, -slots distinct availability windows are read once each
// (every read a cache miss that stores one entry per bound rate) and the
// memory per cached entry and per availability slot is measured: Redis
// used_memory before and after, and the process's heap in use.
//
// The run prints one line per sample and a summary; -csv writes the
// samples. It exits non-zero when a figure grew past its tolerance, or
// when requests failed. It talks to loopback only and stops everything it
// started.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/bench/internal/demoapi"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
)

const channel = "5e1f7c2a-0d4b-4c3e-9a61-2b7d3f9e8a10" // the demo channel

type options struct {
	bin                  string
	duration, warmup     time.Duration
	sample               time.Duration
	reads, changes       float64
	changeRequests       float64
	suppliers, products  int
	pushRates            int
	slots                int
	partnerLatency       time.Duration
	csv, keepLog         string
	maxGoroutines        float64
	maxFDs               float64
	maxHeapRatio, maxRSS float64
	maxLag               float64
	maxRedisPerDelivery  float64
	embeddedBroker       bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/switchback", "the switchback binary to start")
	flag.DurationVar(&o.duration, "duration", time.Hour, "how long the load runs after the warm-up")
	flag.DurationVar(&o.warmup, "warmup", 0, "load before the baseline sample (default: a tenth of -duration, 30s to 5m)")
	flag.DurationVar(&o.sample, "sample", 0, "sampling interval (default: -duration/60, 5s to 60s)")
	flag.Float64Var(&o.reads, "reads", 200, "reseller reads per second")
	flag.Float64Var(&o.changes, "changes", 20, "operator availability changes per second")
	flag.Float64Var(&o.changeRequests, "changerequests", 6, "change notifications per minute")
	flag.IntVar(&o.suppliers, "suppliers", 5, "partner suppliers")
	flag.IntVar(&o.products, "products", 4, "products per partner supplier (2 rates each)")
	flag.IntVar(&o.pushRates, "pushrates", 100, "rates of the push supplier the operator changes")
	flag.IntVar(&o.slots, "slots", 20000, "availability windows read once before the load to measure memory per cached slot (0: skip)")
	flag.DurationVar(&o.partnerLatency, "partner-latency", 0, "latency the simulated partner adds to every answer (the cold reads of -slots then show a cold read's p99 behind it)")
	flag.StringVar(&o.csv, "csv", "", "write the samples to this CSV file")
	flag.StringVar(&o.keepLog, "keep-log", "bin/soak-switchback.log", "where the process's log is copied when the soak fails")
	flag.Float64Var(&o.maxGoroutines, "max-goroutine-growth", 100, "tolerance: goroutines may end at most this many above the baseline")
	flag.Float64Var(&o.maxFDs, "max-fd-growth", 64, "tolerance: open fds (and sockets) may end at most this many above the baseline")
	flag.Float64Var(&o.maxHeapRatio, "max-heap-ratio", 1.5, "tolerance: heap in use may end at most this ratio of the baseline")
	flag.Float64Var(&o.maxRSS, "max-rss-ratio", 1.5, "tolerance: resident memory may end at most this ratio of the baseline")
	flag.Float64Var(&o.maxLag, "max-lag", 5000, "tolerance: consumer lag (records, all groups) may end at most this")
	flag.Float64Var(&o.maxRedisPerDelivery, "max-redis-per-delivery", 1024, "tolerance: Redis may grow by at most this many bytes per webhook delivered (the dispatcher keeps a record of each delivery for 24 h)")
	flag.BoolVar(&o.embeddedBroker, "embedded-broker", false, "run the broker inside the process (switchback run's default) instead of as its own process (`switchback broker`), whose memory is then counted with the process's")
	flag.Parse()
	if o.warmup == 0 {
		o.warmup = min(max(o.duration/10, 30*time.Second), 5*time.Minute)
	}
	if o.sample == 0 {
		o.sample = min(max(o.duration/60, 5*time.Second), time.Minute)
	}
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

var (
	// Idle connections are dropped after 5 s: the pool grows with the
	// load generator's peak concurrency (a slow moment on a shared
	// machine), and connections kept open from such a peak would count as
	// the process's sockets growing.
	client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64, IdleConnTimeout: 5 * time.Second}}
)

// sink counts webhook POSTs and distinct delivery ids.
type sink struct {
	posts atomic.Int64
	mu    sync.Mutex
	ids   map[string]bool
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.posts.Add(1)
	id := r.Header.Get("X-Switchback-Delivery-Id")
	s.mu.Lock()
	s.ids[id] = true
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *sink) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// counters of the load's requests, by kind and outcome.
type counters struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *counters) add(kind string, status int, err error) {
	k := kind + " "
	switch {
	case err != nil:
		k += "error"
	case status == 429:
		k += "429"
	case status >= 500:
		k += "5xx"
	case status >= 400:
		k += "4xx"
	default:
		k += "ok"
	}
	c.mu.Lock()
	c.m[k]++
	c.mu.Unlock()
}

func (c *counters) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// call sends a request with this run's client.
func call(api string, who demoapi.Cred, method, path, body string) (int, []byte, error) {
	return demoapi.Call(client, api, who, method, path, body)
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "switchback-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	apiAddr, err1 := demoapi.FreeAddr()
	opsAddr, err2 := demoapi.FreeAddr()
	kafkaAddr, err3 := demoapi.FreeAddr()
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}

	// The partner every partner supplier points at.
	rates := map[string][]string{}
	for s := range o.suppliers {
		for p := range o.products {
			pid := productID(s, p)
			rates[pid] = []string{pid + "-r1", pid + "-r2"}
		}
	}
	sim := partnersim.New(partnersim.Config{Rates: rates, ChangeRate: 0.02, ChangeEvery: time.Minute, Seed: 9, Latency: o.partnerLatency})
	psl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	psrv := &http.Server{Handler: sim, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = psrv.Serve(psl) }()
	defer psrv.Close()

	sk := &sink{ids: map[string]bool{}}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ssrv := &http.Server{Handler: sk, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = ssrv.Serve(sl) }()
	defer ssrv.Close()

	// The broker: by default its own process, as Kafka is in production,
	// so that the process's figures are Switchback's own. The embedded
	// broker keeps an index entry in memory per record batch for as long
	// as the log is retained: with it inside, memory grows with traffic.
	brokerPID := 0
	chAddr, err := demoapi.FreeAddr()
	if err != nil {
		return err
	}
	env := []string{"SWITCHBACK_DATA_DIR=" + filepath.Join(tmp, "var"), "SWITCHBACK_HTTP_ADDR=" + apiAddr, "SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR=" + chAddr,
		"SWITCHBACK_OPS_ADDR=" + opsAddr, "SWITCHBACK_DEMO=true", "SWITCHBACK_DEMO_DATA=false",
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true", "SWITCHBACK_LOG_LEVEL=warn", "SWITCHBACK_SYNC_INTERVAL=0"}
	if o.embeddedBroker {
		env = append(env, "SWITCHBACK_EMBEDDED_KAFKA_ADDR="+kafkaAddr)
	} else {
		pid, stopBroker, err := startBroker(o.bin, filepath.Join(tmp, "broker"), kafkaAddr)
		if err != nil {
			return err
		}
		defer stopBroker()
		brokerPID = pid
		env = append(env, "SWITCHBACK_KAFKA_BROKERS="+kafkaAddr)
	}
	cmd := exec.Command(o.bin, "run")
	cmd.Env = append(os.Environ(), env...)
	logPath := filepath.Join(tmp, "switchback.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = io.Discard, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", o.bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
	}()
	keepLog := func() {
		if b, err := os.ReadFile(logPath); err == nil && o.keepLog != "" {
			_ = os.MkdirAll(filepath.Dir(o.keepLog), 0o755)
			if os.WriteFile(o.keepLog, b, 0o644) == nil {
				log.Printf("the process's log is in %s", o.keepLog)
			}
		}
	}
	api := "http://" + apiAddr
	for deadline := time.Now().Add(120 * time.Second); ; {
		if _, _, err := call(api, demoapi.Operator, "GET", "/channel/v1.2/suppliers", ""); err == nil {
			break
		}
		if time.Now().After(deadline) {
			keepLog()
			return errors.New("switchback did not start within 120s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	if err := setup(api, o, "http://"+psl.Addr().String()+"/", "http://"+sl.Addr().String()); err != nil {
		keepLog()
		return fmt.Errorf("setup: %w", err)
	}
	log.Printf("set up: %d partner suppliers × %d products × 2 rates, %d push rates; pid %d", o.suppliers, o.products, o.pushRates, cmd.Process.Pid)

	rdb, err := demoapi.RedisOf(opsAddr)
	if err != nil {
		log.Printf("redis figures unavailable: %v", err)
	}
	if rdb != nil {
		defer rdb.Close()
	}

	// The load.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cnt := &counters{m: map[string]int64{}}
	var wg sync.WaitGroup
	loop := func(perSecond float64, workers int, fn func(r *rand.Rand)) {
		if perSecond <= 0 {
			return
		}
		jobs := make(chan struct{}, workers)
		for w := range workers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
				for range jobs {
					fn(r)
				}
			})
		}
		wg.Go(func() {
			defer close(jobs)
			tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					select {
					case jobs <- struct{}{}:
					default: // workers busy: open loop, the request is skipped and counted
						cnt.add("skipped", 0, nil)
					}
				}
			}
		})
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	loop(o.reads, 32, func(r *rand.Rand) {
		s, p := r.IntN(o.suppliers), r.IntN(o.products)
		if r.IntN(10) == 0 {
			st, _, err := call(api, demoapi.Reseller, "GET", "/v1.2/suppliers/"+supplierID(s)+"/products", "")
			cnt.add("catalog-read", st, err)
			return
		}
		start := today.AddDate(0, 0, 1+r.IntN(30))
		end := start.AddDate(0, 0, 1+r.IntN(3))
		st, _, err := call(api, demoapi.Reseller, "GET", fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s",
			supplierID(s), productID(s, p), start.Format(time.RFC3339), end.Format(time.RFC3339)), "")
		cnt.add("availability-read", st, err)
	})
	var pushSeq atomic.Int64
	loop(o.changes, 8, func(r *rand.Rand) {
		i := int(pushSeq.Add(1))
		rate := i % o.pushRates
		capacity := 10 + (i/o.pushRates)%2
		st, _, err := call(api, demoapi.Operator, "PUT", pushPath+"/rates/"+pushRateID(rate)+"/availabilities", demoapi.AvailabilityBody(today.AddDate(0, 0, 1), capacity))
		cnt.add("operator-change", st, err)
	})
	loop(o.changeRequests/60, 2, func(r *rand.Rand) {
		s, p := r.IntN(o.suppliers), r.IntN(o.products)
		st, _, err := call(api, demoapi.Operator, "POST", fmt.Sprintf("/operator/v2/notifications?supplierId=%s&productId=%s&startDate=%s&endDate=%s",
			supplierID(s), productID(s, p), today.Format(time.DateOnly), today.AddDate(0, 0, 14).Format(time.DateOnly)), "")
		cnt.add("change-notification", st, err)
	})

	// Sampling.
	var out io.Writer = io.Discard
	if o.csv != "" {
		f, err := os.Create(o.csv)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	fmt.Fprintln(out, "elapsed_s,phase,rss_bytes,heap_inuse_bytes,goroutines,open_fds,sockets,lag_records,dispatch_backlog,redis_used_bytes,webhooks,requests_ok,requests_failed,broker_rss_bytes")
	began := time.Now()
	var samples []sample
	tick := time.NewTicker(o.sample)
	defer tick.Stop()
	end := began.Add(o.warmup + o.duration)
	for now := range tick.C {
		select {
		case err := <-exited:
			exited <- err
			keepLog()
			return fmt.Errorf("switchback exited during the soak: %v", err)
		default:
		}
		sm, err := takeSample(opsAddr, cmd.Process.Pid, brokerPID, rdb)
		if err != nil {
			log.Printf("sample: %v", err)
			continue
		}
		sm.elapsed = now.Sub(began)
		sm.warm = sm.elapsed >= o.warmup
		ok, failed := tally(cnt.snapshot())
		sm.webhooks = sk.posts.Load()
		phase := "warmup"
		if sm.warm {
			phase = "load"
		}
		fmt.Fprintf(out, "%.0f,%s,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%d,%d,%d,%.0f\n", sm.elapsed.Seconds(), phase, sm.rss, sm.heap, sm.goroutines,
			sm.fds, sm.sockets, sm.lag, sm.backlog, sm.redis, sm.webhooks, ok, failed, sm.brokerRSS)
		log.Printf("%s %7s rss=%.1fMiB heap=%.1fMiB goroutines=%.0f fds=%.0f sockets=%.0f lag=%.0f backlog=%.0f redis=%.1fMiB webhooks=%d ok=%d failed=%d broker_rss=%.1fMiB",
			phase, sm.elapsed.Round(time.Second), sm.rss/(1<<20), sm.heap/(1<<20), sm.goroutines, sm.fds, sm.sockets, sm.lag, sm.backlog,
			sm.redis/(1<<20), sm.webhooks, ok, failed, sm.brokerRSS/(1<<20))
		samples = append(samples, sm)
		if now.After(end) {
			break
		}
	}
	stop()
	wg.Wait()

	// Let the pipeline drain, then the last figures.
	time.Sleep(10 * time.Second)
	final, err := takeSample(opsAddr, cmd.Process.Pid, brokerPID, rdb)
	if err != nil {
		return err
	}
	verdict := judge(o, samples, final, cnt.snapshot(), sk)
	// Memory per cached slot, once the load is over (its entries would
	// otherwise sit in the baseline).
	if o.slots > 0 {
		if err := measureSlots(api, opsAddr, rdb, o, partnerProbe{"http://" + psl.Addr().String(), sim.Calls}); err != nil {
			verdict = errors.Join(verdict, fmt.Errorf("memory per cached slot: %w", err))
		}
	}
	if verdict != nil {
		keepLog()
		return verdict
	}
	return nil
}

type sample struct {
	elapsed                                  time.Duration
	warm                                     bool
	rss, heap, goroutines, fds, sockets, lag float64
	backlog, redis, brokerRSS                float64
	webhooks                                 int64
}

func tally(m map[string]int64) (ok, failed int64) {
	for k, v := range m {
		switch {
		case strings.HasSuffix(k, " ok"):
			ok += v
		case strings.HasPrefix(k, "skipped"):
		default:
			failed += v
		}
	}
	return ok, failed
}

// judge compares the end of the run with its beginning. The baseline is
// the median of the first third of the samples after the warm-up (at least
// three), the end the median of the last third; the heap compares the
// lowest values instead (what is left after a collection: the medians
// move with the collector's cycle). A figure fails when the end is past
// its tolerance of the baseline.
func judge(o options, samples []sample, final sample, counts map[string]int64, sk *sink) error {
	var warm []sample
	for _, s := range samples {
		if s.warm {
			warm = append(warm, s)
		}
	}
	if len(warm) < 6 {
		return fmt.Errorf("only %d samples after the warm-up: run longer or sample more often", len(warm))
	}
	med := func(ss []sample, f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	maxOf := func(ss []sample, f func(sample) float64) float64 {
		m := 0.0
		for _, s := range ss {
			m = max(m, f(s))
		}
		return m
	}
	third := max(len(warm)/3, 3)
	first, last := warm[:third], warm[len(warm)-third:]
	minOf := func(ss []sample, f func(sample) float64) float64 {
		m := f(ss[0])
		for _, s := range ss[1:] {
			m = min(m, f(s))
		}
		return m
	}
	type fig struct {
		name      string
		f         func(sample) float64
		limit     func(base float64) float64
		unit      string
		tolerance string
		scale     float64
		low       bool // compare the lowest values (the heap after a collection), not the medians
	}
	figs := []fig{
		{"resident memory", func(s sample) float64 { return s.rss }, func(b float64) float64 { return b * o.maxRSS }, "MiB", fmt.Sprintf("x%.2f", o.maxRSS), 1 << 20, false},
		{"heap in use (lowest)", func(s sample) float64 { return s.heap }, func(b float64) float64 { return b * o.maxHeapRatio }, "MiB", fmt.Sprintf("x%.2f", o.maxHeapRatio), 1 << 20, true},
		{"goroutines", func(s sample) float64 { return s.goroutines }, func(b float64) float64 { return b + o.maxGoroutines }, "", fmt.Sprintf("+%.0f", o.maxGoroutines), 1, false},
		{"open fds", func(s sample) float64 { return s.fds }, func(b float64) float64 { return b + o.maxFDs }, "", fmt.Sprintf("+%.0f", o.maxFDs), 1, false},
		{"sockets", func(s sample) float64 { return s.sockets }, func(b float64) float64 { return b + o.maxFDs }, "", fmt.Sprintf("+%.0f", o.maxFDs), 1, false},
		{"consumer lag", func(s sample) float64 { return s.lag }, func(float64) float64 { return o.maxLag }, "records", fmt.Sprintf("<= %.0f", o.maxLag), 1, false},
		{"dispatch backlog", func(s sample) float64 { return s.backlog }, func(float64) float64 { return o.maxLag }, "", fmt.Sprintf("<= %.0f", o.maxLag), 1, false},
	}
	var failures []string
	fmt.Printf("\nSOAK duration=%s warmup=%s samples=%d reads/s=%.0f changes/s=%.0f changerequests/min=%.0f\n", o.duration, o.warmup, len(warm), o.reads, o.changes, o.changeRequests)
	fmt.Printf("| Figure | Baseline | End | Max | After drain | Tolerance | Held |\n|---|---|---|---|---|---|---|\n")
	for _, f := range figs {
		b, e, m := med(first, f.f), med(last, f.f), maxOf(warm, f.f)
		if f.low {
			b, e = minOf(first, f.f), minOf(last, f.f)
		}
		held := e <= f.limit(b)
		mark := "yes"
		if !held {
			mark = "NO"
			failures = append(failures, fmt.Sprintf("%s grew: %.1f -> %.1f %s (tolerance %s)", f.name, b/f.scale, e/f.scale, f.unit, f.tolerance))
		}
		fmt.Printf("| %s | %.1f %s | %.1f %s | %.1f %s | %.1f %s | %s | %s |\n", f.name, b/f.scale, f.unit, e/f.scale, f.unit, m/f.scale, f.unit,
			f.f(final)/f.scale, f.unit, f.tolerance, mark)
	}
	// Redis keeps every delivery's record for 24 h (the dispatcher's
	// duplicate filter): it grows with deliveries until a day has passed.
	// What it may not do is grow by more than those records.
	if b, e := med(first, func(s sample) float64 { return s.redis }), med(last, func(s sample) float64 { return s.redis }); b > 0 {
		dw := float64(med(last, func(s sample) float64 { return float64(s.webhooks) }) - med(first, func(s sample) float64 { return float64(s.webhooks) }))
		per := 0.0
		if dw > 0 {
			per = (e - b) / dw
		}
		held := per <= o.maxRedisPerDelivery
		mark := "yes"
		if !held {
			mark = "NO"
			failures = append(failures, fmt.Sprintf("redis grew %.0f B per delivery (tolerance %.0f)", per, o.maxRedisPerDelivery))
		}
		fmt.Printf("| redis used memory | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | grows by the 24 h delivery records only | |\n", b/(1<<20), e/(1<<20),
			maxOf(warm, func(s sample) float64 { return s.redis })/(1<<20), final.redis/(1<<20))
		fmt.Printf("| redis growth per delivery | | %.0f B | | | <= %.0f B | %s |\n", per, o.maxRedisPerDelivery, mark)
	}
	if b := med(first, func(s sample) float64 { return s.brokerRSS }); b > 0 {
		fmt.Printf("| broker resident memory (not judged) | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | | |\n", b/(1<<20),
			med(last, func(s sample) float64 { return s.brokerRSS })/(1<<20), maxOf(warm, func(s sample) float64 { return s.brokerRSS })/(1<<20), final.brokerRSS/(1<<20))
	}
	ok, failed := tally(counts)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("\nrequests: %d ok, %d failed; webhooks: %d POSTs, %d distinct delivery ids\n", ok, failed, sk.posts.Load(), sk.distinct())
	for _, k := range keys {
		fmt.Printf("  %-28s %d\n", k, counts[k])
	}
	// A few failed requests in an hour (a timeout) are reported; more than
	// one in a thousand fails the run.
	if failed*1000 > ok {
		failures = append(failures, fmt.Sprintf("%d of %d requests failed", failed, ok+failed))
	}
	if sk.posts.Load() == 0 {
		failures = append(failures, "no webhook reached the sink")
	}
	if len(failures) > 0 {
		return fmt.Errorf("soak did not hold: %s", strings.Join(failures, "; "))
	}
	fmt.Println("SOAK held: every figure within its tolerance")
	return nil
}

// takeSample reads the process's figures: its /metrics (Go and process
// collectors, consumer lag, dispatch backlog), its sockets from /proc and
// Redis's used memory.
func takeSample(ops string, pid, brokerPID int, rdb *redis.Client) (sample, error) {
	m, err := demoapi.Scrape(ops)
	if err != nil {
		return sample{}, err
	}
	s := sample{rss: m["process_resident_memory_bytes"], heap: m["go_memstats_heap_inuse_bytes"], goroutines: m["go_goroutines"],
		fds: m["process_open_fds"], lag: m["switchback_stream_lag_messages"] + m["switchback_history_lag_messages"],
		backlog: m["switchback_dispatcher_backlog"]}
	if entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		for _, e := range entries {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
				s.sockets++
			}
		}
	}
	if rdb != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if info, err := rdb.Info(ctx, "memory").Result(); err == nil {
			s.redis = demoapi.InfoField(info, "used_memory")
		}
	}
	if brokerPID > 0 {
		s.brokerRSS = demoapi.VmRSS(brokerPID)
	}
	return s, nil
}

// startBroker runs `switchback broker` on addr with its log under dir and
// waits until it serves; stop ends it.
func startBroker(bin, dir, addr string) (pid int, stop func(), err error) {
	ops, err := demoapi.FreeAddr()
	if err != nil {
		return 0, nil, err
	}
	cmd := exec.Command(bin, "broker")
	cmd.Env = append(os.Environ(), "SWITCHBACK_DATA_DIR="+dir, "SWITCHBACK_EMBEDDED_KAFKA_ADDR="+addr, "SWITCHBACK_OPS_ADDR="+ops, "SWITCHBACK_LOG_LEVEL=warn")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("start %s broker: %w", bin, err)
	}
	exited := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "Kafka-protocol broker on") {
				close(ready)
				signalled = true
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	select {
	case <-ready:
		return cmd.Process.Pid, stop, nil
	case <-exited:
		return 0, nil, errors.New("switchback broker exited at start")
	case <-time.After(60 * time.Second):
		stop()
		return 0, nil, errors.New("switchback broker not serving within 60s")
	}
}

// measureSlots reads o.slots distinct windows of one day (each a cache
// miss storing one entry per bound rate, each entry holding the day's
// availability slots) and reports the memory they take.
//
// Every one of those reads is a cold read (a cache miss answered by the
// partner), so their latencies are a cold read's as a reseller sees it,
// at 16 concurrent readers; with -partner-latency the partner adds that
// much to each answer. Then 64 readers ask for one new window at once:
// the single flight must make that one partner call per rate set, not 64.
func measureSlots(api, ops string, rdb *redis.Client, o options, partner partnerProbe) error {
	if rdb == nil {
		return errors.New("no redis to measure")
	}
	// settle waits past the 1 s in-process copy of fresh entries, then
	// takes the lowest heap of a few samples (garbage not yet collected
	// comes and goes; what the cache holds stays).
	settle := func() (redisBytes, heap float64, err error) {
		time.Sleep(2 * time.Second)
		heap = -1
		for range 6 {
			m, err := demoapi.Scrape(ops)
			if err != nil {
				return 0, 0, err
			}
			if h := m["go_memstats_heap_inuse_bytes"]; heap < 0 || h < heap {
				heap = h
			}
			time.Sleep(time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			return 0, 0, err
		}
		return demoapi.InfoField(info, "used_memory"), heap, nil
	}
	keysBefore, err := rdb.DBSize(context.Background()).Result()
	if err != nil {
		return err
	}
	r0, h0, err := settle()
	if err != nil {
		return err
	}
	// Window k: partner product k % products, day k / products % 90 ahead,
	// one day long, shifted by whole hours (k / (products*90)) so that
	// every k is its own cache key.
	nProducts := o.suppliers * o.products
	today := time.Now().UTC().Truncate(24 * time.Hour)
	var okReads, slotsSeen atomic.Int64
	var failed atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	lat := make([][]time.Duration, 16)
	for w := range 16 {
		wg.Go(func() {
			for k := range jobs {
				pi := k % nProducts
				s, p := pi/o.products, pi%o.products
				start := today.AddDate(0, 0, 1+(k/nProducts)%90).Add(time.Duration(k/(nProducts*90)) * time.Hour)
				t0 := time.Now()
				st, raw, err := call(api, demoapi.Reseller, "GET", fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s",
					supplierID(s), productID(s, p), start.Format(time.RFC3339), start.AddDate(0, 0, 1).Format(time.RFC3339)), "")
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil || st != 200 {
					failed.Add(1)
					continue
				}
				okReads.Add(1)
				var got struct {
					Availabilities struct {
						ByRate map[string]struct {
							Availability []json.RawMessage `json:"availability"`
						} `json:"byRate"`
					} `json:"availabilities"`
				}
				if json.Unmarshal(raw, &got) == nil {
					for _, r := range got.Availabilities.ByRate {
						slotsSeen.Add(int64(len(r.Availability)))
					}
				}
			}
		})
	}
	began := time.Now()
	for k := range o.slots {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	took := time.Since(began)
	if all := slices.Concat(lat...); len(all) > 0 {
		slices.Sort(all)
		q := func(f float64) time.Duration { return all[int(f*float64(len(all)-1))].Round(100 * time.Microsecond) }
		fmt.Printf("\nCOLD reads=%d concurrency=16 partner_latency=%s p50=%s p99=%s max=%s\n",
			len(all), o.partnerLatency, q(0.5), q(0.99), all[len(all)-1].Round(100*time.Microsecond))
	}
	// The ceiling of a cold read: the partner's own answer to the same
	// requests at the same concurrency, measured now.
	if all, err := partner.direct(o, min(o.slots, 2000)); err != nil {
		return err
	} else if len(all) > 0 {
		q := func(f float64) time.Duration { return all[int(f*float64(len(all)-1))].Round(100 * time.Microsecond) }
		fmt.Printf("COLD ceiling: the partner asked directly reads=%d concurrency=16 p50=%s p99=%s max=%s\n",
			len(all), q(0.5), q(0.99), all[len(all)-1].Round(100*time.Microsecond))
	}
	if err := measureFlight(api, o, partner.calls); err != nil {
		return err
	}
	r1, h1, err := settle()
	if err != nil {
		return err
	}
	keysAfter, err := rdb.DBSize(context.Background()).Result()
	if err != nil {
		return err
	}
	entries := float64(keysAfter - keysBefore)
	slots := float64(slotsSeen.Load())
	fmt.Printf("\nMEMORY reads=%d failed=%d took=%s redis_keys_added=%.0f slots_read=%.0f redis_bytes_added=%.0f heap_bytes_added=%.0f\n",
		okReads.Load(), failed.Load(), took.Round(time.Millisecond), entries, slots, r1-r0, h1-h0)
	if entries > 0 && slots > 0 {
		fmt.Printf("MEMORY per cached entry (one rate, one window read): redis %.0f B, query heap %.0f B; per availability slot: redis %.0f B, query heap %.0f B (%.1f slots per entry)\n",
			(r1-r0)/entries, (h1-h0)/entries, (r1-r0)/slots, (h1-h0)/slots, slots/entries)
	}
	if failed.Load() > int64(o.slots)/100 {
		return fmt.Errorf("%d of %d reads failed", failed.Load(), o.slots)
	}
	return nil
}

// partnerProbe reaches the simulated partner behind the partner suppliers.
type partnerProbe struct {
	url   string
	calls func() int64
}

// direct asks the partner for the first n windows of measureSlots itself
// (same requests the hub makes on a miss, 16 at a time) and returns the
// latencies, sorted.
func (pp partnerProbe) direct(o options, n int) ([]time.Duration, error) {
	nProducts := o.suppliers * o.products
	today := time.Now().UTC().Truncate(24 * time.Hour)
	jobs := make(chan int)
	lat := make([][]time.Duration, 16)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for k := range jobs {
				pi := k % nProducts
				s, p := pi/o.products, pi%o.products
				start := today.AddDate(0, 0, 1+(k/nProducts)%90).Add(time.Duration(k/(nProducts*90)) * time.Hour)
				u := fmt.Sprintf("%s/suppliers/%s/products/%s/availabilities?start=%s&end=%s", pp.url, supplierID(s), productID(s, p),
					start.Format(time.RFC3339), start.AddDate(0, 0, 1).Format(time.RFC3339))
				t0 := time.Now()
				resp, err := client.Get(u)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
				}
			}
		})
	}
	for k := range n {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	if failed.Load() > 0 {
		return nil, fmt.Errorf("%d of %d direct partner reads failed", failed.Load(), n)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return all, nil
}

// measureFlight sends 64 reads of one window nobody read yet at once and
// reports how many partner calls they made (the single flight's worth).
func measureFlight(api string, o options, partnerCalls func() int64) error {
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 120) // past the -slots windows (90 days)
	path := fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s",
		supplierID(0), productID(0, 0), start.Format(time.RFC3339), start.AddDate(0, 0, 1).Format(time.RFC3339))
	before := partnerCalls()
	var wg sync.WaitGroup
	var failed atomic.Int64
	lat := make([]time.Duration, 64)
	ready := make(chan struct{})
	for i := range 64 {
		wg.Go(func() {
			<-ready
			t0 := time.Now()
			if st, _, err := call(api, demoapi.Reseller, "GET", path, ""); err != nil || st != 200 {
				failed.Add(1)
			}
			lat[i] = time.Since(t0)
		})
	}
	close(ready)
	wg.Wait()
	slices.Sort(lat)
	calls := partnerCalls() - before
	fmt.Printf("FLIGHT concurrent_cold_reads_of_one_window=64 failed=%d partner_calls=%d partner_latency=%s p50=%s max=%s\n",
		failed.Load(), calls, o.partnerLatency, lat[32].Round(100*time.Microsecond), lat[63].Round(100*time.Microsecond))
	if failed.Load() > 0 {
		return fmt.Errorf("%d of 64 concurrent cold reads failed", failed.Load())
	}
	return nil
}

const pushSupplier, pushProduct = "soak-push", "soak-push-prod"

var pushPath = "/channel/v1.2/suppliers/" + pushSupplier + "/products/" + pushProduct

func supplierID(s int) string   { return fmt.Sprintf("soak-sup%02d", s) }
func productID(s, p int) string { return fmt.Sprintf("soak-s%02d-p%02d", s, p) }
func pushRateID(i int) string   { return fmt.Sprintf("soak-push-r%04d", i) }

// setup creates the partner suppliers (products, two rates each, bound to
// the demo channel), the push supplier and its rates with a first push,
// and the reseller's availability rule at the sink.
func setup(api string, o options, partnerURL, sinkURL string) error {
	for s := range o.suppliers {
		sid := supplierID(s)
		body := fmt.Sprintf(`{"id":%q,"name":"Soak Tours %d","code":"SK%d","connection":{"kind":"partner","baseUrl":%q,"credentials":{"apiKey":"k","apiSecret":"s"}}}`,
			sid, s, s, partnerURL)
		if err := demoapi.Expect(call(api, demoapi.Operator, "POST", "/channel/v1.2/suppliers", body)); err != nil {
			return fmt.Errorf("supplier %s: %w", sid, err)
		}
		for p := range o.products {
			pid := productID(s, p)
			base := "/channel/v1.2/suppliers/" + sid + "/products"
			if err := demoapi.Expect(call(api, demoapi.Operator, "POST", base, demoapi.ProductBody(pid, "Soak walk"))); err != nil {
				return fmt.Errorf("product %s: %w", pid, err)
			}
			for _, r := range []string{pid + "-r1", pid + "-r2"} {
				if err := demoapi.Expect(call(api, demoapi.Operator, "POST", base+"/"+pid+"/rates", demoapi.RateBody(r))); err != nil {
					return fmt.Errorf("rate %s: %w", r, err)
				}
			}
			if err := demoapi.Expect(call(api, demoapi.Operator, "POST", base+"/"+pid+"/channels/"+channel, `{}`)); err != nil {
				return fmt.Errorf("binding %s: %w", pid, err)
			}
		}
	}
	push := fmt.Sprintf(`{"id":%q,"name":"Soak Push","code":"SKP","connection":{"kind":"octo","baseUrl":"https://octo.example.com"}}`, pushSupplier)
	if err := demoapi.Expect(call(api, demoapi.Operator, "POST", "/channel/v1.2/suppliers", push)); err != nil {
		return fmt.Errorf("push supplier: %w", err)
	}
	if err := demoapi.Expect(call(api, demoapi.Operator, "POST", "/channel/v1.2/suppliers/"+pushSupplier+"/products", demoapi.ProductBody(pushProduct, "Soak walk"))); err != nil {
		return fmt.Errorf("push product: %w", err)
	}
	var rs []string
	for i := range o.pushRates {
		rs = append(rs, demoapi.RateBody(pushRateID(i)))
	}
	if err := demoapi.Expect(call(api, demoapi.Operator, "POST", "/channel/v1.2/bulk/suppliers/"+pushSupplier+"/products/"+pushProduct+"/rates", `{"rates":[`+strings.Join(rs, ",")+`]}`)); err != nil {
		return fmt.Errorf("push rates: %w", err)
	}
	if err := demoapi.Expect(call(api, demoapi.Operator, "POST", pushPath+"/channels/"+channel, `{}`)); err != nil {
		return fmt.Errorf("push binding: %w", err)
	}
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	for i := range o.pushRates {
		if err := demoapi.Expect(call(api, demoapi.Operator, "PUT", pushPath+"/rates/"+pushRateID(i)+"/availabilities", demoapi.AvailabilityBody(day, 10))); err != nil {
			return fmt.Errorf("first push: %w", err)
		}
	}
	return demoapi.Expect(call(api, demoapi.Reseller, "POST", "/registry/v1.1/availability", `{"url":"`+sinkURL+`/availability","config":{"maxLookAheadDays":30}}`))
}

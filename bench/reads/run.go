package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/bench/internal/demoapi"
)

const channel = "5e1f7c2a-0d4b-4c3e-9a61-2b7d3f9e8a10" // the demo channel

// route is one read measured against the ceiling.
type route struct {
	name, path string
	minRatio   float64 // of the ceiling's req/s
	maxP99     float64 // × the ceiling's p99; 0: not a target
	conns      int     // wrk connections, when not -connections
}

// wrkRun is one wrk run's figures.
type wrkRun struct {
	rps  float64
	p50  time.Duration
	p99  time.Duration
	non2 int
	// reqs answered, and the CPU seconds the server (the binary, or this
	// process for the ceiling) and wrk spent on them.
	reqs, serverCPU, wrkCPU float64
}

// cpuPerReq is the server's and wrk's CPU µs per request.
func (w wrkRun) cpuPerReq() (server, load float64) {
	if w.reqs == 0 {
		return 0, 0
	}
	return w.serverCPU / w.reqs * 1e6, w.wrkCPU / w.reqs * 1e6
}

// selfCPU is this process's CPU seconds: the ceiling's server, as nothing
// else here works during its wrk run.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// result is one route over the rounds.
type result struct {
	route
	ceiling, reads []wrkRun
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "switchback-reads-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := demoapi.StartBinary(o.bin, dir, true, append([]string{"SWITCHBACK_RATE_LIMIT=0", "SWITCHBACK_HISTORY_RATE_LIMIT=0"}, splitEnv(o.extraEnv)...)...)
	if err != nil {
		return err
	}
	defer b.Stop()
	ceil, stopCeil, err := startCeiling()
	if err != nil {
		return err
	}
	defer stopCeil()

	routes, err := discover(b)
	if err != nil {
		return err
	}
	fmt.Printf("binary up; ceiling at %s; %d routes; wrk -t%d -c%d -d%s, %d rounds\n", ceil, len(routes), o.threads, o.conns, o.duration, o.rounds)
	var results []result
	for _, rt := range routes {
		if !o.wants(rt.name) {
			continue
		}
		first := len(results) == 0
		// Warm: the first read of a window fills the cache.
		if st, body, err := b.Call(demoapi.Reseller, "GET", rt.path, ""); err != nil || st != 200 {
			return fmt.Errorf("%s: %d %v %.300s", rt.name, st, err, body)
		}
		r := result{route: rt}
		for round := range o.rounds {
			c, err := runWrk(o, ceil, nil, selfCPU)
			if err != nil {
				return err
			}
			var prof chan []byte
			if o.cpuprofile != "" && first && round == 0 {
				prof = make(chan []byte, 1)
				go func() {
					p, err := b.Profile(o.duration)
					if err != nil {
						fmt.Fprintln(os.Stderr, "cpu profile:", err)
					}
					prof <- p
				}()
			}
			ro := o
			if rt.conns > 0 {
				ro.conns, ro.threads = rt.conns, min(o.threads, rt.conns)
			}
			w, err := runWrk(ro, b.API+rt.path, []string{"X-API-Key: " + demoapi.Reseller.Key, "X-API-Secret: " + demoapi.Reseller.Secret},
				func() float64 { return demoapi.CPUSeconds(b.Pid()) })
			if err != nil {
				return err
			}
			if prof != nil {
				if p := <-prof; len(p) > 0 {
					_ = os.WriteFile(o.cpuprofile, p, 0o644)
				}
			}
			r.ceiling, r.reads = append(r.ceiling, c), append(r.reads, w)
			fmt.Printf("  %-24s round %d: ceiling %8.0f req/s p99 %-9s  route %8.0f req/s p99 %-9s non-2xx %d  (%.2fx, p99 %.1fx)\n", rt.name, round+1,
				c.rps, c.p99, w.rps, w.p99, w.non2, w.rps/c.rps, float64(w.p99)/float64(c.p99))
		}
		results = append(results, r)
	}
	printTable(results)
	printCPUTable(results)
	if err := reportView(b.Ops); err != nil {
		fmt.Fprintln(os.Stderr, "catalog view figures:", err)
	}
	if o.chart != "" {
		if err := os.WriteFile(o.chart, chart(results), 0o644); err != nil {
			return err
		}
		fmt.Println("chart:", o.chart)
	}
	if w := b.Warnings(10); len(w) > 0 {
		fmt.Println("binary WARN/ERROR lines:")
		for _, l := range w {
			fmt.Println("  ", l)
		}
	}
	return nil
}

func splitEnv(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// startCeiling serves a static 200-byte JSON over fasthttp: what the query
// tier could answer at most with nothing to compute.
func startCeiling() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	body := []byte(`{"meta":{"reqId":"0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b"},"availability":{"id":"1f0c","start":"2026-12-01T09:00:00Z","end":"2026-12-01T11:00:00Z","capacity":10},"bookable":true,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		c.SetContentType("application/json")
		c.SetBody(body)
	}}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Shutdown() }, nil
}

// discover finds the demo reseller's first supplier with a product and a
// rate, and makes the channel's supplier list 20 long (operator-pushed
// suppliers bound to the demo channel), then lists the routes.
func discover(b *demoapi.Binary) ([]route, error) {
	type sup struct {
		ID string `json:"id"`
	}
	var list struct {
		Suppliers []sup `json:"suppliers"`
	}
	var sid, pid, rid string
	for deadline := time.Now().Add(90 * time.Second); sid == "" && time.Now().Before(deadline); time.Sleep(time.Second) {
		st, body, err := b.Call(demoapi.Reseller, "GET", "/v1.2/suppliers", "")
		if err != nil || st != 200 || json.Unmarshal(body, &list) != nil {
			continue
		}
		for _, s := range list.Suppliers {
			var prods struct {
				Products []sup `json:"products"`
			}
			if st, body, err := b.Call(demoapi.Reseller, "GET", "/v1.2/suppliers/"+s.ID+"/products", ""); err != nil || st != 200 || json.Unmarshal(body, &prods) != nil {
				continue
			}
			for _, p := range prods.Products {
				var rates struct {
					Rates []sup `json:"rates"`
				}
				if st, body, err := b.Call(demoapi.Reseller, "GET", "/v1.2/suppliers/"+s.ID+"/products/"+p.ID+"/rates", ""); err != nil || st != 200 || json.Unmarshal(body, &rates) != nil || len(rates.Rates) == 0 {
					continue
				}
				sid, pid, rid = s.ID, p.ID, rates.Rates[0].ID
				break
			}
			if sid != "" {
				break
			}
		}
	}
	if sid == "" {
		return nil, fmt.Errorf("no demo supplier with a product and a rate bound to the demo channel")
	}
	for i := len(list.Suppliers); i < 20; i++ {
		id := fmt.Sprintf("reads-sup%02d", i)
		if err := demoapi.Expect(b.Call(demoapi.Operator, "POST", "/channel/v1.2/suppliers", `{"id":"`+id+`","name":"Reads `+id+`","code":"R`+strconv.Itoa(i)+`",`+
			`"connection":{"kind":"partner","baseUrl":"http://127.0.0.1:9/v1.2","credentials":{"apiKey":"k","apiSecret":"s"}}}`)); err != nil {
			return nil, fmt.Errorf("supplier %s: %w", id, err)
		}
		if err := demoapi.Expect(b.Call(demoapi.Operator, "POST", "/channel/v1.2/suppliers/"+id+"/products", demoapi.ProductBody("p", "Reads"))); err != nil {
			return nil, err
		}
		if err := demoapi.Expect(b.Call(demoapi.Operator, "POST", "/channel/v1.2/suppliers/"+id+"/products/p/channels/"+channel, `{}`)); err != nil {
			return nil, err
		}
	}
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	start, end := day.Format(time.RFC3339), day.AddDate(0, 0, 2).Format(time.RFC3339)
	at := day.Add(9 * time.Hour).Format(time.RFC3339)
	base := "/v1.2/suppliers/" + sid
	return []route{
		{"availabilities", base + "/products/" + pid + "/availabilities?start=" + start + "&end=" + end, 0.8, 2, 0},
		{"availability", base + "/products/" + pid + "/availability?at=" + at + "&qty=1", 0.8, 2, 0},
		{"supplier-v1.2", base, 0.8, 2, 0},
		{"product-v1.2", base + "/products/" + pid, 0.8, 2, 0},
		{"rate-v1.2", base + "/products/" + pid + "/rates/" + rid, 0.8, 2, 0},
		{"rates-v1.2", base + "/products/" + pid + "/rates", 0.8, 2, 0},
		{"supplier-v1.3", "/v1.3/suppliers/" + sid, 0.8, 2, 0},
		{"suppliers-v1.2", "/v1.2/suppliers", 0.5, 0, 0},
		// One key may have SWITCHBACK_HISTORY_CONCURRENCY (2) history
		// requests in flight: measured as a key can use it.
		{"deliveries", "/registry/v1.1/deliveries?limit=50", 0, 0, 2},
	}, nil
}

var (
	rpsRe  = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reqsRe = regexp.MustCompile(`([0-9]+) requests in `)
	p50Re  = regexp.MustCompile(`(?m)^\s+50%\s+([0-9.]+)(us|ms|s)\b`)
	p99Re  = regexp.MustCompile(`(?m)^\s+99%\s+([0-9.]+)(us|ms|s)\b`)
	nonRe  = regexp.MustCompile(`Non-2xx or 3xx responses:\s+([0-9]+)`)
)

// runWrk runs wrk against url and parses its figures; serverCPU reads
// the server's CPU seconds, before and after.
func runWrk(o options, url string, headers []string, serverCPU func() float64) (wrkRun, error) {
	args := []string{"-t" + strconv.Itoa(o.threads), "-c" + strconv.Itoa(o.conns), "-d" + o.duration.String(), "--latency"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	cmd := exec.Command("wrk", append(args, url)...)
	cpu0 := serverCPU()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkRun{}, fmt.Errorf("wrk %s: %v: %s", url, err, out)
	}
	w := wrkRun{serverCPU: serverCPU() - cpu0, wrkCPU: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()}
	if m := reqsRe.FindSubmatch(out); m != nil {
		w.reqs, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	m := rpsRe.FindSubmatch(out)
	if m == nil {
		return wrkRun{}, fmt.Errorf("wrk %s: no Requests/sec in %s", url, out)
	}
	w.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	w.p50 = parseDur(p50Re.FindSubmatch(out))
	w.p99 = parseDur(p99Re.FindSubmatch(out))
	if m := nonRe.FindSubmatch(out); m != nil {
		w.non2, _ = strconv.Atoi(string(m[1]))
	}
	return w, nil
}

func parseDur(m [][]byte) time.Duration {
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	switch string(m[2]) {
	case "us":
		return time.Duration(v * float64(time.Microsecond))
	case "ms":
		return time.Duration(v * float64(time.Millisecond))
	default:
		return time.Duration(v * float64(time.Second))
	}
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// figures are a route's medians over the rounds: the ratio of req/s and of
// p99 to the ceiling's in the same round.
func (r result) figures() (rps, p99, crps, cp99, ratio, p99ratio float64) {
	var rs, ps, crs, cps, ratios, pratios []float64
	for i := range r.reads {
		w, c := r.reads[i], r.ceiling[i]
		rs, ps = append(rs, w.rps), append(ps, float64(w.p99)/1e6)
		crs, cps = append(crs, c.rps), append(cps, float64(c.p99)/1e6)
		ratios = append(ratios, w.rps/c.rps)
		pratios = append(pratios, float64(w.p99)/float64(c.p99))
	}
	return median(rs), median(ps), median(crs), median(cps), median(ratios), median(pratios)
}

func printTable(rs []result) {
	fmt.Println()
	fmt.Println("| route | ceiling req/s | ceiling p99 | route req/s | route p99 | req/s ratio | p99 ratio | non-2xx | target | met |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		rps, p99, crps, cp99, ratio, pr := r.figures()
		target, met := "stated", "-"
		if r.minRatio > 0 {
			target = fmt.Sprintf(">= %.1fx", r.minRatio)
			ok := ratio >= r.minRatio
			if r.maxP99 > 0 {
				target += fmt.Sprintf(", p99 <= %.0fx", r.maxP99)
				ok = ok && pr <= r.maxP99
			}
			met = map[bool]string{true: "yes", false: "**no**"}[ok]
		}
		non2 := 0
		for _, w := range r.reads {
			non2 += w.non2
		}
		if non2 > 0 {
			met = "**no** (non-2xx)"
		}
		fmt.Printf("| %s | %.0f | %.2f ms | %.0f | %.2f ms | %.2f | %.1f | %d | %s | %s |\n", r.name, crps, cp99, rps, p99, ratio, pr, non2, target, met)
	}
	fmt.Println("(medians over the rounds; ratios taken round by round, route against the ceiling run just before it)")
}

// reportView prints what the query tier's catalog copy did over the run:
// which source answered the catalog reads, and how long an event took
// from its write to its application in the copy (the visibility the copy
// adds; a read answers from the copy only while it is fresh within
// SWITCHBACK_CATALOG_VIEW_BOUND, else from Redis, so the bound holds
// whatever this says). The p99 is the histogram bucket it falls in.
func reportView(ops string) error {
	m, err := demoapi.ScrapeSeries(ops)
	if err != nil {
		return err
	}
	mem, red := m[`switchback_catalog_view_reads_total{source="memory"}`], m[`switchback_catalog_view_reads_total{source="redis"}`]
	if mem+red == 0 {
		fmt.Println("catalog view: no reads counted (the copy is off: SWITCHBACK_CATALOG_VIEW_BOUND=0)")
		return nil
	}
	fmt.Printf("catalog view: %.0f catalog reads, %.1f %% from the process's copy, %.1f %% from Redis (copy not fresh)\n",
		mem+red, 100*mem/(mem+red), 100*red/(mem+red))
	const h = "switchback_catalog_view_visibility_seconds"
	count := m[h+"_count"]
	type bucket struct{ le, n float64 }
	var bs []bucket
	for k, v := range m {
		if rest, ok := strings.CutPrefix(k, h+`_bucket{le="`); ok {
			le, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64)
			if err == nil {
				bs = append(bs, bucket{le, v})
			}
		}
	}
	slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	quantile := func(q float64) string {
		for _, b := range bs {
			if b.n >= q*count {
				return fmt.Sprintf("<= %gs", b.le)
			}
		}
		return "> largest bucket"
	}
	if count > 0 {
		fmt.Printf("catalog view visibility (event write -> applied in the copy): %.0f events, mean %.1f ms, p50 %s, p99 %s\n",
			count, 1000*m[h+"_sum"]/count, quantile(0.5), quantile(0.99))
	}
	return nil
}

// printCPUTable prints what each request cost in CPU, the binary's against
// the ceiling's, as the req/s ratio's explanation and a steadier figure
// than it: this machine's speed drifts by tens of percent between runs
// (the ceiling's own µs per request too), which moves req/s, but the
// server's cost over wrk's (the same load tool on the same machine in the
// same minute) moves much less. Ratio: the binary's server/wrk cost over
// the ceiling's, medians over the rounds.
func printCPUTable(rs []result) {
	fmt.Println()
	fmt.Println("| route | ceiling server µs/req | ceiling wrk µs/req | binary µs/req | its wrk µs/req | cost ratio (server/wrk, binary over ceiling) |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rs {
		var cs, cw, bs, bw, ratios []float64
		for i := range r.reads {
			s, w := r.ceiling[i].cpuPerReq()
			s2, w2 := r.reads[i].cpuPerReq()
			cs, cw, bs, bw = append(cs, s), append(cw, w), append(bs, s2), append(bw, w2)
			if s > 0 && w > 0 && w2 > 0 {
				ratios = append(ratios, (s2/w2)/(s/w))
			}
		}
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.name, median(cs), median(cw), median(bs), median(bw), median(ratios))
	}
	fmt.Println("(the binary's own process: its redis-server and clickhouse-server children are not counted)")
}

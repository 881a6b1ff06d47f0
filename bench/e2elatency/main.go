// Command e2elatency measures end-to-end latency: from a change entering
// Switchback (an operator's PUT of a rate's availabilities) to the
// availability webhook received at a subscriber's sink, at a steady rate
// of changes for a fixed time, throttleDelay 0 (issue 8's figure).
//
//	go build -o bin/switchback ./cmd/switchback
//	go run ./bench/e2elatency -bin bin/switchback -rate 1000 -duration 60s
//
// It starts the binary itself (`switchback run`, demo principals without
// demo data, its data in a temp dir, free loopback ports), sets up a
// supplier with one rate per change slot bound to the demo channel and an
// availability rule of the demo reseller pointing at its own sink, then
// sends the changes open-loop on a ticker. Each change moves one rate's
// only window tomorrow between two vacancies, so every change is one
// notification for that rate; a webhook is matched to the oldest unmatched
// change of its rate. The run stops itself; it talks to loopback only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/switchbackhq/switchback/bench/internal/demoapi"
)

const channel = "5e1f7c2a-0d4b-4c3e-9a61-2b7d3f9e8a10" // the demo channel

func main() {
	bin := flag.String("bin", "bin/switchback", "the switchback binary to start")
	rate := flag.Int("rate", 1000, "changes per second")
	duration := flag.Duration("duration", 60*time.Second, "how long to send changes")
	rates := flag.Int("rates", 2000, "rates the changes rotate over (each change names one)")
	suppliers := flag.Int("suppliers", 20, "suppliers the rates are spread over (an operator's writes to one supplier are serialized)")
	workers := flag.Int("workers", 64, "concurrent operator requests at most")
	flag.Parse()
	if err := run(*bin, *rate, *duration, *rates, *suppliers, *workers); err != nil {
		log.Fatal(err)
	}
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}

// sink records the arrival time of each availability webhook by rate.
type sink struct {
	mu      sync.Mutex
	arrived map[string][]time.Time
	total   atomic.Int64
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	var body struct {
		RateID string `json:"rateID"`
	}
	raw, _ := io.ReadAll(r.Body)
	if json.Unmarshal(raw, &body) == nil && body.RateID != "" {
		s.mu.Lock()
		s.arrived[body.RateID] = append(s.arrived[body.RateID], now)
		s.mu.Unlock()
		s.total.Add(1)
	}
	w.WriteHeader(http.StatusOK)
}

// call sends a request with this run's client.
func call(api string, who demoapi.Cred, method, path, body string) (int, []byte, error) {
	return demoapi.Call(client, api, who, method, path, body)
}

func run(bin string, rate int, duration time.Duration, nRates, nSup, workers int) error {
	tmp, err := os.MkdirTemp("", "switchback-e2elatency-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	apiAddr, err1 := demoapi.FreeAddr()
	opsAddr, err2 := demoapi.FreeAddr()
	kafkaAddr, err3 := demoapi.FreeAddr()
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(), "SWITCHBACK_DATA_DIR="+filepath.Join(tmp, "var"), "SWITCHBACK_HTTP_ADDR="+apiAddr,
		"SWITCHBACK_OPS_ADDR="+opsAddr, "SWITCHBACK_EMBEDDED_KAFKA_ADDR="+kafkaAddr, "SWITCHBACK_DEMO=true", "SWITCHBACK_DEMO_DATA=false",
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true", "SWITCHBACK_LOG_LEVEL=warn")
	logf, err := os.Create(filepath.Join(tmp, "switchback.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = io.Discard, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}()
	api := "http://" + apiAddr
	for deadline := time.Now().Add(90 * time.Second); ; {
		if _, _, err := call(api, demoapi.Operator, "GET", "/channel/v1.2/suppliers", ""); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("switchback did not start; log in %s", logf.Name())
		}
		time.Sleep(100 * time.Millisecond)
	}

	sk := &sink{arrived: map[string][]time.Time{}}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sk, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(sl) }()
	defer srv.Close()

	// Setup: suppliers, a product each, rates in bulk, whole-product
	// bindings, the rule; then every rate's first push (a baseline).
	const prod = "lat-prod"
	supOf := func(i int) string { return fmt.Sprintf("lat-sup%03d", i%nSup) }
	pathOf := func(i int) string { return "/channel/v1.2/suppliers/" + supOf(i) + "/products/" + prod }
	for k := range nSup {
		sup := supOf(k)
		if err := demoapi.Expect(call(api, demoapi.Operator, "POST", "/channel/v1.2/suppliers", supplierBody(sup))); err != nil {
			return fmt.Errorf("supplier: %w", err)
		}
		if err := demoapi.Expect(call(api, demoapi.Operator, "POST", "/channel/v1.2/suppliers/"+sup+"/products", demoapi.ProductBody(prod, "Latency walk"))); err != nil {
			return fmt.Errorf("product: %w", err)
		}
		var rs []string
		for i := k; i < nRates; i += nSup {
			rs = append(rs, demoapi.RateBody(rateID(i)))
		}
		if err := demoapi.Expect(call(api, demoapi.Operator, "POST", "/channel/v1.2/bulk/suppliers/"+sup+"/products/"+prod+"/rates", `{"rates":[`+strings.Join(rs, ",")+`]}`)); err != nil {
			return fmt.Errorf("rates: %w", err)
		}
		if err := demoapi.Expect(call(api, demoapi.Operator, "POST", pathOf(k)+"/channels/"+channel, `{}`)); err != nil {
			return fmt.Errorf("binding: %w", err)
		}
	}
	if err := demoapi.Expect(call(api, demoapi.Reseller, "POST", "/registry/v1.1/availability", `{"url":"http://`+sl.Addr().String()+`/availability","config":{"maxLookAheadDays":7}}`)); err != nil {
		return fmt.Errorf("rule: %w", err)
	}
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	version := make([]int, nRates)
	push := func(i int) error {
		return demoapi.Expect(call(api, demoapi.Operator, "PUT", pathOf(i)+"/rates/"+rateID(i)+"/availabilities", demoapi.AvailabilityBody(day, 10+version[i]%2)))
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	var setupErr atomic.Value
	for i := range nRates {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := push(i); err != nil {
				setupErr.Store(err)
			}
		})
	}
	wg.Wait()
	if err, _ := setupErr.Load().(error); err != nil {
		return fmt.Errorf("baseline pushes: %w", err)
	}
	time.Sleep(3 * time.Second) // baselines through the processor: no news
	sk.mu.Lock()
	clear(sk.arrived)
	sk.mu.Unlock()
	sk.total.Store(0)

	// The load: open loop, one change every 1/rate, each a PUT of the next
	// rate's window with the other vacancy.
	fmt.Printf("sending %d changes/s for %s over %d rates of %d suppliers (%d workers at most)\n", rate, duration, nRates, nSup, workers)
	var mu sync.Mutex
	sent := map[string][]time.Time{}
	var errs, late atomic.Int64
	// Ticks every 10 ms with rate/100 changes each: a 1 ms ticker drops
	// ticks when the sender is late, which undercounts the rate.
	const tickEvery = 10 * time.Millisecond
	perTick := max(rate/100, 1)
	tick := time.NewTicker(tickEvery)
	start := time.Now()
	n := 0
	for time.Since(start) < duration {
		<-tick.C
		for range perTick {
			i := n % nRates
			n++
			version[i]++
			v := version[i]
			select {
			case sem <- struct{}{}:
			default:
				late.Add(1) // every worker busy: the change waits (counted)
				sem <- struct{}{}
			}
			wg.Go(func() {
				defer func() { <-sem }()
				at := time.Now()
				if err := demoapi.Expect(call(api, demoapi.Operator, "PUT", pathOf(i)+"/rates/"+rateID(i)+"/availabilities", demoapi.AvailabilityBody(day, 10+v%2))); err != nil {
					errs.Add(1)
					return
				}
				mu.Lock()
				sent[rateID(i)] = append(sent[rateID(i)], at)
				mu.Unlock()
			})
		}
	}
	tick.Stop()
	wg.Wait()
	sendTook := time.Since(start)
	want := int64(n) - errs.Load()
	for deadline := time.Now().Add(60 * time.Second); sk.total.Load() < want && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}

	// Match each rate's webhooks to its changes in order.
	var lat []time.Duration
	unmatched := 0
	sk.mu.Lock()
	for r, ts := range sent {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		arr := sk.arrived[r]
		slices.SortFunc(arr, func(a, b time.Time) int { return a.Compare(b) })
		for k, t := range ts {
			if k >= len(arr) {
				unmatched += len(ts) - k
				break
			}
			lat = append(lat, arr[k].Sub(t))
		}
	}
	sk.mu.Unlock()
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	fmt.Printf("changes sent: %d in %s (%.0f/s), errors %d, waited for a worker %d\n", n, sendTook.Round(time.Millisecond),
		float64(n)/sendTook.Seconds(), errs.Load(), late.Load())
	fmt.Printf("webhooks received: %d, matched %d, missing %d\n", sk.total.Load(), len(lat), unmatched)
	fmt.Printf("latency change → webhook: p50 %s  p90 %s  p99 %s  max %s\n", pct(0.5).Round(time.Millisecond), pct(0.9).Round(time.Millisecond),
		pct(0.99).Round(time.Millisecond), pct(1).Round(time.Millisecond))
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func rateID(i int) string { return fmt.Sprintf("lat-r%05d", i) }

func supplierBody(id string) string {
	return `{"id":"` + id + `","name":"Latency Tours","code":"LAT","connection":{"kind":"octo","baseUrl":"https://octo.example.com"}}`
}

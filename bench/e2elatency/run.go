package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/bench/internal/demoapi"
)

const (
	channel = "5e1f7c2a-0d4b-4c3e-9a61-2b7d3f9e8a10" // the demo channel
	product = "lat-prod"
)

// startBinary starts the binary as make run does, without the demo's
// data; the load is one operator key, so the per-key limit is off.
func startBinary(o options, dir string) (*demoapi.Binary, error) {
	env := []string{"SWITCHBACK_RATE_LIMIT=0"}
	if o.extraEnv != "" {
		env = append(env, strings.Split(o.extraEnv, ",")...)
	}
	return demoapi.StartBinary(o.bin, dir, false, env...)
}

func supplierID(s int) string { return fmt.Sprintf("lat-sup%03d", s) }
func rateID(s, r int) string  { return fmt.Sprintf("lat-s%03d-r%04d", s, r) }

// load is the catalog under test: rate i is rate i%ratesPer of supplier
// i/ratesPer.
type load struct {
	o        options
	paths    []string // PUT path of each rate
	ids      []string // rate id of each rate
	capacity []atomic.Int64
	day      time.Time
}

func newLoad(o options) *load {
	n := o.suppliers * o.ratesPer
	l := &load{o: o, paths: make([]string, n), ids: make([]string, n), capacity: make([]atomic.Int64, n),
		day: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)}
	for i := range n {
		s, r := i/o.ratesPer, i%o.ratesPer
		l.ids[i] = rateID(s, r)
		l.paths[i] = "/channel/v1.2/suppliers/" + supplierID(s) + "/products/" + product + "/rates/" + l.ids[i] + "/availabilities"
		l.capacity[i].Store(10)
	}
	return l
}

// order is the rate of the n-th change: the suppliers in turn, each
// going through its rates, so that consecutive changes are of different
// suppliers (as many operators' syncs interleave).
func (l *load) order(n int) int {
	s := n % l.o.suppliers
	r := (n / l.o.suppliers) % l.o.ratesPer
	return s*l.o.ratesPer + r
}

// setup creates the suppliers (partner kind, whose availability the
// operator pushes here; the partner url is loopback's discard port and is
// never called: nothing reads through the cache during the run), a product each, their rates in bulk,
// whole-product bindings, the availability rule, and pushes every rate's
// baseline.
func setup(b *demoapi.Binary, l *load, sk *sink, pc *putClient) error {
	o := l.o
	for s := range o.suppliers {
		sup := supplierID(s)
		if err := demoapi.Expect(b.Call(demoapi.Operator, "POST", "/channel/v1.2/suppliers",
			`{"id":"`+sup+`","name":"Latency Tours","code":"LAT`+fmt.Sprint(s)+`",`+
				`"connection":{"kind":"partner","baseUrl":"http://127.0.0.1:9/v1.2","credentials":{"apiKey":"k","apiSecret":"s"}}}`)); err != nil {
			return fmt.Errorf("supplier: %w", err)
		}
		if err := demoapi.Expect(b.Call(demoapi.Operator, "POST", "/channel/v1.2/suppliers/"+sup+"/products", demoapi.ProductBody(product, "Latency walk"))); err != nil {
			return fmt.Errorf("product: %w", err)
		}
		for lo := 0; lo < o.ratesPer; lo += 500 {
			var rs []string
			for r := lo; r < min(lo+500, o.ratesPer); r++ {
				rs = append(rs, demoapi.RateBody(rateID(s, r)))
			}
			if err := demoapi.Expect(b.Call(demoapi.Operator, "POST", "/channel/v1.2/bulk/suppliers/"+sup+"/products/"+product+"/rates", `{"rates":[`+strings.Join(rs, ",")+`]}`)); err != nil {
				return fmt.Errorf("rates: %w", err)
			}
		}
		if err := demoapi.Expect(b.Call(demoapi.Operator, "POST", "/channel/v1.2/suppliers/"+sup+"/products/"+product+"/channels/"+channel, `{}`)); err != nil {
			return fmt.Errorf("binding: %w", err)
		}
	}
	status, body, err := b.Call(demoapi.Reseller, "POST", "/registry/v1.1/availability", `{"url":"`+sk.url()+`","config":{"maxLookAheadDays":7}}`)
	if err := demoapi.Expect(status, body, err); err != nil {
		return fmt.Errorf("rule: %w", err)
	}
	var rule struct {
		SecurityKey string `json:"securityKey"`
	}
	if err := json.Unmarshal(body, &rule); err != nil || rule.SecurityKey == "" {
		return fmt.Errorf("rule answer without securityKey: %.200s", body)
	}
	sk.key = []byte(rule.SecurityKey)
	if err := demoapi.Expect(b.Call(demoapi.Reseller, "PUT", "/registry/v1.1/metadata", `{"throttleDelay":"0s"}`)); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var failed atomic.Value
	for i := range l.paths {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := pc.put(l.paths[i], l.body(i, 10)); err != nil {
				failed.Store(err)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return fmt.Errorf("baseline pushes: %w", err)
	}
	return nil
}

// body is a PUT moving rate i's only window (tomorrow 09:00–11:00 UTC) to
// capacity c.
func (l *load) body(i int, c int64) []byte {
	s := l.day.Add(9 * time.Hour)
	return fmt.Appendf(nil, `{"availabilities":[{"id":"w","start":%q,"end":%q,"capacity":%d}]}`,
		s.Format(time.RFC3339), s.Add(2*time.Hour).Format(time.RFC3339), c)
}

// putClient sends operator PUTs over fasthttp (the load generator shares
// the cores with the binary: it should cost little).
type putClient struct {
	base string
	hc   *fasthttp.HostClient
}

func newPutClient(api string, conns int) *putClient {
	addr := strings.TrimPrefix(api, "http://")
	return &putClient{base: api, hc: &fasthttp.HostClient{Addr: addr, MaxConns: conns, ReadTimeout: 60 * time.Second,
		WriteTimeout: 10 * time.Second, MaxIdleConnDuration: time.Minute}}
}

func (p *putClient) put(path string, body []byte) error {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(p.base + path)
	req.Header.SetMethod(fasthttp.MethodPut)
	req.Header.Set("X-API-Key", demoapi.Operator.Key)
	req.Header.Set("X-API-Secret", demoapi.Operator.Secret)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(body)
	if err := p.hc.Do(req, resp); err != nil {
		return err
	}
	if sc := resp.StatusCode(); sc < 200 || sc > 299 {
		return fmt.Errorf("status %d: %.200s", sc, resp.Body())
	}
	return nil
}

// percentile of sorted durations.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// match pairs each rate's changes with its webhooks, oldest first, and
// returns the latencies (sorted) and how many changes had no webhook.
func match(sent, arrived map[string][]time.Time) ([]time.Duration, int) {
	var lat []time.Duration
	missing := 0
	for r, ts := range sent {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		arr := arrived[r]
		slices.SortFunc(arr, func(a, b time.Time) int { return a.Compare(b) })
		for k, t := range ts {
			if k >= len(arr) {
				missing += len(ts) - k
				break
			}
			lat = append(lat, arr[k].Sub(t))
		}
	}
	slices.Sort(lat)
	return lat, missing
}

package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

// fakeClock is the server's clock in rate limit tests: refill is proven by
// moving it, never by sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// limitEnv is a running server with a rate limit, a fake clock, two
// resellers (a, b) and an admin, and a client per loopback source address.
type limitEnv struct {
	srv     *httpapi.Server
	addr    string
	clock   *fakeClock
	reg     *prometheus.Registry
	a, b    cred
	admin   cred
	mu      sync.Mutex
	clients map[string]*http.Client
}

// Limits of the tests: one token a second, a burst of three, so the fourth
// request of an instant is the first refused.
const (
	testRate  = 1
	testBurst = 3
)

func startLimited(t *testing.T, opts httpapi.Options, routes ...func(*httpapi.Server)) *limitEnv {
	t.Helper()
	ctx := context.Background()
	store := principals.NewStore(&catalogtest.Recorder{})
	mk := func(req principals.CreateRequest) cred {
		p, secret, err := store.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return cred{p.Key, secret}
	}
	e := &limitEnv{
		clock:   &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		reg:     prometheus.NewRegistry(),
		clients: map[string]*http.Client{},
	}
	e.a = mk(principals.CreateRequest{Role: principals.RoleReseller, ChannelID: "ch-a"})
	e.b = mk(principals.CreateRequest{Role: principals.RoleReseller, ChannelID: "ch-b"})
	e.admin = mk(principals.CreateRequest{Role: principals.RoleAdmin})

	opts.Principals, opts.Registry = store, e.reg
	s := httpapi.New(opts)
	httpapi.SetClock(s, e.clock.Now)
	ok := func(r *httpapi.Request) error { return r.JSON(http.StatusOK, map[string]bool{"ok": true}) }
	s.Group(httpapi.BaseResellerV13).Handle(http.MethodGet, "/items/{id}", nil, ok)
	s.Group(httpapi.BaseAdminV1).Handle(http.MethodGet, "/ping", nil, ok)
	for _, r := range routes {
		r(s)
	}
	e.srv = s

	e.addr = strings.TrimPrefix(querytest.Serve(t, s), "http://")
	// Registered after Serve's: runs before its Shutdown.
	t.Cleanup(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, c := range e.clients {
			c.CloseIdleConnections()
		}
	})
	return e
}

// client returns an HTTP client whose connections come from the loopback
// address from ("" is 127.0.0.1), so that tests can be two clients.
func (e *limitEnv) client(from string) *http.Client {
	if from == "" {
		from = "127.0.0.1"
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clients[from]; ok {
		return c
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	e.clients[from] = c
	return c
}

func (e *limitEnv) get(t *testing.T, from, path string, c *cred) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+e.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		req.Header.Set("X-API-Key", c.key)
		req.Header.Set("X-API-Secret", c.secret)
	}
	res, err := e.client(from).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, body}
}

// mustRateLimited checks a 429: the error object, a Retry-After of whole
// seconds of at least 1, and data.retryAfter equal to it.
func mustRateLimited(t *testing.T, r response) {
	t.Helper()
	got := mustErrorObject(t, r, http.StatusTooManyRequests, apierror.RateLimited)
	ra := r.header.Get("Retry-After")
	secs, err := strconv.Atoi(ra)
	if err != nil || secs < 1 {
		t.Errorf("Retry-After = %q, want whole seconds >= 1", ra)
	}
	if got.Data["retryAfter"] != ra {
		t.Errorf("data.retryAfter = %q, want the Retry-After header %q", got.Data["retryAfter"], ra)
	}
}

func TestRateLimit(t *testing.T) {
	// step is one request: who sends it (a, b, admin, a-bad for a's key
	// with a wrong secret, anon for no credentials), from which loopback
	// address, after moving the clock by advance, and the status expected.
	type step struct {
		who     string
		from    string
		path    string
		advance time.Duration
		want    int
	}
	burst := func(who, from string, n, want int) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = step{who: who, from: from, want: want}
		}
		return out
	}
	cat := func(parts ...[]step) []step {
		var out []step
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name  string
		off   bool // RateLimit 0
		steps []step
	}{
		{"under the limit passes", false, burst("a", "", testBurst, 200)},
		{"over the burst is 429 with Retry-After", false, cat(burst("a", "", testBurst, 200), burst("a", "", 2, 429))},
		{"one key limited does not affect another", false, cat(
			burst("a", "", testBurst+1, 0), []step{{who: "a", want: 429}}, burst("b", "", testBurst, 200), []step{{who: "b", want: 429}})},
		{"tokens refill as time passes", false, cat(
			burst("a", "", testBurst, 200), []step{{who: "a", want: 429}},
			[]step{{who: "a", advance: time.Second / testRate, want: 200}, {who: "a", want: 429}},
			[]step{{who: "a", advance: 10 * time.Second, want: 200}}, burst("a", "", testBurst-1, 200), []step{{who: "a", want: 429}})},
		{"a refill never exceeds the burst", false, cat(
			[]step{{who: "a", advance: time.Hour, want: 200}}, burst("a", "", testBurst-1, 200), []step{{who: "a", want: 429}})},
		{"bad secrets are charged to the address, never to the key", false, cat(
			burst("a-bad", "", testBurst, 401), []step{{who: "a-bad", want: 429}, {who: "a-bad", from: "127.0.0.2", want: 401}},
			burst("a", "", testBurst, 200), []step{{who: "a", want: 429}})},
		{"anonymous requests are limited per address", false, cat(
			burst("anon", "127.0.0.1", testBurst, 401), []step{{who: "anon", from: "127.0.0.1", want: 429}},
			[]step{{who: "anon", from: "127.0.0.2", want: 401}, {who: "a", from: "127.0.0.1", want: 200}})},
		{"a key is one bucket across addresses and routes", false, cat(
			[]step{{who: "a", from: "127.0.0.1", want: 200}, {who: "a", from: "127.0.0.2", want: 200}, {who: "a", path: "/admin/v1/ping", want: 200}},
			[]step{{who: "a", from: "127.0.0.3", want: 429}})},
		{"limit 0 is off", true, burst("a", "", 5*testBurst, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := httpapi.Options{RateLimit: testRate, RateBurst: testBurst}
			if tt.off {
				opts = httpapi.Options{}
			}
			e := startLimited(t, opts)
			creds := map[string]*cred{"a": &e.a, "b": &e.b, "admin": &e.admin, "a-bad": {e.a.key, e.a.secret + "x"}, "anon": nil}
			for i, s := range tt.steps {
				e.clock.Advance(s.advance)
				path := s.path
				if path == "" {
					path = "/v1.3/items/1"
				}
				r := e.get(t, s.from, path, creds[s.who])
				switch {
				case s.want == 0: // setup step: status not asserted
				case s.want == 429:
					mustRateLimited(t, r)
				case r.status != s.want:
					t.Fatalf("step %d (%s from %q): status %d, want %d; body %s", i, s.who, s.from, r.status, s.want, r.body)
				case r.header.Get("Retry-After") != "":
					t.Errorf("step %d: Retry-After %q on a %d", i, r.header.Get("Retry-After"), r.status)
				}
			}
		})
	}
}

func TestRateLimit_RefusalsAreCountedByRouteGroupOnly(t *testing.T) {
	e := startLimited(t, httpapi.Options{RateLimit: testRate, RateBurst: testBurst})
	for range testBurst + 2 { // two refused on /v1.3
		e.get(t, "", "/v1.3/items/1", &e.a)
	}
	for range testBurst + 1 { // one refused on /admin/v1
		e.get(t, "", "/admin/v1/ping", &e.admin)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := labels(m)
			for _, v := range l {
				for _, secret := range []string{e.a.key, e.a.secret, e.admin.key, "127.0.0.1"} {
					if v == secret {
						t.Errorf("metric %s has a label value %q that is a key or an address", mf.GetName(), v)
					}
				}
			}
			if mf.GetName() == "switchback_query_rate_limited_total" {
				if len(l) != 1 {
					t.Errorf("rate_limited_total labels %v, want group only", l)
				}
				got[l["group"]] = m.GetCounter().GetValue()
			}
			if mf.GetName() == "switchback_query_requests_total" && l["route"] == "/v1.3/items/{id}" && l["status"] == "429" && m.GetCounter().GetValue() != 2 {
				t.Errorf("requests_total{status=429} = %v, want 2", m.GetCounter().GetValue())
			}
		}
	}
	want := map[string]float64{"/v1.3": 2, "/admin/v1": 1}
	for g, v := range want {
		if got[g] != v {
			t.Errorf("rate_limited_total{group=%q} = %v, want %v (all %v)", g, got[g], v, got)
		}
	}
}

// TestRateLimit_RandomKeyFloodCostsOneBucket: a flood of made-up keys from
// one address is failed authentications: charged to the address (401, then
// 429), never a bucket per key, and never to a real key's bucket; a
// drained real key stays limited through it and refills afterwards.
func TestRateLimit_RandomKeyFloodCostsOneBucket(t *testing.T) {
	const maxKeys = 64
	e := startLimited(t, httpapi.Options{RateLimit: testRate, RateBurst: testBurst, RateLimitKeys: maxKeys})
	for range testBurst {
		e.get(t, "", "/v1.3/items/1", &e.a)
	}
	for i := range 20 * maxKeys {
		var b [8]byte
		_, _ = rand.Read(b[:])
		r := e.get(t, "", "/v1.3/items/1", &cred{"sbk_" + hex.EncodeToString(b[:]), "x"})
		switch {
		case i < testBurst && r.status != http.StatusUnauthorized:
			t.Fatalf("random key %d: status %d, want 401", i, r.status)
		case i >= testBurst:
			mustRateLimited(t, r)
		}
		if n := httpapi.RateLimitBuckets(e.srv); n > 2 {
			t.Fatalf("after %d random keys the limiter holds %d buckets, want a's and the address's", i+1, n)
		}
	}
	mustRateLimited(t, e.get(t, "", "/v1.3/items/1", &e.a))
	e.clock.Advance(time.Hour)
	for range testBurst {
		if r := e.get(t, "", "/v1.3/items/1", &e.a); r.status != http.StatusOK {
			t.Fatalf("after refill: %d", r.status)
		}
	}
	mustRateLimited(t, e.get(t, "", "/v1.3/items/1", &e.a))
}

package contract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// TB is what Watch needs of a test (testing.TB implements it).
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// Log collects the violations of one test's exchanges.
type Log struct {
	mu        sync.Mutex
	exchanges int
	webhooks  int
	bad       map[string]int // violation -> times
	known     map[string]int
}

func newLog() *Log { return &Log{bad: map[string]int{}, known: map[string]int{}} }

func (l *Log) add(webhook bool, vs []Violation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if webhook {
		l.webhooks++
	} else {
		l.exchanges++
	}
	for _, v := range vs {
		if v.Known != nil {
			l.known[v.Known.Issue]++
		} else {
			l.bad[v.String()]++
		}
	}
}

// report fails t with every violation (each once, with its count) and logs
// the counts and the known deviations.
func (l *Log) report(t TB, what string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("contract: %d %s validated against the OpenAPI documents", l.exchanges+l.webhooks, what)
	for _, k := range sortedKeys(l.known) {
		t.Logf("contract: known deviation (%d times): %s", l.known[k], k)
	}
	for _, k := range sortedKeys(l.bad) {
		t.Errorf("contract violation (%d times): %s", l.bad[k], k)
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Transport validates the exchanges of watched API addresses; the others
// (the ops listener, simulators, sinks) pass through untouched.
type Transport struct {
	c    *Checker
	base http.RoundTripper

	mu      sync.Mutex
	watched map[string]*Log // host:port -> the watching test's log
	// parent holds the watches of a Transport made by Wrap.
	parent *Transport
}

// NewTransport wraps base (http.DefaultTransport when nil).
func (c *Checker) NewTransport(base http.RoundTripper) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{c: c, base: base, watched: map[string]*Log{}}
}

// Wrap returns a RoundTripper that validates through t's watches but sends
// through base: for a client of its own (a test with its own connection
// pool).
func (t *Transport) Wrap(base http.RoundTripper) http.RoundTripper {
	return &Transport{c: t.c, base: base, watched: nil, parent: t}
}

// Watch validates every exchange with the API at addr (host:port) until
// the test ends, then fails the test with the violations seen. Watching an
// address already watched is a no-op (a restarted binary on the same
// address).
func (t *Transport) Watch(tb TB, addr string) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.watched[addr]; ok {
		return
	}
	l := newLog()
	t.watched[addr] = l
	tb.Cleanup(func() {
		t.mu.Lock()
		delete(t.watched, addr)
		t.mu.Unlock()
		l.report(tb, "API exchanges")
	})
}

func (t *Transport) log(host string) *Log {
	if t.parent != nil {
		return t.parent.log(host)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.watched[host]
}

// RoundTrip sends the request and, for a watched address, validates it and
// its answer. The answer's body is read whole and handed on as read.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	l := t.log(req.URL.Host)
	if l == nil {
		return t.base.RoundTrip(req)
	}
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("contract: read request body: %w", err)
		}
		reqBody = b
		// RoundTrip must not modify the request: send a shallow copy with
		// the body restored.
		r2 := *req
		r2.Body = io.NopCloser(bytes.NewReader(b))
		r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req = &r2
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		// The caller sees the short body; nothing complete to validate.
		return resp, nil
	}
	if req.Method == http.MethodHead {
		return resp, nil
	}
	vs := t.c.Check(Exchange{Request: req, RequestBody: reqBody, Status: resp.StatusCode, Header: resp.Header, ResponseBody: body})
	l.add(false, vs)
	return resp, nil
}

// WebhookLog collects the violations of the webhooks one test's subscriber
// received.
type WebhookLog struct {
	c *Checker
	l *Log
}

// WatchWebhooks returns the log of a test's webhook sink; the test fails
// at its end with the violations.
func (c *Checker) WatchWebhooks(tb TB) *WebhookLog {
	tb.Helper()
	w := &WebhookLog{c: c, l: newLog()}
	tb.Cleanup(func() { w.l.report(tb, "webhook deliveries") })
	return w
}

// Received validates one delivery. Deliveries without the notification
// type header are not Switchback's webhooks (a test posting to its own
// sink) and are skipped.
func (w *WebhookLog) Received(r *http.Request, body []byte) {
	if w == nil || r.Method != http.MethodPost || !strings.Contains(r.Header.Get("User-Agent"), "switchback") {
		return
	}
	w.l.add(true, w.c.Webhook(r, body))
}

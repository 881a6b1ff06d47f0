package remotecall_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/remotecall"
)

type problem string

func (p problem) String() string { return string(p) }

// loopback is the policy of the tests that call the fixture's server.
var loopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

var (
	errUnavailable = errors.New("unavailable")
	errRejected    = errors.New("rejected")
	errNotFound    = errors.New("not found")
	errConflict    = errors.New("conflict")
)

// fixture is a client of a loopback server answering the status in the
// path ("/404") with the body "body".
func fixture(t *testing.T, reg prometheus.Registerer, policy outbound.Policy) (*remotecall.Client[problem], *remotecall.Metrics, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"error":"` + r.Header.Get("X-Code") + `"}`))
	}))
	t.Cleanup(srv.Close)
	m := remotecall.Register(reg, &remotecall.Metrics{
		Seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "test_remote_seconds", Buckets: remotecall.SecondsBuckets}, []string{"op"}),
		Errors:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_remote_errors_total"}, []string{"kind"}),
		Open:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_remote_breaker_open"}),
	}, remotecall.KindTimeout)
	m.NotFound = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_remote_not_found_total"}, []string{"op"})
	c := remotecall.New[problem](remotecall.Options{
		System:  remotecall.System{Name: "test system"},
		Domains: remotecall.Domains{Unavailable: errUnavailable, Rejected: errRejected, NotFound: errNotFound},
		Metrics: m,
		Settings: remotecall.Settings{
			Timeout:  2 * time.Second,
			Outbound: policy,
			// One failure opens the breaker: a 4xx that counted would show.
			BreakerFailures: 1,
			BreakerCooldown: time.Hour,
		},
		MaxResponseBytes: 1 << 10,
	})
	return c, m, srv.URL
}

func TestDo_MapsEachAnswerToItsKindAndDomain(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		call        remotecall.Call
		wantKind    string
		wantDomain  error
		wantBreaker bool // the breaker opened: a failure of the system
	}{
		{"200 is a success", 200, remotecall.Call{}, "", nil, false},
		{"an expected 201 is a success", 201, remotecall.Call{OK: []int{201}}, "", nil, false},
		{"400 is rejected, not a failure", 400, remotecall.Call{}, remotecall.KindStatus, errRejected, false},
		{"404 is not found, not a failure", 404, remotecall.Call{}, remotecall.KindStatus, errNotFound, false},
		{"a 400 the call reads as not found", 400, remotecall.Call{NotFound: func(b []byte) bool { return strings.Contains(string(b), "GONE") }},
			remotecall.KindStatus, errNotFound, false},
		{"a status of the call's own", 409, remotecall.Call{Statuses: map[int]error{409: errConflict}}, remotecall.KindStatus, errConflict, false},
		{"401 is our credentials: a failure", 401, remotecall.Call{}, remotecall.KindAuth, errUnavailable, true},
		{"503 is a failure", 503, remotecall.Call{}, remotecall.KindStatus, errUnavailable, true},
		{"an unusable body is malformed, a failure", 200, remotecall.Call{Parse: func(int, []byte) error { return errors.New("no id") }},
			remotecall.KindMalformed, errUnavailable, true},
		{"a data rule broken is kept as it is, not a failure", 200, remotecall.Call{Parse: func(int, []byte) error {
			e := remotecall.NewError[problem](remotecall.System{}, remotecall.KindInvalid, errUnavailable, nil)
			e.Problems = []problem{"booking 0: status"}
			return e
		}}, remotecall.KindInvalid, errUnavailable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, base := fixture(t, nil, loopback)
			in := tt.call
			in.Op, in.Method, in.URL, in.System = "op", http.MethodGet, base+"/"+strconv.Itoa(tt.status), "sys"
			// The server echoes X-Code as the answer's error code.
			in.Header = func(h *fasthttp.RequestHeader) { h.Set("X-Code", "GONE") }
			status, ce := c.Do(context.Background(), in)
			if status != tt.status {
				t.Errorf("status = %d, want %d", status, tt.status)
			}
			switch {
			case tt.wantKind == "" && ce != nil:
				t.Fatalf("Do = %v, want success", ce)
			case tt.wantKind != "" && (ce == nil || ce.Kind != tt.wantKind || !errors.Is(ce, tt.wantDomain) || ce.Status != tt.status):
				t.Fatalf("Do = %#v, want kind %s, domain %v, status %d", ce, tt.wantKind, tt.wantDomain, tt.status)
			}
			if got := c.BreakerOpen("sys"); got != tt.wantBreaker {
				t.Errorf("breaker open = %v, want %v", got, tt.wantBreaker)
			}
		})
	}
}

func TestDo_CountsFailuresByKindAndNotFoundByOp(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, m, base := fixture(t, reg, loopback)
	for _, code := range []string{"/503", "/404", "/200"} {
		// A system each: the 503 opens its breaker (one failure).
		c.Do(context.Background(), remotecall.Call{Op: "read", Method: http.MethodGet, URL: base + code, System: code})
	}
	if got := counter(t, m.Errors.WithLabelValues(remotecall.KindStatus)); got != 1 {
		t.Errorf("errors{kind=status} = %v, want 1 (the 503; the 404 is an answer)", got)
	}
	if got := counter(t, m.NotFound.WithLabelValues("read")); got != 1 {
		t.Errorf("not_found{op=read} = %v, want 1", got)
	}
	var h dto.Metric
	if err := m.Seconds.WithLabelValues("read").(prometheus.Metric).Write(&h); err != nil || h.GetHistogram().GetSampleCount() != 3 {
		t.Errorf("seconds{op=read} samples = %d (%v), want 3", h.GetHistogram().GetSampleCount(), err)
	}
	if got := counter(t, m.Errors.WithLabelValues(remotecall.KindTimeout)); got != 0 {
		t.Errorf("errors{kind=timeout} = %v, want 0 (exported from the start)", got)
	}
}

func TestDo_RefusedByThePolicyBeforeAnyDial(t *testing.T) {
	// The strict policy refuses a loopback address from the url alone,
	// before any dial (and a dial would stay on this machine).
	c, _, _ := fixture(t, nil, outbound.Policy{})
	_, ce := c.Do(context.Background(), remotecall.Call{Op: "read", Method: http.MethodGet, URL: "https://127.0.0.1:1/latest", System: "sys"})
	if ce == nil || ce.Kind != remotecall.KindRefused || !errors.Is(ce, errUnavailable) {
		t.Fatalf("Do = %v, want refused", ce)
	}
	if c.BreakerOpen("sys") {
		t.Error("a refusal opened the breaker: nothing was sent")
	}
	if strings.Contains(ce.Error(), "127.0.0.1") {
		t.Errorf("error %q names the address", ce.Error())
	}
}

func TestError_WordsNameTheSystemNeverTheNetwork(t *testing.T) {
	sys := remotecall.System{Name: "partner", BadRequest: "the connection's baseUrl is not a usable url"}
	cause := errors.New("dial tcp 10.0.0.1:443: https://user:secret@host/")
	tests := []struct {
		kind string
		want string
	}{
		{remotecall.KindTimeout, "partner call: the partner could not be reached"},
		{remotecall.KindTransport, "partner call: the partner could not be reached"},
		{remotecall.KindBreaker, "partner call: not tried, the partner's circuit breaker is open after repeated failures"},
		{remotecall.KindRefused, "partner call: " + outbound.ErrRefused.Error()},
		{remotecall.KindRequest, "partner call: the connection's baseUrl is not a usable url"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			if got := remotecall.NewError[problem](sys, tt.kind, errUnavailable, cause).Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

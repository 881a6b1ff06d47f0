package partner_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
)

// allowLoopback is the outbound policy of these tests: their simulators
// listen on loopback over http, which the default policy refuses.
var allowLoopback = outbound.Policy{AllowHTTP: true, AllowPrivate: true}

var (
	t0   = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	conn = func(url string) partner.Connection {
		return partner.Connection{BaseURL: url, APIKey: "k", APISecret: "s"}
	}
)

func sim(t *testing.T, cfg partnersim.Config) (*partnersim.Server, string) {
	t.Helper()
	cfg.APIKey, cfg.APISecret = "k", "s"
	if cfg.Clock == nil {
		cfg.Clock = func() time.Time { return t0 }
	}
	s := partnersim.New(cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func req() partner.AvailabilitiesRequest {
	return partner.AvailabilitiesRequest{SupplierID: "S1", ProductID: "P1", Start: t0, End: t0.Add(48 * time.Hour), RequestID: "req-1"}
}

func TestAvailabilities_ParsesByRateAndEchoesRequestID(t *testing.T) {
	_, url := sim(t, partnersim.Config{Rates: map[string][]string{"P1": {"R1", "R2"}}})
	c := partner.NewClient(partner.Options{Outbound: allowLoopback})
	l, err := c.Availabilities(context.Background(), conn(url), req())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.ByRate) != 2 || len(l.ByRate["R1"].Availability) != 6 || !l.Retrieved.Equal(t0) || !l.Expires.After(t0) {
		t.Fatalf("unexpected list %+v", l)
	}
	as, ok := l.ForRate("R1", false)
	if !ok || len(as) != 6 {
		t.Fatalf("ForRate: %d %v", len(as), ok)
	}
}

func TestAvailabilities_BadCredentialsAreUnavailableWithoutDetails(t *testing.T) {
	_, url := sim(t, partnersim.Config{})
	c := partner.NewClient(partner.Options{Outbound: allowLoopback})
	cn := conn(url)
	cn.APISecret = "wrong-secret"
	_, err := c.Availabilities(context.Background(), cn, req())
	var ce *partner.CallError
	if !errors.As(err, &ce) || ce.Kind != partner.KindAuth || !errors.Is(err, partner.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "wrong-secret") || strings.Contains(cn.String(), "wrong-secret") {
		t.Fatal("secret leaked")
	}
}

func TestAvailabilities_ReqIDMismatchIsMalformed(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"availabilities":{"byRate":{},"retrieved":"2026-11-22T00:00:00Z","expires":"2026-11-22T00:10:00Z"},"meta":{"reqId":"other"}}`))
	}))
	defer ts.Close()
	_, err := partner.NewClient(partner.Options{Outbound: allowLoopback}).Availabilities(context.Background(), conn(ts.URL), req())
	var ce *partner.CallError
	if !errors.As(err, &ce) || ce.Kind != partner.KindMalformed || !errors.Is(err, partner.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestAvailabilities_TimeoutAndStatusMapping(t *testing.T) {
	s, url := sim(t, partnersim.Config{Latency: 300 * time.Millisecond})
	c := partner.NewClient(partner.Options{Outbound: allowLoopback, Timeout: 50 * time.Millisecond})
	_, err := c.Availabilities(context.Background(), conn(url), req())
	var ce *partner.CallError
	if !errors.As(err, &ce) || ce.Kind != partner.KindTimeout {
		t.Fatalf("err = %v", err)
	}
	s.Update(func(c *partnersim.Config) { c.Latency = 0 })
	bad := req()
	bad.End = bad.Start // the simulator answers 400
	_, err = c.Availabilities(context.Background(), conn(url), bad)
	if !errors.Is(err, partner.ErrRejected) {
		t.Fatalf("400: %v", err)
	}
}

func TestBreaker_OpensAfterFailuresThenHalfOpenCloses(t *testing.T) {
	now := t0
	s, url := sim(t, partnersim.Config{ErrorRate: 1})
	c := partner.NewClient(partner.Options{Outbound: allowLoopback, BreakerFailures: 3, BreakerCooldown: 10 * time.Second, Clock: func() time.Time { return now }})
	for range 3 {
		if _, err := c.Availabilities(context.Background(), conn(url), req()); !errors.Is(err, partner.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
	}
	calls := s.Calls()
	_, err := c.Availabilities(context.Background(), conn(url), req())
	var ce *partner.CallError
	if !errors.As(err, &ce) || ce.Kind != partner.KindBreaker || s.Calls() != calls || !c.BreakerOpen(url) {
		t.Fatalf("open breaker: err %v, calls %d→%d", err, calls, s.Calls())
	}
	now = now.Add(11 * time.Second)
	s.Update(func(c *partnersim.Config) { c.ErrorRate = 0 })
	if _, err := c.Availabilities(context.Background(), conn(url), req()); err != nil {
		t.Fatalf("half-open trial: %v", err)
	}
	if c.BreakerOpen(url) {
		t.Fatal("breaker still open after a successful trial")
	}
}

func TestParseAvailabilities(t *testing.T) {
	const ok = `{"availabilities":{"byRate":{"R1":{"availability":[{"id":"a","start":"2026-11-22T09:00:00Z","end":"2026-11-22T11:00:00Z","capacity":3}]}},"productId":"P1","retrieved":"2026-11-22T00:00:00Z","expires":"2026-11-22T00:10:00Z"},"meta":{"reqId":"r"}}`
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"valid", ok, true},
		{"trailing data", ok + "{}", false},
		{"other reqId", strings.Replace(ok, `"reqId":"r"`, `"reqId":"x"`, 1), false},
		{"no meta", strings.Replace(ok, `,"meta":{"reqId":"r"}`, ``, 1), false},
		{"no expires", strings.Replace(ok, `,"expires":"2026-11-22T00:10:00Z"`, ``, 1), false},
		{"other product", strings.Replace(ok, `"productId":"P1"`, `"productId":"P2"`, 1), false},
		{"negative capacity", strings.Replace(ok, `"capacity":3`, `"capacity":-1`, 1), false},
		{"end before start", strings.Replace(ok, `"end":"2026-11-22T11:00:00Z"`, `"end":"2026-11-22T08:00:00Z"`, 1), false},
		{"no aggregation", `{"availabilities":{"retrieved":"2026-11-22T00:00:00Z","expires":"2026-11-22T00:10:00Z"},"meta":{"reqId":"r"}}`, false},
		{"not json", `<html>`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := partner.ParseAvailabilities([]byte(tt.body), "r", "P1")
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, partner.ErrMalformed) {
				t.Fatalf("err %v is not ErrMalformed", err)
			}
		})
	}
}

func FuzzParseAvailabilities(f *testing.F) {
	f.Add([]byte(`{"availabilities":{"byRate":{"R1":{"availability":[{"id":"a","start":"2026-11-22T09:00:00Z","end":"2026-11-22T11:00:00Z","capacity":3}]}},"retrieved":"2026-11-22T00:00:00Z","expires":"2026-11-22T00:10:00Z"},"meta":{"reqId":"r"}}`))
	f.Add([]byte(`{"availabilities":{"byProduct":{"availability":[]},"retrieved":"2026-11-22T00:00:00Z","expires":"2026-11-22T00:10:00Z"},"meta":{"reqId":"r"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		l, err := partner.ParseAvailabilities(body, "r", "")
		if err != nil {
			if !errors.Is(err, partner.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		check := func(as []partner.Availability) {
			for _, a := range as {
				if a.ID == "" || !a.Start.Before(a.End) || a.Capacity < 0 {
					t.Fatalf("accepted an invalid availability %+v", a)
				}
			}
		}
		if l.ByProduct != nil {
			check(l.ByProduct.Availability)
		}
		for _, al := range l.ByRate {
			check(al.Availability)
		}
		if l.Expires.IsZero() || l.Retrieved.IsZero() {
			t.Fatal("accepted a list without expires or retrieved")
		}
	})
}

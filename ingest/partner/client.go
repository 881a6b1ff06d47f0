package partner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/breaker"
	"github.com/switchbackhq/switchback/internal/instrument"
	"github.com/switchbackhq/switchback/internal/outbound"
	"github.com/switchbackhq/switchback/internal/partnerapi"
)

// Domain errors of partner calls, internal/partnerapi's (the same
// sentinels: errors.Is matches either name).
var (
	ErrUnavailable = partnerapi.ErrUnavailable
	ErrRejected    = partnerapi.ErrRejected
	ErrNotFound    = partnerapi.ErrNotFound
)

// Failure kinds, internal/partnerapi's: the label of
// switchback_ingest_partner_errors_total.
const (
	KindTimeout   = partnerapi.KindTimeout
	KindTransport = partnerapi.KindTransport
	KindStatus    = partnerapi.KindStatus
	KindMalformed = partnerapi.KindMalformed
	KindAuth      = partnerapi.KindAuth
	KindBreaker   = partnerapi.KindBreaker
	KindRefused   = partnerapi.KindRefused
	KindRequest   = partnerapi.KindRequest
)

// CallError is a failed partner call: Kind for metrics and tests, the
// domain error it maps to for callers (errors.Is(err, ErrUnavailable)).
type CallError struct {
	Kind   string
	Status int // partner HTTP status, 0 when there was none
	domain error
	cause  error
}

// Error says what happened in words that reveal nothing of the network
// (they reach change notification errors and logs): "refused by the
// outbound policy" whatever the target, "could not be reached" for a
// failed or timed-out connection, "answered status N"; never the url, the
// address or the remote body.
func (e *CallError) Error() string {
	switch e.Kind {
	case KindRefused:
		return "partner call: " + outbound.ErrRefused.Error()
	case KindTimeout, KindTransport:
		return "partner call: the partner could not be reached"
	case KindStatus, KindAuth:
		return fmt.Sprintf("partner call: the partner answered status %d", e.Status)
	case KindBreaker:
		return "partner call: not tried, the partner's circuit breaker is open after repeated failures"
	case KindMalformed:
		return fmt.Sprintf("partner call: the partner answered status %d with an unusable body: %v", e.Status, e.cause)
	case KindRequest:
		return "partner call: the connection's baseUrl is not a usable url"
	}
	return fmt.Sprintf("partner call: %s", e.Kind)
}

// CallKind is the failure's kind (partnerapi.Kind*): what a caller that
// must not import this package reads through an interface of its own.
func (e *CallError) CallKind() string { return e.Kind }

// CallStatus is the partner's HTTP status, 0 when there was none.
func (e *CallError) CallStatus() int { return e.Status }

// Unwrap gives the domain error (and the cause, for errors.Is on it).
func (e *CallError) Unwrap() []error { return []error{e.domain, e.cause} }

// ErrorCode is the domain error's code (apierror.From maps it).
func (e *CallError) ErrorCode() string {
	var c interface{ ErrorCode() string }
	if errors.As(e.domain, &c) {
		return c.ErrorCode()
	}
	return "UNAVAILABLE"
}

// Connection is how to reach one partner (internal/partnerapi's).
type Connection = partnerapi.Connection

// Options configures NewClient.
type Options struct {
	// Timeout of one call. Default 2 s (the partner deadline).
	Timeout time.Duration
	// Outbound is the policy every partner url and connection is judged
	// by (internal/outbound). The zero value is the strict one: https and
	// public addresses only.
	Outbound outbound.Policy
	// BreakerFailures consecutive failures open a partner's breaker for
	// BreakerCooldown; then one trial call (half-open) closes or reopens
	// it. Defaults 5 and 10 s.
	BreakerFailures int
	BreakerCooldown time.Duration
	// Registerer gets the switchback_ingest_partner_* metrics; nil: none.
	Registerer prometheus.Registerer
	// Clock for the breaker. Default time.Now.
	Clock func() time.Time
}

// Client calls partners. Safe for concurrent use.
type Client struct {
	opts     Options
	http     *fasthttp.Client // dials through the outbound policy
	metrics  *metrics
	breakers *breaker.Set // by base URL
}

// NewClient returns a client.
func NewClient(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.BreakerFailures <= 0 {
		opts.BreakerFailures = 5
	}
	if opts.BreakerCooldown <= 0 {
		opts.BreakerCooldown = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	// No redirect is followed (fasthttp's Do returns a 3xx as it is);
	// every address connected to is judged by the outbound policy.
	h := &fasthttp.Client{
		Name:                "switchback",
		DialTimeout:         opts.Outbound.Dialer(opts.Timeout),
		MaxConnsPerHost:     256,
		MaxIdleConnDuration: 30 * time.Second,
		MaxResponseBodySize: MaxResponseBytes,
		// An answer fasthttp cannot parse must not put its bytes (which
		// may echo our credentials) in an error.
		ConfigureClient: func(hc *fasthttp.HostClient) error { hc.SecureErrorLogMessage = true; return nil },
	}
	m := newMetrics(opts.Registerer)
	return &Client{opts: opts, http: h, metrics: m, breakers: breaker.NewSet(opts.BreakerFailures, opts.BreakerCooldown, m.open)}
}

// AvailabilitiesRequest is GET /suppliers/{s}/products/{p}/availabilities
// (internal/partnerapi's).
type AvailabilitiesRequest = partnerapi.AvailabilitiesRequest

// Availabilities calls the partner. ctx's deadline shortens the timeout.
func (c *Client) Availabilities(ctx context.Context, conn Connection, in AvailabilitiesRequest) (List, error) {
	u, err := availabilitiesURL(conn.BaseURL, in)
	if err != nil {
		return List{}, &CallError{Kind: KindRequest, domain: ErrUnavailable, cause: err}
	}
	var out List
	err = c.do(ctx, conn, "availabilities", u, in.RequestID, func(body []byte) error {
		out, err = ParseAvailabilities(body, in.RequestID, in.ProductID)
		return err
	})
	return out, err
}

func availabilitiesURL(base string, in AvailabilitiesRequest) (string, error) {
	b, err := url.Parse(base)
	if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return "", errors.New("connection baseUrl is not an http(s) URL")
	}
	q := url.Values{}
	q.Set("start", in.Start.UTC().Format(time.RFC3339))
	q.Set("end", in.End.UTC().Format(time.RFC3339))
	if in.RateID != "" {
		q.Set("rate_id", in.RateID)
	}
	return strings.TrimSuffix(b.String(), "/") + "/suppliers/" + url.PathEscape(in.SupplierID) + "/products/" +
		url.PathEscape(in.ProductID) + "/availabilities?" + q.Encode(), nil
}

// refuse returns the policy's refusal of u (nil: allowed), counted.
func (c *Client) refuse(u string) *CallError {
	if err := c.opts.Outbound.CheckURL(u); err != nil {
		kind := KindRequest
		if errors.Is(err, outbound.ErrRefused) {
			kind = KindRefused
		}
		c.metrics.errors.WithLabelValues(kind).Inc()
		return &CallError{Kind: kind, domain: ErrUnavailable, cause: err}
	}
	return nil
}

// do runs one GET through the partner's breaker.
func (c *Client) do(ctx context.Context, conn Connection, op, u, reqID string, parse func([]byte) error) error {
	if ce := c.refuse(u); ce != nil {
		return ce
	}
	br := c.breakers.Get(conn.BaseURL)
	if !br.Allow(c.opts.Clock()) {
		c.metrics.errors.WithLabelValues(KindBreaker).Inc()
		return &CallError{Kind: KindBreaker, domain: ErrUnavailable}
	}
	timeout := c.opts.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		br.Done(c.opts.Clock(), true)
		c.metrics.errors.WithLabelValues(KindTimeout).Inc()
		return &CallError{Kind: KindTimeout, domain: ErrUnavailable, cause: context.DeadlineExceeded}
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(u)
	req.Header.SetMethod(fasthttp.MethodGet)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-API-Key", conn.APIKey)
	req.Header.Set("X-API-Secret", conn.APISecret)
	if reqID != "" {
		req.Header.Set("X-Request-ID", reqID)
	}
	start := time.Now()
	err := c.http.DoTimeout(req, resp, timeout)
	c.metrics.seconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
	ce := classify(err, resp.StatusCode())
	if ce == nil {
		if perr := parse(resp.Body()); perr != nil {
			ce = &CallError{Kind: KindMalformed, Status: resp.StatusCode(), domain: ErrUnavailable, cause: perr}
		}
	}
	// A 400/404 is the partner working correctly: not a breaker failure;
	// nor is a refusal, the partner was not called.
	br.Done(c.opts.Clock(), ce != nil && ce.domain == ErrUnavailable && ce.Kind != KindRefused)
	if ce != nil {
		c.metrics.errors.WithLabelValues(ce.Kind).Inc()
		return ce
	}
	return nil
}

func classify(err error, status int) *CallError {
	switch {
	case errors.Is(err, outbound.ErrRefused):
		return &CallError{Kind: KindRefused, domain: ErrUnavailable, cause: err}
	case errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout):
		return &CallError{Kind: KindTimeout, domain: ErrUnavailable, cause: err}
	case err != nil:
		return &CallError{Kind: KindTransport, domain: ErrUnavailable, cause: err}
	case status == fasthttp.StatusOK:
		return nil
	case status == fasthttp.StatusBadRequest:
		return &CallError{Kind: KindStatus, Status: status, domain: ErrRejected}
	case status == fasthttp.StatusNotFound:
		return &CallError{Kind: KindStatus, Status: status, domain: ErrNotFound}
	case status == fasthttp.StatusUnauthorized || status == fasthttp.StatusForbidden:
		// Our stored credentials are wrong: not the reseller's fault.
		return &CallError{Kind: KindAuth, Status: status, domain: ErrUnavailable}
	}
	return &CallError{Kind: KindStatus, Status: status, domain: ErrUnavailable}
}

// BreakerOpen reports whether the breaker of the partner at baseURL is
// open (for tests and health pages).
func (c *Client) BreakerOpen(baseURL string) bool {
	return c.breakers.Open(baseURL)
}

type metrics struct {
	seconds *prometheus.HistogramVec
	errors  *prometheus.CounterVec
	open    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_ingest_partner_seconds",
			Help:    "Latency of partner interface calls, by operation.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 5},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_ingest_partner_errors_total",
			Help: "Failed partner interface calls, by kind (timeout, transport, status, malformed, auth, breaker_open, refused, request).",
		}, []string{"kind"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "switchback_ingest_partner_breaker_open",
			Help:        "Partners whose circuit breaker is open or half-open (by connection kind, not by partner).",
			ConstLabels: prometheus.Labels{"kind": "partner"},
		}),
	}
	m.seconds = instrument.Register(reg, m.seconds)
	m.errors = instrument.Register(reg, m.errors)
	for _, k := range []string{KindTimeout, KindTransport, KindStatus, KindMalformed, KindAuth, KindBreaker} {
		m.errors.WithLabelValues(k) // at 0 from the start, for rates and alerts
	}
	m.open = instrument.Register(reg, m.open)
	return m
}

// Package remotecall is the base of Switchback's clients of remote systems
// (ingest/partner: a partner's interface v1.2, spec doc 2;
// ingest/bookingsystem: a booking system's interface v2 or OCTO, spec doc
// 3): one HTTP call under the outbound policy (internal/platform/outbound) and the
// remote system's circuit breaker (internal/platform/breaker), with its timeout
// (shortened by the context's deadline), its latency and failure metrics,
// and its failure as an *Error of a kind (the metrics' label) that maps to
// a domain error of the client.
//
// It owns how a call is made and how a failure is classified and worded:
// the words reveal nothing of the network (never the url, the address, the
// remote body or our credentials), as errors reach cron reports, change
// notifications and logs. It must not know a remote interface: the paths,
// credentials' headers, request bodies, answers and domain errors are the
// client's, passed in (Call, Options.Domains).
package remotecall

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/platform/breaker"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
)

// Failure kinds of a call: the label of the errors metric.
const (
	KindTimeout   = "timeout"
	KindTransport = "transport"
	KindStatus    = "status"
	KindMalformed = "malformed"
	// KindInvalid: a single-object answer broke a data rule of the remote
	// interface (Error.Problems says which); not a failure of the system.
	KindInvalid = "invalid"
	KindAuth    = "auth"
	KindBreaker = "breaker_open"
	// KindRefused: the outbound policy refused the url or the address its
	// name resolved to; nothing was sent.
	KindRefused = "refused"
	// KindRequest: our request could not be built; nothing was sent.
	KindRequest = "request"
)

// System names the remote system in the words of an Error.
type System struct {
	// Name is what the system is called: "partner", "booking system".
	Name string
	// BadRequest, when set, is the whole wording of a KindRequest failure
	// (else its cause is shown).
	BadRequest string
}

// Error is a failed call: Kind for metrics and tests, the domain error it
// maps to for callers (errors.Is(err, the client's ErrUnavailable)). It
// never holds the remote body. Problems lists the data rules a
// single-object answer broke (KindInvalid); P is the client's problem
// type (NoProblem for a client whose answers have no such rules).
type Error[P fmt.Stringer] struct {
	Kind     string
	Status   int // remote HTTP status, 0 when there was none
	Problems []P
	system   System
	domain   error
	cause    error
}

// NoProblem is the problem type of a client that reports none.
type NoProblem struct{}

func (NoProblem) String() string { return "" }

// NewError is a failure of kind of a call to sys, mapped to domain.
func NewError[P fmt.Stringer](sys System, kind string, domain, cause error) *Error[P] {
	return &Error[P]{Kind: kind, system: sys, domain: domain, cause: cause}
}

// Error says what happened in words that reveal nothing of the network:
// "refused by the outbound policy" whatever the target, "could not be
// reached" for a failed or timed-out connection, "answered status N";
// never the url, the address or the remote body.
func (e *Error[P]) Error() string {
	name, the := "remote call", "the remote system"
	if e.system.Name != "" {
		name, the = e.system.Name+" call", "the "+e.system.Name
	}
	switch {
	case e.Kind == KindRefused:
		return name + ": " + outbound.ErrRefused.Error()
	case e.Kind == KindTimeout || e.Kind == KindTransport:
		return name + ": " + the + " could not be reached"
	case e.Kind == KindStatus || e.Kind == KindAuth:
		return fmt.Sprintf("%s: %s answered status %d", name, the, e.Status)
	case e.Kind == KindBreaker:
		return name + ": not tried, " + the + "'s circuit breaker is open after repeated failures"
	case e.Kind == KindMalformed:
		return fmt.Sprintf("%s: %s answered status %d with an unusable body: %v", name, the, e.Status, e.cause)
	case e.Kind == KindRequest && e.system.BadRequest != "":
		return name + ": " + e.system.BadRequest
	case e.cause != nil:
		return fmt.Sprintf("%s: %s: %v", name, e.Kind, e.cause)
	case len(e.Problems) > 0:
		return fmt.Sprintf("%s: %s: %s", name, e.Kind, e.Problems[0])
	}
	return fmt.Sprintf("%s: %s (status %d)", name, e.Kind, e.Status)
}

// CallKind is the failure's kind: what a caller that must not import the
// client reads through an interface of its own (internal/availcache).
func (e *Error[P]) CallKind() string { return e.Kind }

// CallStatus is the remote HTTP status, 0 when there was none.
func (e *Error[P]) CallStatus() int { return e.Status }

// Unwrap gives the domain error (and the cause, for errors.Is on it).
func (e *Error[P]) Unwrap() []error { return []error{e.domain, e.cause} }

// ErrorCode is the domain error's code (apierror.From maps it).
func (e *Error[P]) ErrorCode() string {
	var c interface{ ErrorCode() string }
	if errors.As(e.domain, &c) {
		return c.ErrorCode()
	}
	return "UNAVAILABLE"
}

// Domains are the client's domain errors a status maps to.
type Domains struct {
	// Unavailable: the system failed, timed out, answered garbage or
	// refused our credentials, or its breaker is open. Only these count
	// against its breaker.
	Unavailable error
	// Rejected: the system answered 400.
	Rejected error
	// NotFound: the system answered 404 (or Call.NotFound said so).
	NotFound error
}

// Metrics are a client's metrics of calls. Names and help are the
// client's (dashboards, alerts and docs/ops read them).
type Metrics struct {
	Seconds *prometheus.HistogramVec // by "op"
	Errors  *prometheus.CounterVec   // by "kind"
	// NotFound (optional, by "op"): answers that the object asked for
	// does not exist are counted here instead of in Errors (they are
	// answers, not failures).
	NotFound *prometheus.CounterVec
	Open     prometheus.Gauge // breakers not closed
}

// SecondsBuckets are the buckets of a client's call latency histogram.
var SecondsBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 5}

// Register registers m's collectors with reg (nil: none), sharing an
// identical collector already registered (instrument.Register), and
// exports the error kinds zeroKinds at 0 from the start (for rates and
// alerts). The client declares the collectors itself, with its literal
// names and help: the deploy/ tests find a metric by reading its
// prometheus *Opts literal in the source, and dashboards, alerts and
// docs/ops read those names.
func Register(reg prometheus.Registerer, m *Metrics, zeroKinds ...string) *Metrics {
	m.Seconds = instrument.Register(reg, m.Seconds)
	m.Errors = instrument.Register(reg, m.Errors)
	for _, k := range zeroKinds {
		m.Errors.WithLabelValues(k)
	}
	m.Open = instrument.Register(reg, m.Open)
	if m.NotFound != nil {
		m.NotFound = instrument.Register(reg, m.NotFound)
	}
	return m
}

// Settings are what the user of a client sets: partner.Options and
// bookingsystem.Options are this type (each client's NewClient documents
// its own default timeout and names its metrics).
type Settings struct {
	// Timeout of one call. Required by New; each client has a default.
	Timeout time.Duration
	// Outbound is the policy every url and every address connected to is
	// judged by (internal/platform/outbound). The zero value is the strict
	// one: https and public addresses only.
	Outbound outbound.Policy
	// BreakerFailures consecutive failures open a system's breaker for
	// BreakerCooldown; then one trial call (half-open) closes or reopens
	// it. Defaults 5 and 10 s.
	BreakerFailures int
	BreakerCooldown time.Duration
	// Registerer gets the client's metrics (the client registers them,
	// Register); nil: none. New does not read it.
	Registerer prometheus.Registerer
	// Clock for the breaker. Default time.Now.
	Clock func() time.Time
}

// Options configures New. Timeout, Metrics and Domains are required.
type Options struct {
	System  System
	Domains Domains
	Metrics *Metrics
	Settings
	// MaxResponseBytes bounds an answer's body.
	MaxResponseBytes int
	// OversizeKind is the kind of an answer over MaxResponseBytes:
	// KindMalformed, or "" for KindTransport (the partner client's, as
	// it always was).
	OversizeKind string
}

// Client makes calls. Safe for concurrent use.
type Client[P fmt.Stringer] struct {
	opts     Options
	http     *fasthttp.Client // dials through the outbound policy
	breakers *breaker.Set     // by Call.System
}

// New returns a client.
func New[P fmt.Stringer](opts Options) *Client[P] {
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
		MaxResponseBodySize: opts.MaxResponseBytes,
		// An answer fasthttp cannot parse must not put its bytes (which
		// may echo our credentials) in an error.
		ConfigureClient: func(hc *fasthttp.HostClient) error { hc.SecureErrorLogMessage = true; return nil },
	}
	return &Client[P]{opts: opts, http: h, breakers: breaker.NewSet(opts.BreakerFailures, opts.BreakerCooldown, opts.Metrics.Open)}
}

// Fail is a failure of kind mapped to domain, not counted.
func (c *Client[P]) Fail(kind string, domain, cause error) *Error[P] {
	return NewError[P](c.opts.System, kind, domain, cause)
}

// Count counts a failure in the errors metric and returns it.
func (c *Client[P]) Count(e *Error[P]) *Error[P] {
	c.opts.Metrics.Errors.WithLabelValues(e.Kind).Inc()
	return e
}

// BreakerOpen reports whether the breaker of system is open or half-open.
func (c *Client[P]) BreakerOpen(system string) bool { return c.breakers.Open(system) }

// Call is one call: what Do needs.
type Call struct {
	Op     string // metrics label: "availabilities", "createBooking", ...
	Method string
	URL    string
	// System is the breaker's key: the remote system called.
	System string
	// Header sets the credentials and any other header (after Accept).
	Header func(h *fasthttp.RequestHeader)
	Body   []byte // JSON request body; nil for none
	// OK are the success statuses besides 200.
	OK []int
	// Statuses maps other statuses to domain errors (Kind status, not a
	// failure of the system: e.g. a partner's 409 and 413).
	Statuses map[int]error
	// NotFound (optional) says whether a 400 answer's body means the
	// object asked for does not exist (OCTO's INVALID_BOOKING_UUID where
	// doc 3 answers 404): mapped to Domains.NotFound.
	NotFound func(body []byte) bool
	// Parse (optional) reads a success answer. An *Error[P] it returns is
	// kept as it is (with the status); any other error is KindMalformed.
	Parse func(status int, body []byte) error
}

// Do runs one call through the system's breaker: the outbound policy's
// check of the url, the timeout (shortened by ctx's deadline), the latency
// and error metrics by op, and the remote status mapped to a domain error.
// 4xx answers other than 401/403 are the system working correctly and do
// not count against its breaker; neither does a refusal (nothing was sent)
// nor an answer that broke a data rule. It returns the remote status (0
// when there was none) and the failure, nil on success.
func (c *Client[P]) Do(ctx context.Context, in Call) (int, *Error[P]) {
	if err := c.opts.Outbound.CheckURL(in.URL); err != nil {
		kind := KindRequest
		if errors.Is(err, outbound.ErrRefused) {
			kind = KindRefused
		}
		return 0, c.Count(c.Fail(kind, c.opts.Domains.Unavailable, err))
	}
	br := c.breakers.Get(in.System)
	if !br.Allow(c.opts.Clock()) {
		return 0, c.Count(c.Fail(KindBreaker, c.opts.Domains.Unavailable, nil))
	}
	timeout := c.opts.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		br.Done(c.opts.Clock(), true)
		return 0, c.Count(c.Fail(KindTimeout, c.opts.Domains.Unavailable, context.DeadlineExceeded))
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(in.URL)
	req.Header.SetMethod(in.Method)
	req.Header.Set("Accept", "application/json")
	if in.Header != nil {
		in.Header(&req.Header)
	}
	if in.Body != nil {
		req.Header.SetContentType("application/json")
		req.SetBody(in.Body)
	}
	start := time.Now()
	err := c.http.DoTimeout(req, resp, timeout)
	c.opts.Metrics.Seconds.WithLabelValues(in.Op).Observe(time.Since(start).Seconds())
	status := resp.StatusCode()
	ce := c.classify(err, status, in)
	if ce != nil && status == fasthttp.StatusBadRequest && in.NotFound != nil && in.NotFound(resp.Body()) {
		ce.domain = c.opts.Domains.NotFound
	}
	if ce == nil && in.Parse != nil {
		if perr := in.Parse(status, resp.Body()); perr != nil {
			if !errors.As(perr, &ce) {
				ce = c.Fail(KindMalformed, c.opts.Domains.Unavailable, perr)
			}
			ce.Status = status
		}
	}
	br.Done(c.opts.Clock(), ce != nil && ce.domain == c.opts.Domains.Unavailable && ce.Kind != KindInvalid && ce.Kind != KindRefused)
	switch {
	case ce == nil:
		return status, nil
	case ce.domain == c.opts.Domains.NotFound && c.opts.Metrics.NotFound != nil:
		c.opts.Metrics.NotFound.WithLabelValues(in.Op).Inc()
	default:
		c.opts.Metrics.Errors.WithLabelValues(ce.Kind).Inc()
	}
	return status, ce
}

// classify maps the transport's error and the remote status to a failure
// (nil: success).
func (c *Client[P]) classify(err error, status int, in Call) *Error[P] {
	d := c.opts.Domains
	fail := func(kind string, domain, cause error) *Error[P] {
		e := c.Fail(kind, domain, cause)
		if cause == nil {
			e.Status = status
		}
		return e
	}
	switch {
	case errors.Is(err, outbound.ErrRefused):
		return fail(KindRefused, d.Unavailable, err)
	case errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout):
		return fail(KindTimeout, d.Unavailable, err)
	case errors.Is(err, fasthttp.ErrBodyTooLarge) && c.opts.OversizeKind != "":
		return fail(c.opts.OversizeKind, d.Unavailable, err)
	case err != nil:
		return fail(KindTransport, d.Unavailable, err)
	case status == fasthttp.StatusOK || slices.Contains(in.OK, status):
		return nil
	case in.Statuses[status] != nil:
		return fail(KindStatus, in.Statuses[status], nil)
	case status == fasthttp.StatusBadRequest:
		return fail(KindStatus, d.Rejected, nil)
	case status == fasthttp.StatusNotFound:
		return fail(KindStatus, d.NotFound, nil)
	case status == fasthttp.StatusUnauthorized || status == fasthttp.StatusForbidden:
		// Our stored credentials are wrong: not the caller's fault.
		return fail(KindAuth, d.Unavailable, nil)
	}
	return fail(KindStatus, d.Unavailable, nil)
}

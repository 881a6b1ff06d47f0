// Package bookingsystem is the client of the operator booking-system
// interface v2 (spec doc 3, "Booking system"): suppliers, products,
// availability (read and unit-configuration check), bookings and orders of
// suppliers whose connection is a booking system, plus the "not shown"
// endpoints filled the OCTO way (docs/decisions.md). A connection of
// DialectOCTO is spoken as the public OCTO standard instead (octo.go): the
// same methods and types, OCTO's supplier-less paths and shapes; orders,
// which core OCTO lacks, are refused with ErrUnsupported.
//
// It owns the wire format, the strict parsing of answers, the data rules of
// doc 3 (rules.go: invalid items are rejected one by one and reported, the
// valid ones returned), the mapping of failures to domain errors (never the
// remote body or our credentials), a circuit breaker per booking system and
// the switchback_ingest_bookingsystem_* metrics.
//
// It must not cache, publish or map into the catalog: callers do. The API
// key is sent as "Authorization: Bearer <apiKey>" and never logged or put
// into an error.
package bookingsystem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/remotecall"
)

// Domain errors of booking-system calls. Callers see the code and this
// message only; the remote status and body stay out of errors.
var (
	// ErrUnavailable: the booking system failed, timed out, answered
	// garbage, refused our credentials or its breaker is open (503).
	ErrUnavailable = domainerr.New("UNAVAILABLE", "the supplier's booking system is temporarily unavailable")
	// ErrRejected: the booking system answered 400, including a retried
	// createBooking whose data differs from the first (doc 3, rule 4).
	ErrRejected = domainerr.New("BAD_REQUEST", "the supplier's booking system rejected the request")
	// ErrNotFound: the booking system answered 404.
	ErrNotFound = domainerr.New("NOT_FOUND", "not found at the supplier's booking system")
	// ErrInvalid is an INVALID_FIELD sentinel: our own request broke a
	// rule before it was sent (errors.Is matches *domainerr.FieldError).
	ErrInvalid = domainerr.New(domainerr.CodeInvalidField, "invalid booking-system request")
	// ErrUnsupported: the call does not exist in the connection's dialect
	// (orders of an OCTO booking system); nothing was sent.
	ErrUnsupported = domainerr.New("BAD_REQUEST", "the supplier's booking system does not support this operation")
)

// Failure kinds (internal/platform/remotecall's), the label of
// switchback_ingest_bookingsystem_errors_total.
const (
	KindTimeout   = remotecall.KindTimeout
	KindTransport = remotecall.KindTransport
	KindStatus    = remotecall.KindStatus
	KindMalformed = remotecall.KindMalformed
	KindInvalid   = remotecall.KindInvalid // a single-object answer broke a data rule
	KindAuth      = remotecall.KindAuth
	KindBreaker   = remotecall.KindBreaker
	KindRequest   = remotecall.KindRequest // our request was invalid; nothing was sent
	// KindRefused: the outbound policy refused the endpoint or the
	// address its name resolved to; nothing was sent.
	KindRefused = remotecall.KindRefused
)

// CallError is a failed call (internal/platform/remotecall's): Kind for metrics and
// tests, the domain error it maps to for callers (errors.Is(err,
// ErrUnavailable)). It never holds the remote body; Problems lists the data
// rules a single-object answer (a booking, an order) broke, by id and rule.
// Its words reveal nothing of the network (they reach cron reports and
// change notification errors, which the operator reads): never the url,
// the address or the remote body.
type CallError = remotecall.Error[Problem]

// newError is a failure of kind mapped to domain, not counted.
func newError(kind string, domain, cause error) *CallError {
	return remotecall.NewError[Problem](remotecall.System{Name: "booking system"}, kind, domain, cause)
}

// invalidAnswer is a single-object answer that broke the data rules ps.
func invalidAnswer(ps []Problem) *CallError {
	e := newError(KindInvalid, ErrUnavailable, nil)
	e.Problems = ps
	return e
}

// Connection is how to reach one supplier's booking system: its endpoint
// (doc 3: prepended to every path, no trailing "/") and our API key. For
// GET /suppliers, Endpoint is the platform's base address. String shows
// the endpoint's scheme and host only: never the key, and never the
// userinfo, path, query or fragment, where some booking systems put a key.
type Connection struct {
	Endpoint string
	APIKey   string
	// Dialect is DialectV2 (the default when empty) or DialectOCTO.
	Dialect string
}

// String is what logs show of a connection (every synchronization logs
// it): "bookingsystem{scheme://host}", the booking system and nothing
// else.
func (c Connection) String() string {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "bookingsystem{invalid endpoint}"
	}
	return "bookingsystem{" + u.Scheme + "://" + u.Host + "}"
}

// system is the breaker key: scheme and host of the endpoint. Suppliers of
// one booking system share a host (their endpoints differ in path), and a
// dead booking system is dead for all of them.
func (c Connection) system() string {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return c.Endpoint
	}
	return u.Scheme + "://" + u.Host
}

// MaxResponseBytes bounds any answer of a booking system.
const MaxResponseBytes = 8 << 20

// Options configures NewClient (remotecall's Settings): Timeout defaults
// to 5 s (booking writes are slower than the partner's availability
// reads); Registerer gets the switchback_ingest_bookingsystem_* metrics.
type Options = remotecall.Settings

// Client calls booking systems. Safe for concurrent use.
type Client struct {
	base    *remotecall.Client[Problem] // breakers by Connection.system()
	metrics *metrics
}

// NewClient returns a client.
func NewClient(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	m := newMetrics(opts.Registerer)
	return &Client{metrics: m, base: remotecall.New[Problem](remotecall.Options{
		System:   remotecall.System{Name: "booking system"},
		Domains:  remotecall.Domains{Unavailable: ErrUnavailable, Rejected: ErrRejected, NotFound: ErrNotFound},
		Metrics:  m.calls,
		Settings: opts, MaxResponseBytes: MaxResponseBytes, OversizeKind: KindMalformed,
	})}
}

// call is one booking-system call: what send needs.
type call struct {
	op       string // metrics label: "products", "createBooking", ...
	method   string
	segments []string   // path segments after the endpoint, escaped by send
	query    url.Values // optional
	body     any        // JSON request body; nil for none
	headers  map[string]string
	// parse reads the 200 answer; a *CallError it returns is kept as is
	// (KindInvalid), any other error is KindMalformed.
	parse func(body []byte) error
	// notFound (OCTO): error codes of a 400 answer's error object that
	// mean the object asked for does not exist (OCTO answers an unknown
	// booking 400 INVALID_BOOKING_UUID where doc 3 answers 404): mapped
	// to ErrNotFound. Only the code is read, never passed on.
	notFound []string
}

// send runs one call through the booking system's breaker
// (remotecall.Client.Do): the Bearer key, the timeout (shortened by ctx's
// deadline), the latency and error metrics by op, and the remote status
// mapped to a domain error. 400 and 404 are the booking system working
// correctly and do not count against its breaker; neither does an answer
// that breaks a data rule. A known "not found" (404; OCTO's
// INVALID_BOOKING_UUID or INVALID_PRODUCT_ID) is an answer, not a failure:
// it is counted in switchback_ingest_bookingsystem_not_found_total, not in
// the errors (reading an OCTO hold asks past its last booking on every
// read, so an alert on the errors metric would fire on healthy traffic).
func (c *Client) send(ctx context.Context, conn Connection, in call) error {
	switch conn.Dialect {
	case "", DialectV2, DialectOCTO:
	default:
		return c.base.Count(newError(KindRequest, ErrUnavailable, errors.New("unknown booking-system dialect")))
	}
	u, err := endpointURL(conn.Endpoint, in.segments, in.query)
	if err != nil {
		return c.base.Count(newError(KindRequest, ErrUnavailable, err))
	}
	var body []byte
	if in.body != nil {
		if body, err = json.Marshal(in.body); err != nil {
			return newError(KindRequest, ErrInvalid, fmt.Errorf("encode %s: %w", in.op, err))
		}
	}
	rc := remotecall.Call{Op: in.op, Method: in.method, URL: u, System: conn.system(), Body: body,
		Header: func(h *fasthttp.RequestHeader) {
			h.Set("Authorization", "Bearer "+conn.APIKey)
			for k, v := range in.headers {
				h.Set(k, v)
			}
		}}
	if len(in.notFound) > 0 {
		rc.NotFound = func(b []byte) bool { return slices.Contains(in.notFound, errorCode(b)) }
	}
	if in.parse != nil {
		rc.Parse = func(_ int, b []byte) error { return in.parse(b) }
	}
	if _, ce := c.base.Do(ctx, rc); ce != nil {
		return ce
	}
	return nil
}

// read is a call whose answer is a list of items (or one) checked by data
// rules: the valid ones and the Problems of the rejected ones, counted in
// the rejected-items metric.
func read[T any](ctx context.Context, c *Client, conn Connection, in call, parse func([]byte) (T, []Problem, error)) (T, []Problem, error) {
	var out T
	var ps []Problem
	in.parse = func(b []byte) (err error) {
		out, ps, err = parse(b)
		return err
	}
	err := c.send(ctx, conn, in)
	c.metrics.reject(ps)
	return out, ps, err
}

// endpointURL joins the endpoint and the path segments, each escaped.
// The endpoint must be an absolute http(s) URL; a trailing "/" (which doc 3
// says it SHOULD NOT have) is tolerated.
func endpointURL(endpoint string, segments []string, q url.Values) (string, error) {
	b, err := url.Parse(endpoint)
	if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return "", errors.New("connection endpoint is not an http(s) URL")
	}
	b.RawQuery, b.Fragment = "", ""
	var sb strings.Builder
	sb.WriteString(strings.TrimSuffix(b.String(), "/"))
	for _, s := range segments {
		if s == "" {
			return "", errors.New("empty path segment")
		}
		sb.WriteByte('/')
		sb.WriteString(url.PathEscape(s))
	}
	if len(q) > 0 {
		sb.WriteByte('?')
		sb.WriteString(q.Encode())
	}
	return sb.String(), nil
}

// BreakerOpen reports whether the breaker of conn's booking system is open
// or half-open (for tests and health pages).
func (c *Client) BreakerOpen(conn Connection) bool {
	return c.base.BreakerOpen(conn.system())
}

// decodeStrict reads exactly one JSON value of body into v: at most
// MaxResponseBytes, no trailing data. Unknown object fields are ignored
// (capabilities add fields, doc 3 X-Capabilities); wrong types are not.
func decodeStrict(body []byte, v any) error {
	if len(body) > MaxResponseBytes {
		return fmt.Errorf("%w: body of %d bytes", ErrMalformed, len(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, jsonReason(err))
	}
	if dec.InputOffset() != int64(len(bytes.TrimRight(body, " \t\r\n"))) {
		return fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	return nil
}

// errorCode is the "error" of an OCTO error object, "" when the body is
// not one.
func errorCode(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error
}

// jsonReason keeps the kind of a JSON error without quoting the body
// (encoding/json errors may quote remote values).
func jsonReason(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at offset %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("wrong type for %s", te.Field)
	}
	return "invalid JSON"
}

// ErrMalformed is an answer that is not the JSON doc 3 describes; callers
// see it as UNAVAILABLE.
var ErrMalformed = errors.New("malformed booking-system response")

// metrics are remotecall's metrics of calls and the rejected items.
type metrics struct {
	calls    *remotecall.Metrics
	rejected *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: remotecall.Register(reg, &remotecall.Metrics{
			Seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "switchback_ingest_bookingsystem_seconds",
				Help:    "Latency of booking-system (interface v2) calls, by operation.",
				Buckets: remotecall.SecondsBuckets,
			}, []string{"op"}),
			Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "switchback_ingest_bookingsystem_errors_total",
				Help: "Failed booking-system calls, by kind (timeout, transport, status, malformed, invalid, auth, breaker_open, request, refused).",
			}, []string{"kind"}),
			Open: prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "switchback_ingest_bookingsystem_breaker_open",
				Help: "Booking systems whose circuit breaker is open or half-open.",
			}),
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_ingest_bookingsystem_rejected_items_total",
			Help: "Items of booking-system answers rejected by a data rule of spec doc 3, by rule.",
		}, []string{"rule"}),
	}
	m.calls.NotFound = instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchback_ingest_bookingsystem_not_found_total",
		Help: "Booking-system answers that the object asked for does not exist (404; OCTO's INVALID_BOOKING_UUID and INVALID_PRODUCT_ID), by operation. Normal answers, not errors: reading an OCTO hold asks one booking past its last.",
	}, []string{"op"}))
	m.rejected = instrument.Register(reg, m.rejected)
	return m
}

func (m *metrics) reject(ps []Problem) {
	for _, p := range ps {
		m.rejected.WithLabelValues(p.Rule).Inc()
	}
}

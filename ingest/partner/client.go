package partner

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/partnerapi"
	"github.com/switchbackhq/switchback/internal/platform/remotecall"
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

// CallError is a failed partner call (internal/platform/remotecall's): Kind for
// metrics and tests, the domain error it maps to for callers
// (errors.Is(err, ErrUnavailable)), CallKind and CallStatus for a caller
// that must not import this package. Its words reveal nothing of the
// network (they reach change notification errors and logs): never the
// url, the address or the remote body.
type CallError = remotecall.Error[remotecall.NoProblem]

// system names partners in the words of a CallError.
func system() remotecall.System {
	return remotecall.System{Name: "partner", BadRequest: "the connection's baseUrl is not a usable url"}
}

// requestError is a call that could not be built (nothing was sent).
func requestError(err error) *CallError {
	return remotecall.NewError[remotecall.NoProblem](system(), KindRequest, ErrUnavailable, err)
}

// Connection is how to reach one partner (internal/partnerapi's).
type Connection = partnerapi.Connection

// Options configures NewClient (remotecall's Settings): Timeout defaults
// to 2 s (the partner deadline); Registerer gets the
// switchback_ingest_partner_* metrics.
type Options = remotecall.Settings

// Client calls partners. Safe for concurrent use.
type Client struct {
	base *remotecall.Client[remotecall.NoProblem] // breakers by base URL
}

// NewClient returns a client.
func NewClient(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	return &Client{base: remotecall.New[remotecall.NoProblem](remotecall.Options{
		System:   system(),
		Domains:  remotecall.Domains{Unavailable: ErrUnavailable, Rejected: ErrRejected, NotFound: ErrNotFound},
		Metrics:  newMetrics(opts.Registerer),
		Settings: opts, MaxResponseBytes: MaxResponseBytes,
	})}
}

// AvailabilitiesRequest is GET /suppliers/{s}/products/{p}/availabilities
// (internal/partnerapi's).
type AvailabilitiesRequest = partnerapi.AvailabilitiesRequest

// Availabilities calls the partner. ctx's deadline shortens the timeout.
func (c *Client) Availabilities(ctx context.Context, conn Connection, in AvailabilitiesRequest) (List, error) {
	u, err := availabilitiesURL(conn.BaseURL, in)
	if err != nil {
		return List{}, requestError(err)
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

// do runs one GET through the partner's breaker (remotecall.Client.Do):
// the outbound policy, the timeout (shortened by ctx's deadline), the
// latency and error metrics by op, the partner's status mapped to a domain
// error. A 400/404 is the partner working correctly: not a breaker
// failure; nor is a refusal, the partner was not called.
func (c *Client) do(ctx context.Context, conn Connection, op, u, reqID string, parse func([]byte) error) error {
	_, ce := c.base.Do(ctx, remoteCall(conn, call{op: op, method: fasthttp.MethodGet, url: u, reqID: reqID,
		parse: func(_ int, b []byte) error { return parse(b) }}))
	if ce != nil {
		return ce
	}
	return nil
}

// BreakerOpen reports whether the breaker of the partner at baseURL is
// open (for tests and health pages).
func (c *Client) BreakerOpen(baseURL string) bool {
	return c.base.BreakerOpen(baseURL)
}

func newMetrics(reg prometheus.Registerer) *remotecall.Metrics {
	return remotecall.Register(reg, &remotecall.Metrics{
		Seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_ingest_partner_seconds",
			Help:    "Latency of partner interface calls, by operation.",
			Buckets: remotecall.SecondsBuckets,
		}, []string{"op"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_ingest_partner_errors_total",
			Help: "Failed partner interface calls, by kind (timeout, transport, status, malformed, auth, breaker_open, refused, request).",
		}, []string{"kind"}),
		Open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "switchback_ingest_partner_breaker_open",
			Help:        "Partners whose circuit breaker is open or half-open (by connection kind, not by partner).",
			ConstLabels: prometheus.Labels{"kind": "partner"},
		}),
	}, KindTimeout, KindTransport, KindStatus, KindMalformed, KindAuth, KindBreaker)
}

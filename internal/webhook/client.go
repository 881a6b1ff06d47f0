package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/platform/outbound"
)

// Errors of Client.Post. Both are permanent for the URL they were returned
// for: checked with errors.Is, never by text.
var (
	// ErrURLNotAllowed: the URL is malformed, or refused by what it says
	// alone (not https, a non-public literal address, localhost) under
	// the outbound policy (internal/platform/outbound; ARCHITECTURE: webhook URLs
	// must be https:// and public unless SWITCHBACK_OUTBOUND_ALLOW_HTTP /
	// _ALLOW_PRIVATE are on). Final: the url will not change.
	ErrURLNotAllowed = errors.New("webhook: url not allowed")
	// ErrForbiddenAddress is outbound.ErrRefused: the policy refused the
	// url, or the address the host resolved to when connecting (a
	// refusal at connect time is retried: DNS answers change).
	ErrForbiddenAddress = outbound.ErrRefused
)

// Defaults of Options.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultConnectTimeout  = 5 * time.Second
	DefaultMaxResponseBody = 64 << 10
	DefaultMaxConnsPerHost = 64
)

// Options configure NewClient. Zero values take the defaults.
type Options struct {
	// AllowHTTP allows http:// URLs (SWITCHBACK_OUTBOUND_ALLOW_HTTP).
	AllowHTTP bool
	// AllowPrivate allows non-public targets (SWITCHBACK_OUTBOUND_ALLOW_PRIVATE).
	AllowPrivate bool
	// Timeout bounds one POST from dial to the last response byte. Default 10s.
	Timeout time.Duration
	// ConnectTimeout bounds the TCP connect. Default 5s (never above Timeout).
	ConnectTimeout time.Duration
	// MaxResponseBody is how much of a response body is read; a longer
	// body is not an error, the connection is closed instead of drained.
	// Default 64 KiB.
	MaxResponseBody int
	// MaxConnsPerHost bounds connections per target host. Default 64.
	MaxConnsPerHost int
	// TLSConfig overrides the TLS settings (tests with self-signed sinks).
	TLSConfig *tls.Config
	// UserAgent is sent on every request. Default "switchback-webhook".
	UserAgent string
}

// Header is one request header.
type Header struct{ Key, Value string }

// Client posts JSON bodies to webhook URLs. It follows no redirects (a 3xx
// is returned as the status: redirects to private targets are thereby
// refused too), checks every address it connects to (so a DNS answer that
// changes after registration, or a name resolving to loopback, is caught),
// and reads at most MaxResponseBody bytes of a response. Safe for
// concurrent use.
type Client struct {
	hc      *fasthttp.Client
	policy  outbound.Policy
	timeout time.Duration
}

// NewClient creates a Client.
func NewClient(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	opts.ConnectTimeout = min(opts.ConnectTimeout, opts.Timeout)
	if opts.MaxResponseBody <= 0 {
		opts.MaxResponseBody = DefaultMaxResponseBody
	}
	if opts.MaxConnsPerHost <= 0 {
		opts.MaxConnsPerHost = DefaultMaxConnsPerHost
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "switchback-webhook"
	}
	policy := outbound.Policy{AllowHTTP: opts.AllowHTTP, AllowPrivate: opts.AllowPrivate}
	hc := &fasthttp.Client{
		Name: opts.UserAgent,
		// The outbound policy judges the address actually connected to,
		// whatever the name resolved to.
		DialTimeout:         policy.Dialer(opts.ConnectTimeout),
		TLSConfig:           opts.TLSConfig,
		MaxConnsPerHost:     opts.MaxConnsPerHost,
		MaxIdleConnDuration: 30 * time.Second,
		ReadTimeout:         opts.Timeout,
		WriteTimeout:        opts.Timeout,
		MaxResponseBodySize: opts.MaxResponseBody,
		// A response fasthttp cannot parse must not put its bytes in an
		// error (they reach the delivery log).
		ConfigureClient: func(hc *fasthttp.HostClient) error { hc.SecureErrorLogMessage = true; return nil },
		// A POST is not idempotent: the dispatcher decides about retries.
		MaxIdemponentCallAttempts: 1,
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		// Webhook hosts are many and mostly idle: fail fast rather than
		// queue behind a saturated host.
		MaxConnWaitTimeout: opts.ConnectTimeout,
	}
	return &Client{hc: hc, policy: policy, timeout: opts.Timeout}
}

// CheckURL reports whether rawURL may be posted to by this client as far as
// the URL alone tells: the outbound policy's CheckURL (internal/platform/outbound),
// the one the registry applies when a rule is written, so that both admit
// exactly the same urls. Names are checked again at connect time. The
// error matches ErrURLNotAllowed, and ErrForbiddenAddress too when it is
// the policy's refusal; it never contains the URL.
func (c *Client) CheckURL(rawURL string) error {
	if err := c.policy.CheckURL(rawURL); err != nil {
		return fmt.Errorf("%w: %w", ErrURLNotAllowed, err)
	}
	return nil
}

// Post sends body as application/json with headers, and returns the
// response status and the Retry-After delay (0 if absent or invalid). err is
// non-nil when no response was read (URL refused, connect failure, timeout):
// then status is 0. A status is returned as it is, 3xx included. ctx bounds
// the call through its deadline; a call in flight is not interrupted by
// cancellation, only by Options.Timeout.
func (c *Client) Post(ctx context.Context, rawURL string, body []byte, headers ...Header) (status int, retryAfter time.Duration, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	if err := c.CheckURL(rawURL); err != nil {
		return 0, 0, err
	}
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}

	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)

	req.SetRequestURI(rawURL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	for _, h := range headers {
		req.Header.Set(h.Key, h.Value)
	}
	req.SetBodyRaw(body)

	err = c.hc.DoDeadline(req, resp, deadline)
	status = resp.StatusCode()
	if err != nil {
		// An oversized body is not a failed delivery: the status line and
		// headers were read, the rest is discarded with the connection.
		if !errors.Is(err, fasthttp.ErrBodyTooLarge) || status == 0 {
			return 0, 0, describe(err)
		}
	}
	if v := resp.Header.Peek(fasthttp.HeaderRetryAfter); len(v) > 0 {
		retryAfter, _ = ParseRetryAfter(string(v), time.Now())
	}
	return status, retryAfter, nil
}

// describe maps fasthttp's errors to ones that read well in history and
// still match errors.Is (timeouts stay net.Error timeouts).
func describe(err error) error {
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		// The same words whatever the target: no address, no probe.
		return fmt.Errorf("webhook: %w", ErrForbiddenAddress)
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout):
		return fmt.Errorf("webhook: timeout: %w", err)
	default:
		return fmt.Errorf("webhook: %w", err)
	}
}

// ParseRetryAfter parses a Retry-After value (RFC 9110 10.2.3): a number of
// seconds or an HTTP date, relative to now. A date in the past is 0. ok is
// false when the value is neither.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return time.Duration(1<<63 - 1), true
			}
			return 0, false
		}
		const maxSecs = uint64((1<<63 - 1) / int64(time.Second))
		if secs > maxSecs {
			return time.Duration(1<<63 - 1), true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Errors of Client.Post. Both are permanent for the URL they were returned
// for: checked with errors.Is, never by text.
var (
	// ErrURLNotAllowed: the URL is malformed, or not https while http is
	// not allowed (ARCHITECTURE: webhook URLs must be https:// and public
	// unless SWITCHBACK_WEBHOOK_ALLOW_HTTP / _ALLOW_PRIVATE are on).
	ErrURLNotAllowed = errors.New("webhook: url not allowed")
	// ErrForbiddenAddress: the host resolved to a private, loopback,
	// link-local or otherwise non-public address, refused when connecting.
	ErrForbiddenAddress = errors.New("webhook: target address is not public")
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
	// AllowHTTP allows http:// URLs (SWITCHBACK_WEBHOOK_ALLOW_HTTP).
	AllowHTTP bool
	// AllowPrivate allows non-public targets (SWITCHBACK_WEBHOOK_ALLOW_PRIVATE).
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
	hc           *fasthttp.Client
	allowHTTP    bool
	allowPrivate bool
	timeout      time.Duration
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
	dialer := &net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		// Control runs for every address the dialer tries, after DNS and
		// before connect: the check applies to the address actually
		// connected to, whatever the name resolved to.
		dialer.Control = refuseNonPublic
	}
	hc := &fasthttp.Client{
		Name: opts.UserAgent,
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), min(timeout, opts.ConnectTimeout))
			defer cancel()
			return dialer.DialContext(ctx, "tcp", addr)
		},
		TLSConfig:           opts.TLSConfig,
		MaxConnsPerHost:     opts.MaxConnsPerHost,
		MaxIdleConnDuration: 30 * time.Second,
		ReadTimeout:         opts.Timeout,
		WriteTimeout:        opts.Timeout,
		MaxResponseBodySize: opts.MaxResponseBody,
		// A POST is not idempotent: the dispatcher decides about retries.
		MaxIdemponentCallAttempts: 1,
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		// Webhook hosts are many and mostly idle: fail fast rather than
		// queue behind a saturated host.
		MaxConnWaitTimeout: opts.ConnectTimeout,
	}
	return &Client{hc: hc, allowHTTP: opts.AllowHTTP, allowPrivate: opts.AllowPrivate, timeout: opts.Timeout}
}

// CheckURL reports whether rawURL may be posted to by this client as far as
// the URL alone tells (scheme, host; a literal IP address is checked too).
// Names are checked again at connect time. The registry calls it when a rule
// is written, the client before every POST. The error never contains the
// URL.
func (c *Client) CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the URL, which may carry credentials.
		return fmt.Errorf("%w: malformed", ErrURLNotAllowed)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !c.allowHTTP {
			return fmt.Errorf("%w: scheme must be https", ErrURLNotAllowed)
		}
	default:
		return fmt.Errorf("%w: scheme must be https", ErrURLNotAllowed)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrURLNotAllowed)
	}
	if c.allowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ip)
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
		return err
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

// refuseNonPublic is the dialer's Control: it runs with the resolved
// address about to be connected to.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address", ErrForbiddenAddress)
	}
	if !PublicAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}

// nonPublic lists special-purpose ranges (IANA special-purpose registries)
// that netip's predicates do not cover and that must never be a webhook
// target.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/32"),       // Teredo (tunnels to anything)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToFo = netip.MustParsePrefix("2002::/16")
)

// PublicAddr reports whether ip is a publicly routable unicast address: not
// loopback, private (RFC 1918, ULA fc00::/7), link-local (169.254/16 with
// the cloud metadata address, fe80::/10), unspecified, multicast, CGNAT or
// another special-purpose range. IPv4-mapped and NAT64/6to4 addresses are
// judged by the IPv4 address they embed.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Zone() != "" {
		return false // zoned addresses are link-scoped
	}
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return PublicAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFo.Contains(ip):
			return PublicAddr(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return true
}

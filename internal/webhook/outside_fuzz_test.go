package webhook_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/webhook"
)

// FuzzParseRetryAfter: a subscriber's Retry-After header (RFC 9110
// 10.2.3) is read as a delay that is never negative, equal to the number
// of seconds when it is one (capped, not wrapped), and otherwise either an
// HTTP date or refused; never a panic.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "0", "120", " 7 ", "-1", "1.5", "99999999999999999999999", "Wed, 21 Oct 2026 07:28:00 GMT",
		"Tue, 24 Nov 2026 12:00:30 GMT", "Monday", "9223372036"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := webhook.ParseRetryAfter(v, now)
		if d < 0 {
			t.Fatalf("%q: negative delay %v", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("%q: refused but a delay %v", v, d)
		}
		s := strings.TrimSpace(v)
		if n, err := strconv.ParseUint(s, 10, 64); err == nil && n < 1<<30 {
			if !ok || d != time.Duration(n)*time.Second {
				t.Fatalf("%q: %v %v, want %d s", v, d, ok, n)
			}
		}
	})
}

// FuzzCheckURL: with the default settings (no http, no private targets),
// a webhook url the client accepts is https with a host, and a host that
// is an IP address literal is a public one: the SSRF refusal cannot be
// slipped past by the url's spelling. The refusal never echoes the url.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://hooks.example.com/x", "http://hooks.example.com/x", "https://127.0.0.1/", "https://[::1]/",
		"https://[::ffff:10.0.0.1]/", "https://169.254.169.254/latest/meta-data", "https://0x7f000001/", "https://2130706433/",
		"https://user:pass@10.1.2.3/", "HTTPS://[fe80::1%25eth0]/", "https://100.64.0.1/", "//x", "https:///path", "https://%31%32%37.0.0.1/"} {
		f.Add(s)
	}
	c := webhook.NewClient(webhook.Options{})
	f.Fuzz(func(t *testing.T, raw string) {
		err := c.CheckURL(raw)
		if err != nil {
			if !errors.Is(err, webhook.ErrURLNotAllowed) && !errors.Is(err, webhook.ErrForbiddenAddress) {
				t.Fatalf("%q: error %v of no known kind", raw, err)
			}
			if len(raw) > 8 && strings.Contains(err.Error(), raw) {
				t.Fatalf("the refusal echoes the url: %v", err)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || u.Scheme != "https" || u.Hostname() == "" {
			t.Fatalf("%q accepted: not an https url with a host (%v)", raw, perr)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && !outbound.PublicAddr(a) {
			t.Fatalf("%q accepted: %s is not public", raw, a)
		}
	})
}

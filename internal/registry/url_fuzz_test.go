package registry

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/webhook"
)

// FuzzURLPolicyCheck: a rule's webhook url (spec doc 1, "Public HTTPS
// webhook endpoint") accepted under the default policy is an https url
// with a host that is neither localhost nor a non-public address literal,
// and the dispatcher's client accepts it too (the two checks must agree,
// or a rule is stored whose every delivery is refused). With both allow
// settings on, an accepted url is accepted by a client with both on.
// Refusals are field errors on "url". Never a panic.
func FuzzURLPolicyCheck(f *testing.F) {
	for _, s := range []string{"https://hooks.example.com/x", "http://hooks.example.com/x", "https://localhost/", "https://a.localhost./",
		"https://127.1/", "https://0x7f.1/", "https://[::ffff:127.0.0.1]:443/", "https://169.254.169.254/", "https://10.0.0.1:0/",
		"https://h.example.com:65536/", "https://u@h.example.com/", "https://h.example.com/#f", "HTTPS://H.EXAMPLE.COM", "https://xn--bcher-kva.example/",
		"https://[fe80::1%25en0]/", "https://h.example.com:/", "https:h.example.com", "https://%68.example.com/"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	strict, open := webhook.NewClient(webhook.Options{}), webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true})
	f.Fuzz(func(t *testing.T, raw string, allow bool) {
		p := URLPolicy{AllowHTTP: allow, AllowPrivate: allow}
		err := p.Check(raw)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "url" {
				t.Fatalf("%q: refusal %v is not a field error on url", raw, err)
			}
			return
		}
		if allow {
			if cerr := open.CheckURL(raw); cerr != nil {
				t.Fatalf("%q: the registry accepts it, the client with the same settings refuses it: %v", raw, cerr)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || !strings.EqualFold(u.Scheme, "https") || u.Hostname() == "" {
			t.Fatalf("%q accepted: not an https url with a host (%v)", raw, perr)
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			t.Fatalf("%q accepted: localhost", raw)
		}
		// Judged with netip's own predicates, not PublicAddr, so that the
		// property does not lean on the code under test.
		if a, err := netip.ParseAddr(u.Hostname()); err == nil {
			if a = a.Unmap(); a.Zone() != "" || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
				a.IsMulticast() || a.IsUnspecified() {
				t.Fatalf("%q accepted: %s is not public", raw, a)
			}
		}
		if cerr := strict.CheckURL(raw); cerr != nil {
			t.Fatalf("%q: the registry accepts it, the dispatcher's client refuses it: %v", raw, cerr)
		}
	})
}

// TestURLPolicy_AgreesWithTheClientOnZonedAddresses is FuzzURLPolicyCheck's
// finding (known defect R6, docs/reliability.md): "https://[1::%250]/", a
// public IPv6 address with a zone, is accepted by the registry (its
// PublicAddr drops the zone) and refused by the dispatcher's client (a
// zoned address is link-scoped), so a rule is stored whose every delivery
// fails. Fixed by making the registry use the client's rule.
func TestURLPolicy_AgreesWithTheClientOnZonedAddresses(t *testing.T) {
	client := webhook.NewClient(webhook.Options{})
	for _, raw := range []string{"https://[1::%250]/", "https://[2001:db8::1%25eth0]/hook", "https://[64:ff9b::808:808]/hook", "https://[64:ff9b::a00:1]/hook"} {
		regErr, clientErr := (URLPolicy{}).Check(raw), client.CheckURL(raw)
		if (regErr == nil) != (clientErr == nil) {
			t.Errorf("%q: registry %v, dispatcher's client %v: they must agree", raw, regErr, clientErr)
		}
	}
}

// Package outbound is the one rule for every call that leaves the process
// towards an address somebody else chose: webhooks (a subscriber's url),
// partner interfaces and booking systems (an operator's connection.baseUrl),
// OCTO endpoints, and anything added later. A url is judged twice: by what
// it says (CheckURL, at registration and before every call: https only, a
// valid host, no literal non-public address, not localhost) and by the
// address actually connected to (Dialer, in the dialer's Control hook
// after DNS: no loopback, private, link-local, metadata, CGNAT, multicast
// or other special-purpose address), so that a name resolving to such an
// address, or an answer that changes after registration, is refused too.
// Clients follow no redirects (a 3xx is the remote's answer).
//
// It must not know what is being called: it holds no url, no credential
// and no client of its own, and its errors never quote a url or the
// address a name resolved to (that would tell an operator what is behind
// a name of our network). A refusal reads the same whatever is or is not
// listening there, and comes before any packet is sent.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is every refusal of the policy: a url whose scheme, host or
// literal address it does not allow, or a connection to a non-public
// address. Checked with errors.Is.
var ErrRefused = errors.New("refused by the outbound policy")

// ErrInvalidURL: the url is not an absolute http(s) url with a valid host
// and port (nothing to do with the policy's settings).
var ErrInvalidURL = errors.New("invalid url")

// Policy is the outbound rule. The zero value is the strict one: https
// only, public addresses only. AllowHTTP and AllowPrivate are for the demo
// and tests, whose simulators listen on loopback
// (SWITCHBACK_OUTBOUND_ALLOW_HTTP / _ALLOW_PRIVATE).
type Policy struct {
	// AllowHTTP admits http:// urls.
	AllowHTTP bool
	// AllowPrivate admits loopback, private, link-local and other
	// non-public targets, literal or resolved, and localhost.
	AllowPrivate bool
}

// URLError is a url the policy does not admit: Reason is a phrase that
// reads after a field name ("must use https"), never quoting the url.
type URLError struct {
	Reason  string
	refused bool // a policy refusal (ErrRefused); else ErrInvalidURL
}

func (e *URLError) Error() string {
	if e.refused {
		return ErrRefused.Error() + ": " + e.Reason
	}
	return ErrInvalidURL.Error() + ": " + e.Reason
}

// Is makes errors.Is(err, ErrRefused) or errors.Is(err, ErrInvalidURL)
// true, by kind.
func (e *URLError) Is(target error) bool {
	return (e.refused && target == ErrRefused) || (!e.refused && target == ErrInvalidURL)
}

func invalid(reason string) error { return &URLError{Reason: reason} }
func refused(reason string) error { return &URLError{Reason: reason, refused: true} }

// CheckURL judges what rawURL alone tells: absolute, http(s) with a host
// (http only with AllowHTTP), no credentials, a valid port, and a host
// that is a DNS name (not localhost, whose last label is not numeric:
// resolvers read "127.1" or "2130706433" as addresses) or a literal
// address that is public (without AllowPrivate). Names are judged again
// when connecting (Dialer). The error is a *URLError.
func (p Policy) CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		// url.Error quotes the url, which may carry credentials.
		return invalid("must be an absolute https URL")
	}
	switch u.Scheme { // url.Parse lower-cases it
	case "https":
	case "http":
		if !p.AllowHTTP {
			return refused("must use https")
		}
	default:
		return invalid("must be an absolute https URL")
	}
	if u.User != nil {
		return invalid("must not contain credentials")
	}
	host := u.Hostname()
	if host == "" {
		return invalid("must have a host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return invalid("has an invalid port")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return invalid("has an invalid port")
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if !p.AllowPrivate && !PublicAddr(addr) {
			return refused("must point to a public address, not a loopback, private or link-local one")
		}
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "" || !validHostname(name) {
		return invalid("has an invalid host")
	}
	if !p.AllowPrivate && (name == "localhost" || strings.HasSuffix(name, ".localhost")) {
		return refused("must point to a public address, not localhost")
	}
	return nil
}

// validHostname admits ASCII DNS names (IDNs in their xn-- form). A name
// whose last label is numeric is refused: no top-level domain is, and
// resolvers read such names ("127.1", "0x7f000001") as IP addresses,
// which would slip past the literal check.
func validHostname(name string) bool {
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.HasPrefix(last, "0x") {
		return false
	}
	_, err := strconv.ParseUint(last, 10, 64)
	return err != nil
}

// Dialer returns the dial function of a fasthttp client (its DialTimeout
// field) that connects over TCP within min(timeout, connectTimeout) and,
// without AllowPrivate, refuses every non-public address it is about to
// connect to, whatever name resolved to it. A refusal is an error that
// matches ErrRefused and names no address.
func (p Policy) Dialer(connectTimeout time.Duration) func(addr string, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	if !p.AllowPrivate {
		// Control runs for every address the dialer tries, after DNS and
		// before connect: the check applies to the address actually
		// connected to.
		d.Control = refuseNonPublic
	}
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		if connectTimeout > 0 {
			timeout = min(timeout, connectTimeout)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		conn, err := d.DialContext(ctx, "tcp", addr)
		if errors.Is(err, ErrRefused) {
			// net.OpError names the address: dropped, so that a refusal
			// never tells what a name resolved to.
			return nil, ErrRefused
		}
		return conn, err
	}
}

// refuseNonPublic is the dialer's Control: it runs with the resolved
// address about to be connected to.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !PublicAddr(ap.Addr()) {
		return ErrRefused
	}
	return nil
}

// Describe turns an error of a call through a client built on Dialer into
// words that reveal nothing of the network (cron reports, change
// notification errors, delivery logs): "refused by the outbound policy"
// for a refusal, whatever the target; "<who> could not be reached" for a
// connection that failed or timed out; nil when err is nil.
func Describe(who string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrRefused):
		return ErrRefused
	}
	return fmt.Errorf("%s could not be reached", who)
}

// nonPublic lists special-purpose ranges (IANA special-purpose registries)
// that netip's predicates do not cover and that must never be a target.
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
// loopback, private (RFC 1918, ULA fc00::/7, which holds the IPv6 metadata
// address fd00:ec2::254), link-local (169.254/16 with the cloud metadata
// address, fe80::/10), unspecified, multicast, CGNAT or another
// special-purpose range. IPv4-mapped and NAT64/6to4 addresses are judged by
// the IPv4 address they embed; a zoned address is link-scoped.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Zone() != "" {
		return false
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

// Package outboundtest helps the tests of outbound clients prove a
// refusal: a loopback server that counts every connection made to it, and
// a name other than localhost that resolves to loopback only, so that the
// check of the resolved address is exercised without a DNS server. Tests
// never dial anything but this machine.
package outboundtest

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// Server is an httptest server on 127.0.0.1 that counts the TCP
// connections it accepted (Conns) and the requests it served (Requests).
type Server struct {
	*httptest.Server
	Conns, Requests atomic.Int64
}

// NewServer starts a Server with h (nil: 200 with an empty JSON object);
// it is closed when the test ends.
func NewServer(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{}
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{}`)) })
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.Conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// Port is the server's port.
func (s *Server) Port() string {
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return port
}

// LoopbackName is a name that /etc/hosts maps to loopback and only to
// loopback, other than localhost (which the policy refuses by name): ""
// when there is none.
func LoopbackName() string {
	f, err := os.Open("/etc/hosts")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.SplitN(sc.Text(), "#", 2)[0])
		if len(fields) < 2 {
			continue
		}
		if a, err := netip.ParseAddr(fields[0]); err != nil || !a.IsLoopback() {
			continue
		}
		for _, n := range fields[1:] {
			n = strings.ToLower(n)
			if n == "localhost" || strings.HasSuffix(n, ".localhost") || !plainName(n) {
				continue
			}
			addrs, err := net.LookupHost(n)
			if err != nil || len(addrs) == 0 {
				continue
			}
			only := true
			for _, a := range addrs {
				if ip, err := netip.ParseAddr(a); err != nil || !ip.IsLoopback() {
					only = false
				}
			}
			if only {
				return n
			}
		}
	}
	return ""
}

// plainName admits what the policy takes as a name: letters, digits, '-'
// and '_' in dot-separated labels, the last not numeric.
func plainName(n string) bool {
	labels := strings.Split(n, ".")
	for _, l := range labels {
		if l == "" {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != "" && !strings.HasPrefix(last, "0x")
}

package outbound_test

import (
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/outbound"
)

func TestPublicAddr(t *testing.T) {
	tests := []struct {
		ip   string
		want bool
	}{
		{"8.8.8.8", true},
		{"2606:4700:4700::1111", true},
		{"100.63.255.255", true},
		{"100.128.0.0", true},
		{"10.0.0.1", false},
		{"172.31.255.255", false},
		{"192.168.0.1", false},
		{"127.0.0.1", false},
		{"127.10.20.30", false},
		{"::1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"fd00:ec2::254", false},   // AWS metadata over IPv6 (ULA)
		{"100.64.0.1", false},      // CGNAT
		{"198.18.0.1", false},
		{"255.255.255.255", false},
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"64:ff9b::a00:1", false},  // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:7f00:1::", false},   // 6to4 of 127.0.0.1
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"2001:4860::1%eth0", false}, // zoned: link-scoped whatever the address
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if got := outbound.PublicAddr(netip.MustParseAddr(tt.ip)); got != tt.want {
				t.Errorf("PublicAddr(%s) = %v, want %v", tt.ip, got, tt.want)
			}
		})
	}
}

func TestCheckURL_RefusesWhatTheURLAloneShows(t *testing.T) {
	const (
		ok      = ""
		refused = "refused"
		bad     = "invalid"
	)
	tests := []struct {
		url           string
		strict, allow string // outcome on the zero Policy and with both allow settings
	}{
		{"https://hooks.example.com/x", ok, ok},
		{"https://bookings.example.com:8443/v2", ok, ok},
		{"http://hooks.example.com/x", refused, ok},
		{"https://127.0.0.1/x", refused, ok},
		{"https://127.0.0.1:1/x", refused, ok},
		{"https://[::1]/x", refused, ok},
		{"https://10.0.0.5/", refused, ok},
		{"https://172.16.0.1/", refused, ok},
		{"https://192.168.1.10/", refused, ok},
		{"https://169.254.169.254/latest/meta-data/", refused, ok},
		{"http://169.254.169.254/latest/meta-data/", refused, ok},
		{"https://[fd00:ec2::254]/", refused, ok},
		{"https://[fe80::1%25eth0]/", refused, ok},
		{"https://[::ffff:127.0.0.1]/", refused, ok},
		{"https://[::ffff:169.254.169.254]/", refused, ok},
		{"https://[64:ff9b::a9fe:a9fe]/", refused, ok},
		{"https://0.0.0.0/", refused, ok},
		{"https://100.64.0.1/", refused, ok},
		{"https://localhost/", refused, ok},
		{"https://LOCALHOST./", refused, ok},
		{"https://api.localhost/", refused, ok},
		// Numeric spellings that resolvers read as addresses: no valid name.
		{"https://127.1/", bad, bad},
		{"https://2130706433/", bad, bad},
		{"https://0x7f000001/", bad, bad},
		{"https://0177.0.0.1/", bad, bad},
		{"https://user:pass@hooks.example.com/", bad, bad},
		{"ftp://hooks.example.com/", bad, bad},
		{"//hooks.example.com/", bad, bad},
		{"https:///path", bad, bad},
		{"https://hooks.example.com:0/", bad, bad},
		{"https://hooks.example.com:65536/", bad, bad},
		{"https://hooks.example.com:/", bad, bad},
		{"https://exa mple.com/", bad, bad},
	}
	kind := func(err error) string {
		switch {
		case err == nil:
			return ok
		case errors.Is(err, outbound.ErrRefused):
			return refused
		case errors.Is(err, outbound.ErrInvalidURL):
			return bad
		}
		return "unknown: " + err.Error()
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			for _, c := range []struct {
				p    outbound.Policy
				want string
			}{{outbound.Policy{}, tt.strict}, {outbound.Policy{AllowHTTP: true, AllowPrivate: true}, tt.allow}} {
				err := c.p.CheckURL(tt.url)
				if got := kind(err); got != c.want {
					t.Errorf("%+v CheckURL = %v (%s), want %s", c.p, err, got, c.want)
				}
				if err != nil && strings.Contains(err.Error(), "pass") {
					t.Errorf("error %q quotes the url's credentials", err)
				}
			}
		})
	}
}

// listener counts the connections accepted on a loopback port.
func listener(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, &n
}

func TestDialer_RefusesNonPublicAddressesBeforeConnecting(t *testing.T) {
	port, accepted := listener(t)
	strict := outbound.Policy{}.Dialer(time.Second)
	// Only this machine's addresses are dialled: a refusal happens before
	// any packet, so what is refused here is refused for every address
	// PublicAddr calls non-public (TestPublicAddr).
	for _, host := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "localhost", "0.0.0.0"} {
		t.Run(host, func(t *testing.T) {
			conn, err := strict(host+":"+port, time.Second)
			if err == nil {
				conn.Close()
				t.Fatalf("dial %s: connected, want refused", host)
			}
			if !errors.Is(err, outbound.ErrRefused) {
				t.Fatalf("dial %s: %v, want ErrRefused", host, err)
			}
			if strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), port) {
				t.Errorf("the refusal %q names the address: it would tell what a name resolves to", err)
			}
		})
	}
	// A port where nothing listens is refused the same way.
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	if _, err := strict(net.JoinHostPort("127.0.0.1", strconv.Itoa(closedPort)), time.Second); !errors.Is(err, outbound.ErrRefused) || err.Error() != outbound.ErrRefused.Error() {
		t.Errorf("dial of a closed port: %v, want exactly %v", err, outbound.ErrRefused)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the listener accepted %d connections, want 0", n)
	}

	open := outbound.Policy{AllowHTTP: true, AllowPrivate: true}.Dialer(time.Second)
	conn, err := open("127.0.0.1:"+port, time.Second)
	if err != nil {
		t.Fatalf("with AllowPrivate: %v", err)
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for accepted.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("with AllowPrivate the listener accepted %d connections, want 1 (the positive control)", n)
	}
}

func TestDescribe_SaysNothingOfTheNetwork(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"refused", outbound.ErrRefused, "refused by the outbound policy"},
		{"refused url", outbound.Policy{}.CheckURL("https://10.0.0.1/"), "refused by the outbound policy"},
		{"connection refused", errors.New("dial tcp 203.0.113.7:443: connect: connection refused"), "the booking system could not be reached"},
		{"timeout", errors.New("dialing to the given TCP address timed out"), "the booking system could not be reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outbound.Describe("the booking system", tt.err).Error(); got != tt.want {
				t.Errorf("Describe = %q, want %q", got, tt.want)
			}
		})
	}
	if outbound.Describe("x", nil) != nil {
		t.Error("Describe(nil) is not nil")
	}
}

// outboundCall matches code that opens connections or builds HTTP clients.
var outboundCall = regexp.MustCompile(`fasthttp\.Client\{|http\.Client\{|http\.Transport\{|net\.Dial\(|net\.DialTimeout\(|net\.Dialer\{|fasthttp\.(Do|Get|Post)\w*\(|http\.(Get|Post|Head)\(`)

// notOutbound are the files that may dial without the policy, and why.
var notOutbound = map[string]string{
	"internal/platform/outbound/outbound.go": "the policy itself",
	"cmd/switchback/internal/demo/demo.go":   "the demo calls this process's own API on its listener",
	"query/querytest/querytest.go":           "a test helper calling the API under test",
	"query/httpapi/httpapitest/malformed.go": "a test helper sending malformed requests to the server under test",
}

// TestEveryOutboundClientUsesThePolicy keeps "one policy for every client
// that leaves the process" true for code added later: a non-test file of
// the module that builds an HTTP client or dials must import this package
// (or be listed above with its reason). bench/ is left out: its tools load
// our own binary and its simulators on this machine.
func TestEveryOutboundClientUsesThePolicy(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "bench" || rel == "var" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !outboundCall.Match(src) {
			return nil
		}
		checked++
		if _, ok := notOutbound[rel]; ok {
			return nil
		}
		if !strings.Contains(string(src), `"github.com/switchbackhq/switchback/internal/platform/outbound"`) {
			t.Errorf("%s builds an HTTP client or dials without the outbound policy (internal/platform/outbound)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The webhook client and the remote-call base (internal/platform/remotecall,
	// which the partner and booking-system clients call through) at least.
	if checked < 2+len(notOutbound) {
		t.Fatalf("only %d files matched: the scan does not see the clients", checked)
	}
}

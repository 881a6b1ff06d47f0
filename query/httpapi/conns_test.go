package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/principals"
)

// TestShutdown_ClosesConnectionsThatNeverSentARequest: a spare connection
// (open, no byte sent, as an http.Transport or a load balancer keeps them)
// must not hold a graceful shutdown until its deadline (R2); a keep-alive
// connection that served a request is closed as idle, as before.
func TestShutdown_ClosesConnectionsThatNeverSentARequest(t *testing.T) {
	s := New(Options{Principals: principals.NewStore(nil), Registry: prometheus.NewRegistry()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()

	spare, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	used, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer used.Close()
	if _, err := io.WriteString(used, "GET /v1.2/nothing HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(used), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// The deadline is far past spareGrace and far below the 30 s read
	// timeout that would otherwise release the spare.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (a connection kept it waiting)", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	for name, c := range map[string]net.Conn{"spare": spare, "used": used} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Errorf("%s connection after Shutdown: read %v, want it closed by the server", name, err)
		}
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestCloseSpares_LeavesNewAndUsedConnections: only a connection older
// than spareGrace that has not sent a byte is a spare.
func TestCloseSpares_LeavesNewAndUsedConnections(t *testing.T) {
	cs := newConns()
	now := time.Now()
	mk := func(age time.Duration, used bool) *trackedConn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		c := &trackedConn{Conn: a, cs: cs, accepted: now.Add(-age)}
		c.used.Store(used)
		cs.set[c] = struct{}{}
		return c
	}
	for _, tc := range []struct {
		name   string
		age    time.Duration
		used   bool
		closed bool
	}{
		{"old and unused", 2 * spareGrace, false, true},
		{"new and unused", spareGrace / 10, false, false},
		{"old and used", 2 * spareGrace, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mk(tc.age, tc.used)
			cs.closeSpares(now)
			if c.closed.Load() != tc.closed {
				t.Fatalf("closed = %v, want %v", c.closed.Load(), tc.closed)
			}
			_, tracked := cs.set[c]
			if tracked == tc.closed {
				t.Fatalf("still tracked = %v after closed = %v", tracked, tc.closed)
			}
		})
	}
}

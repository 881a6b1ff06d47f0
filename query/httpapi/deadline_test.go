package httpapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/principals"
)

// TestLazyDeadline_ArmsOnlyWhatMustBeArmed replays fasthttp's deadlines of
// keep-alive requests and counts the ones that reach the connection.
func TestLazyDeadline_ArmsOnlyWhatMustBeArmed(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name  string
		wants []time.Time
		armed []time.Time // what reached the connection, in order
	}{
		{"the first deadline is armed", []time.Time{at(30)}, []time.Time{at(30)}},
		{"later ones are only recorded", []time.Time{at(30), at(120), at(30.001), at(120.002), at(30.003)}, []time.Time{at(30)}},
		{"an earlier one is armed at once", []time.Time{at(120), at(30), at(40), at(5)}, []time.Time{at(120), at(30), at(5)}},
		{"an equal one is not armed again", []time.Time{at(30), at(30)}, []time.Time{at(30)}},
		{"clearing is lazy", []time.Time{at(30), {}}, []time.Time{at(30)}},
		{"nothing armed, nothing cleared", []time.Time{{}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []time.Time
			d := lazyDeadline{set: func(t time.Time) error { got = append(got, t); return nil }}
			for _, w := range tc.wants {
				if err := d.setWanted(w); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != len(tc.armed) {
				t.Fatalf("armed %v, want %v", got, tc.armed)
			}
			for i := range got {
				if !got[i].Equal(tc.armed[i]) {
					t.Fatalf("armed %v, want %v", got, tc.armed)
				}
			}
			if last := tc.wants[len(tc.wants)-1]; d.want.Load() != nanos(last) {
				t.Fatalf("wanted %v, want %v", fromNanos(d.want.Load()), last)
			}
		})
	}
}

// countingPipe is one end of a net.Pipe whose deadline calls are counted
// and signalled, so that a test can act after a re-arm without sleeping.
type countingPipe struct {
	net.Conn
	sets   atomic.Int32
	rearms chan struct{}
}

func newCountingPipe(t *testing.T) (*deadlineConn, *countingPipe, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	cp := &countingPipe{Conn: a, rearms: make(chan struct{}, 8)}
	return newDeadlineConn(cp), cp, b
}

func (c *countingPipe) note() {
	if c.sets.Add(1) > 1 {
		c.rearms <- struct{}{}
	}
}
func (c *countingPipe) SetReadDeadline(t time.Time) error { c.note(); return c.Conn.SetReadDeadline(t) }
func (c *countingPipe) SetWriteDeadline(t time.Time) error {
	c.note()
	return c.Conn.SetWriteDeadline(t)
}

// A read outlives the armed deadline when a later one is wanted: the
// peer writes only once the armed deadline has fired and been replaced.
func TestDeadlineConn_ReadOutlivesTheArmedDeadline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		later time.Duration // 0: cleared
	}{{"later deadline", time.Minute}, {"deadline cleared", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c, cp, peer := newCountingPipe(t)
			if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			later := time.Time{}
			if tc.later > 0 {
				later = time.Now().Add(tc.later)
			}
			if err := c.SetReadDeadline(later); err != nil {
				t.Fatal(err)
			}
			go func() {
				<-cp.rearms
				_, _ = peer.Write([]byte("GET"))
			}()
			buf := make([]byte, 8)
			n, err := c.Read(buf)
			if err != nil || string(buf[:n]) != "GET" {
				t.Fatalf("read %q, %v; want GET", buf[:n], err)
			}
			if got := cp.sets.Load(); got != 2 {
				t.Fatalf("%d deadlines reached the connection, want 2 (the first, the re-arm)", got)
			}
		})
	}
}

// A write blocked past the armed deadline goes on, whole, when a later
// one is wanted.
func TestDeadlineConn_WriteOutlivesTheArmedDeadline(t *testing.T) {
	c, cp, peer := newCountingPipe(t)
	if err := c.SetWriteDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		<-cp.rearms
		b, _ := io.ReadAll(io.LimitReader(peer, 5))
		got <- string(b)
	}()
	n, err := c.Write([]byte("HTTP/"))
	if err != nil || n != 5 {
		t.Fatalf("wrote %d, %v; want 5, nil", n, err)
	}
	if s := <-got; s != "HTTP/" {
		t.Fatalf("peer read %q", s)
	}
}

// The wanted deadline still ends the I/O, never before it is due.
func TestDeadlineConn_TheWantedDeadlineFires(t *testing.T) {
	tests := []struct {
		name string
		set  func(c *deadlineConn) time.Time // returns the wanted deadline
	}{
		{"as first armed", func(c *deadlineConn) time.Time {
			w := time.Now().Add(30 * time.Millisecond)
			_ = c.SetReadDeadline(w)
			return w
		}},
		{"after a re-arm", func(c *deadlineConn) time.Time {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			w := time.Now().Add(40 * time.Millisecond)
			_ = c.SetReadDeadline(w)
			return w
		}},
		{"brought forward, as Shutdown does", func(c *deadlineConn) time.Time {
			_ = c.SetReadDeadline(time.Now().Add(time.Hour))
			w := time.Now()
			_ = c.SetDeadline(w)
			return w
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newCountingPipe(t)
			want := tc.set(c)
			_, err := c.Read(make([]byte, 1))
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read error %v, want a deadline", err)
			}
			if now := time.Now(); now.Before(want) {
				t.Fatalf("read ended %v before its deadline", want.Sub(now))
			}
		})
	}
}

// Shutdown brings a blocked read's deadline forward from another
// goroutine, after the connection re-armed a later one: the read ends.
func TestDeadlineConn_BroughtForwardWhileReading(t *testing.T) {
	c, cp, _ := newCountingPipe(t)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_ = c.SetReadDeadline(time.Now().Add(time.Hour))
	go func() {
		<-cp.rearms // the read outlived the first deadline
		_ = c.SetDeadline(time.Now())
	}()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read error %v, want a deadline", err)
	}
}

// TestServer_TimeoutsHoldWithLazyDeadlines drives the server's own
// connections: a keep-alive connection idles past the read timeout that
// was armed for its first request and is still served (the idle timeout
// is the one that counts between requests), a request that stops half
// way is cut at the read timeout, and an idle connection is closed by the
// idle timeout.
func TestServer_TimeoutsHoldWithLazyDeadlines(t *testing.T) {
	s := New(Options{Principals: principals.NewStore(nil), Registry: prometheus.NewRegistry(),
		ReadTimeout: 100 * time.Millisecond, IdleTimeout: 2 * time.Second, WriteTimeout: time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, bufio.NewReader(c)
	}
	get := func(t *testing.T, c net.Conn, br *bufio.Reader) {
		t.Helper()
		if _, err := io.WriteString(c, "GET /v1.2/nothing HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d, want 404", resp.StatusCode)
		}
	}
	// closed waits (at most 10 s, a failure bound, not a figure) for the
	// server to close c, and returns what it wrote before.
	closed := func(t *testing.T, c net.Conn, br *bufio.Reader) string {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		last, err := io.ReadAll(br)
		if err != nil && !isReset(err) {
			t.Fatalf("read %v, want the connection closed by the server", err)
		}
		return string(last)
	}

	t.Run("idle past the first read timeout", func(t *testing.T) {
		c, br := dial(t)
		get(t, c, br)
		time.Sleep(400 * time.Millisecond) // 4 read timeouts, a fifth of the idle one
		get(t, c, br)
	})
	t.Run("a stalled request is cut", func(t *testing.T) {
		c, br := dial(t)
		get(t, c, br)
		time.Sleep(400 * time.Millisecond)
		if _, err := io.WriteString(c, "GET /v1.2/nothing HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if last := closed(t, c, br); last != "" && !strings.HasPrefix(last, "HTTP/1.1 408") {
			t.Fatalf("the stalled request was answered %q, want nothing or 408", last)
		}
		if d := time.Since(start); d >= 2*time.Second {
			t.Fatalf("closed after %v: the idle timeout, not the read timeout, held the stalled request", d)
		}
	})
	t.Run("an idle connection is closed", func(t *testing.T) {
		c, br := dial(t)
		get(t, c, br)
		start := time.Now()
		if last := closed(t, c, br); last != "" {
			t.Fatalf("the idle connection was sent %q", last)
		}
		// The idle timeout (2 s), not the read timeout (0.1 s), closed it.
		// Not "at least 2 s" from here: the server's idle time began
		// before this side read the answer, and its clock is a ticker's.
		if d := time.Since(start); d < time.Second {
			t.Fatalf("closed after %v: by the read timeout, not the idle one", d)
		}
	})
}

// The first write after a read (a response) is bounded by the write
// timeout, by the connection's own clock; a peer that never reads does
// not hold it.
func TestConnTimeouts_AResponseWriteIsBounded(t *testing.T) {
	to := newConnTimeouts(time.Hour, 50*time.Millisecond, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go to.run(ctx)
	c, _, peer := newCountingPipe(t)
	c.t = to
	go func() { _, _ = peer.Write([]byte("GET")) }()
	if _, err := c.Read(make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n")); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write error %v, want a deadline", err)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("write cut after %v, before its timeout", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write is still blocked after 10 s: no write timeout")
	}
}

package httpapi

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// lazyDeadline is one direction's (read or write) deadline of a
// connection, moved in the runtime's timer only when it must be.
//
// A keep-alive request moves three deadlines (connTimeouts): the idle
// timeout while the connection waits for the next request, the read
// timeout once it arrives, the write timeout for the response. Each move
// resets a runtime timer under a lock: 4.5 % of the binary's CPU under wrk
// on a product read (bench/RESULTS.md, issue 21, fourteenth session), a
// cost the bare fasthttp ceiling does not pay. Nearly every move pushes
// the deadline later, and a deadline later than the one armed need not be
// armed now: the armed one fires first, and the connection then arms the
// one it wants and carries on. So:
//
//   - the armed deadline is never later than the wanted one: a deadline
//     earlier than the armed one (or the first one) is armed at once;
//   - a later one is only recorded;
//   - when the armed one fires before the wanted one, Read or Write arms
//     the wanted one and goes on, and an I/O whose wanted deadline has
//     passed fails as before.
//
// A connection that is kept busy re-arms about once per timeout (30 s),
// not three times per request, and every timeout still fires when it is
// due. Deadlines are wall-clock nanoseconds (a deadline without a
// monotonic reading, as any deadline from another process's clock).
//
// The common call (a later deadline) is two atomics. Arming takes the
// mutex, which is uncontended but for Shutdown's deadlines, set from
// another goroutine while the connection's own may re-arm: expired arms
// under the mutex and checks afterwards that the wanted deadline did not
// move meanwhile, and setWanted arms under it, so the connection always
// ends up armed no later than the last deadline wanted.
type lazyDeadline struct {
	want  atomic.Int64 // UnixNano; 0: none
	armed atomic.Int64 // what the connection has; 0: none
	mu    sync.Mutex   // held while arming
	set   func(time.Time) error
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// setWanted records t as the deadline and arms it when it is earlier than
// the armed one.
func (d *lazyDeadline) setWanted(t time.Time) error {
	w := nanos(t)
	d.want.Store(w)
	if a := d.armed.Load(); w == 0 || (a != 0 && w >= a) {
		return nil // the armed one fires first; expired extends it
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if a := d.armed.Load(); a != 0 && w >= a {
		return nil
	}
	d.armed.Store(w)
	return d.set(t)
}

// expired is called after an I/O failed with err. It reports whether the
// I/O should be retried: err is the armed deadline's and the wanted one
// is later (or none), and is now armed.
func (d *lazyDeadline) expired(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		w := d.want.Load()
		if w != 0 && time.Now().UnixNano() >= w {
			return false
		}
		d.armed.Store(w)
		if d.set(fromNanos(w)) != nil {
			return false
		}
		if d.want.Load() == w {
			return true
		}
	}
}

// connTimeouts are the API connections' timeouts, kept by the
// connections rather than by fasthttp. fasthttp reads the clock for each
// deadline it sets, three per request (~85 ns each here, 2 % of the
// binary's CPU on a warm read under wrk); the connections take their
// "now" from a clock that a ticker refreshes instead, and fasthttp's
// ConnState hook tells them where requests begin and end:
//
//   - accepted: the read timeout, for the first request's first byte;
//   - a request's first byte arrived (StateActive): the read timeout;
//   - the first write after a read (a response, or a 100 Continue): the
//     write timeout;
//   - the response written (StateIdle): the idle timeout.
//
// Those are fasthttp's own rules (v1.74.0, serveConn). A deadline is the
// clock's reading plus the timeout plus one tick, and the clock lags real
// time by up to a tick: a timeout fires within two ticks after its
// duration, or slightly before it when the ticker itself is scheduled
// late (a busy machine; a test once saw 1 ms early on a 2 s timeout).
type connTimeouts struct {
	read, write, idle time.Duration
	tick              time.Duration
	now               atomic.Int64 // UnixNano, refreshed every tick
}

func newConnTimeouts(read, write, idle time.Duration) *connTimeouts {
	// A twentieth of the shortest timeout, at most 100 ms (2 s timeouts
	// and up), at least 1 ms.
	tick := min(read, write, idle) / 20
	tick = max(min(tick, 100*time.Millisecond), time.Millisecond)
	t := &connTimeouts{read: read, write: write, idle: idle, tick: tick}
	t.now.Store(time.Now().UnixNano())
	return t
}

// run refreshes the clock until ctx ends.
func (t *connTimeouts) run(ctx context.Context) {
	tk := time.NewTicker(t.tick)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tk.C:
			t.now.Store(now.UnixNano())
		}
	}
}

// after is the deadline d from now, by the ticker's clock.
func (t *connTimeouts) after(d time.Duration) time.Time {
	return time.Unix(0, t.now.Load()+int64(d+t.tick))
}

// wrap returns ln whose connections keep these timeouts.
func (t *connTimeouts) wrap(ln net.Listener) net.Listener {
	return &deadlineListener{Listener: ln, t: t}
}

// state is the fasthttp ConnState hook.
func (t *connTimeouts) state(c net.Conn, st fasthttp.ConnState) {
	if tc, ok := c.(*trackedConn); ok {
		c = tc.Conn
	}
	dc, ok := c.(*deadlineConn)
	if !ok {
		return
	}
	switch st {
	case fasthttp.StateActive:
		_ = dc.rd.setWanted(t.after(t.read))
	case fasthttp.StateIdle:
		_ = dc.rd.setWanted(t.after(t.idle))
	}
}

type deadlineListener struct {
	net.Listener
	t *connTimeouts
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := newDeadlineConn(c)
	dc.t = l.t
	// An error here is the connection's (closed already), and its first
	// read says so; an Accept error would stop fasthttp's Serve.
	_ = dc.rd.setWanted(time.Now().Add(l.t.read))
	return dc, nil
}

// deadlineConn is a connection whose deadlines are lazy (lazyDeadline)
// and, when t is set, kept by the connection (connTimeouts).
type deadlineConn struct {
	net.Conn
	rd, wd lazyDeadline
	t      *connTimeouts
	// writeDue: bytes were read since the last write, so the next write
	// is a response's first and sets the write timeout. Only the
	// connection's goroutine touches it.
	writeDue bool
}

func newDeadlineConn(c net.Conn) *deadlineConn {
	d := &deadlineConn{Conn: c}
	d.rd.set, d.wd.set = c.SetReadDeadline, c.SetWriteDeadline
	return d
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if n > 0 {
			c.writeDue = c.t != nil
		}
		if n > 0 || err == nil || !c.rd.expired(err) {
			return n, err
		}
	}
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if c.writeDue {
		c.writeDue = false
		if err := c.wd.setWanted(c.t.after(c.t.write)); err != nil {
			return 0, err
		}
	}
	written := 0
	for {
		n, err := c.Conn.Write(p[written:])
		written += n
		if err == nil || !c.wd.expired(err) {
			return written, err
		}
	}
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error  { return c.rd.setWanted(t) }
func (c *deadlineConn) SetWriteDeadline(t time.Time) error { return c.wd.setWanted(t) }

func (c *deadlineConn) SetDeadline(t time.Time) error {
	return errors.Join(c.rd.setWanted(t), c.wd.setWanted(t))
}

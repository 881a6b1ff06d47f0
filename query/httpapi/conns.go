package httpapi

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// spareGrace is how long a connection may stay open without sending a
// byte before a graceful shutdown takes it for a spare and closes it. A
// client that opens a connection to send a request sends it within
// milliseconds; one that has not in a second is a pool's spare.
const spareGrace = time.Second

// conns tracks the API's connections so that Shutdown can close the ones
// that never sent a request. fasthttp (v1.74.0) marks a connection active
// before reading its first byte, so ShutdownWithContext does not count a
// connection that is open but unused as idle and waits for it until
// ReadTimeout (30 s) or the shutdown deadline. Such spares are common:
// Go's http.Transport keeps the extra connection it dialled for a request
// that another connection served first, and load balancers pre-open
// connections. Measured: after a reseller's flood on 9 keep-alive
// connections, SIGINT took 17.5 s (the 15 s shutdown timeout) instead of
// ~3 s (R2, docs/reliability.md).
type conns struct {
	mu  sync.Mutex
	set map[*trackedConn]struct{}
}

func newConns() *conns { return &conns{set: map[*trackedConn]struct{}{}} }

// wrap returns ln whose accepted connections are tracked.
func (cs *conns) wrap(ln net.Listener) net.Listener { return &trackingListener{Listener: ln, cs: cs} }

// closeSpares closes the tracked connections that have not sent a byte
// and were accepted at least spareGrace before now.
func (cs *conns) closeSpares(now time.Time) int {
	cs.mu.Lock()
	var spares []*trackedConn
	for c := range cs.set {
		if !c.used.Load() && now.Sub(c.accepted) >= spareGrace {
			spares = append(spares, c)
		}
	}
	cs.mu.Unlock()
	for _, c := range spares {
		_ = c.Close()
	}
	return len(spares)
}

// closeSparesUntil calls closeSpares every 100 ms until stop is closed.
func (cs *conns) closeSparesUntil(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		cs.closeSpares(time.Now())
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

type trackingListener struct {
	net.Listener
	cs *conns
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, cs: l.cs, accepted: time.Now()}
	l.cs.mu.Lock()
	l.cs.set[tc] = struct{}{}
	l.cs.mu.Unlock()
	return tc, nil
}

// trackedConn is a connection that knows whether it has sent a byte.
type trackedConn struct {
	net.Conn
	cs       *conns
	accepted time.Time
	used     atomic.Bool
	closed   atomic.Bool
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.used.Load() {
		c.used.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.cs.mu.Lock()
		delete(c.cs.set, c)
		c.cs.mu.Unlock()
	}
	return c.Conn.Close()
}

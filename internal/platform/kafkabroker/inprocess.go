package kafkabroker

import (
	"context"
	"net"
	"sync"
)

// The clients of the process the broker runs in (switchback run's tiers)
// reach it over in-process pipes rather than loopback TCP: a Kafka hop
// cost 390 µs of CPU over TCP and 240 µs in-process on the project's
// 2-core machine (bench/stream BenchmarkHop), and every change takes
// several hops. Other processes still connect over TCP, through the guard.
// An in-process connection needs no guard: its other end is this process
// by construction, which both trust levels trust.

// listener hands kfake the connections of its TCP listener and those
// dialled in-process (Broker.Dial). Its address is the TCP listener's:
// what the broker advertises in metadata.
type listener struct {
	net.Listener // TCP (guarded when topics are protected)
	conns        chan net.Conn
	tcpErr       chan error // the TCP listener's Accept error, once
	done         chan struct{}
	closeOnce    sync.Once
}

func newListener(tcp net.Listener) *listener {
	l := &listener{Listener: tcp, conns: make(chan net.Conn), tcpErr: make(chan error, 1), done: make(chan struct{})}
	go l.acceptTCP()
	return l
}

// acceptTCP feeds Accept with the TCP listener's connections until it fails
// (it is closed); Accept then returns that error, as the listener alone
// would have.
func (l *listener) acceptTCP() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.tcpErr <- err
			return
		}
		select {
		case l.conns <- c:
		case <-l.done:
			_ = c.Close()
			return
		}
	}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.tcpErr:
		l.tcpErr <- err // every later Accept fails alike
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops both kinds of connection (kfake calls it on Close).
func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// dial returns the client end of a new in-process connection.
func (l *listener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, closeBoth(client, server, net.ErrClosed)
	case <-ctx.Done():
		return nil, closeBoth(client, server, ctx.Err())
	}
}

// closeBoth closes a pipe that was refused and returns why.
func closeBoth(client, server net.Conn, why error) error {
	_, _ = client.Close(), server.Close()
	return why
}

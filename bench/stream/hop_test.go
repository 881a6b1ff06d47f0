package stream

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/valyala/fasthttp/fasthttputil"
)

// BenchmarkHop measures one hop of the change path at a low rate, where
// every change is a batch of its own: one message produced (acks=all) and
// fetched back by a partition reader, through the kfake broker the embedded
// mode runs, with the broker's connections over:
//
//   - tcp: loopback TCP, as `switchback run` connects its clients today;
//   - in-memory: fasthttputil's in-process pipes (no syscalls), what an
//     in-process transport for the embedded broker's own clients would
//     cost.
//
// It reports the process's CPU per hop (client and broker together, from
// getrusage), the figure that bounds a 2-core machine: the change path has
// several such hops per change (bench/RESULTS.md, issue 17, ninth session).
func BenchmarkHop(b *testing.B) {
	for _, mode := range []string{"tcp", "in-memory"} {
		b.Run(mode, func(b *testing.B) {
			addr, dial := hopBroker(b, mode == "in-memory")
			w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "hop", RequiredAcks: kafka.RequireAll,
				BatchTimeout: time.Millisecond, Transport: &kafka.Transport{Dial: dial}}
			defer w.Close()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "hop", Partition: 0,
				MaxWait: 500 * time.Millisecond, Dialer: &kafka.Dialer{DialFunc: dial}})
			defer r.Close()
			value := make([]byte, 300)
			hop := func() {
				if err := w.WriteMessages(b.Context(), kafka.Message{Value: value}); err != nil {
					b.Fatal(err)
				}
				if _, err := r.ReadMessage(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			for range 50 { // connections and metadata warm
				hop()
			}
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				hop()
			}
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// hopBroker starts a kfake cluster of one broker whose listener accepts
// TCP connections and, with mem, in-memory ones; dial is the clients' dial.
func hopBroker(b *testing.B, mem bool) (string, func(ctx context.Context, network, address string) (net.Conn, error)) {
	b.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ml := fasthttputil.NewInmemoryListener()
	ln := &eitherListener{Listener: tcp, conns: make(chan net.Conn)}
	go ln.feed(tcp)
	go ln.feed(ml)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "hop"),
		kfake.ListenFn(func(string, string) (net.Listener, error) { return ln, nil }))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		_ = ml.Close()
	})
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		if mem {
			return ml.Dial()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
	return c.ListenAddrs()[0], dial
}

// eitherListener hands out the connections of two listeners; its address
// is the TCP one's (what the broker advertises).
type eitherListener struct {
	net.Listener
	conns chan net.Conn
}

func (l *eitherListener) feed(from net.Listener) {
	for {
		c, err := from.Accept()
		if err != nil {
			return
		}
		l.conns <- c
	}
}

func (l *eitherListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}

// processCPU is the user and system CPU this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package stream

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/stream"
)

// BenchmarkHop measures one hop of the change path at a low rate, where
// every change is a batch of its own: one message produced (acks=all) and
// fetched back by a partition reader, through the embedded broker (with
// its data directory, as `switchback run` has it), the clients connected:
//
//   - tcp: over loopback TCP, as other processes connect;
//   - in-process: through kafkabroker.Broker.Dial, as the clients of the
//     process the broker runs in connect.
//
// It reports the process's CPU per hop (clients and broker together, from
// getrusage): what bounds a 2-core machine, where a change takes several
// hops (bench/RESULTS.md, issue 17, ninth session).
func BenchmarkHop(b *testing.B) {
	const topic = "bench.hop"
	br := startBroker(b, topic, 1)
	var tcp net.Dialer
	for _, bc := range []struct {
		name string
		dial stream.Dial
	}{{"tcp", tcp.DialContext}, {"in-process", br.Dial}} {
		b.Run(bc.name, func(b *testing.B) {
			w := &kafka.Writer{Addr: kafka.TCP(br.Addr()), Topic: topic, RequiredAcks: kafka.RequireAll,
				BatchTimeout: time.Millisecond, Transport: &kafka.Transport{Dial: bc.dial}}
			defer w.Close()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{br.Addr()}, Topic: topic, Partition: 0, StartOffset: kafka.LastOffset,
				MaxWait: 500 * time.Millisecond, Dialer: &kafka.Dialer{Timeout: 10 * time.Second, DialFunc: bc.dial}})
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

// processCPU is the user and system CPU this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package stream

import (
	"context"
	"net"
	"time"

	"github.com/segmentio/kafka-go"
)

// Dial connects a client to a broker at address. nil dials TCP. The
// embedded broker's (kafkabroker.Broker.Dial) connects the clients of the
// process it runs in without the network: on a 2-core machine a Kafka hop
// over loopback TCP cost 390 µs of CPU, in-process 240 µs (bench/stream
// BenchmarkHop), and a change takes several hops.
type Dial func(ctx context.Context, network, address string) (net.Conn, error)

// dialTimeout is kafka-go's default dial timeout, kept for our dialers.
const dialTimeout = 10 * time.Second

// newTransport is a kafka-go transport of our own (not kafka.DefaultTransport,
// a process-wide metadata cache that may predate our topics) over dial.
func newTransport(dial Dial) *kafka.Transport {
	return &kafka.Transport{Dial: dial}
}

// dialer is a kafka-go reader dialer with its defaults, over dial (nil:
// kafka-go's own).
func dialer(dial Dial) *kafka.Dialer {
	if dial == nil {
		return nil
	}
	return &kafka.Dialer{Timeout: dialTimeout, DualStack: true, DialFunc: dial}
}

// Package stream measures the Kafka producer of internal/platform/stream against
// the embedded broker: what one Publish costs in time and memory, for the
// single-event writes of the API and processors and for the batches of
// the snapshot and full-sync paths, at the producer's batch sizes.
package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

const topic = "bench.producer"

func broker(b *testing.B) []string {
	b.Helper()
	return []string{startBroker(b, topic, 12).Addr()}
}

// startBroker starts an embedded broker for the benchmark with the topic
// created (partitions), stopped when b ends.
func startBroker(b *testing.B, topic string, partitions int) *kafkabroker.Broker {
	b.Helper()
	br, err := kafkabroker.Start(b.Context(), kafkabroker.Options{Addr: "127.0.0.1:0", DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Close)
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Second)
	defer cancel()
	if err := stream.EnsureTopics(ctx, []string{br.Addr()}, []schemas.Topic{{Name: topic, Partitions: partitions}}); err != nil {
		b.Fatal(err)
	}
	return br
}

// BenchmarkPublish: one Publish of n messages of ~300 bytes (an envelope's
// size), keyed over many entities, at batch sizes and batch timeouts of
// the writer (0: the producer's default).
func BenchmarkPublish(b *testing.B) {
	brokers := broker(b)
	value := make([]byte, 300)
	for _, n := range []int{1, 1000} {
		for _, cfg := range []struct {
			size    int
			timeout time.Duration
		}{{1000, 2 * time.Millisecond}, {100, 2 * time.Millisecond}, {100, 500 * time.Microsecond}, {0, 0}} {
			b.Run(fmt.Sprintf("msgs=%d/batchSize=%d/batchTimeout=%s", n, cfg.size, cfg.timeout), func(b *testing.B) {
				p := stream.NewProducer(stream.ProducerConfig{Brokers: brokers, BatchSize: cfg.size, BatchTimeout: cfg.timeout})
				defer p.Close()
				msgs := make([]stream.Message, n)
				for i := range msgs {
					msgs[i] = stream.Message{Topic: topic, Key: fmt.Appendf(nil, "entity-%d", i), Value: value}
				}
				if err := p.Publish(b.Context(), msgs...); err != nil { // metadata warm
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := p.Publish(b.Context(), msgs...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

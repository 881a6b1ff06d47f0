package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// ProducerConfig configures NewProducer. Zero values take the defaults.
type ProducerConfig struct {
	Brokers []string
	// Dial connects to the brokers (nil: TCP).
	Dial    Dial
	Logger  *slog.Logger
	Metrics *Metrics
	// BatchTimeout is how long a partition's batch waits for more messages
	// before it is sent. Publish waits for the acknowledgement, so this is
	// added to every Publish's latency. Default 500µs.
	BatchTimeout time.Duration
	// BatchSize is the number of messages after which a batch is sent
	// without waiting. Default 100: kafka-go preallocates BatchSize
	// message slots for every batch it opens, so a single-event Publish
	// (most API and processor writes) allocates that many; with 100 it
	// costs 22 KB instead of 161 KB, and a Publish of 1,000 goes faster,
	// split into batches sent at once (bench/stream, bench/RESULTS.md).
	BatchSize int
	// WriteTimeout bounds one produce request. Default 10s.
	WriteTimeout time.Duration
}

// Producer publishes keyed messages with acks=all. It is safe for concurrent
// use; concurrent Publish calls share batches.
type Producer struct {
	w         *kafka.Writer
	transport *kafka.Transport
	log       *slog.Logger
	metrics   *Metrics
}

var _ Publisher = (*Producer)(nil)

// NewProducer creates a producer. Create the topics (EnsureTopics) first:
// the writer caches metadata, and a topic created after it was cached is
// unknown to the writer until the next refresh.
func NewProducer(cfg ProducerConfig) *Producer {
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = 500 * time.Microsecond
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Our own transport rather than kafka.DefaultTransport: that one is a
	// process-wide metadata cache, which may predate our topics.
	transport := newTransport(cfg.Dial)
	w := &kafka.Writer{
		Addr: kafka.TCP(cfg.Brokers...),
		// Topic is left empty so that every message carries its own and one
		// Publish can span topics.
		//
		// Murmur2 is the partitioner of the Java client (and Kafka Streams,
		// Connect, ksqlDB): a key lands on the same partition whichever of
		// those tools produces it, so the per-entity ordering holds across
		// them. kafka-go's Hash (FNV-1a) only matches sarama, and CRC32
		// only librdkafka.
		Balancer:     &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: cfg.BatchTimeout,
		BatchSize:    cfg.BatchSize,
		WriteTimeout: cfg.WriteTimeout,
		// Topics are created explicitly at start with their settings; an
		// auto-created one would silently get the wrong ones.
		AllowAutoTopicCreation: false,
		Transport:              transport,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			cfg.Logger.Warn("kafka writer: " + fmt.Sprintf(msg, args...))
		}),
	}
	return &Producer{w: w, transport: transport, log: cfg.Logger, metrics: cfg.Metrics}
}

// Publish writes msgs (each to its own Topic, partitioned by Key) and
// returns once all were acknowledged by all in-sync replicas. On error some
// messages may have been written: callers retry, consumers are idempotent.
func (p *Producer) Publish(ctx context.Context, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	kms := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("publish: message %d has no topic", i)
		}
		kms[i] = toKafka(m)
	}

	start := time.Now()
	err := p.w.WriteMessages(ctx, kms...)
	p.metrics.observePublish(time.Since(start).Seconds())

	if err == nil {
		for topic, n := range countByTopic(msgs, nil) {
			p.metrics.observeProduced(topic, n)
		}
		return nil
	}

	// kafka-go reports per-message outcomes when only some failed.
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) && len(werrs) == len(msgs) {
		failed := func(i int) bool { return werrs[i] != nil }
		ok := func(i int) bool { return werrs[i] == nil }
		for topic, n := range countByTopic(msgs, ok) {
			p.metrics.observeProduced(topic, n)
		}
		for topic, n := range countByTopic(msgs, failed) {
			p.metrics.observeProduceErrors(topic, n)
		}
		err = firstError(werrs)
		return fmt.Errorf("publish %d of %d messages failed: %w", werrs.Count(), len(msgs), err)
	}
	for topic, n := range countByTopic(msgs, nil) {
		p.metrics.observeProduceErrors(topic, n)
	}
	return fmt.Errorf("publish %d messages: %w", len(msgs), err)
}

// Close flushes pending batches and releases connections.
func (p *Producer) Close() error {
	err := p.w.Close()
	p.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("close producer: %w", err)
	}
	return nil
}

func countByTopic(msgs []Message, keep func(int) bool) map[string]int {
	counts := make(map[string]int, 1)
	for i, m := range msgs {
		if keep == nil || keep(i) {
			counts[m.Topic]++
		}
	}
	return counts
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// toKafka converts a Message for the writer. Headers are sorted by name so
// that the same message always has the same bytes on the wire.
func toKafka(m Message) kafka.Message {
	km := kafka.Message{Topic: m.Topic, Key: m.Key, Value: m.Value, Time: m.Time}
	if len(m.Headers) > 0 {
		names := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		km.Headers = make([]kafka.Header, len(names))
		for i, k := range names {
			km.Headers[i] = kafka.Header{Key: k, Value: []byte(m.Headers[k])}
		}
	}
	return km
}

// fromKafka converts a fetched record. With duplicate header names the last
// one wins.
func fromKafka(km kafka.Message) Message {
	m := Message{
		Topic:     km.Topic,
		Key:       km.Key,
		Value:     km.Value,
		Partition: km.Partition,
		Offset:    km.Offset,
		Time:      km.Time,
	}
	if len(km.Headers) > 0 {
		m.Headers = make(map[string]string, len(km.Headers))
		for _, h := range km.Headers {
			m.Headers[h.Key] = string(h.Value)
		}
	}
	return m
}

// Package stream is the Kafka plumbing every stage uses: a batched, keyed
// producer with RequiredAcks=all, a consumer-group runner with at-least-once
// semantics (offsets committed only after the handler succeeded), bounded
// retries with a dead-letter topic, topic creation, and metrics. It talks to
// Kafka only through github.com/segmentio/kafka-go, in every mode.
package stream

import (
	"context"
	"time"
)

// Message is one Kafka record as the stages see it.
type Message struct {
	Topic     string
	Key       []byte
	Value     []byte
	Headers   map[string]string
	Partition int
	Offset    int64
	Time      time.Time
}

// Publisher is the seam stages publish through.
type Publisher interface {
	// Publish writes the messages and returns once the broker acknowledged
	// all of them (acks=all): a change is durable once Publish returned nil.
	Publish(ctx context.Context, msgs ...Message) error
}

// Handler handles one consumed message. Returning an error makes the runner
// retry it (bounded), then dead-letter it; the offset is committed only
// after the handler returned nil or the message was dead-lettered.
type Handler func(ctx context.Context, m Message) error

// BatchHandler handles messages fetched together, in their order within
// each partition. Returning an error makes the runner retry the batch
// (bounded), then handle its messages one by one with the Handler; the
// offsets are committed only after the batch returned nil.
type BatchHandler func(ctx context.Context, msgs []Message) error

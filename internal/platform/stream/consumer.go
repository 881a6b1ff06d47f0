package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/schemas"
)

// Headers of a dead-lettered message, next to the original message's own
// headers. Key and value are the original ones, so the message can be
// replayed as it was.
const (
	HeaderDeadLetterTopic     = "switchback.dlq.topic"
	HeaderDeadLetterPartition = "switchback.dlq.partition"
	HeaderDeadLetterOffset    = "switchback.dlq.offset"
	HeaderDeadLetterGroup     = "switchback.dlq.group"
	HeaderDeadLetterError     = "switchback.dlq.error"
	HeaderDeadLetterAttempts  = "switchback.dlq.attempts"
)

// maxErrorText bounds the error text put in logs and dead-letter headers: an
// error may wrap a whole response body.
const maxErrorText = 1024

// commitTimeout bounds handing a commit to the reader, which blocks while
// the group rebalances.
const commitTimeout = 10 * time.Second

// ConsumerConfig configures NewConsumer. Zero values take the defaults.
type ConsumerConfig struct {
	Brokers []string
	// Dial connects to the brokers (nil: TCP).
	Dial    Dial
	GroupID string
	Topics  []string
	Handler Handler

	// BatchHandler, if set, is called with the messages fetched together
	// instead of Handler with each: the first message is awaited, then more
	// are taken while they arrive, up to BatchSize or BatchWait after the
	// first. A failed batch is retried with the backoff below; after
	// MaxAttempts its messages are handled one by one through Handler
	// (which is still required), so that one poison message is retried and
	// dead-lettered alone. Offsets are committed only after the batch
	// succeeded (or each message did). The messages of one partition are in
	// their order in a batch; a batch may hold several partitions'.
	BatchHandler BatchHandler
	// BatchSize bounds a batch. Default 500.
	BatchSize int
	// BatchWait bounds how long a batch waits for more messages after its
	// first. Default 5ms.
	BatchWait time.Duration

	// MaxAttempts is how many times a message is handled before it is
	// dead-lettered. Default 5.
	MaxAttempts int
	// RetryDelay is the wait before the second attempt; it doubles at each
	// attempt up to MaxRetryDelay. Defaults 100ms and 30s.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// Fence, when set, is read before and after each handler call (or
	// batch): a change of the Redis views' epoch in between means the
	// handler may have read a lost view, so the same messages are handled
	// again once the views are complete, and not committed before. Such a
	// redo is not an attempt. Set it for every consumer whose handler
	// reads a Redis view; handlers must be idempotent (they are: versioned
	// upserts, deterministic ids).
	Fence Fence

	// DeadLetter receives messages whose last attempt failed, on
	// schemas.TopicDeadLetter. Nil means no dead-letter topic: the message
	// is retried until it succeeds and nothing after it is committed.
	DeadLetter Publisher

	// CommitInterval batches offset commits: handled offsets are committed
	// every interval, and when Run returns. A crash loses at most one
	// interval of commits, which means redelivery, never a skipped message.
	// Default 1s; negative commits synchronously after every message.
	CommitInterval time.Duration

	// Group membership timeouts: zero values take GroupReaderOptions'
	// defaults (session 10s, heartbeat 1s, rebalance 10s, join backoff
	// 500ms; why there).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	JoinGroupBackoff  time.Duration

	Logger  *slog.Logger
	Metrics *Metrics
}

// Consumer runs a handler over a consumer group's messages, at least once:
// an offset is committed only after the handler returned nil for the
// message, or the message was dead-lettered. Messages are handled one at a
// time (or, with a BatchHandler, one batch at a time), so they are handled
// in order within each partition.
type Consumer struct {
	cfg ConsumerConfig
	log *slog.Logger
}

// NewConsumer creates a consumer; Run starts it.
func NewConsumer(cfg ConsumerConfig) *Consumer {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 100 * time.Millisecond
	}
	if cfg.MaxRetryDelay <= 0 {
		cfg.MaxRetryDelay = 30 * time.Second
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = time.Second
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.BatchWait <= 0 {
		cfg.BatchWait = 5 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Consumer{cfg: cfg, log: cfg.Logger.With("group", cfg.GroupID)}
}

// Run joins the group and handles messages until ctx ends. It then commits
// the offsets of everything handled, leaves the group and returns nil. A
// message whose handling ctx interrupted is not committed: it is handled
// again after the restart. Run must not be called twice at once.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("consumer %s: %w", c.cfg.GroupID, err)
	}
	r := NewGroupReader(c.readerOptions())
	c.cfg.Metrics.declareConsumer(c.cfg.Topics, c.cfg.GroupID)
	c.log.Info("consumer started", "topics", c.cfg.Topics)

	runErr := c.loop(ctx, r)

	// Close ends the generation, which flushes the pending commits before
	// leaving the group.
	if err := r.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("consumer %s: close reader: %w", c.cfg.GroupID, err)
	}
	c.log.Info("consumer stopped")
	return runErr
}

func (c *Consumer) validate() error {
	switch {
	case len(c.cfg.Brokers) == 0:
		return errors.New("no brokers")
	case c.cfg.GroupID == "":
		return errors.New("no group id")
	case len(c.cfg.Topics) == 0:
		return errors.New("no topics")
	case c.cfg.Handler == nil:
		return errors.New("no handler")
	}
	return nil
}

func (c *Consumer) readerOptions() GroupReaderOptions {
	commitInterval := c.cfg.CommitInterval
	if commitInterval < 0 {
		commitInterval = 0 // synchronous
	}
	return GroupReaderOptions{
		Brokers: c.cfg.Brokers,
		Dial:    c.cfg.Dial,
		GroupID: c.cfg.GroupID,
		Topics:  c.cfg.Topics,
		// A new group starts from the beginning: the topics are the log of
		// record, and a new processor must see all of it.
		StartOffset:       kafka.FirstOffset,
		MaxWait:           500 * time.Millisecond,
		CommitInterval:    commitInterval,
		SessionTimeout:    c.cfg.SessionTimeout,
		HeartbeatInterval: c.cfg.HeartbeatInterval,
		RebalanceTimeout:  c.cfg.RebalanceTimeout,
		JoinGroupBackoff:  c.cfg.JoinGroupBackoff,
		RetryDelay:        100 * time.Millisecond,
		MaxRetryDelay:     5 * time.Second,
		Logger:            c.log,
	}
}

func (c *Consumer) loop(ctx context.Context, r *GroupReader) error {
	if c.cfg.BatchHandler != nil {
		return c.batchLoop(ctx, r)
	}
	one := Window{Max: 1}
	var km kafka.Message
	take := func(m kafka.Message) { km = m }
	for {
		n, err := r.FetchBatch(ctx, one, take)
		if n == 0 {
			if err != nil {
				return fmt.Errorf("consumer %s: %w", c.cfg.GroupID, err)
			}
			return nil
		}

		c.cfg.Metrics.observeConsumed(km.Topic, c.cfg.GroupID, km.Partition, km.HighWaterMark-km.Offset-1, km.Time)
		if !c.process(ctx, fromKafka(km)) {
			// Interrupted by shutdown before it was handled or
			// dead-lettered: not committed, delivered again later.
			return nil
		}
		// ctx may be done by now; what was handled is still committed.
		c.commit(ctx, r, km)
	}
}

// process handles m with retries, then dead-letters it. It returns false
// if ctx ended before m was handled or dead-lettered.
//
// With a Fence, the views' epoch is read before each call and again after
// it: if it changed (or the handler returned ErrFenced), the call may have
// read a lost view, so m is handled again once the views are complete,
// without counting an attempt (a flushed Redis is not a poison message).
func (c *Consumer) process(ctx context.Context, m Message) bool {
	retry := backoff.New(c.cfg.RetryDelay, c.cfg.MaxRetryDelay)
	for attempt := 1; ; attempt++ {
		epoch, hctx, ok := c.awaitFence(ctx, m.Topic)
		if !ok {
			return false
		}
		start := time.Now()
		err := c.call(hctx, m)
		c.cfg.Metrics.observeHandler(m.Topic, c.cfg.GroupID, time.Since(start).Seconds(), err != nil)
		if errors.Is(err, ErrFenced) || !c.fenceHeld(ctx, epoch) {
			if ctx.Err() != nil || backoff.Sleep(ctx, fenceWaitMin) != nil {
				return false
			}
			c.fenced(m, 1)
			attempt--
			continue
		}
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		// Never the value (it may hold secrets): the coordinates find it.
		attrs := []any{"topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "attempt", attempt, "error", truncate(err.Error())}
		if attempt >= c.cfg.MaxAttempts {
			if c.cfg.DeadLetter != nil {
				c.log.Error("handler failed, dead-lettering", attrs...)
				return c.deadLetter(ctx, m, err, attempt)
			}
			if attempt == c.cfg.MaxAttempts {
				c.log.Error("handler keeps failing and there is no dead-letter topic: partition blocked", attrs...)
			}
		} else {
			c.log.Warn("handler failed, retrying", attrs...)
		}
		if retry.Wait(ctx) != nil {
			return false
		}
	}
}

// call runs the handler, turning a panic into an error so that one bad
// message takes the retry and dead-letter path instead of the process.
func (c *Consumer) call(ctx context.Context, m Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return c.cfg.Handler(ctx, m)
}

// deadLetter publishes m to the dead-letter topic, retrying until it is
// acknowledged: committing past a message that is in neither place would
// lose it.
func (c *Consumer) deadLetter(ctx context.Context, m Message, cause error, attempts int) bool {
	dl := Message{
		Topic:   schemas.TopicDeadLetter,
		Key:     m.Key,
		Value:   m.Value,
		Headers: make(map[string]string, len(m.Headers)+6),
	}
	for k, v := range m.Headers {
		dl.Headers[k] = v
	}
	dl.Headers[HeaderDeadLetterTopic] = m.Topic
	dl.Headers[HeaderDeadLetterPartition] = strconv.Itoa(m.Partition)
	dl.Headers[HeaderDeadLetterOffset] = strconv.FormatInt(m.Offset, 10)
	dl.Headers[HeaderDeadLetterGroup] = c.cfg.GroupID
	dl.Headers[HeaderDeadLetterError] = truncate(cause.Error())
	dl.Headers[HeaderDeadLetterAttempts] = strconv.Itoa(attempts)

	b := backoff.New(c.cfg.RetryDelay, c.cfg.MaxRetryDelay)
	for {
		err := c.cfg.DeadLetter.Publish(ctx, dl)
		if err == nil {
			c.cfg.Metrics.observeDeadLettered(m.Topic, c.cfg.GroupID)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		c.log.Error("dead-letter publish failed, retrying", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "error", truncate(err.Error()))
		if b.Wait(ctx) != nil {
			return false
		}
	}
}

// truncate cuts s to maxErrorText bytes on a rune boundary.
func truncate(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

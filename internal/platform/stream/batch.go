package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
)

// batchLoop is loop when a BatchHandler is configured: it waits for a
// first message, takes more while they arrive (up to BatchSize, at most
// BatchWait after the first), hands them to processBatch, and commits.
func (c *Consumer) batchLoop(ctx context.Context, r *GroupReader) error {
	window := Window{Max: c.cfg.BatchSize, Wait: c.cfg.BatchWait}
	var kms []kafka.Message
	add := func(km kafka.Message) { kms = append(kms, km) }
	for {
		kms = make([]kafka.Message, 0, min(c.cfg.BatchSize, 64))
		n, err := r.FetchBatch(ctx, window, add)
		if n == 0 {
			if err != nil {
				return fmt.Errorf("consumer %s: %w", c.cfg.GroupID, err)
			}
			return nil
		}

		msgs := make([]Message, len(kms))
		for i, km := range kms {
			c.cfg.Metrics.observeConsumed(km.Topic, c.cfg.GroupID, km.Partition, km.HighWaterMark-km.Offset-1, km.Time)
			msgs[i] = fromKafka(km)
		}
		if !c.processBatch(ctx, r, kms, msgs) {
			// Interrupted by shutdown: what was not handled is not
			// committed, and is delivered again later.
			return nil
		}
	}
}

// processBatch hands msgs to the BatchHandler with retries and commits
// them; after MaxAttempts failures it handles them one by one (process:
// retries, then the dead-letter topic) and commits each after it is done.
// It returns false if ctx ended first.
// With a Fence, as in process: a batch during which the views' epoch
// changed is handled again, whole, once they are complete, and that is not
// an attempt.
func (c *Consumer) processBatch(ctx context.Context, r *GroupReader, kms []kafka.Message, msgs []Message) bool {
	retry := backoff.New(c.cfg.RetryDelay, c.cfg.MaxRetryDelay)
	for attempt := 1; ; attempt++ {
		epoch, hctx, ok := c.awaitFence(ctx, msgs[0].Topic)
		if !ok {
			return false
		}
		start := time.Now()
		err := c.callBatch(hctx, msgs)
		c.observeBatch(msgs, time.Since(start).Seconds(), err != nil)
		if errors.Is(err, ErrFenced) || !c.fenceHeld(ctx, epoch) {
			if ctx.Err() != nil || backoff.Sleep(ctx, fenceWaitMin) != nil {
				return false
			}
			c.fenced(msgs[0], len(msgs))
			attempt--
			continue
		}
		if err == nil {
			c.commit(ctx, r, kms...)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		first := msgs[0]
		attrs := []any{"messages", len(msgs), "topic", first.Topic, "partition", first.Partition, "offset", first.Offset,
			"attempt", attempt, "error", truncate(err.Error())}
		if attempt >= c.cfg.MaxAttempts {
			c.log.Error("batch handler keeps failing, handling the batch's messages one by one", attrs...)
			break
		}
		c.log.Warn("batch handler failed, retrying", attrs...)
		if retry.Wait(ctx) != nil {
			return false
		}
	}
	for i, m := range msgs {
		if !c.process(ctx, m) {
			return false
		}
		c.commit(ctx, r, kms[i])
	}
	return true
}

// callBatch runs the batch handler, turning a panic into an error.
func (c *Consumer) callBatch(ctx context.Context, msgs []Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("batch handler panicked: %v", p)
		}
	}()
	return c.cfg.BatchHandler(ctx, msgs)
}

// observeBatch records one handler call per topic of the batch.
func (c *Consumer) observeBatch(msgs []Message, seconds float64, failed bool) {
	var seen []string
	for _, m := range msgs {
		if !slices.Contains(seen, m.Topic) {
			seen = append(seen, m.Topic)
			c.cfg.Metrics.observeHandler(m.Topic, c.cfg.GroupID, seconds, failed)
		}
	}
}

// commit hands the offsets to the reader. ctx may be done by now; what
// was handled is still committed.
func (c *Consumer) commit(ctx context.Context, r *GroupReader, kms ...kafka.Message) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	err := r.Commit(cctx, kms...)
	cancel()
	if err != nil {
		// Not fatal: the messages are delivered again, and handlers are
		// idempotent.
		last := kms[len(kms)-1]
		c.log.Warn("commit failed", "topic", last.Topic, "partition", last.Partition, "offset", last.Offset, "messages", len(kms), "error", truncate(err.Error()))
	}
}

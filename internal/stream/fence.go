package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/internal/backoff"
)

// Fence tells a consumer whether the Redis views its handler reads stayed
// complete while it handled a message (internal/views.Guard implements
// it). Epoch returns the views' current epoch, "" while they are lost or
// being rebuilt. Two equal non-empty epochs around a handler call mean
// that Redis lost nothing in between; anything else means the handler may
// have read a lost or half-rebuilt view (no rules, no bindings, an empty
// diff state) and decided wrongly, for example notified nobody.
type Fence interface {
	Epoch(ctx context.Context) (string, error)
}

// ErrFenced is what CheckFence returns when the views changed since the
// consumer read the epoch: the handler should stop before an effect it
// cannot take back and return it (wrapped or not). The consumer then
// handles the message again once the views are complete, without counting
// an attempt.
var ErrFenced = errors.New("the Redis views were lost or rebuilt while handling")

type fenceKey struct{}

type fenceValue struct {
	f     Fence
	epoch string
}

// CheckFence returns ErrFenced if the views' epoch is no longer the one
// the consumer read before calling the handler whose ctx this is; nil if
// it is, or if the consumer has no fence. A handler calls it before a
// decision it cannot redo (a final status published to the log of
// record), the consumer's own check only comes after the handler.
func CheckFence(ctx context.Context) error {
	v, ok := ctx.Value(fenceKey{}).(fenceValue)
	if !ok {
		return nil
	}
	e, err := v.f.Epoch(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	if e == "" || e != v.epoch {
		return ErrFenced
	}
	return nil
}

// FencedContext is ctx as a consumer with fence f hands it to a handler
// after reading epoch: CheckFence compares with it. For tests of handlers
// that call CheckFence without running a consumer.
func FencedContext(ctx context.Context, f Fence, epoch string) context.Context {
	return context.WithValue(ctx, fenceKey{}, fenceValue{f: f, epoch: epoch})
}

// fenceWait bounds the poll while the views are being rebuilt.
const (
	fenceWaitMin = 50 * time.Millisecond
	fenceWaitMax = time.Second
)

// awaitFence returns the current epoch once the views are complete,
// polling while they are not, and the handler's context carrying it. ok is
// false if ctx ended first. Without a fence it returns ctx at once.
func (c *Consumer) awaitFence(ctx context.Context, topic string) (string, context.Context, bool) {
	if c.cfg.Fence == nil {
		return "", ctx, true
	}
	b := backoff.New(fenceWaitMin, fenceWaitMax)
	logged := false
	for {
		e, err := c.cfg.Fence.Epoch(ctx)
		if err == nil && e != "" {
			if logged {
				c.log.Info("Redis views complete again: handling resumes", "topic", topic)
			}
			return e, FencedContext(ctx, c.cfg.Fence, e), true
		}
		if ctx.Err() != nil {
			return "", ctx, false
		}
		if !logged {
			attrs := []any{"topic", topic}
			if err != nil {
				attrs = append(attrs, "error", truncate(err.Error()))
			}
			c.log.Warn("Redis views are being rebuilt: waiting before handling", attrs...)
			logged = true
		}
		if b.Wait(ctx) != nil {
			return "", ctx, false
		}
	}
}

// fenceHeld reports whether the views' epoch is still before (the work in
// between read complete views). Without a fence it is true.
func (c *Consumer) fenceHeld(ctx context.Context, before string) bool {
	if c.cfg.Fence == nil {
		return true
	}
	e, err := c.cfg.Fence.Epoch(context.WithoutCancel(ctx))
	return err == nil && e == before
}

// fenced logs and counts a handling that is redone because the views
// changed under it.
func (c *Consumer) fenced(m Message, n int) {
	c.cfg.Metrics.observeFenced(m.Topic, c.cfg.GroupID)
	c.log.Warn("Redis views lost or rebuilt while handling: handling again once they are complete (not an attempt)",
		"topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "messages", n)
}

package stream

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
)

// Pace of Retrying: a record that failed to apply is tried again after 50
// ms, doubling up to 5 s.
const (
	applyRetryMin = 50 * time.Millisecond
	applyRetryMax = 5 * time.Second
)

// Retrying returns a handler for Follow and ReadAll that applies each
// record to a view until it is applied: a record apply calls unusable
// (errors.Is(err, invalid)) is logged and skipped, since no retry makes it
// usable; any other failure (Redis, say) is logged and retried, pausing
// 50 ms doubling up to 5 s, until ctx ends (the handler then returns
// ctx's error, which stops Follow or ReadAll). A follower must not skip
// a record its store failed to write: the view would miss it until the
// next rebuild. what names the view in the log lines ("catalog",
// "registry").
func Retrying(ctx context.Context, log *slog.Logger, what string, invalid error, apply func(context.Context, Message) error) func(Message) error {
	return func(m Message) error {
		pause := backoff.New(applyRetryMin, applyRetryMax)
		for {
			err := apply(ctx, m)
			switch {
			case err == nil:
				return nil
			case errors.Is(err, invalid):
				log.Error(what+": skipping an unusable record", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
				return nil
			}
			log.Warn(what+": applying a record failed; retrying", "topic", m.Topic, "offset", m.Offset, "err", err)
			if err := pause.Wait(ctx); err != nil {
				return err
			}
		}
	}
}

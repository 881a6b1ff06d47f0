// Package backoff is the service's one pace for retrying after a failure:
// a delay that starts at a minimum, doubles after each wait up to a
// maximum, and starts over after a success. It holds no retry policy (how
// many attempts, what to log, when to give up): each loop keeps its own,
// and only the pacing is shared. There is no jitter: the loops that use it
// retry a dependency of their own process (a broker, Redis, ClickHouse),
// a handful per process, not a fleet of clients stampeding one server
// (docs/decisions.md, "Layout (issue 20)"). Webhook retries have their
// own jittered schedule (dispatcher/retry.go), which is the spec's.
package backoff

import (
	"context"
	"time"
)

// Backoff is an exponential delay. The zero value is not usable: make one
// with New. It is a value, kept in the retrying loop's locals; not safe
// for concurrent use.
type Backoff struct {
	min, max, next time.Duration
}

// New returns a backoff whose first delay is lo, doubling up to hi. An lo
// of zero or less is a millisecond (a zero delay would never grow: the loop
// would spin); an hi below lo is lo.
func New(lo, hi time.Duration) Backoff {
	if lo <= 0 {
		lo = time.Millisecond
	}
	hi = max(hi, lo)
	return Backoff{min: lo, max: hi, next: lo}
}

// Next returns the delay to wait now and doubles the following one, up to
// the maximum.
func (b *Backoff) Next() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	return d
}

// Reset starts the delays over at the minimum, after a success.
func (b *Backoff) Reset() { b.next = b.min }

// Wait sleeps for Next(), or less if ctx ends first (then it returns
// ctx's error).
func (b *Backoff) Wait(ctx context.Context) error {
	return Sleep(ctx, b.Next())
}

// Sleep waits d or until ctx ends, whichever is first; it returns ctx's
// error if ctx ended.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package dispatcher

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// registryRetryDelay is how long a delivery waits when the registry could
// not be read at send time; no attempt is counted for it.
const registryRetryDelay = 5 * time.Second

// poll starts a lane for every subscriber with deliveries due, checks that
// the Redis schedule is still there, and refreshes the backlog gauges.
func (d *Dispatcher) poll(ctx, hard context.Context) {
	t := time.NewTicker(d.o.PollInterval)
	defer t.Stop()
	var lastMarkerCheck, lastMetrics time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
		now := time.Now()
		if now.Sub(lastMarkerCheck) >= time.Second {
			lastMarkerCheck = now
			if err := d.ensureSchedule(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("delivery schedule check failed", "error", err)
				continue
			}
		}
		if now.Sub(lastMetrics) >= d.o.MetricsInterval {
			lastMetrics = now
			if b, err := d.v.allBacklogs(ctx); err == nil {
				d.m.observeBacklogs(b)
			}
		}
		subs, err := d.v.readySubscribers(ctx, d.now(), int64(d.o.MaxLanes))
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("read due deliveries failed", "error", err)
			}
			continue
		}
		for _, sub := range subs {
			d.startLane(ctx, hard, sub)
		}
	}
}

func (d *Dispatcher) startLane(ctx, hard context.Context, sub string) {
	d.mu.Lock()
	if _, busy := d.lanes[sub]; busy || len(d.lanes) >= d.o.MaxLanes {
		d.mu.Unlock()
		return
	}
	d.lanes[sub] = struct{}{}
	d.mu.Unlock()
	d.m.lanes.Inc()
	d.laneWG.Add(1)
	go func() {
		defer d.laneWG.Done()
		defer func() {
			d.mu.Lock()
			delete(d.lanes, sub)
			d.mu.Unlock()
			d.m.lanes.Dec()
		}()
		d.runLane(ctx, hard, sub)
	}()
}

// runLane sends one subscriber's due deliveries until none is due. It holds
// the subscriber's lane lease in Redis, so that only one instance sends to
// a subscriber at a time and throttleDelay spaces all of its sends.
// throttleDelay is the minimum gap between the end of one POST and the
// start of the next; with one, sends are one at a time.
func (d *Dispatcher) runLane(ctx, hard context.Context, sub string) {
	ok, err := d.v.acquireLane(hard, sub, d.owner, d.o.LaneLease)
	if err != nil || !ok {
		return // another instance has it, or Redis is away: polled again
	}
	var throttle time.Duration // as last read
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(hard), 2*time.Second)
		_ = d.v.releaseLane(rctx, sub, d.owner, time.Until(d.lastSendOf(sub).Add(throttle)))
		cancel()
	}()
	// Heartbeat: the lease is short (a crashed instance's lanes free up
	// within LaneLease) and renewed here while sends are in flight, which
	// can take up to the webhook timeout. Stopped before the release above.
	var gap atomic.Int64 // the current wait or throttle, for the renewal
	beat, stopBeat := context.WithCancel(hard)
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		t := time.NewTicker(d.o.LaneLease / 3)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				_, _ = d.v.renewLane(beat, sub, d.owner, d.o.LaneLease+time.Duration(gap.Load()))
			}
		}
	}()
	defer func() { stopBeat(); <-beatDone }()

	errDelay := 100 * time.Millisecond
	for ctx.Err() == nil {
		th, disableAll, err := d.o.Subscriptions.Settings(hard, sub)
		if err != nil {
			d.log.Warn("read subscriber settings failed", "subscriber", sub, "error", err)
			if sleep(ctx, errDelay) != nil {
				return
			}
			errDelay = min(errDelay*2, 5*time.Second)
			continue
		}
		errDelay = 100 * time.Millisecond
		throttle = th

		limit := d.o.LaneConcurrency
		switch {
		case disableAll:
			limit = 100 // nothing is sent: no throttle, drain fast
		case throttle > 0:
			limit = 1
			if wait := time.Until(d.lastSendOf(sub).Add(throttle)); wait > 0 {
				gap.Store(int64(wait))
				if ok, _ := d.v.renewLane(hard, sub, d.owner, d.o.LaneLease+wait); !ok {
					return
				}
				if sleep(ctx, wait) != nil {
					return
				}
				continue // settings may have changed while waiting
			}
		}
		gap.Store(int64(max(throttle, 0)))
		if ok, err := d.v.renewLane(hard, sub, d.owner, d.o.LaneLease+max(throttle, 0)); err != nil || !ok {
			return
		}

		d.viewMu.RLock()
		now := d.now()
		items, err := d.v.claim(hard, sub, now, now.Add(d.o.Lease), limit)
		if err != nil || len(items) == 0 {
			d.viewMu.RUnlock()
			if err != nil {
				d.log.Warn("claim due deliveries failed", "subscriber", sub, "error", err)
			}
			return
		}
		sent := d.process(hard, items, disableAll)
		d.viewMu.RUnlock()
		if sent {
			d.setLastSend(sub, time.Now())
		}
	}
}

func (d *Dispatcher) lastSendOf(sub string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastSend[sub]
}

func (d *Dispatcher) setLastSend(sub string, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastSend[sub] = t
	// Forget subscribers idle for longer than any throttleDelay worth
	// keeping, at most once a minute: the map stays bounded by activity.
	if len(d.lastSend) > 4*d.o.MaxLanes && t.Sub(d.lastSendSweep) > time.Minute {
		d.lastSendSweep = t
		for s, at := range d.lastSend {
			if t.Sub(at) > time.Hour {
				delete(d.lastSend, s)
			}
		}
	}
}

// process runs the attempts of claimed deliveries (distinct entities),
// concurrently when there are several. It reports whether any was POSTed.
func (d *Dispatcher) process(ctx context.Context, items []scheduledDelivery, disableAll bool) bool {
	if len(items) == 1 {
		return d.attempt(ctx, items[0], disableAll)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sent bool
	)
	for _, it := range items {
		wg.Go(func() {
			if d.attempt(ctx, it, disableAll) {
				mu.Lock()
				sent = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sent
}

// attempt decides about one claimed delivery at send time and records the
// outcome. It reports whether a POST was made.
func (d *Dispatcher) attempt(ctx context.Context, rec scheduledDelivery, disableAll bool) bool {
	n := rec.Notification
	now := d.now()
	base := AttemptRecord{
		DeliveryID: n.ID, Subscriber: n.Subscriber, Type: n.Type, EntityKey: n.EntityKey,
		Attempt: rec.Attempt, At: now,
	}
	if disableAll {
		d.finish(ctx, rec, base, OutcomeSuppressed, "disableAll is set")
		return false
	}
	target, enabled, err := d.o.Subscriptions.Target(ctx, n.Subscriber, n.Type)
	switch {
	case errors.Is(err, ErrNoRule):
		d.finish(ctx, rec, base, OutcomeDropped, "no rule of this type (deleted)")
		return false
	case err != nil:
		d.log.Warn("read rule failed, delivery postponed", "subscriber", n.Subscriber, "type", n.Type, "error", err)
		d.giveBack(ctx, n, now.Add(registryRetryDelay))
		return false
	case !enabled:
		d.finish(ctx, rec, base, OutcomeDropped, "rule disabled")
		return false
	}

	d.m.inflight.Inc()
	res := d.o.Sender.Send(ctx, target, n)
	d.m.inflight.Dec()
	if res.Err != nil && ctx.Err() != nil {
		// Cut short by shutdown: not an attempt; sent again after restart.
		d.giveBack(ctx, n, now)
		return true
	}
	d.m.attemptSeconds.WithLabelValues(n.Type).Observe(res.Latency.Seconds())
	base.Status = res.Status
	base.LatencyMs = res.Latency.Milliseconds()

	if res.Delivered() {
		d.finish(ctx, rec, base, OutcomeDelivered, "")
		return true
	}
	wait, retry := d.policy.next(rec.Attempt, res)
	if !retry {
		base.Notification = &n
		d.finish(ctx, rec, base, OutcomeFailed, res.String())
		return true
	}
	// From the response, not the request: Retry-After counts from it.
	next := scheduledDelivery{Notification: n, Attempt: rec.Attempt + 1, At: d.now().Add(wait)}
	base.Outcome = OutcomeRetry
	base.Error = truncate(res.String(), maxHistoryErrorText)
	base.NextAttemptAt = &next.At
	hist, err1 := envelopeMessage(schemas.TopicHistory, EventDeliveryAttempt, n.Subscriber, "", now, base)
	sched, err2 := envelopeMessage(schemas.TopicDeliveries, EventDeliveryScheduled, n.Subscriber, "", now, next)
	if err := errors.Join(err1, err2); err != nil {
		d.log.Error("encode retry events", "error", err)
		return true
	}
	if d.retryDo(ctx, "publish retry", func() error { return d.o.Publisher.Publish(ctx, hist, sched) }) != nil {
		return true // left leased: attempted again when the lease ends
	}
	if d.retryDo(ctx, "reschedule delivery", func() error { return d.v.reschedule(ctx, next) }) != nil {
		return true
	}
	d.m.retries.WithLabelValues(n.Type).Inc()
	d.m.deliveries.WithLabelValues(n.Type, OutcomeRetry).Inc()
	return true
}

// finish records a final outcome: history, delivery.done on the deliveries
// topic, then the schedule (the next of the entity's chain becomes due).
func (d *Dispatcher) finish(ctx context.Context, rec scheduledDelivery, a AttemptRecord, outcome, reason string) {
	n := rec.Notification
	a.Outcome = outcome
	a.Error = truncate(reason, maxHistoryErrorText)
	var hist stream.Message
	var err error
	if outcome == OutcomeSuppressed {
		hist, err = suppressedMessage(n, a.At, a.Error)
	} else {
		hist, err = envelopeMessage(schemas.TopicHistory, EventDeliveryAttempt, n.Subscriber, "", a.At, a)
	}
	done, err2 := envelopeMessage(schemas.TopicDeliveries, EventDeliveryDone, n.Subscriber, "", a.At,
		doneDelivery{DeliveryID: n.ID, Outcome: outcome, Attempt: rec.Attempt, At: a.At})
	if err := errors.Join(err, err2); err != nil {
		d.log.Error("encode delivery events", "error", err)
		return
	}
	if d.retryDo(ctx, "publish delivery outcome", func() error { return d.o.Publisher.Publish(ctx, hist, done) }) != nil {
		return // left leased: decided again when the lease ends
	}
	if d.retryDo(ctx, "complete delivery", func() error { return d.v.complete(ctx, n, outcome, d.now()) }) != nil {
		return
	}
	d.m.deliveries.WithLabelValues(n.Type, outcome).Inc()
}

// giveBack returns a claimed delivery to the schedule, due at, without
// counting an attempt. It runs on a context of its own: it is what happens
// when the work's context ended.
func (d *Dispatcher) giveBack(ctx context.Context, n schemas.Notification, at time.Time) {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := d.v.unclaim(gctx, n, at); err != nil {
		d.log.Warn("give back delivery failed (sent again when its lease ends)", "error", err)
	}
}

var _ Sender = (*webhook.Sender)(nil)

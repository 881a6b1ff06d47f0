package dispatcher

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// The intake reads TopicNotifications in batches with a reader of its own
// rather than stream.Consumer: that runner hands one message at a time to a
// handler and commits after it, so a handler that durably schedules (one
// acknowledged publish per message) would cap intake at a few hundred
// notifications a second. A batch here is scheduled with one publish and
// one Redis pipeline, then committed; the semantics are the same (commit
// only after the work is durable, redelivery on crash, never a skip).

// batchWindow is how long a batch waits for each next record once it has
// one (stream.Window's Gap).
const batchWindow = 2 * time.Millisecond

// disableAllTimeout bounds the attempts to set a subscriber's disableAll
// from the intake.
const disableAllTimeout = 5 * time.Second

func (d *Dispatcher) newReader() *stream.GroupReader {
	return stream.NewGroupReader(stream.GroupReaderOptions{
		Brokers: d.o.Brokers,
		Dial:    d.o.Dial,
		GroupID: d.o.GroupID,
		Topics:  []string{schemas.TopicNotifications},
		// A new group starts at the beginning: notifications produced
		// before the first dispatcher started are delivered too.
		StartOffset: kafka.FirstOffset,
		MaxWait:     250 * time.Millisecond,
		// Commits are batched; a crash loses at most this much of them,
		// which means redelivery, and redelivered ids are filtered.
		CommitInterval: 500 * time.Millisecond,
		RetryDelay:     100 * time.Millisecond,
		MaxRetryDelay:  5 * time.Second,
		Logger:         d.log,
	})
}

// intake runs until ctx ends. A batch taken in is finished under hard even
// if ctx ends meanwhile; one that could not be made durable is not
// committed.
func (d *Dispatcher) intake(ctx, hard context.Context) error {
	r := d.newReader()
	defer func() {
		// Close flushes the pending commits and leaves the group.
		if err := r.Close(); err != nil {
			d.log.Warn("close notifications reader", "error", err)
		}
	}()
	// A batch is what arrives with no pause longer than batchWindow, up
	// to BatchSize: under load it fills up, so one publish and one Redis
	// pipeline serve many notifications (issue 17).
	window := stream.Window{Max: d.o.BatchSize, Gap: batchWindow}
	var batch []kafka.Message
	add := func(m kafka.Message) { batch = append(batch, m) }
	for {
		// The slice is reused: nothing keeps a batch's messages once it
		// is committed (the commit copies their offsets).
		batch = batch[:0]
		n, err := r.FetchBatch(ctx, window, add)
		if n == 0 {
			if err != nil {
				return fmt.Errorf("dispatcher: notifications %w", err)
			}
			return nil // ctx ended
		}
		start := time.Now()
		err = d.accept(ctx, hard, batch)
		d.m.observeStep(stepIntake, start)
		if err != nil {
			// Only when ctx ended before the batch was durable: not
			// committed, read again after the restart.
			return nil
		}
		cctx, cancel := context.WithTimeout(hard, 10*time.Second)
		if err := r.Commit(cctx, batch...); err != nil {
			d.log.Warn("commit notifications failed (they will be read again and filtered)", "error", err)
		}
		cancel()
		d.signal()
	}
}

// intakePlan is what a batch turns into: events to publish, deliveries to
// schedule, subscribers to disable. It is built once and then executed
// step by step, each step retried on its own, so a retry never builds
// different events (with different ids) for the same notifications.
type intakePlan struct {
	msgs       []stream.Message
	recs       []schemas.ScheduledDelivery
	disables   []autoDisable
	counts     map[string]int // intake results, for metrics
	suppressed []schemas.Notification
}

// autoDisable is a subscriber found failing with its backlog at the bound.
type autoDisable struct {
	subscriber string
	backlog    int64
	ok, fail   int64
	reason     string
}

// minFailing is the least number of attempts in the health window that can
// make a subscriber failing: a handful, and no more than the bound (a test
// with a bound of 3 must be able to trip it).
func (d *Dispatcher) minFailing() int64 {
	return int64(min(defaultMinFailingAttempts, d.o.BacklogLimit))
}

// defaultMinFailingAttempts: fewer attempts in the window say too little.
const defaultMinFailingAttempts = 5

func boundReason(st subscriberState, limit int) string {
	return fmt.Sprintf("backlog bound reached while failing: %d pending deliveries, limit %d; %d of %d attempts failed in the last %s",
		st.backlog, limit, st.fail, st.ok+st.fail, HealthWindow)
}

// accept makes a batch durable: planned, subscribers disabled, events
// published, schedule written. It returns an error only if ctx ended first.
func (d *Dispatcher) accept(ctx, hard context.Context, batch []kafka.Message) error {
	now := time.Now()
	for i := range batch {
		if !batch[i].Time.IsZero() {
			d.m.intakeAge.Observe(max(0, now.Sub(batch[i].Time).Seconds()))
		}
	}
	d.viewMu.RLock()
	defer d.viewMu.RUnlock()

	var plan *intakePlan
	err := d.retryDo(ctx, "plan notifications batch", func() error {
		var err error
		plan, err = d.plan(hard, batch)
		return err
	})
	if err != nil {
		return err
	}
	for _, a := range plan.disables {
		d.autoDisable(ctx, hard, a)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := d.retryDo(ctx, "publish scheduled deliveries", func() error {
		return d.o.Publisher.Publish(hard, plan.msgs...)
	}); err != nil {
		return err
	}
	if err := d.retryDo(ctx, "write delivery schedule", func() error {
		return d.v.enqueue(hard, plan.recs)
	}); err != nil {
		return err
	}
	for result, n := range plan.counts {
		d.m.intake.WithLabelValues(result).Add(float64(n))
	}
	for _, n := range plan.suppressed {
		d.m.deliveries.WithLabelValues(n.Type, schemas.OutcomeSuppressed).Inc()
	}
	return nil
}

// autoDisable sets a failing subscriber's disableAll through the registry
// (spec doc 1, "States and transitions"), once per episode, and raises the
// operators' alert: an error log, the counter and gauge, and a
// subscriber.auto_disabled history event. Bounded: one subscriber the
// registry cannot update must not stop the intake of all; its
// notifications are suppressed by the bound meanwhile, and the next one
// tries again.
func (d *Dispatcher) autoDisable(ctx, hard context.Context, a autoDisable) {
	dctx, cancel := context.WithTimeout(ctx, disableAllTimeout)
	err := d.retryDo(dctx, "set disableAll", func() error {
		return d.o.Subscriptions.DisableAll(hard, a.subscriber, a.reason)
	})
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		d.log.Error("subscriber failing with its backlog at the bound, but disableAll could not be set; its notifications are suppressed meanwhile",
			"subscriber", a.subscriber, "backlog", a.backlog, "limit", d.o.BacklogLimit, "error", err)
		return
	}
	d.mu.Lock()
	first := !d.autoDisabled[a.subscriber]
	d.autoDisabled[a.subscriber] = true
	d.toDrain[a.subscriber] = true
	d.m.autoDisabledG.Set(float64(len(d.autoDisabled)))
	d.mu.Unlock()
	if !first {
		return
	}
	d.m.autoDisabled.Inc()
	now := d.now()
	m, err := envelopeMessage(schemas.TopicHistory, schemas.HistorySubscriberAutoDisabled, a.subscriber, "", now,
		schemas.SubscriberAutoDisabled{Subscriber: a.subscriber, Backlog: a.backlog, Limit: d.o.BacklogLimit, Reason: a.reason, At: now})
	if err == nil {
		pctx, cancel := context.WithTimeout(hard, 10*time.Second)
		err = d.retryDo(pctx, "publish auto-disable record", func() error { return d.o.Publisher.Publish(hard, m) })
		cancel()
	}
	if err != nil {
		d.log.Warn("auto-disable history record not written", "subscriber", a.subscriber, "error", err)
	}
	// Its pending deliveries are suppressed now (recorded, replayable),
	// not at their retry times hours away.
	if err := d.v.wake(hard, a.subscriber, now); err != nil {
		d.log.Warn("waking the disabled subscriber's lane failed (its pending deliveries are suppressed when due)", "subscriber", a.subscriber, "error", err)
	}
	d.signal()
	d.log.Error("subscriber failing with its backlog at the bound: disableAll set, further notifications are suppressed and recorded in history",
		"subscriber", a.subscriber, "backlog", a.backlog, "limit", d.o.BacklogLimit, "failedAttempts", a.fail, "attempts", a.ok+a.fail)
}

func (d *Dispatcher) plan(ctx context.Context, batch []kafka.Message) (*intakePlan, error) {
	p := &intakePlan{counts: map[string]int{}}
	now := d.now()
	ns := make([]schemas.Notification, 0, len(batch))
	for _, m := range batch {
		n, err := DecodeNotification(m.Value)
		if err != nil {
			d.log.Error("dead-lettering an unusable notification", "partition", m.Partition, "offset", m.Offset, "error", err)
			p.msgs = append(p.msgs, d.deadLetter(m, err))
			p.counts["invalid"]++
			continue
		}
		ns = append(ns, n)
	}
	known, err := d.v.known(ctx, ns)
	if err != nil {
		return nil, err
	}

	disabled := map[string]bool{}
	var subList []string
	for _, n := range ns {
		if _, ok := disabled[n.Subscriber]; ok {
			continue
		}
		_, disableAll, err := d.o.Subscriptions.Settings(ctx, n.Subscriber)
		switch {
		case err != nil:
			// Queue it: disableAll is checked again at send time, and one
			// subscriber the registry cannot read must not stop the intake.
			d.log.Warn("read subscriber settings failed at intake; queuing", "subscriber", n.Subscriber, "error", err)
			disableAll = false
		case !disableAll:
			// Re-enabled since it was disabled automatically: that
			// episode is over, and reaching the bound again must set
			// disableAll again rather than suppress with delivery enabled.
			d.clearAutoDisabled(n.Subscriber)
		}
		disabled[n.Subscriber] = disableAll
		subList = append(subList, n.Subscriber)
	}
	states, err := d.v.states(ctx, subList, now)
	if err != nil {
		return nil, err
	}

	limit := int64(d.o.BacklogLimit)
	seen := make(map[string]bool, len(ns))
	disabling := map[string]bool{}
	for i, n := range ns {
		if known[i] || seen[n.ID] {
			p.counts["duplicate"]++
			continue
		}
		seen[n.ID] = true
		sub := n.Subscriber
		st := states[sub]
		switch {
		case disabled[sub]:
			if err := p.suppress(n, now, "disableAll is set"); err != nil {
				return nil, err
			}
		case n.Source != sourceReplay && st.backlog >= limit && st.failing(d.minFailing()):
			// Failing with its backlog at the bound: disable it (spec doc
			// 1). Replays are not held to the bound (subscriberState.backlog):
			// they are queued, still suppressed while disableAll is set.
			reason := boundReason(st, d.o.BacklogLimit)
			if !d.isAutoDisabled(sub) && !disabling[sub] {
				disabling[sub] = true
				p.disables = append(p.disables, autoDisable{subscriber: sub, backlog: st.backlog, ok: st.ok, fail: st.fail, reason: reason})
			}
			if err := p.suppress(n, now, reason); err != nil {
				return nil, err
			}
		default:
			// Queued, also past the bound when the subscriber is not
			// failing: a subscriber that answers is behind because of
			// us, and is never disabled for it (the lag is a metric).
			// A microsecond apart: equal due times would be sent in id
			// order, not arrival order.
			rec := schemas.ScheduledDelivery{Notification: n, Attempt: 1, At: now.Add(time.Duration(i) * time.Microsecond)}
			m, err := recordMessage(schemas.TopicDeliveries, schemas.EventDeliveryScheduled, sub, now, rec)
			if err != nil {
				return nil, err
			}
			p.msgs = append(p.msgs, m)
			p.recs = append(p.recs, rec)
			p.counts["scheduled"]++
			if st.backlog >= limit && n.Source != sourceReplay {
				p.counts["scheduled_past_bound"]++
			}
			if n.Source != sourceReplay {
				st.backlog++
				states[sub] = st
			}
		}
	}
	// A subscriber disabled earlier whose backlog went down may be
	// disabled again later, when the bound is reached again.
	for sub, st := range states {
		if st.backlog < limit {
			d.clearAutoDisabled(sub)
		}
	}
	return p, nil
}

// suppress records a notification that is not queued, with the whole
// notification so that it can be replayed.
func (p *intakePlan) suppress(n schemas.Notification, now time.Time, reason string) error {
	m, err := suppressedMessage(n, now, reason)
	if err != nil {
		return err
	}
	p.msgs = append(p.msgs, m)
	p.counts["suppressed"]++
	p.suppressed = append(p.suppressed, n)
	return nil
}

func suppressedMessage(n schemas.Notification, now time.Time, reason string) (stream.Message, error) {
	return recordMessage(schemas.TopicHistory, schemas.HistoryNotificationSuppressed, n.Subscriber, now, schemas.NotificationSuppressedRecord{
		DeliveryID: n.ID, Subscriber: n.Subscriber, Type: n.Type, EntityKey: n.EntityKey,
		Reason: truncate(reason, maxHistoryErrorText), At: now, Notification: n,
	})
}

// drainPending reports whether sub was disabled automatically and its
// backlog is not drained (suppressed) yet.
func (d *Dispatcher) drainPending(sub string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.toDrain[sub]
}

// drained records that a lane found nothing left pending for sub.
func (d *Dispatcher) drained(sub string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.toDrain, sub)
}

func (d *Dispatcher) isAutoDisabled(sub string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.autoDisabled[sub]
}

func (d *Dispatcher) clearAutoDisabled(sub string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.autoDisabled[sub] {
		delete(d.autoDisabled, sub)
		d.m.autoDisabledG.Set(float64(len(d.autoDisabled)))
	}
}

// deadLetter is m for TopicDeadLetter, with the headers stream's consumer
// uses, so one tool replays both.
func (d *Dispatcher) deadLetter(m kafka.Message, cause error) stream.Message {
	h := map[string]string{
		stream.HeaderDeadLetterTopic:     m.Topic,
		stream.HeaderDeadLetterPartition: strconv.Itoa(m.Partition),
		stream.HeaderDeadLetterOffset:    strconv.FormatInt(m.Offset, 10),
		stream.HeaderDeadLetterGroup:     d.o.GroupID,
		stream.HeaderDeadLetterError:     truncate(cause.Error(), maxHistoryErrorText),
		stream.HeaderDeadLetterAttempts:  "1",
	}
	return stream.Message{Topic: schemas.TopicDeadLetter, Key: m.Key, Value: m.Value, Headers: h}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

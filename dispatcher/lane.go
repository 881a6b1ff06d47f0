package dispatcher

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// registryRetryDelay is how long a delivery waits when the registry could
// not be read at send time; no attempt is counted for it.
const registryRetryDelay = 5 * time.Second

// Batching of a lane's outcomes: they are written (one Publish, one Redis
// pipeline) when this many are waiting, when nothing is in flight any
// more, or this long after the first of them arrived.
const (
	flushMax      = 512
	flushInterval = 2 * time.Millisecond
)

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
			if lags, err := d.v.lags(ctx, d.now()); err == nil {
				d.m.observeLags(lags, d.o.BacklogLimit)
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

// result is what an attempt decided about one claimed delivery: the change
// of the schedule, the events recording it, and what to count.
type result struct {
	change  change
	msgs    []stream.Message
	posted  bool // a POST was made
	ok      bool // ... and the subscriber took it (health)
	failed  bool // ... and it failed (health)
	typ     string
	outcome string // for the deliveries counter; "" none
	latency time.Duration
}

// runLane sends one subscriber's due deliveries until none is due. It holds
// the subscriber's lane lease in Redis, so that only one instance sends to
// a subscriber at a time and throttleDelay spaces all of its sends.
//
// Without a throttleDelay up to LaneConcurrency deliveries are in flight
// at once, each the head of its entity's chain (so one entity's
// notifications never overtake each other: the next becomes due only once
// the previous one's outcome is written), taken from the subscriber's
// sources in turn; claims run ahead of the sends by up to claimAhead times
// that many, so that the claim (the lane's serial step) is not made once
// per few freed slots. Outcomes are written in batches by the lane's writer
// while the lane goes on claiming and sending. With a throttleDelay, one
// at a time, the next starting no earlier than throttleDelay after the
// previous POST ended.
func (d *Dispatcher) runLane(ctx, hard context.Context, sub string) {
	ok, err := d.v.acquireLane(hard, sub, d.owner, d.o.LaneLease)
	if err != nil || !ok {
		return // another instance has it, or Redis is away: polled again
	}
	var throttle time.Duration // as last read
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(hard), 2*time.Second)
		_ = d.v.releaseLane(rctx, sub, d.owner, time.Until(d.lastSendOf(sub).Add(throttle)))
		// The claims did not move the subscriber in the ready index (the
		// lane was running): put it where its earliest due now is, or due
		// at once if its backlog is still to be drained (disabled while
		// this lane ran).
		var err error
		if d.drainPending(sub) {
			err = d.v.wake(rctx, sub, d.now())
		} else {
			err = d.v.touch(rctx, sub)
		}
		if err != nil && hard.Err() == nil {
			d.log.Warn("refresh the ready index failed (polled again)", "subscriber", sub, "error", err)
		}
		cancel()
	}()
	// Heartbeat: the lease is short (a crashed instance's lanes free up
	// within LaneLease) and renewed here while sends are in flight, which
	// can take up to the webhook timeout. Stopped before the release above.
	var gap atomic.Int64 // the current wait or throttle, for the renewal
	var lost atomic.Bool
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
				if ok, err := d.v.renewLane(beat, sub, d.owner, d.o.LaneLease+time.Duration(gap.Load())); err == nil && !ok {
					lost.Store(true)
				}
			}
		}
	}()
	defer func() { stopBeat(); <-beatDone }()

	// A rebuild of the schedule waits until the lanes with work
	// outstanding have written it (it clears the view); lanes stop claiming
	// as soon as one is waiting, and the poller restarts them after.
	d.viewMu.RLock()
	defer d.viewMu.RUnlock()

	// The writer: one batch of outcomes at a time; while it writes, the
	// next batch gathers.
	toWrite := make(chan []result)
	written := make(chan struct{}, 1)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for rs := range toWrite {
			d.flush(hard, sub, rs)
			written <- struct{}{}
		}
	}()

	results := make(chan result, d.o.LaneConcurrency)
	var (
		inflight      int
		queued        []claimedAhead        // claimed, not yet sent, oldest first
		limit         = d.o.LaneConcurrency // sends at once, as the settings say
		ahead         bool                  // claims may run ahead of the sends
		disabled      bool                  // disableAll, as last read
		targets       laneTargets
		waiting       []result
		firstWait     time.Time
		writing       bool // a batch is with the writer
		claimMore     = true
		lastEmpty     bool // the last claim found nothing due
		settings      laneSettings
		settingsRetry = backoff.New(100*time.Millisecond, 5*time.Second)
		tick          = time.NewTicker(d.o.PollInterval)
		timer         = time.NewTimer(time.Hour)
		timerArmed    bool
	)
	defer tick.Stop()
	defer timer.Stop()
	defer func() {
		close(toWrite)
		<-writerDone
	}()
	ctxDone := ctx.Done()
	handOver := func() {
		if writing || len(waiting) == 0 {
			return
		}
		writing = true
		toWrite <- waiting
		waiting = nil
	}
	// giveBack hands the claimed-ahead deliveries back to the schedule,
	// due at once, through the writer like outcomes.
	giveBack := func() {
		if len(queued) == 0 {
			return
		}
		now := d.now()
		if len(waiting) == 0 {
			firstWait = time.Now()
		}
		for _, q := range queued {
			waiting = append(waiting, result{change: change{rec: q.rec, kind: changeUnclaim, next: now}, typ: q.rec.Notification.Type})
		}
		d.m.claimedAhead.Sub(float64(len(queued)))
		queued = nil
	}
	// room is how many more deliveries the lane may claim: up to its
	// limit in flight and, when claims run ahead, claimAhead times that
	// waiting for a slot.
	room := func() int {
		depth := limit
		if ahead {
			depth = limit * (1 + claimAhead)
		}
		return depth - inflight - len(queued)
	}
	// send launches claimed deliveries into the free slots.
	send := func() {
		n := min(limit-inflight, len(queued))
		if n <= 0 {
			return
		}
		batch := make([]schemas.ScheduledDelivery, n)
		for i := range batch {
			batch[i] = queued[i].rec
		}
		queued = queued[n:]
		if len(queued) == 0 {
			queued = nil
		}
		d.m.claimedAhead.Sub(float64(n))
		inflight += n
		d.launch(hard, batch, disabled, &targets, results)
	}
	collect := func(r result) {
		inflight--
		if r.posted {
			d.setLastSend(sub, time.Now())
		}
		if len(waiting) == 0 {
			firstWait = time.Now()
		}
		waiting = append(waiting, r)
	}

	for {
		stopping := ctx.Err() != nil || lost.Load() || d.rebuilding.Load()
		if stopping {
			ctxDone = nil // nothing more to wait for from it
		}
		// Claimed ahead but stopping, or waiting longer than half their
		// lease (a slow subscriber): back to the schedule.
		if len(queued) > 0 && (stopping || time.Since(queued[0].at) > d.o.Lease/2) {
			giveBack()
		}
		idle := inflight == 0 && len(queued) == 0 && len(waiting) == 0 && !writing
		if !stopping && claimMore {
			claimMore = false
			st, err := settings.read(d, hard, sub)
			if err != nil {
				d.log.Warn("read subscriber settings failed", "subscriber", sub, "error", err)
				if idle {
					if settingsRetry.Wait(ctx) != nil {
						return
					}
					claimMore = true
					continue
				}
			} else {
				settingsRetry.Reset()
				throttle = st.throttle
				limit = d.o.LaneConcurrency
				serial := throttle > 0 && !st.disableAll
				switch {
				case st.disableAll:
					limit = 512 // nothing is sent: no throttle, drain fast
				case serial:
					limit = 1
				}
				disabled = st.disableAll
				// Claims run ahead of the sends only for a subscriber sent to
				// concurrently; what was claimed ahead under other settings
				// goes back (a throttle spaces every send from now on).
				ahead = !serial && !st.disableAll
				if !ahead {
					giveBack()
				}
				if serial && idle {
					if wait := time.Until(d.lastSendOf(sub).Add(throttle)); wait > 0 {
						gap.Store(int64(wait))
						if ok, _ := d.v.renewLane(hard, sub, d.owner, d.o.LaneLease+wait); !ok {
							return
						}
						if backoff.Sleep(ctx, wait) != nil {
							return
						}
						settings = laneSettings{} // may have changed while waiting
						claimMore = true
						continue
					}
					gap.Store(int64(throttle))
				}
				if free := room(); free > 0 && (!serial || idle) {
					now := d.now()
					dueBy := now
					draining := st.disableAll && idle
					if draining {
						// Disabled: nothing is sent, so nothing waits for
						// its retry time either. With none of its own in
						// flight, the lane takes every pending head (the
						// subscriber's whole backlog, chain after chain)
						// and records it suppressed, replayable once the
						// subscriber is enabled again.
						dueBy = now.Add(disabledDrainHorizon)
					}
					claimStart := time.Now()
					items, err := d.v.claim(hard, sub, dueBy, now.Add(d.o.Lease), free)
					d.m.observeStep(stepClaim, claimStart)
					if err != nil {
						d.log.Warn("claim due deliveries failed", "subscriber", sub, "error", err)
					}
					lastEmpty = len(items) == 0
					if draining && err == nil && len(items) == 0 {
						d.drained(sub)
					}
					at := time.Now()
					for _, it := range items {
						queued = append(queued, claimedAhead{rec: it, at: at})
					}
					d.m.claimedAhead.Add(float64(len(items)))
					// More may be due than there was room for.
					claimMore = len(items) == free && !serial
				}
			}
		}
		send()
		idle = inflight == 0 && len(queued) == 0 && len(waiting) == 0 && !writing
		if idle {
			switch {
			case stopping:
				return
			case claimMore:
				continue // claim at once
			case lastEmpty:
				return // nothing due: the poller starts the lane again
			}
			claimMore = true
			continue
		}
		if !timerArmed && len(waiting) > 0 && !writing {
			timer.Reset(max(time.Until(firstWait.Add(flushInterval)), 0))
			timerArmed = true
		}
		select {
		case r := <-results:
			collect(r)
		drain:
			for len(waiting) < flushMax {
				select {
				case r := <-results:
					collect(r)
				default:
					break drain
				}
			}
		case <-written:
			writing = false
			claimMore = true // the next of each finished entity is due now
			lastEmpty = false
			if d.drainPending(sub) {
				settings = laneSettings{} // just disabled: read it now
			}
		case <-timer.C:
			timerArmed = false
			handOver()
		case <-tick.C:
			claimMore = true // retries come due; settings may change
		case <-ctxDone:
		}
		send()
		if len(waiting) >= flushMax || (len(waiting) > 0 && (inflight == 0 || time.Since(firstWait) >= flushInterval)) {
			handOver()
		}
		free := d.o.LaneConcurrency - inflight // as before claims ran ahead
		if ahead {
			free = room()
		}
		if free >= max(1, d.o.LaneConcurrency/4) && !lastEmpty {
			claimMore = true
		}
	}
}

// disabledDrainHorizon is how far ahead a disabled subscriber's lane
// takes pending deliveries (all of them: the longest retry wait is hours).
const disabledDrainHorizon = 100 * 365 * 24 * time.Hour

// settingsTTL is how long a lane uses the subscriber's metadata before
// reading it again: a change of disableAll or throttleDelay applies to
// what is queued within it.
const settingsTTL = 50 * time.Millisecond

// laneSettings is the subscriber's metadata as a lane last read it.
type laneSettings struct {
	at         time.Time
	throttle   time.Duration
	disableAll bool
}

type laneSettingsValue struct {
	throttle   time.Duration
	disableAll bool
}

func (l *laneSettings) read(d *Dispatcher, ctx context.Context, sub string) (laneSettingsValue, error) {
	if !l.at.IsZero() && time.Since(l.at) < settingsTTL {
		return laneSettingsValue{l.throttle, l.disableAll}, nil
	}
	th, disableAll, err := d.o.Subscriptions.Settings(ctx, sub)
	if err != nil {
		return laneSettingsValue{}, err
	}
	*l = laneSettings{at: time.Now(), throttle: th, disableAll: disableAll}
	return laneSettingsValue{th, disableAll}, nil
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

// targetRead is a rule as a lane read it.
type targetRead struct {
	target  webhook.Target
	enabled bool
	err     error
}

// laneTargets are the rules a lane read, by type, used for settingsTTL as
// the subscriber's settings are: sends launched as slots free up share one
// read instead of a Redis round trip each.
type laneTargets struct {
	at time.Time
	m  map[string]targetRead
}

func (l *laneTargets) get(ctx context.Context, d *Dispatcher, sub, typ string) targetRead {
	if l.m == nil || time.Since(l.at) >= settingsTTL {
		l.m, l.at = map[string]targetRead{}, time.Now()
	}
	if tr, ok := l.m[typ]; ok {
		return tr
	}
	t, enabled, err := d.o.Subscriptions.Target(ctx, sub, typ)
	tr := targetRead{target: t, enabled: enabled, err: err}
	if err == nil { // an error is read again next time
		l.m[typ] = tr
	}
	return tr
}

// claimedAhead is a claimed delivery waiting for a slot of its lane.
type claimedAhead struct {
	rec schemas.ScheduledDelivery
	at  time.Time // claimed
}

// claimAhead is how many times the lane's concurrency a lane claims beyond
// what it has in flight: claims (a Lua call walking the subscriber's
// sources) are the lane's serial step, and claiming only as slots free
// made each claim small (~34 deliveries at 3,500 changes/s, bench/RESULTS.md
// issue 17, tenth session). What is claimed ahead waits for a slot at most
// half its lease, then goes back to the schedule; memory per lane stays
// bounded by (1+claimAhead) x LaneConcurrency deliveries.
const claimAhead = 3

// launch runs the attempts of items concurrently, with the rules of the
// lane's targets; each hands its result to out.
func (d *Dispatcher) launch(ctx context.Context, items []schemas.ScheduledDelivery, disableAll bool, targets *laneTargets, out chan<- result) {
	for _, it := range items {
		var tr targetRead
		if !disableAll {
			tr = targets.get(ctx, d, it.Notification.Subscriber, it.Notification.Type)
		}
		go func() { out <- d.attempt(ctx, it, disableAll, tr) }()
	}
}

// attempt decides about one claimed delivery at send time, POSTs it when
// it should be sent, and returns what to record. It writes nothing itself.
func (d *Dispatcher) attempt(ctx context.Context, rec schemas.ScheduledDelivery, disableAll bool, tr targetRead) result {
	n := rec.Notification
	now := d.now()
	base := schemas.DeliveryAttemptRecord{
		DeliveryID: n.ID, Subscriber: n.Subscriber, Type: n.Type, EntityKey: n.EntityKey,
		Attempt: rec.Attempt, At: now,
	}
	if disableAll {
		return d.finishResult(rec, base, schemas.OutcomeSuppressed, "disableAll is set")
	}
	switch {
	case errors.Is(tr.err, ErrNoRule):
		return d.finishResult(rec, base, schemas.OutcomeDropped, "no rule of this type (deleted)")
	case tr.err != nil:
		d.log.Warn("read rule failed, delivery postponed", "subscriber", n.Subscriber, "type", n.Type, "error", tr.err)
		return result{change: change{rec: rec, kind: changeUnclaim, next: now.Add(registryRetryDelay)}, typ: n.Type}
	case !tr.enabled:
		return d.finishResult(rec, base, schemas.OutcomeDropped, "rule disabled")
	}

	if rec.Attempt <= 1 && !n.CreatedAt.IsZero() {
		d.m.firstSend.WithLabelValues(n.Type).Observe(max(0, now.Sub(n.CreatedAt).Seconds()))
	}
	d.m.inflight.Inc()
	res := d.o.Sender.Send(ctx, tr.target, n)
	d.m.inflight.Dec()
	if res.Err != nil && ctx.Err() != nil {
		// Cut short by shutdown: not an attempt; sent again after restart.
		return result{change: change{rec: rec, kind: changeUnclaim, next: now}, posted: true, typ: n.Type}
	}
	base.Status = res.Status
	base.LatencyMs = res.Latency.Milliseconds()

	if res.Delivered() {
		r := d.finishResult(rec, base, schemas.OutcomeDelivered, "")
		r.posted, r.ok, r.latency = true, true, res.Latency
		return r
	}
	wait, retry := d.policy.next(rec.Attempt, res)
	if !retry {
		base.Notification = &n
		r := d.finishResult(rec, base, schemas.OutcomeFailed, res.String())
		r.posted, r.failed, r.latency = true, true, res.Latency
		return r
	}
	// From the response, not the request: Retry-After counts from it.
	next := schemas.ScheduledDelivery{Notification: n, Attempt: rec.Attempt + 1, At: d.now().Add(wait)}
	base.Outcome = schemas.OutcomeRetry
	base.Error = truncate(res.String(), maxHistoryErrorText)
	base.NextAttemptAt = &next.At
	hist, err1 := recordMessage(schemas.TopicHistory, schemas.HistoryDeliveryAttempt, n.Subscriber, now, base)
	sched, err2 := recordMessage(schemas.TopicDeliveries, schemas.EventDeliveryScheduled, n.Subscriber, now, next)
	r := result{change: change{rec: next, kind: changeReschedule}, posted: true, failed: true, typ: n.Type,
		outcome: schemas.OutcomeRetry, latency: res.Latency}
	if err := errors.Join(err1, err2); err != nil {
		d.log.Error("encode retry events", "error", err)
		r.change = change{rec: rec, kind: changeUnclaim, next: next.At}
		r.outcome = ""
		return r
	}
	r.msgs = []stream.Message{hist, sched}
	return r
}

// finishResult records a final outcome: history, then delivery.done on the
// deliveries topic; once written the delivery leaves the schedule (and the
// next of its entity's chain becomes due).
func (d *Dispatcher) finishResult(rec schemas.ScheduledDelivery, a schemas.DeliveryAttemptRecord, outcome, reason string) result {
	n := rec.Notification
	a.Outcome = outcome
	a.Error = truncate(reason, maxHistoryErrorText)
	var hist stream.Message
	var err error
	if outcome == schemas.OutcomeSuppressed {
		hist, err = suppressedMessage(n, a.At, a.Error)
	} else {
		hist, err = recordMessage(schemas.TopicHistory, schemas.HistoryDeliveryAttempt, n.Subscriber, a.At, a)
	}
	done, err2 := recordMessage(schemas.TopicDeliveries, schemas.EventDeliveryDone, n.Subscriber, a.At,
		schemas.DoneDelivery{DeliveryID: n.ID, Subscriber: n.Subscriber, Outcome: outcome, Attempt: rec.Attempt, At: a.At})
	if err := errors.Join(err, err2); err != nil {
		d.log.Error("encode delivery events", "error", err)
		// Left leased: decided again when the lease ends.
		return result{change: change{rec: rec, kind: changeUnclaim, next: a.At.Add(d.o.Lease)}, typ: n.Type}
	}
	return result{change: change{rec: rec, kind: changeComplete, outcome: outcome}, msgs: []stream.Message{hist, done},
		typ: n.Type, outcome: outcome}
}

// flush writes a batch of one subscriber's outcomes: their events in one
// Publish, then the schedule and the subscriber's health in one pipeline.
// If the publish cannot be made before ctx ends, nothing is written: the
// deliveries stay leased and are decided again when their lease ends.
// Then, when some attempts failed, it checks the backlog bound.
func (d *Dispatcher) flush(ctx context.Context, sub string, rs []result) {
	var msgs []stream.Message
	changes := make([]change, 0, len(rs))
	var h healthCount
	for _, r := range rs {
		msgs = append(msgs, r.msgs...)
		changes = append(changes, r.change)
		if r.ok {
			h.ok++
		}
		if r.failed {
			h.fail++
		}
	}
	start := time.Now()
	if err := d.retryDo(ctx, "publish delivery outcomes", func() error { return d.o.Publisher.Publish(ctx, msgs...) }); err != nil {
		return
	}
	d.m.observeStep(stepPublish, start)
	var health map[string]healthCount
	if h.ok+h.fail > 0 {
		health = map[string]healthCount{sub: h}
	}
	now := d.now()
	start = time.Now()
	if err := d.retryDo(ctx, "write delivery outcomes", func() error { return d.v.apply(ctx, changes, health, now) }); err != nil {
		return
	}
	d.m.observeStep(stepApply, start)
	for _, r := range rs {
		if r.posted && r.latency > 0 {
			d.m.attemptSeconds.WithLabelValues(r.typ).Observe(r.latency.Seconds())
		}
		if r.outcome != "" {
			d.m.deliveries.WithLabelValues(r.typ, r.outcome).Inc()
		}
		if r.outcome == schemas.OutcomeRetry {
			d.m.retries.WithLabelValues(r.typ).Inc()
		}
	}
	if h.fail > 0 {
		d.checkBound(ctx, sub)
	}
}

// checkBound sets disableAll for a subscriber that is failing and whose
// backlog reached the bound (spec doc 1: "the subscriber's backend queue
// has reached its maximum size (all notifications are in a retry state)").
func (d *Dispatcher) checkBound(ctx context.Context, sub string) {
	if d.isAutoDisabled(sub) {
		return
	}
	states, err := d.v.states(ctx, []string{sub}, d.now())
	if err != nil {
		d.log.Warn("read subscriber state failed", "subscriber", sub, "error", err)
		return
	}
	st := states[sub]
	if st.backlog < int64(d.o.BacklogLimit) || !st.failing(d.minFailing()) {
		return
	}
	_, disableAll, err := d.o.Subscriptions.Settings(ctx, sub)
	if err != nil || disableAll {
		return
	}
	d.autoDisable(ctx, ctx, autoDisable{subscriber: sub, backlog: st.backlog, fail: st.fail, ok: st.ok,
		reason: boundReason(st, d.o.BacklogLimit)})
}

var _ Sender = (*webhook.Sender)(nil)

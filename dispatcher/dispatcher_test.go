package dispatcher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/dispatcher"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestDispatcher_DeliversSignedPayloadWithDeliveryIDHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, nil)
	e.subs.setRule("sub-a", schemas.TypeRate, rule{url: s.url("/my-rates"), key: "key-of-rate-rule"})
	r := e.start(nil)

	n := note("sub-a", schemas.TypeRate, "R1")
	e.publish(n)
	testharness.Eventually(t, 15*time.Second, "delivery", func() bool { return len(s.requests()) == 1 })

	got := s.requests()[0]
	if got.id != n.ID {
		t.Errorf("delivery id header = %q, want %q", got.id, n.ID)
	}
	if got.typ != schemas.TypeRate {
		t.Errorf("type header = %q", got.typ)
	}
	var body struct {
		SupplierID, ProductID, RateID, Operation string
		Signature                                schemas.Signature
	}
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatalf("body %s: %v", got.body, err)
	}
	if body.RateID != "R1" || body.Operation != "updated" || body.SupplierID != "S1" {
		t.Errorf("payload fields lost: %s", got.body)
	}
	sig := body.Signature
	if want := specSum("key-of-rate-rule", sig.Timestamp, sig.Token); sig.Sum != want {
		t.Errorf("signature sum %s does not verify per spec (want %s)", sig.Sum, want)
	}
	if d := time.Since(time.Unix(sig.Timestamp, 0)); d < 0 || d > time.Minute {
		t.Errorf("signature timestamp %d is not now", sig.Timestamp)
	}

	testharness.Eventually(t, 10*time.Second, "delivered in history", func() bool {
		as := e.attempts()[n.ID]
		return len(as) == 1 && as[0].Outcome == schemas.OutcomeDelivered
	})
	a := e.attempts()[n.ID][0]
	if a.Attempt != 1 || a.Status != 200 || a.Subscriber != "sub-a" || a.Type != schemas.TypeRate {
		t.Errorf("history record %+v", a)
	}
	testharness.Eventually(t, 5*time.Second, "metric", func() bool {
		return testharness.MetricValue(t, r.reg, "switchback_dispatcher_deliveries_total", map[string]string{"type": "rate", "outcome": "delivered"}) == 1
	})
	if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_attempt_seconds", map[string]string{"type": "rate"}); got != 1 {
		t.Errorf("attempt_seconds observations = %v, want 1 (one POST)", got)
	}
	// Our own lag, as the subscriber sees it and at the intake: one
	// observation each for the one notification.
	if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_first_send_delay_seconds", map[string]string{"type": "rate"}); got != 1 {
		t.Errorf("first_send_delay_seconds observations = %v, want 1 (one first POST)", got)
	}
	if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_intake_age_seconds", nil); got != 1 {
		t.Errorf("intake_age_seconds observations = %v, want 1 (one notification taken in)", got)
	}
	for _, step := range []string{"intake", "claim", "publish", "apply"} {
		if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_step_seconds", map[string]string{"step": step}); got < 1 {
			t.Errorf("step_seconds{step=%q} observations = %v, want at least one", step, got)
		}
	}
}

func TestDispatcher_ThrottleDelaySpacesOneSubscribersSendsOnly(t *testing.T) {
	t.Parallel()
	const throttle = 250 * time.Millisecond
	e := newEnv(t)
	slow, fast := newSink(t, nil), newSink(t, nil)
	e.subs.setRule("throttled", schemas.TypeSupplier, rule{url: slow.url("/s"), key: "k"})
	e.subs.setThrottle("throttled", throttle)
	e.subs.setRule("unthrottled", schemas.TypeSupplier, rule{url: fast.url("/s"), key: "k"})
	e.start(nil)

	var ns []schemas.Notification
	for i := range 3 {
		ns = append(ns, note("throttled", schemas.TypeSupplier, "S"+string(rune('a'+i))))
		ns = append(ns, note("unthrottled", schemas.TypeSupplier, "S"+string(rune('a'+i))))
	}
	e.publish(ns...)
	testharness.Eventually(t, 20*time.Second, "all sends", func() bool { return len(slow.requests()) == 3 && len(fast.requests()) == 3 })

	sr := slow.requests()
	for i := 1; i < len(sr); i++ {
		if gap := sr[i].at.Sub(sr[i-1].at); gap < throttle {
			t.Errorf("sends %d and %d of the throttled subscriber %v apart, want >= %v", i-1, i, gap, throttle)
		}
	}
	// The other subscriber did not wait behind the throttled one.
	if last := fast.requests()[2].at; !last.Before(sr[1].at) {
		t.Errorf("unthrottled subscriber's sends (last at %v) waited for the throttled one's second (%v)", last, sr[1].at)
	}
}

func TestDispatcher_RetriesAfter500sWithTheSameDeliveryID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, func(_ string, nth int) (int, http.Header) {
		if nth <= 3 {
			return 500, nil
		}
		return 200, nil
	})
	e.subs.setRule("sub", schemas.TypeBooking, rule{url: s.url("/b"), key: "k"})
	r := e.start(func(o *dispatcher.Options) {
		o.Schedule = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}
	})
	n := note("sub", schemas.TypeBooking, "B1")
	e.publish(n)
	testharness.Eventually(t, 15*time.Second, "delivered after 3 failures", func() bool { return s.deliveredIDs()[n.ID] == 1 })

	reqs := s.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	tokens := map[string]bool{}
	for _, rq := range reqs {
		if rq.id != n.ID {
			t.Errorf("retry carried delivery id %q, want %q", rq.id, n.ID)
		}
		var b struct{ Signature schemas.Signature }
		_ = json.Unmarshal(rq.body, &b)
		if b.Signature.Sum != specSum("k", b.Signature.Timestamp, b.Signature.Token) {
			t.Error("a retry's signature does not verify")
		}
		tokens[b.Signature.Token] = true
	}
	if len(tokens) != 4 {
		t.Errorf("%d distinct tokens over 4 attempts, want a new token per attempt", len(tokens))
	}
	testharness.Eventually(t, 10*time.Second, "history of 4 attempts", func() bool { return len(e.attempts()[n.ID]) == 4 })
	var outcomes []string
	for i, a := range e.attempts()[n.ID] {
		outcomes = append(outcomes, a.Outcome)
		if a.Attempt != i+1 {
			t.Errorf("history attempt %d numbered %d", i+1, a.Attempt)
		}
	}
	if want := []string{"retry", "retry", "retry", "delivered"}; !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
	if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_retries_total", map[string]string{"type": "booking"}); got != 3 {
		t.Errorf("retries_total = %v, want 3", got)
	}
}

func TestDispatcher_GivesUpAfterTheLastAttemptAndRecordsTheNotification(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, func(string, int) (int, http.Header) { return 502, nil })
	e.subs.setRule("sub", schemas.TypeProduct, rule{url: s.url("/p"), key: "k"})
	e.start(func(o *dispatcher.Options) {
		o.Schedule = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	})
	n := note("sub", schemas.TypeProduct, "P1")
	e.publish(n)
	testharness.Eventually(t, 15*time.Second, "failed in history", func() bool {
		as := e.attempts()[n.ID]
		return len(as) == 3 && as[2].Outcome == schemas.OutcomeFailed
	})
	last := e.attempts()[n.ID][2]
	if last.Notification == nil || last.Notification.ID != n.ID || string(last.Notification.Payload) != string(n.Payload) {
		t.Errorf("failed record lacks the notification for replay: %+v", last)
	}
	if last.Status != 502 || !strings.Contains(last.Error, "502") {
		t.Errorf("failed record status %d error %q", last.Status, last.Error)
	}
	if len(s.requests()) != 3 {
		t.Errorf("%d requests, want 3 (1 + 2 retries)", len(s.requests()))
	}
}

func TestDispatcher_HonoursRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, func(_ string, nth int) (int, http.Header) {
		if nth == 1 {
			return 429, http.Header{"Retry-After": {"1"}}
		}
		return 200, nil
	})
	e.subs.setRule("sub", schemas.TypeSupplier, rule{url: s.url("/s"), key: "k"})
	e.start(func(o *dispatcher.Options) { o.Schedule = []time.Duration{10 * time.Millisecond} })
	n := note("sub", schemas.TypeSupplier, "S1")
	e.publish(n)
	testharness.Eventually(t, 15*time.Second, "delivered", func() bool { return s.deliveredIDs()[n.ID] == 1 })
	reqs := s.requests()
	if gap := reqs[1].at.Sub(reqs[0].at); gap < time.Second {
		t.Errorf("retry %v after a 429 with Retry-After: 1, want >= 1s (schedule step was 10ms)", gap)
	}
}

func TestDispatcher_DisableAllSuppressesAndRecordsAtIntakeAndAtSendTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, nil)
	e.subs.setRule("off", schemas.TypeSupplier, rule{url: s.url("/off"), key: "k"})
	e.subs.setDisableAll("off", true)
	e.subs.setRule("flip", schemas.TypeSupplier, rule{url: s.url("/flip"), key: "k"})
	e.subs.setThrottle("flip", 400*time.Millisecond)
	e.start(nil)

	off1, off2 := note("off", schemas.TypeSupplier, "S1"), note("off", schemas.TypeSupplier, "S2")
	flip1, flip2 := note("flip", schemas.TypeSupplier, "S1"), note("flip", schemas.TypeSupplier, "S2")
	e.publish(off1, off2, flip1, flip2)
	// flip2 waits for the throttle: disableAll set meanwhile applies to it.
	testharness.Eventually(t, 15*time.Second, "first send of flip", func() bool { return s.deliveredIDs()[flip1.ID] == 1 })
	e.subs.setDisableAll("flip", true)

	testharness.Eventually(t, 15*time.Second, "three suppressed", func() bool { return len(e.suppressed()) == 3 })
	sup := e.suppressed()
	for _, n := range []schemas.Notification{off1, off2, flip2} {
		got, ok := sup[n.ID]
		if !ok {
			t.Errorf("%s not recorded as suppressed", n.ID)
			continue
		}
		full := got.Notification
		if string(full.Payload) != string(n.Payload) || full.Type != n.Type || full.Subscriber != n.Subscriber || full.EntityKey != n.EntityKey {
			t.Errorf("suppressed record does not hold the full notification: %+v", got)
		}
		if got.Subscriber != n.Subscriber || got.Type != n.Type || !strings.Contains(got.Reason, "disableAll") {
			t.Errorf("suppressed record %+v", got)
		}
		if as := e.attempts()[n.ID]; len(as) != 0 {
			t.Errorf("suppressed %s also has attempt records %+v", n.ID, as)
		}
	}
	for _, rq := range s.requests() {
		if rq.id != flip1.ID {
			t.Errorf("sent %s despite disableAll", rq.id)
		}
	}
}

func TestDispatcher_DisabledOrDeletedRuleIsNotSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, nil)
	tests := []struct {
		name    string
		sub     string
		setup   func(sub string)
		outcome string
		sent    bool
	}{
		{"enabled rule", "s-enabled", func(sub string) { e.subs.setRule(sub, schemas.TypeProduct, rule{url: s.url("/p"), key: "k"}) }, schemas.OutcomeDelivered, true},
		{"disabled rule", "s-disabled", func(sub string) {
			e.subs.setRule(sub, schemas.TypeProduct, rule{url: s.url("/p"), key: "k", disabled: true})
		}, schemas.OutcomeDropped, false},
		{"no rule of the type (deleted)", "s-deleted", func(sub string) {
			e.subs.setRule(sub, schemas.TypeBooking, rule{url: s.url("/b"), key: "k"})
		}, schemas.OutcomeDropped, false},
	}
	ids := map[string]string{}
	for _, tt := range tests {
		tt.setup(tt.sub)
		n := note(tt.sub, schemas.TypeProduct, "P1")
		ids[tt.name] = n.ID
		e.publish(n)
	}
	e.start(nil)
	testharness.Eventually(t, 15*time.Second, "every outcome recorded", func() bool {
		as := e.attempts()
		for _, id := range ids {
			if len(as[id]) == 0 {
				return false
			}
		}
		return true
	})
	as := e.attempts()
	sent := s.deliveredIDs()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := ids[tt.name]
			if got := as[id][0].Outcome; got != tt.outcome {
				t.Errorf("outcome %s, want %s", got, tt.outcome)
			}
			if (sent[id] > 0) != tt.sent {
				t.Errorf("sent = %v, want %v", sent[id] > 0, tt.sent)
			}
		})
	}
}

// TestDispatcher_FailingSubscriberAtTheBoundIsDisabledOnceAndTheRestSuppressed:
// spec doc 1, the automatic disableAll when the subscriber's queue reached
// its maximum size with its notifications in a retry state.
func TestDispatcher_FailingSubscriberAtTheBoundIsDisabledOnceAndTheRestSuppressed(t *testing.T) {
	t.Parallel()
	const limit = 3
	e := newEnv(t)
	s := newSink(t, func(string, int) (int, http.Header) { return 500, nil })
	e.subs.setRule("flood", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	e.subs.setRule("calm", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	r := e.start(func(o *dispatcher.Options) {
		o.BacklogLimit = limit
		o.Schedule = []time.Duration{time.Hour} // failures stay pending
	})
	var first []schemas.Notification
	for i := range 6 {
		first = append(first, note("flood", schemas.TypeRate, "R"+string(rune('a'+i))))
	}
	e.publish(first...)
	// All six are attempted and fail: the subscriber is failing with 6
	// pending, past the bound of 3.
	testharness.Eventually(t, 15*time.Second, "bound reached", func() bool { return e.subs.disableCallsOf("flood") == 1 })
	later := []schemas.Notification{note("flood", schemas.TypeRate, "Rx"), note("flood", schemas.TypeRate, "Ry")}
	e.publish(later...)
	calm := note("calm", schemas.TypeRate, "R1")
	e.publish(calm)

	testharness.Eventually(t, 15*time.Second, "every later notification suppressed", func() bool {
		sup := e.suppressed()
		for _, n := range later {
			if _, ok := sup[n.ID]; !ok {
				return false
			}
		}
		return true
	})
	sup := e.suppressed()
	for _, n := range later {
		if got := sup[n.ID]; string(got.Notification.Payload) != string(n.Payload) {
			t.Errorf("notification %s after the auto-disable not recorded with its payload", n.ID)
		}
	}
	as := e.attempts()
	for _, n := range first {
		if len(as[n.ID]) == 0 {
			t.Errorf("notification %s taken in before the subscriber was found failing was not attempted", n.ID)
		}
	}
	// Their retries were an hour away: once the subscriber is disabled
	// they are suppressed at once (replayable), not when due.
	testharness.Eventually(t, 15*time.Second, "the pending retries suppressed", func() bool {
		sup := e.suppressed()
		for _, n := range first {
			if _, ok := sup[n.ID]; !ok {
				return false
			}
		}
		return true
	})
	if got := e.subs.disableCallsOf("flood"); got != 1 {
		t.Errorf("DisableAll called %d times, want 1", got)
	}
	if got := e.subs.disableCallsOf("calm"); got != 0 {
		t.Errorf("another subscriber was disabled")
	}
	testharness.Eventually(t, 10*time.Second, "calm subscriber still served", func() bool { return len(e.attempts()[calm.ID]) > 0 })
	if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_auto_disabled_total", nil); got != 1 {
		t.Errorf("auto_disabled_total = %v, want 1", got)
	}
	alerts := e.history(schemas.HistorySubscriberAutoDisabled)
	if len(alerts) != 1 {
		t.Fatalf("%d auto-disable history events, want 1", len(alerts))
	}
	var rec schemas.SubscriberAutoDisabled
	_ = json.Unmarshal(alerts[0].Data, &rec)
	if rec.Subscriber != "flood" || rec.Limit != limit || rec.Backlog < limit {
		t.Errorf("auto-disable record %+v", rec)
	}
}

func TestDispatcher_ReplayAfterAutoDisableDeliversEverySuppressedNotification(t *testing.T) {
	t.Parallel()
	const limit = 3
	e := newEnv(t)
	var healthy atomic.Bool
	s := newSink(t, func(string, int) (int, http.Header) {
		if healthy.Load() {
			return 200, nil
		}
		return 500, nil
	})
	e.subs.setRule("down", schemas.TypeSupplier, rule{url: s.url("/d"), key: "k"})
	e.start(func(o *dispatcher.Options) {
		o.BacklogLimit = limit
		o.Schedule = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	})
	var ns []schemas.Notification
	for i := range 2 * limit {
		ns = append(ns, note("down", schemas.TypeSupplier, fmt.Sprintf("S%d", i)))
	}
	e.publish(ns...)
	// limit queued then suppressed at send time, the rest at intake.
	testharness.Eventually(t, 15*time.Second, "every notification suppressed", func() bool { return len(e.suppressed()) == len(ns) })
	if got := e.subs.disableCallsOf("down"); got != 1 {
		t.Fatalf("DisableAll called %d times, want 1", got)
	}

	// The subscriber fixes its endpoint, re-enables and replays all of it
	// at once: more than the bound.
	healthy.Store(true)
	e.subs.setDisableAll("down", false)
	var replay []schemas.Notification
	for _, r := range e.suppressed() {
		replay = append(replay, r.Notification)
	}
	count, err := dispatcher.Replay(t.Context(), e.prod, "down", schemas.TypeSupplier, time.Time{}, time.Time{}, replay)
	if err != nil || count != len(ns) {
		t.Fatalf("Replay = %d, %v; want %d", count, err, len(ns))
	}
	testharness.Eventually(t, 15*time.Second, "every replayed notification delivered", func() bool {
		got := s.deliveredIDs()
		for _, n := range ns {
			if got[n.ID] == 0 {
				return false
			}
		}
		return true
	})
	if got := e.subs.disableCallsOf("down"); got != 1 {
		t.Errorf("DisableAll called %d times, want 1 (a replay is not unsolicited backlog)", got)
	}
}

func TestDispatcher_PendingReplaysDoNotCountAgainstTheBoundAfterARebuild(t *testing.T) {
	t.Parallel()
	const limit = 2
	e := newEnv(t)
	s := newSink(t, func(string, int) (int, http.Header) { return 500, nil })
	e.subs.setRule("sub", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	r := e.start(func(o *dispatcher.Options) {
		o.BacklogLimit = limit
		o.Schedule = []time.Duration{time.Hour} // failures stay pending
	})
	var replay []schemas.Notification
	for i := range limit + 1 {
		replay = append(replay, note("sub", schemas.TypeRate, fmt.Sprintf("R%d", i)))
	}
	if _, err := dispatcher.Replay(t.Context(), e.prod, "sub", schemas.TypeRate, time.Time{}, time.Time{}, replay); err != nil {
		t.Fatal(err)
	}
	testharness.Eventually(t, 15*time.Second, "replays attempted", func() bool {
		as := e.attempts()
		for _, n := range replay {
			if len(as[n.ID]) == 0 {
				return false
			}
		}
		return true
	})
	rebuilds := testharness.MetricValue(t, r.reg, "switchback_dispatcher_schedule_rebuilds_total", nil)
	e.mr.FlushAll() // the schedule is rebuilt from the deliveries topic
	testharness.Eventually(t, 15*time.Second, "schedule rebuilt", func() bool {
		return testharness.MetricValue(t, r.reg, "switchback_dispatcher_schedule_rebuilds_total", nil) > rebuilds
	})
	fresh := note("sub", schemas.TypeRate, "F")
	e.publish(fresh)
	testharness.Eventually(t, 15*time.Second, "fresh notification recorded", func() bool {
		_, suppressed := e.suppressed()[fresh.ID]
		return suppressed || len(e.attempts()[fresh.ID]) > 0
	})
	if _, ok := e.suppressed()[fresh.ID]; ok || e.subs.disableCallsOf("sub") != 0 {
		t.Errorf("pending replays counted against the bound after a rebuild (suppressed, %d DisableAll calls)", e.subs.disableCallsOf("sub"))
	}
}

func TestDispatcher_BacklogBoundDisablesAgainAfterTheSubscriberReEnabled(t *testing.T) {
	t.Parallel()
	const limit = 2
	e := newEnv(t)
	s := newSink(t, func(string, int) (int, http.Header) { return 500, nil })
	e.subs.setRule("flood", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	e.start(func(o *dispatcher.Options) {
		o.BacklogLimit = limit
		o.Schedule = []time.Duration{time.Hour} // failures stay pending
	})
	var first []schemas.Notification
	for i := range limit {
		first = append(first, note("flood", schemas.TypeRate, fmt.Sprintf("A%d", i)))
	}
	e.publish(first...)
	testharness.Eventually(t, 15*time.Second, "queued ones attempted", func() bool {
		as := e.attempts()
		return len(as[first[0].ID]) > 0 && len(as[first[1].ID]) > 0
	})
	e.publish(note("flood", schemas.TypeRate, "A-over"))
	testharness.Eventually(t, 15*time.Second, "bound reached", func() bool { return e.subs.disableCallsOf("flood") == 1 })
	// The disabled subscriber's backlog is drained (suppressed) before it
	// is re-enabled: re-enabling first would race the drain, and the test
	// would depend on which won (it failed once in CI that way).
	testharness.Eventually(t, 15*time.Second, "first backlog suppressed", func() bool {
		sup := e.suppressed()
		_, a0 := sup[first[0].ID]
		_, a1 := sup[first[1].ID]
		return a0 && a1
	})
	// Re-enabled, the subscriber still fails: its backlog fills to the
	// bound again (retries an hour away), and the notification over it
	// starts a second episode: disabled again, and suppressed.
	e.subs.setDisableAll("flood", false)
	var second []schemas.Notification
	for i := range limit {
		second = append(second, note("flood", schemas.TypeRate, fmt.Sprintf("B%d", i)))
	}
	e.publish(second...)
	testharness.Eventually(t, 15*time.Second, "second backlog attempted", func() bool {
		as := e.attempts()
		return len(as[second[0].ID]) > 0 && len(as[second[1].ID]) > 0
	})
	over := note("flood", schemas.TypeRate, "B-over")
	e.publish(over)
	testharness.Eventually(t, 15*time.Second, "over the bound again: suppressed", func() bool { _, ok := e.suppressed()[over.ID]; return ok })
	if got := e.subs.disableCallsOf("flood"); got != 2 {
		t.Errorf("DisableAll called %d times, want 2: a notification suppressed by the bound while disableAll is false", got)
	}
}

func TestDispatcher_KeepsOneEntitysOrderWhileItIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var e1 []schemas.Notification
	for range 4 {
		e1 = append(e1, note("sub", schemas.TypeRate, "E"))
	}
	other := note("sub", schemas.TypeRate, "F")
	s := newSink(t, func(id string, nth int) (int, http.Header) {
		if id == e1[0].ID && nth <= 2 {
			return 503, nil
		}
		return 200, nil
	})
	e.subs.setRule("sub", schemas.TypeRate, rule{url: s.url("/r"), key: "k"})
	e.start(func(o *dispatcher.Options) {
		o.Schedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
	})
	e.publish(append(e1, other)...)
	testharness.Eventually(t, 15*time.Second, "all delivered", func() bool { return len(s.deliveredIDs()) == 5 })

	reqs := s.requests()
	var order []string
	firstOK := -1
	for i, rq := range reqs {
		if rq.status == 200 && rq.id != other.ID {
			order = append(order, rq.id)
		}
		if rq.id == e1[0].ID && rq.status == 200 {
			firstOK = i
		}
	}
	want := []string{e1[0].ID, e1[1].ID, e1[2].ID, e1[3].ID}
	if !slices.Equal(order, want) {
		t.Errorf("entity E delivered in order %v, want %v", order, want)
	}
	for i, rq := range reqs {
		if rq.id != e1[0].ID && rq.id != other.ID && i < firstOK {
			t.Errorf("a later notification of E was sent (request %d) before the first was delivered (request %d)", i, firstOK)
		}
		if rq.id == other.ID && i > firstOK {
			t.Errorf("the other entity waited behind E's retries")
		}
	}
}

func TestDispatcher_AtLeastOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, func(_ string, nth int) (int, http.Header) {
		if nth == 1 {
			return 500, nil // every first attempt fails: retries are pending
		}
		return 200, nil
	})
	for _, sub := range []string{"a", "b"} {
		e.subs.setRule(sub, schemas.TypeSupplier, rule{url: s.url("/" + sub), key: "k-" + sub})
	}
	schedule := func(o *dispatcher.Options) {
		o.Schedule = []time.Duration{400 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	}
	first := e.start(schedule)

	var ns []schemas.Notification
	for i := range 20 {
		ns = append(ns, note([]string{"a", "b"}[i%2], schemas.TypeSupplier, "S"+string(rune('a'+i))))
	}
	e.publish(ns...)
	testharness.Eventually(t, 15*time.Second, "first attempts", func() bool { return len(s.requests()) >= 20 })
	if err := first.stop(); err != nil {
		t.Fatalf("first dispatcher: %v", err)
	}
	if got := len(s.deliveredIDs()); got == len(ns) {
		t.Fatalf("all %d delivered before the restart: the test proves nothing", got)
	}
	// Published while no dispatcher runs.
	var more []schemas.Notification
	for i := range 6 {
		more = append(more, note("a", schemas.TypeSupplier, "T"+string(rune('a'+i))))
	}
	e.publish(more...)

	e.start(schedule)
	all := append(ns, more...)
	testharness.Eventually(t, 20*time.Second, "everything delivered at least once", func() bool {
		got := s.deliveredIDs()
		for _, n := range all {
			if got[n.ID] == 0 {
				return false
			}
		}
		return true
	})
	known := map[string]bool{}
	for _, n := range all {
		known[n.ID] = true
	}
	for _, rq := range s.requests() {
		if !known[rq.id] {
			t.Errorf("request with unknown delivery id %q", rq.id)
		}
	}
}

func TestDispatcher_RebuildsScheduleFromDeliveriesTopicAfterRedisFlush(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failing := map[string]bool{}
	s := newSink(t, func(id string, _ int) (int, http.Header) {
		if failing[id] {
			return 500, nil
		}
		return 200, nil
	})
	e.subs.setRule("sub", schemas.TypeBooking, rule{url: s.url("/b"), key: "k"})
	schedule := func(o *dispatcher.Options) {
		o.Schedule = []time.Duration{time.Second, time.Second, time.Second, time.Second}
	}
	var okOnes, failOnes []schemas.Notification
	for i := range 5 {
		okOnes = append(okOnes, note("sub", schemas.TypeBooking, "ok"+string(rune('a'+i))))
		n := note("sub", schemas.TypeBooking, "fail"+string(rune('a'+i)))
		failing[n.ID] = true
		failOnes = append(failOnes, n)
	}
	// Entity chains: the second notification of a failing entity waits.
	queued := note("sub", schemas.TypeBooking, "faila")

	first := e.start(schedule)
	e.publish(append(append(okOnes, failOnes...), queued)...)
	testharness.Eventually(t, 15*time.Second, "ok ones delivered, failing ones tried", func() bool {
		got := s.deliveredIDs()
		for _, n := range okOnes {
			if got[n.ID] != 1 {
				return false
			}
		}
		tried := map[string]bool{}
		for _, rq := range s.requests() {
			tried[rq.id] = true
		}
		for _, n := range failOnes {
			if !tried[n.ID] {
				return false
			}
		}
		return true
	})
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	e.mr.FlushAll()
	s.setRespond(func(string, int) (int, http.Header) { return 200, nil })
	second := e.start(schedule)

	testharness.Eventually(t, 20*time.Second, "failing ones and the queued one delivered", func() bool {
		got := s.deliveredIDs()
		for _, n := range append(failOnes, queued) {
			if got[n.ID] == 0 {
				return false
			}
		}
		return true
	})
	got := s.deliveredIDs()
	for _, n := range okOnes {
		if got[n.ID] != 1 {
			t.Errorf("delivered notification %s sent %d times after the rebuild, want once", n.ID, got[n.ID])
		}
	}
	// The queued one stayed behind its entity's head.
	var order []string
	for _, rq := range s.requests() {
		if rq.status == 200 && (rq.id == failOnes[0].ID || rq.id == queued.ID) {
			order = append(order, rq.id)
		}
	}
	if !slices.Equal(order, []string{failOnes[0].ID, queued.ID}) {
		t.Errorf("entity order after rebuild %v", order)
	}
	if got := testharness.MetricValue(t, second.reg, "switchback_dispatcher_schedule_rebuilds_total", nil); got != 1 {
		t.Errorf("rebuilds_total = %v, want 1", got)
	}
}

func TestReplay_RedeliversWithTheSameIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, nil)
	e.subs.setRule("sub", schemas.TypeSupplier, rule{url: s.url("/s"), key: "k"})
	e.start(nil)
	n := note("sub", schemas.TypeSupplier, "S1")
	e.publish(n)
	testharness.Eventually(t, 15*time.Second, "delivered", func() bool { return s.deliveredIDs()[n.ID] == 1 })
	// A redelivered duplicate (same id, not a replay) is filtered.
	e.publish(n)

	otherType := note("sub", schemas.TypeProduct, "P1")
	otherSub := note("someone-else", schemas.TypeSupplier, "S1")
	tooOld := note("sub", schemas.TypeSupplier, "S2")
	tooOld.CreatedAt = n.CreatedAt.Add(-time.Hour)
	count, err := dispatcher.Replay(t.Context(), e.prod, "sub", schemas.TypeSupplier,
		n.CreatedAt.Add(-time.Minute), n.CreatedAt.Add(time.Minute),
		[]schemas.Notification{n, otherType, otherSub, tooOld})
	if err != nil || count != 1 {
		t.Fatalf("Replay = %d, %v; want 1", count, err)
	}
	testharness.Eventually(t, 30*time.Second, "replayed", func() bool { return s.deliveredIDs()[n.ID] == 2 })
	if len(s.requests()) != 2 {
		t.Errorf("%d requests, want 2 (the duplicate filtered, the replay sent)", len(s.requests()))
	}
}

func TestDispatcher_DeadLettersUnusableRecordsAndGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, nil)
	e.subs.setRule("sub", schemas.TypeSupplier, rule{url: s.url("/s"), key: "k"})
	e.start(nil)
	bad := []stream.Message{
		{Topic: schemas.TopicNotifications, Key: []byte("sub"), Value: []byte("not json")},
		{Topic: schemas.TopicNotifications, Key: []byte("sub"), Value: []byte(`{"type":"notification","data":{"subscriber":"sub"}}`)},
	}
	if err := e.prod.Publish(t.Context(), bad...); err != nil {
		t.Fatal(err)
	}
	n := note("sub", schemas.TypeSupplier, "S1")
	e.publish(n)
	testharness.Eventually(t, 15*time.Second, "good one delivered", func() bool { return s.deliveredIDs()[n.ID] == 1 })
	var dl []stream.Message
	testharness.Eventually(t, 10*time.Second, "dead letters", func() bool {
		dl = dl[:0]
		_ = stream.ReadAll(t.Context(), e.brokers, schemas.TopicDeadLetter, func(m stream.Message) error {
			dl = append(dl, m)
			return nil
		})
		return len(dl) == 2
	})
	if dl[0].Headers[stream.HeaderDeadLetterTopic] != schemas.TopicNotifications {
		t.Errorf("dead letter headers %v", dl[0].Headers)
	}
}

func TestDispatcher_UnreadableSettingsOfOneSubscriberDoNotBlockOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newSink(t, nil)
	e.subs.setRule("broken", schemas.TypeSupplier, rule{url: s.url("/s"), key: "k"})
	e.subs.setRule("fine", schemas.TypeSupplier, rule{url: s.url("/s"), key: "k"})
	e.subs.setFailSettings("broken", true)
	e.start(nil)
	stuck, ok := note("broken", schemas.TypeSupplier, "S1"), note("fine", schemas.TypeSupplier, "S1")
	e.publish(stuck, ok)
	testharness.Eventually(t, 15*time.Second, "other subscriber served", func() bool { return s.deliveredIDs()[ok.ID] == 1 })
	if s.deliveredIDs()[stuck.ID] != 0 {
		t.Fatal("sent without knowing the subscriber's disableAll")
	}
	e.subs.setFailSettings("broken", false)
	testharness.Eventually(t, 15*time.Second, "sent once the registry answers", func() bool { return s.deliveredIDs()[stuck.ID] == 1 })
}

// viewsEpoch is the Redis views' epoch as a test sets it.
type viewsEpoch struct {
	mu sync.Mutex
	e  string
}

func (v *viewsEpoch) Epoch(context.Context) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.e, nil
}

func (v *viewsEpoch) set(e string) { v.mu.Lock(); v.e = e; v.mu.Unlock() }

// TestDispatcher_RebuildsItsScheduleWhenItIsLost: a delivery waiting for
// its retry is sent although its schedule entry was lost, because the
// dispatcher rebuilds its schedule, when Redis is flushed while it runs,
// and when Redis restarted from its append-only file lost the last
// schedule writes but kept the schedule's marker (the views guard rebuilt
// the other views under a new epoch, and the dispatcher, whose marker
// recorded the old one, rebuilds its schedule too).
func TestDispatcher_RebuildsItsScheduleWhenItIsLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		views    bool // the dispatcher follows the views' epoch
		lose     func(t *testing.T, e *env, views *viewsEpoch)
		rebuilds float64 // at least
	}{
		{"Redis flushed while running", false, func(_ *testing.T, e *env, _ *viewsEpoch) { e.mr.FlushAll() }, 1},
		{"the views' epoch changes", true, func(t *testing.T, e *env, views *viewsEpoch) {
			// The restart: every schedule key but the marker is gone.
			keys, err := e.rdb.Keys(t.Context(), dispatcher.DefaultKeyPrefix+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if k != dispatcher.DefaultKeyPrefix+"rebuilt" {
					e.mr.Del(k)
				}
			}
			views.set("e2")
		}, 2}, // start, new epoch
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			healthy := make(chan struct{})
			s := newSink(t, func(string, int) (int, http.Header) {
				select {
				case <-healthy:
					return 200, nil
				default:
					return 500, nil
				}
			})
			e.subs.setRule("sub", schemas.TypeBooking, rule{url: s.url("/b"), key: "k"})
			views := &viewsEpoch{e: "e1"}
			r := e.start(func(o *dispatcher.Options) {
				o.Schedule = []time.Duration{700 * time.Millisecond, 700 * time.Millisecond, 700 * time.Millisecond}
				if tt.views {
					o.Views = views
				}
			})
			n := note("sub", schemas.TypeBooking, "B1")
			e.publish(n)
			testharness.Eventually(t, 15*time.Second, "first attempt", func() bool { return len(s.requests()) >= 1 })
			tt.lose(t, e, views)
			close(healthy)
			testharness.Eventually(t, 20*time.Second, "delivered after the loss", func() bool { return s.deliveredIDs()[n.ID] >= 1 })
			if got := testharness.MetricValue(t, r.reg, "switchback_dispatcher_schedule_rebuilds_total", nil); got < tt.rebuilds {
				t.Errorf("rebuilds_total = %v, want at least %v", got, tt.rebuilds)
			}
		})
	}
}

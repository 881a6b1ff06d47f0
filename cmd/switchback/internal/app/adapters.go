package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchbackhq/switchback/dispatcher"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/views"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// The adapters below join stages through the small interfaces each stage
// declares, so that no stage imports another (STYLE.md, "Layout follows the
// data"). They translate; they decide nothing.

// subscriptions lets the dispatcher read rules and metadata from the
// registry, and auto-disable a subscriber through it. With a views guard,
// what the registry would answer from a lost view is a "retry later"
// (an error: the dispatcher postpones the delivery without counting an
// attempt) instead of "no rule" (dropped) or the default metadata (sent
// despite disableAll or throttleDelay).
type subscriptions struct {
	reg   *registry.Registry
	views *views.Guard // nil: no guard
}

var _ dispatcher.Subscriptions = subscriptions{}

func (s subscriptions) Target(ctx context.Context, subscriber, typ string) (webhook.Target, bool, error) {
	gen, err := s.begin()
	if err != nil {
		return webhook.Target{}, false, err
	}
	r, err := s.reg.Rule(ctx, subscriber, typ)
	if errors.Is(err, registry.ErrNotFound) {
		if err := s.confirm(ctx, gen); err != nil {
			return webhook.Target{}, false, err
		}
		return webhook.Target{}, false, dispatcher.ErrNoRule
	}
	if err != nil {
		return webhook.Target{}, false, err
	}
	return webhook.Target{URL: r.URL, SecurityKey: r.SecurityKey}, !r.Disabled, nil
}

func (s subscriptions) Settings(ctx context.Context, subscriber string) (time.Duration, bool, error) {
	gen, err := s.begin()
	if err != nil {
		return 0, false, err
	}
	m, err := s.reg.Metadata(ctx, subscriber)
	if err != nil {
		return 0, false, err
	}
	if !m.DisableAll && m.Throttle() == 0 {
		// What a subscriber without metadata reads, and a lost view too.
		if err := s.confirm(ctx, gen); err != nil {
			return 0, false, err
		}
	}
	return m.Throttle(), m.DisableAll, nil
}

func (s subscriptions) DisableAll(ctx context.Context, subscriber, reason string) error {
	return s.reg.SetDisableAll(ctx, subscriber, true, reason)
}

func (s subscriptions) begin() (uint64, error) {
	if s.views == nil {
		return 0, nil
	}
	gen, ready := s.views.Current()
	if !ready {
		return 0, views.ErrRebuilding
	}
	return gen, nil
}

func (s subscriptions) confirm(ctx context.Context, gen uint64) error {
	if s.views == nil {
		return nil
	}
	return s.views.Confirm(ctx, gen)
}

// testSender lets the registry's test endpoints send one signed
// notification at once through the same webhook sender the dispatcher uses,
// and records the attempt in the subscriber's delivery log (issue 25: a
// subscriber sees its tests among its deliveries, and a failed one carries
// its notification like any failed delivery, so that it can be replayed).
type testSender struct {
	s *webhook.Sender
	// history receives the attempt; nil records nothing.
	history stream.Publisher
	log     *slog.Logger
}

// testRecordTimeout bounds the wait for the history record: the test's
// answer does not depend on it.
const testRecordTimeout = 5 * time.Second

func (t testSender) SendTest(ctx context.Context, rule registry.Rule, n schemas.Notification) (int, error) {
	start := time.Now()
	res := t.s.Send(ctx, webhook.Target{URL: rule.URL, SecurityKey: rule.SecurityKey}, n)
	if t.history != nil {
		if err := t.record(n, res, start); err != nil {
			// The subscriber got (or missed) the test all the same.
			t.log.Warn("test notification not recorded in the delivery log", "subscriber", n.Subscriber, "type", n.Type, "err", err)
		}
	}
	return res.Status, res.Err
}

// record publishes the test's delivery.attempt history event: attempt 1,
// outcome delivered or failed (a test is never retried), with the
// notification when it failed, as the dispatcher writes its own.
func (t testSender) record(n schemas.Notification, res webhook.Result, at time.Time) error {
	a := schemas.DeliveryAttempt{DeliveryID: n.ID, Subscriber: n.Subscriber, Type: n.Type, Attempt: 1, Status: res.Status,
		LatencyMs: res.Latency.Milliseconds(), Outcome: schemas.OutcomeDelivered, At: at.UTC()}
	if !res.Delivered() {
		a.Outcome, a.Error = schemas.OutcomeFailed, res.String()
		raw, err := json.Marshal(n)
		if err != nil {
			return fmt.Errorf("encode the test notification: %w", err)
		}
		a.Notification = raw
	}
	env, err := schemas.NewHistoryEvent(schemas.HistoryDeliveryAttempt, n.Subscriber, a, a.At)
	if err != nil {
		return err
	}
	env.Source = n.Source
	value, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode the history event: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testRecordTimeout)
	defer cancel()
	return t.history.Publish(ctx, stream.Message{Topic: schemas.TopicHistory, Key: []byte(env.Key), Value: value, Time: env.Time})
}

// replayer lets the history API's replay endpoint republish notifications
// through the dispatcher's Replay, on the process's producer.
type replayer struct{ pub stream.Publisher }

func (r replayer) Replay(ctx context.Context, subscriber, typ string, from, to time.Time, ns []schemas.Notification) (int, error) {
	return dispatcher.Replay(ctx, r.pub, subscriber, typ, from, to, ns)
}

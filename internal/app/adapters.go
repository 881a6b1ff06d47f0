package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/dispatcher"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/changerequest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/internal/webhook"
	queryavailability "github.com/switchbackhq/switchback/query/availability"
	"github.com/switchbackhq/switchback/schemas"
)

// The adapters below join stages through the small interfaces each stage
// declares, so that no stage imports another (STYLE.md, "Layout follows the
// data"). They translate; they decide nothing.

// subscriptions lets the dispatcher read rules and metadata from the
// registry, and auto-disable a subscriber through it.
type subscriptions struct{ reg *registry.Registry }

var _ dispatcher.Subscriptions = subscriptions{}

func (s subscriptions) Target(ctx context.Context, subscriber, typ string) (webhook.Target, bool, error) {
	r, err := s.reg.Rule(ctx, subscriber, typ)
	if errors.Is(err, registry.ErrNotFound) {
		return webhook.Target{}, false, dispatcher.ErrNoRule
	}
	if err != nil {
		return webhook.Target{}, false, err
	}
	return webhook.Target{URL: r.URL, SecurityKey: r.SecurityKey}, !r.Disabled, nil
}

func (s subscriptions) Settings(ctx context.Context, subscriber string) (time.Duration, bool, error) {
	m, err := s.reg.Metadata(ctx, subscriber)
	if err != nil {
		return 0, false, err
	}
	return m.Throttle(), m.DisableAll, nil
}

func (s subscriptions) DisableAll(ctx context.Context, subscriber, reason string) error {
	return s.reg.SetDisableAll(ctx, subscriber, true, reason)
}

// testSender lets the registry's test endpoints send one signed
// notification at once through the same webhook sender the dispatcher uses.
type testSender struct{ s *webhook.Sender }

func (t testSender) SendTest(ctx context.Context, rule registry.Rule, n schemas.Notification) (int, error) {
	res := t.s.Send(ctx, webhook.Target{URL: rule.URL, SecurityKey: rule.SecurityKey}, n)
	return res.Status, res.Err
}

// replayer lets the history API's replay endpoint republish notifications
// through the dispatcher's Replay, on the process's producer.
type replayer struct{ pub stream.Publisher }

func (r replayer) Replay(ctx context.Context, subscriber, typ string, from, to time.Time, ns []schemas.Notification) (int, error) {
	return dispatcher.Replay(ctx, r.pub, subscriber, typ, from, to, ns)
}

// changeSyncer refreshes a change notification's product from its
// supplier's system. A partner supplier (spec doc 2): every rate's
// availabilities over the window, read at once through the availability
// cache (which publishes the snapshots the processor diffs), in windows
// of at most 31 days. The partner interface has no price schedule read, so
// price-schedule mode fails for partner suppliers with that reason (their
// schedules are written by the operator). Booking-system suppliers (spec
// doc 3) are refreshed by their client once it is wired (issue 6).
type changeSyncer struct {
	cat   *catalog.Store
	avail *queryavailability.Service
}

var adminPrincipal = principals.Principal{Role: principals.RoleAdmin}

// syncChunk bounds one partner read of a change notification.
const syncChunk = 31 * 24 * time.Hour

func (c changeSyncer) Sync(ctx context.Context, r changerequest.Request) (changerequest.Result, error) {
	sid, pid := r.CreateRequest.SupplierID, r.CreateRequest.ProductID
	sup, err := c.cat.Supplier(ctx, adminPrincipal, sid)
	if err != nil {
		return changerequest.Result{}, fmt.Errorf("supplier %s: %w", sid, err)
	}
	if sup.Connection.Kind != catalog.ConnectionPartner {
		return changerequest.Result{}, fmt.Errorf("refreshing from a %q connection is not available yet", sup.Connection.Kind)
	}
	if r.Mode == changerequest.ModePriceSchedule {
		return changerequest.Result{}, errors.New("the partner interface has no price schedule read; a partner supplier's price schedules are written by its operator (PUT .../rates/{rate_id}/priceschedule)")
	}
	rates, err := c.cat.Rates(ctx, adminPrincipal, sid, pid)
	if err != nil {
		return changerequest.Result{}, fmt.Errorf("rates of %s/%s: %w", sid, pid, err)
	}
	ids := make([]string, len(rates))
	for i, rt := range rates {
		ids[i] = rt.ID
	}
	var res changerequest.Result
	start, end := r.Window()
	for from := start; from.Before(end); from = from.Add(syncChunk) {
		to := from.Add(syncChunk)
		if to.After(end) {
			to = end
		}
		if err := c.avail.Refresh(ctx, r.ID, sid, pid, ids, from, to); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("availabilities %s..%s: %v", from.Format(time.DateOnly), to.Format(time.DateOnly), err))
			continue
		}
		res.Items += len(ids)
	}
	return res, nil
}

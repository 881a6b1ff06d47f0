package catalogchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// Price schedule changes (docs/decisions.md, "Price schedules"): the event
// carries the replaced entries, so the changed days follow from it alone.
// A subscriber hears of the days whose prices, as its channel sees them
// (the binding's priceTags), changed inside [today, today +
// maxLookAheadDays) in UTC: one priceschedule notification per run of
// changed days, clipped to that window (spec doc 1: "pricing of a bound
// Product or Rate changed within the next maxLookAheadDays days").

// priceNotifications are the priceschedule notifications of one price
// schedule event, sorted by subscriber then start.
func (p *Processor) priceNotifications(ctx context.Context, env schemas.Envelope, ev catalog.Event, now time.Time) ([]schemas.Notification, error) {
	var next []catalog.PriceScheduleEntry
	if ev.PriceSchedule != nil {
		next = ev.PriceSchedule.Entries
	}
	if env.Deleted {
		// A rate deleted with its schedule: the rate notifications say so.
		return nil, nil
	}
	bs, err := p.opts.Store.Bindings(ctx, ev.SupplierID, ev.ProductID)
	if err != nil {
		return nil, err
	}
	today := now.UTC().Truncate(24 * time.Hour)
	var out []schemas.Notification
	seen := map[string]bool{}
	for _, b := range bs {
		if !b.Valid.Contains(now) || !b.Binds(ev.RateID) {
			continue
		}
		changed := catalog.ChangedPriceDays(ev.PriorPrices, next, b.PriceTags)
		if len(changed) == 0 {
			continue
		}
		subs, err := p.opts.Subscribers.OnChannel(ctx, b.ChannelID)
		if err != nil {
			return nil, fmt.Errorf("subscribers of channel %s: %w", b.ChannelID, err)
		}
		for _, sub := range subs {
			if seen[sub] {
				continue
			}
			seen[sub] = true
			rule, err := p.opts.Rules.Rule(ctx, sub, schemas.TypePriceSchedule)
			if errors.Is(err, registry.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("priceschedule rule of %s: %w", sub, err)
			}
			t := target{typ: schemas.TypePriceSchedule, sid: ev.SupplierID, pid: ev.ProductID, rid: ev.RateID}
			if !rule.Matches(t.op, t.item()) {
				continue
			}
			for _, r := range LookAhead(changed, today, rule.Config.MaxLookAheadDays) {
				payload, err := json.Marshal(schemas.PriceSchedulePayload{SupplierID: ev.SupplierID, ProductID: ev.ProductID,
					Start: r.Start.Format(time.RFC3339), End: r.End.Format(time.RFC3339)})
				if err != nil {
					return nil, err
				}
				// The payload names no rate: the events of one write of
				// several rates (ev.Batch) give one notification per
				// product, subscriber and window, by id (the dispatcher
				// drops an id it has), not one per rate with one payload.
				key, what := env.ID, schemas.TypePriceSchedule+"\x00"+r.Start.Format(time.DateOnly)
				if ev.Batch != "" {
					key = ev.Batch
					what = schemas.TypePriceSchedule + "\x00" + ev.SupplierID + "\x00" + ev.ProductID + "\x00" +
						r.Start.Format(time.DateOnly) + "\x00" + r.End.Format(time.DateOnly)
				}
				out = append(out, schemas.Notification{
					ID:         NotificationID(key, sub, what),
					Subscriber: sub, Type: schemas.TypePriceSchedule, EntityKey: ev.SupplierID + "/" + ev.ProductID,
					Payload: payload, CreatedAt: env.Time, Source: Source,
				})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b schemas.Notification) int {
		switch {
		case a.Subscriber < b.Subscriber:
			return -1
		case a.Subscriber > b.Subscriber:
			return 1
		}
		return 0
	})
	return out, nil
}

// LookAhead clips day ranges to [today, today + days) (days ≤ 0: the
// spec's default 7) and drops those outside it.
func LookAhead(rs []catalog.DateRange, today time.Time, days int) []catalog.DateRange {
	if days <= 0 {
		days = 7
	}
	end := today.AddDate(0, 0, days)
	var out []catalog.DateRange
	for _, r := range rs {
		s, e := r.Start, r.End
		if s.Before(today) {
			s = today
		}
		if e.After(end) {
			e = end
		}
		if s.Before(e) {
			out = append(out, catalog.DateRange{Start: s, End: e})
		}
	}
	return out
}

// priceHistory is one price.changed history event per price of each run
// of changed days (all prices, whatever a channel sees): what analysts
// query for price volatility. Ids derive from the event's, so a
// redelivered event gives the same rows.
func priceHistory(env schemas.Envelope, ev catalog.Event) ([]stream.Message, error) {
	if env.Deleted || ev.PriceSchedule == nil {
		return nil, nil
	}
	var msgs []stream.Message
	for _, c := range catalog.PriceChanges(ev.PriorPrices, ev.PriceSchedule.Entries, nil) {
		byID := map[string][2]*catalog.Price{}
		var ids []string
		for side, ps := range [][]catalog.Price{c.Prior, c.Next} {
			for i := range ps {
				pair, ok := byID[ps[i].ID]
				if !ok {
					ids = append(ids, ps[i].ID)
				}
				pair[side] = &ps[i]
				byID[ps[i].ID] = pair
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			pair := byID[id]
			row := schemas.PriceChanged{SupplierID: ev.SupplierID, ProductID: ev.ProductID, RateID: ev.RateID, PriceID: id,
				Start: c.Start, End: c.End, Source: "push"}
			row.OldRetail, row.OldNet, row.Currency = amounts(pair[0], row.Currency)
			row.NewRetail, row.NewNet, row.Currency = amounts(pair[1], row.Currency)
			if row.OldRetail == row.NewRetail && row.OldNet == row.NewNet && pair[0] != nil && pair[1] != nil {
				continue // this price is the same; another of the run changed
			}
			h, err := schemas.NewHistoryEvent(schemas.HistoryPriceChanged, ev.SupplierID+"/"+ev.ProductID, row, env.Time)
			if err != nil {
				return nil, err
			}
			h.ID = uuid.NewSHA1(notificationNamespace, fmt.Appendf(nil, "%s\x00price\x00%s\x00%s", env.ID, c.Start.Format(time.DateOnly), id)).String()
			h.Source = Source
			b, err := json.Marshal(h)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, stream.Message{Topic: schemas.TopicHistory, Key: []byte(h.Key), Value: b, Time: h.Time})
		}
	}
	return msgs, nil
}

// amounts reads retail and net amounts of a price (0 when absent) and its
// currency (keeping cur when the price has none).
func amounts(p *catalog.Price, cur string) (retail, net float64, currency string) {
	currency = cur
	if p == nil {
		return 0, 0, currency
	}
	read := func(m *catalog.Money) float64 {
		if m == nil {
			return 0
		}
		if m.Currency != "" {
			currency = m.Currency
		}
		f, _ := strconv.ParseFloat(m.Amount.String(), 64)
		return f
	}
	return read(p.Retail), read(p.Net), currency
}

// producedMessage is the notification.produced history record of n.
func producedMessage(n schemas.Notification) (stream.Message, error) {
	h, err := schemas.ProducedEvent(n)
	if err != nil {
		return stream.Message{}, err
	}
	b, err := json.Marshal(h)
	if err != nil {
		return stream.Message{}, err
	}
	return stream.Message{Topic: schemas.TopicHistory, Key: []byte(h.Key), Value: b, Time: h.Time}, nil
}

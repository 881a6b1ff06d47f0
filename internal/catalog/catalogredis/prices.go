package catalogredis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/schemas"
)

// PutPriceSchedule replaces the price schedule of a rate (the operator
// path PUT .../rates/{rate_id}/priceschedule). The event carries the
// replaced entries (read under the supplier's lock), so that the processor
// finds the changed days from the event alone, whatever it has seen.
func (s *Store) PutPriceSchedule(ctx context.Context, sc catalog.Scope, sid, pid, rid string, es []catalog.PriceScheduleEntry) (catalog.PriceSchedule, error) {
	return s.PutPriceScheduleIn(ctx, sc, "", sid, pid, rid, es)
}

// PutPriceScheduleIn is PutPriceSchedule as part of the write batch (an
// id of the caller's, the same for every rate of one product it writes;
// "" for none): the event carries it (Event.Batch), so that the price
// schedule notifications of the batch are one per product, subscriber
// and window.
func (s *Store) PutPriceScheduleIn(ctx context.Context, sc catalog.Scope, batch, sid, pid, rid string, es []catalog.PriceScheduleEntry) (catalog.PriceSchedule, error) {
	if err := catalog.ValidatePriceSchedule(es, s.now()); err != nil {
		return catalog.PriceSchedule{}, err
	}
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return catalog.PriceSchedule{}, err
	}
	defer s.release(ctx, tx.lock)
	pipe := s.rdb.Pipeline()
	rateCmd := pipe.HExists(ctx, s.k.rates(sid, pid), rid)
	curCmd := pipe.HGet(ctx, s.k.prices(sid, pid), rid)
	verCmd := pipe.HGet(ctx, s.k.versions(sid), verPrices(pid, rid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return catalog.PriceSchedule{}, catalog.Unavailable("read price schedule", err)
	}
	if !rateCmd.Val() {
		return catalog.PriceSchedule{}, catalog.NotFound("rate", rid)
	}
	next := catalog.PriceSchedule{SupplierID: sid, ProductID: pid, RateID: rid, Entries: es}
	var last int64
	if v, err := verCmd.Result(); err == nil {
		last = parseVersion(v)
	}
	prior := []catalog.PriceScheduleEntry{}
	if raw, err := curCmd.Result(); err == nil {
		var cur catalog.PriceSchedule
		if err := json.Unmarshal([]byte(raw), &cur); err != nil {
			return catalog.PriceSchedule{}, fmt.Errorf("decode stored price schedule: %w", err)
		}
		next.Version = cur.Version
		if bytes.Equal(catalogwire.MustJSON(next), []byte(raw)) {
			return cur, nil // the same schedule again: no new version
		}
		last = max(last, cur.Version)
		prior = cur.Entries
	}
	next.Version = last + 1
	ev := catalog.Event{Kind: schemas.CatalogKindPriceSchedule, SupplierID: sid, ProductID: pid, RateID: rid, PriceSchedule: &next, PriorPrices: prior, Batch: batch}
	return next, s.commit(ctx, tx.lock, []change{{ev: ev, version: next.Version}})
}

// PriceSchedule returns the schedule of a rate p manages (an empty one,
// version 0, when none was written).
func (s *Store) PriceSchedule(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.PriceSchedule, error) {
	var rate *redis.BoolCmd
	var cmd *redis.StringCmd
	_, err := s.scopedSupplier(ctx, sc, sid, func(pp redis.Pipeliner) {
		rate = pp.HExists(ctx, s.k.rates(sid, pid), rid)
		cmd = pp.HGet(ctx, s.k.prices(sid, pid), rid)
	})
	if err != nil {
		return catalog.PriceSchedule{}, err
	}
	if !rate.Val() {
		return catalog.PriceSchedule{}, catalog.NotFound("rate", rid)
	}
	return decodeSchedule(sid, pid, rid, cmd)
}

func decodeSchedule(sid, pid, rid string, cmd *redis.StringCmd) (catalog.PriceSchedule, error) {
	raw, err := cmd.Result()
	return decodeScheduleRaw(sid, pid, rid, raw, err == nil)
}

// decodeScheduleRaw is a stored schedule (ok: there is one), else the
// empty schedule of the rate.
func decodeScheduleRaw(sid, pid, rid, raw string, ok bool) (catalog.PriceSchedule, error) {
	out := catalog.PriceSchedule{SupplierID: sid, ProductID: pid, RateID: rid, Entries: []catalog.PriceScheduleEntry{}}
	if ok {
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			return out, fmt.Errorf("decode stored price schedule: %w", err)
		}
	}
	return out, nil
}

// ChannelPriceSchedule is the schedule of a rate as a channel sees it:
// only when the channel's binding of the product is open at now and binds
// the rate (else ErrNotFound), with prices filtered by the binding's
// priceTags (spec doc 2, binding rules), and only the entries that overlap
// from..until (inclusive dates; zero: unbounded).
func (s *Store) ChannelPriceSchedule(ctx context.Context, channel, sid, pid, rid string, from, until time.Time, now time.Time) (catalog.PriceSchedule, error) {
	var rate *kvBool
	var sched *kvStr
	t, err := s.boundTerms(ctx, channel, sid, pid, now, func(b kvBatch) {
		rate = b.hexists(s.k.rates(sid, pid), rid)
		sched = b.hget(s.k.prices(sid, pid), rid)
	})
	if err != nil {
		return catalog.PriceSchedule{}, err
	}
	if !rate.val || !t.binds(rid) {
		return catalog.PriceSchedule{}, catalog.NotFound("rate", rid)
	}
	ps, err := decodeScheduleRaw(sid, pid, rid, sched.val, sched.ok)
	if err != nil {
		return ps, err
	}
	kept := ps.Entries[:0]
	for _, e := range ps.Entries {
		if !from.IsZero() && e.Until < from.Format(catalog.DateLayout) {
			continue
		}
		if !until.IsZero() && e.From > until.Format(catalog.DateLayout) {
			continue
		}
		e.Prices = catalog.VisiblePrices(e.Prices, t.PriceTags)
		kept = append(kept, e)
	}
	ps.Entries = kept
	return ps, nil
}

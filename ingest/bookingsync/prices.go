package bookingsync

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

// ScheduleEntry maps one entry of the booking system's price-schedule read
// (docs/decisions.md, "Booking-system v2 client": OCTO pricing amounts by
// local date range) to a catalog price-schedule entry:
//
//   - dates: localDateStart..localDateEnd (end exclusive) become
//     from..until (both inclusive): until is the day before localDateEnd.
//     A local date is kept as the same calendar date (the catalog's
//     schedule days are calendar dates; a price applies to the local day
//     of the activity, so shifting it by the offset would move it to
//     another day).
//   - one catalog Price per unit price: id = the unitId (a unit priced in
//     several currencies in one entry: unitId~CUR for each, since price
//     ids are unique within an entry), retail and net (when sent) as
//     Money, the integer minor units divided by 10^currencyPrecision and
//     written with exactly that many decimals (2500, precision 2 →
//     "25.00"). No name, labels or traveler type: the read carries none
//     (a unit's internalName is not for customers either).
//
// A unitId that cannot be a catalog id, or a unit priced twice in one
// currency, is an error: the option's schedule is not written.
func ScheduleEntry(e bookingsystem.PriceEntry) (catalog.PriceScheduleEntry, error) {
	end, err := time.Parse(time.DateOnly, e.LocalDateEnd)
	if err != nil {
		return catalog.PriceScheduleEntry{}, fmt.Errorf("localDateEnd is not a date")
	}
	out := catalog.PriceScheduleEntry{From: e.LocalDateStart, Until: end.AddDate(0, 0, -1).Format(time.DateOnly), Prices: []catalog.Price{}}
	units := map[string]int{}
	priced := map[[2]string]bool{}
	for _, u := range e.UnitPricing {
		units[u.UnitID]++
		k := [2]string{u.UnitID, u.Currency}
		if priced[k] {
			// Which of the two prices is right is unknowable (the v2
			// parser does not check this; OCTO's does).
			return catalog.PriceScheduleEntry{}, fmt.Errorf("unit %q is priced twice in %s", shortID(u.UnitID), u.Currency)
		}
		priced[k] = true
	}
	for _, u := range e.UnitPricing {
		id := u.UnitID
		if units[id] > 1 {
			id += "~" + u.Currency
		}
		if !catalog.ValidID(id) {
			return catalog.PriceScheduleEntry{}, fmt.Errorf("unit id %q cannot be a price id", shortID(u.UnitID))
		}
		p := catalog.Price{ID: id, Retail: money(u.Retail, u.CurrencyPrecision, u.Currency)}
		if u.Net != nil {
			p.Net = money(*u.Net, u.CurrencyPrecision, u.Currency)
		}
		out.Prices = append(out.Prices, p)
	}
	slices.SortFunc(out.Prices, func(a, b catalog.Price) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func money(minor int64, precision int, currency string) *catalog.Money {
	p := int32(precision)
	return &catalog.Money{Amount: json.Number(decimal.New(minor, -p).StringFixed(p)), Currency: currency}
}

// clipEntry is e limited to the days [from, until] (inclusive), and
// whether anything is left.
func clipEntry(e catalog.PriceScheduleEntry, from, until string) (catalog.PriceScheduleEntry, bool) {
	if e.From < from {
		e.From = from
	}
	if e.Until > until {
		e.Until = until
	}
	return e, e.From <= e.Until
}

// replaceWindow is the stored schedule with the days [from, until]
// replaced by fresh: stored entries are cut to the days outside the
// window (one that spans it becomes two), fresh ones to the days inside.
func replaceWindow(stored, fresh []catalog.PriceScheduleEntry, from, until string) []catalog.PriceScheduleEntry {
	out := make([]catalog.PriceScheduleEntry, 0, len(stored)+len(fresh))
	before, after := addDays(from, -1), addDays(until, 1)
	for _, e := range stored {
		if b, ok := clipEntry(e, e.From, before); ok {
			out = append(out, b)
		}
		if a, ok := clipEntry(e, after, e.Until); ok {
			out = append(out, a)
		}
	}
	for _, e := range fresh {
		if c, ok := clipEntry(e, from, until); ok {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b catalog.PriceScheduleEntry) int { return strings.Compare(a.From, b.From) })
	return out
}

// RefreshPriceSchedule is a change notification in price-schedule mode
// for a booking-system supplier (spec doc 3, change notification rule 4:
// "re-caches the price schedule"): the product's price schedule is read
// over the local dates [startDate, endDate) (the client's PriceSchedule)
// and each of its rates gets, through catalog.PutPriceSchedule, the
// entries of its option (ScheduleEntry) in place of whatever it had for
// those days; days outside the window keep theirs, and a day of the
// window the booking system gives no price for then has none (the rate's
// own prices apply). An option with an entry the client rejected by a
// data rule is not written at all (never half-applied), nor is any when a
// rejected entry names no option. Items is the number of rates written.
func (s *Syncer) RefreshPriceSchedule(ctx context.Context, sid, pid, startDate, endDate string) (Outcome, error) {
	_, conn, err := s.resolve(ctx, sid)
	if err != nil {
		return Outcome{}, err
	}
	end, err := time.Parse(time.DateOnly, endDate)
	if _, err2 := time.Parse(time.DateOnly, startDate); err != nil || err2 != nil || startDate >= endDate {
		return Outcome{}, fmt.Errorf("product %s: the window %s..%s is not two dates, start before end", pid, startDate, endDate)
	}
	until := end.AddDate(0, 0, -1).Format(time.DateOnly)
	rates, err := s.o.Catalog.Rates(ctx, catalog.SystemScope(), sid, pid)
	if err != nil {
		return Outcome{}, fmt.Errorf("product %s: %w", pid, err)
	}
	entries, problems, err := s.o.Client.PriceSchedule(ctx, conn, bookingsystem.PriceScheduleRequest{
		SupplierID: sid, ProductID: pid, LocalDateStart: startDate, LocalDateEnd: endDate})
	if err != nil {
		return Outcome{}, fmt.Errorf("product %s: read the price schedule: %w", pid, err)
	}
	var out Outcome
	// One write of the product's rates: their notifications are one per
	// subscriber and window (catalog.Event.Batch), not one per rate.
	batch := uuid.NewString()
	byOption := map[string][]bookingsystem.PriceEntry{}
	for _, e := range entries {
		byOption[e.OptionID] = append(byOption[e.OptionID], e)
	}
	rejected := map[string]bool{}
	unattributed := false
	for _, p := range problems {
		if !catalog.ValidID(p.ID) {
			// No option id, or one cut by the client (over 64
			// characters): which option it belongs to is unknown.
			unattributed = true
			out.Failures = append(out.Failures, fmt.Sprintf("product %s: %s rejected by data rule %s", productRef(sid, pid), problemItem(p), p.Rule))
			continue
		}
		rejected[p.ID] = true
		out.Failures = append(out.Failures, fmt.Sprintf("option %s: %s rejected by data rule %s; its schedule is not written", optionRef(sid, pid, p.ID), problemItem(p), p.Rule))
	}
	known := make(map[string]bool, len(rates))
	for _, r := range rates {
		known[r.ID] = true
	}
	var extra []string
	for oid := range byOption {
		if !known[oid] {
			extra = append(extra, oid)
		}
	}
	slices.Sort(extra)
	for _, oid := range extra {
		out.Failures = append(out.Failures, fmt.Sprintf("option %s: priced by the booking system but not a rate of product %s in the catalog (a full synchronization creates it); not written", optionRef(sid, pid, oid), pid))
	}
	for _, r := range rates {
		switch {
		case unattributed:
			out.Failures = append(out.Failures, fmt.Sprintf("option %s: not written: a rejected price entry names no option, so it may be this one's", optionRef(sid, pid, r.ID)))
			s.metrics.priceSchedules.WithLabelValues("failed").Inc()
			continue
		case rejected[r.ID]:
			s.metrics.priceSchedules.WithLabelValues("failed").Inc()
			continue
		}
		if err := s.writePriceSchedule(ctx, batch, sid, pid, r.ID, byOption[r.ID], startDate, until); err != nil {
			out.Failures = append(out.Failures, fmt.Sprintf("option %s: %v", optionRef(sid, pid, r.ID), err))
			s.metrics.priceSchedules.WithLabelValues("failed").Inc()
			if fatal(ctx, err) {
				return out, err
			}
			continue
		}
		s.metrics.priceSchedules.WithLabelValues("ok").Inc()
		out.Items++
	}
	s.log.Info("price schedule refreshed from the booking system", "supplier", sid, "product", pid, "from", startDate, "until", endDate,
		"rates", out.Items, "failures", len(out.Failures), "connection", conn.String())
	return out, nil
}

// writePriceSchedule replaces the rate's schedule over [from, until], as
// part of the write batch.
func (s *Syncer) writePriceSchedule(ctx context.Context, batch, sid, pid, rid string, es []bookingsystem.PriceEntry, from, until string) error {
	fresh := make([]catalog.PriceScheduleEntry, 0, len(es))
	for _, e := range es {
		ce, err := ScheduleEntry(e)
		if err != nil {
			return fmt.Errorf("price entry %s..%s: %w", e.LocalDateStart, e.LocalDateEnd, err)
		}
		fresh = append(fresh, ce)
	}
	cur, err := s.o.Catalog.PriceSchedule(ctx, catalog.SystemScope(), sid, pid, rid)
	if err != nil {
		return fmt.Errorf("read stored price schedule: %w", err)
	}
	if _, err := s.o.Catalog.PutPriceScheduleIn(ctx, catalog.SystemScope(), batch, sid, pid, rid, replaceWindow(cur.Entries, fresh, from, until)); err != nil {
		return fmt.Errorf("write price schedule: %w", err)
	}
	return nil
}

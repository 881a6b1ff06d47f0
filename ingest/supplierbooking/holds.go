package supplierbooking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/schemas"
)

// createHold makes a hold as one order (doc 3 rules 4 and 5): a
// createBooking per item, each with BookingUUID(h.ID, i), so a retried
// hold is the same bookings; all with OrderID(h.ID) for a v2 booking
// system, none for an OCTO one (orderOf); holdParallelism at a time
// (addAll). All or nothing: when an item fails (or the operation's
// deadline passes), the order is cancelled (every booking made released)
// and the error returned. The hold answered keeps the reseller's id and
// items; it expires when the first of the order and its bookings does
// (doc 3: a booking's utcHoldExpiration MAY differ from the request, and
// confirmOrder fails once one has passed).
func (r *Router) createHold(ctx context.Context, s supplier, channelID string, h schemas.Hold) (schemas.Hold, error) {
	if h.ID == "" || channelID == "" {
		return schemas.Hold{}, fmt.Errorf("create hold at %s: hold id and channel are required: %w", s.sup.ID, ErrNeedsRecord)
	}
	orderID, ord := OrderID(h.ID), r.orderOf(s, h.ID)
	units := r.unitLookup(s)
	reqs, rates, err := r.holdRequests(ctx, s, channelID, h, units)
	if err != nil {
		return schemas.Hold{}, err
	}

	// A retry of the hold: the order exists. Its bookings must be this
	// hold's with the same data (doc 3 rule 4 says the supplier SHOULD
	// check; we do not rely on it), and it must still be held.
	prev, found, err := readOrder(ctx, ord)
	if err != nil {
		return schemas.Hold{}, fmt.Errorf("create hold %s: %w", h.ID, err)
	}
	prevStatus := map[string]prior{}
	if found {
		if err := checkOrder(prev, orderExpect{id: orderID}); err != nil {
			return schemas.Hold{}, r.refuse("createHold", s, err)
		}
		byUUID := map[string]bookingsystem.BookingRequest{}
		for _, q := range reqs {
			byUUID[q.UUID] = q
		}
		for _, b := range prev.Bookings {
			q, ok := byUUID[strings.ToLower(b.UUID)]
			if !ok || !sameBooking(s.conn, b, q) {
				return schemas.Hold{}, coded("BAD_REQUEST", fmt.Sprintf("hold id %s was already used with different data", h.ID), nil, nil)
			}
			prevStatus[strings.ToLower(b.UUID)] = prior{b.Status}
		}
		if prev.Status != bookingsystem.OnHold {
			return schemas.Hold{}, coded("CONFLICT", fmt.Sprintf("hold id %s was already used; its order at the supplier is %s", h.ID, prev.Status), nil, nil)
		}
	}
	// Replays first: a retry whose data the booking system finds different
	// (400) fails before this call created anything. Then the new ones.
	var replays, fresh []int
	for i, q := range reqs {
		if _, ok := prevStatus[q.UUID]; ok {
			replays = append(replays, i)
		} else {
			fresh = append(fresh, i)
		}
	}
	adds := make([]addResult, len(reqs))
	failed := r.addAll(ctx, ord, reqs, replays, prevStatus, adds, nil)
	if failed < 0 {
		// A new booking refused (400) may name units the booking system
		// renamed since they were read: read them again (once) and, when
		// they changed its unit, send it again (its uuid is unused: a
		// refused createBooking makes nothing).
		failed = r.addAll(ctx, ord, reqs, fresh, prevStatus, adds, func(ctx context.Context, i int) (bookingsystem.BookingRequest, bool) {
			it := h.Items[i]
			us, ok := units.refreshed(ctx, it.ProductID, it.RateID)
			if !ok {
				return bookingsystem.BookingRequest{}, false
			}
			unit := chooseUnit(us, rates[i], it)
			if unit == reqs[i].UnitItems[0].UnitID {
				return bookingsystem.BookingRequest{}, false
			}
			q := reqs[i]
			q.UnitItems = unitItems(unit, it.Quantity)
			return q, true
		})
	}
	if failed >= 0 {
		a := adds[failed]
		_, replay := prevStatus[reqs[failed].UUID]
		switch {
		case a.err != nil && replay && errors.Is(a.err, bookingsystem.ErrRejected):
			// Nothing new was sent: replays make nothing.
			return schemas.Hold{}, coded("BAD_REQUEST", fmt.Sprintf("hold id %s was already used with different data (the supplier's booking system refused the retried booking, spec doc 3 rule 4)", h.ID), nil, a.err)
		case a.err != nil:
			r.compensate(ctx, s, ord, "partial_hold")
			if errors.Is(a.err, bookingsystem.ErrRejected) {
				return schemas.Hold{}, coded("BAD_REQUEST", fmt.Sprintf("the supplier's booking system refused item %d of the hold; nothing is held", failed), nil, a.err)
			}
			return schemas.Hold{}, fmt.Errorf("create hold %s: %w", h.ID, a.err)
		case a.refused != nil:
			r.compensate(ctx, s, ord, "partial_hold")
			return schemas.Hold{}, r.refuse("createBooking", s, a.refused)
		default: // REJECTED
			r.compensate(ctx, s, ord, "partial_hold")
			return schemas.Hold{}, coded("CONFLICT", fmt.Sprintf("the supplier's booking system rejected item %d of the hold (the availability cannot take it); nothing is held", failed), nil, nil)
		}
	}

	o, err := ord.added(ctx)
	if err == nil && len(o.Bookings) != len(reqs) {
		err = &refusal{rule: RulePostcondition, item: "order", id: orderID, to: o.Status}
	}
	if err == nil {
		op := prior{New}
		if found {
			op = prior{prev.Status}
		}
		err = checkOrder(o, orderExpect{id: orderID, holdID: h.ID, order: op, bookings: prevStatus, otherBookings: prior{New},
			after: []string{bookingsystem.OnHold}, bookingsAfter: []string{bookingsystem.OnHold}})
	}
	if err != nil {
		r.compensate(ctx, s, ord, "partial_hold")
		return schemas.Hold{}, r.refuse("getOrder", s, fmt.Errorf("create hold %s: %w", h.ID, err))
	}
	out := h
	out.Status, out.Expires = schemas.HoldActive, holdExpires(o)
	return out, nil
}

// addResult is what createBooking of one item of a hold gave: the
// booking, or the call's error, or the refusal of its answer; a booking
// REJECTED is a failure too.
type addResult struct {
	sent    bool
	b       bookingsystem.Booking
	err     error
	refused error
}

func (a addResult) failed() bool {
	return a.sent && (a.err != nil || a.refused != nil || a.b.Status == bookingsystem.Rejected)
}

// addAll sends createBooking for the items idx of reqs (prior: what each
// was before, absent for a new one), holdParallelism at a time, into
// out. A request the booking system refuses (400) is sent once more as
// again makes it, when again (non-nil) gives one. Once one fails (an
// error, an answer refused by the doc 3 tables, a booking REJECTED) no
// further one is sent, and every one sent is waited for: what the
// compensation then cancels is all this call may have made (a v2 order
// holds it; an octoOrder tracks every uuid it tried). It returns the
// first failed item in idx order, or -1.
func (r *Router) addAll(ctx context.Context, ord order, reqs []bookingsystem.BookingRequest, idx []int, prev map[string]prior, out []addResult,
	again func(ctx context.Context, i int) (bookingsystem.BookingRequest, bool)) int {
	var stop atomic.Bool
	var g errgroup.Group
	g.SetLimit(holdParallelism)
	for _, i := range idx {
		if stop.Load() {
			break
		}
		g.Go(func() error {
			if stop.Load() { // failed while this one waited for its turn
				return nil
			}
			q := reqs[i]
			p, ok := prev[q.UUID]
			if !ok {
				p = prior{New}
			}
			a := addResult{sent: true}
			a.b, a.err = ord.add(ctx, q)
			if errors.Is(a.err, bookingsystem.ErrRejected) && again != nil {
				if q2, ok := again(ctx, i); ok {
					a.b, a.err = ord.add(ctx, q2)
				}
			}
			if a.err == nil {
				a.refused = checkBooking(a.b, p, []string{bookingsystem.OnHold, bookingsystem.Rejected})
			}
			out[i] = a
			if a.failed() {
				stop.Store(true)
			}
			return nil
		})
	}
	_ = g.Wait() // the workers return no error: out holds them
	for _, i := range idx {
		if out[i].failed() {
			return i
		}
	}
	return -1
}

// itemOf is the hold item index whose booking uuid is u.
func itemOf(holdID, u string, n int) int {
	for i := range n {
		if BookingUUID(holdID, i) == u {
			return i
		}
	}
	return -1
}

// holdExpires is the first expiry of the order and its bookings.
func holdExpires(o bookingsystem.Order) time.Time {
	var t time.Time
	for _, x := range append([]*time.Time{o.UTCExpiresAt}, bookingHolds(o)...) {
		if x != nil && (t.IsZero() || x.Before(t)) {
			t = *x
		}
	}
	return t.UTC()
}

func bookingHolds(o bookingsystem.Order) []*time.Time {
	out := make([]*time.Time, 0, len(o.Bookings))
	for _, b := range o.Bookings {
		out = append(out, b.UTCHoldExpiration)
	}
	return out
}

// sameBooking reports whether a booking answered by conn's booking system
// is what q asks for: the data a retry must repeat (doc 3 rule 4). Its
// availability is the one a booking of q's names (an OCTO opening range is
// booked as its day: Connection.BookingAvailabilityID).
func sameBooking(conn bookingsystem.Connection, b bookingsystem.Booking, q bookingsystem.BookingRequest) bool {
	if b.ProductID != q.ProductID || b.OptionID != q.OptionID || b.Availability == nil ||
		b.Availability.ID != conn.BookingAvailabilityID(q.AvailabilityID) ||
		len(b.UnitItems) != len(q.UnitItems) {
		return false
	}
	units := func(us []bookingsystem.UnitItem) []string {
		out := make([]string, len(us))
		for i, u := range us {
			out[i] = u.UnitID
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(units(b.UnitItems), units(q.UnitItems))
}

// holdRequests maps the hold's items to createBooking requests (and
// gives each item's catalog rate):
//   - productId, optionId: the item's product and rate (our rates are the
//     options);
//   - availabilityId: the booking system's id of the item's availability
//     (availabilityIDs: the catalog's SystemID of it), required (doc 3:
//     MUST be sent when booking);
//   - unitItems: quantity times one unit of the option (chooseUnit among
//     the booking system's units, units.go);
//   - holdExpirationMinutes: the shortest holdablePeriod of the items'
//     rates, in minutes rounded up, else DefaultHoldMinutes: one hold, one
//     expiry, and no inventory kept past the moment the order can no
//     longer be confirmed;
//   - channelId / channelName: the reseller's channel (ChannelUUID, its
//     catalog name); resellerReference: the hold id.
func (r *Router) holdRequests(ctx context.Context, s supplier, channelID string, h schemas.Hold, units *unitLookup) ([]bookingsystem.BookingRequest, []catalog.Rate, error) {
	chName := channelID
	if ch, err := r.opts.Catalog.Channel(ctx, channelID); err == nil && ch.Name != "" {
		chName = ch.Name
	} else if err != nil && !isNotFound(err) {
		return nil, nil, fmt.Errorf("channel %s: %w", channelID, err)
	}
	rates := map[[2]string]catalog.Rate{}
	avails := newAvailabilityIDs(r.opts.Catalog, s.sup.ID)
	itemRates := make([]catalog.Rate, 0, len(h.Items))
	minutes := 0
	reqs := make([]bookingsystem.BookingRequest, 0, len(h.Items))
	for i, it := range h.Items {
		field := func(f string) string { return fmt.Sprintf("hold.items[%d].%s", i, f) }
		if it.AvailabilityID == "" {
			return nil, nil, domainerr.Field(field("availabilityId"), "is required for this supplier (spec doc 3: the availability id must be sent when booking)")
		}
		key := [2]string{it.ProductID, it.RateID}
		rt, ok := rates[key]
		if !ok {
			var err error
			if rt, err = r.opts.Catalog.Rate(ctx, catalog.SystemScope(), s.sup.ID, it.ProductID, it.RateID); err != nil {
				if isNotFound(err) {
					return nil, nil, domainerr.Field(field("rateId"), "is not a rate of the product")
				}
				return nil, nil, fmt.Errorf("rate %s/%s: %w", it.ProductID, it.RateID, err)
			}
			rates[key] = rt
		}
		if rt.HoldablePeriod > 0 {
			m := max(1, (rt.HoldablePeriod+59)/60)
			if minutes == 0 || m < minutes {
				minutes = m
			}
		}
		us, err := units.option(ctx, it.ProductID, it.RateID)
		if err != nil {
			return nil, nil, fmt.Errorf("units of %s/%s: %w", it.ProductID, it.RateID, err)
		}
		if len(us) == 0 {
			return nil, nil, domainerr.Field(field("rateId"), "is not an option with units at the supplier's booking system")
		}
		avID, err := avails.system(ctx, it.ProductID, it.RateID, it.AvailabilityID)
		if err != nil {
			return nil, nil, err
		}
		itemRates = append(itemRates, rt)
		reqs = append(reqs, bookingsystem.BookingRequest{SupplierID: s.sup.ID, UUID: BookingUUID(h.ID, i), ResellerReference: h.ID,
			ChannelName: chName, ChannelID: ChannelUUID(channelID), ProductID: it.ProductID, OptionID: it.RateID,
			AvailabilityID: avID, UnitItems: unitItems(chooseUnit(us, rt, it), it.Quantity), OrderID: OrderID(h.ID)})
	}
	if minutes == 0 {
		minutes = r.opts.DefaultHoldMinutes
	}
	for i := range reqs {
		reqs[i].HoldExpirationMinutes = minutes
	}
	return reqs, itemRates, nil
}

// unitItems are n unit items of unit.
func unitItems(unit string, n int) []bookingsystem.UnitItem {
	out := make([]bookingsystem.UnitItem, n)
	for k := range out {
		out[k] = bookingsystem.UnitItem{UnitID: unit}
	}
	return out
}

// chooseUnit picks the unit type of an item's travellers among the
// option's units (doc 3: unitItems; doc 2 holds have a price and a
// traveler type): the unit whose id is the item's priceId (operators who
// name prices after units); else the unit whose type is the age band of
// the item's price in the catalog rate, or of the item's travelerType;
// else the option's first unit.
func chooseUnit(units []bookingsystem.Unit, rt catalog.Rate, it schemas.HoldItem) string {
	for _, u := range units {
		if it.PriceID != "" && u.ID == it.PriceID {
			return u.ID
		}
	}
	band := ""
	for _, p := range rt.Prices {
		if p.ID == it.PriceID && p.TravelerType != nil {
			band = p.TravelerType.AgeBand
		}
	}
	if band == "" && len(it.TravelerType) > 0 {
		var tt struct {
			AgeBand string `json:"ageBand"`
		}
		if json.Unmarshal(it.TravelerType, &tt) == nil {
			band = tt.AgeBand
		}
	}
	if band != "" {
		for _, u := range units {
			if strings.EqualFold(u.Type, band) {
				return u.ID
			}
		}
	}
	return units[0].ID
}

func isNotFound(err error) bool {
	var c interface{ ErrorCode() string }
	return err != nil && errors.As(err, &c) && c.ErrorCode() == "NOT_FOUND"
}

// compensations are the cancellations that keep a hold or booking all or
// nothing, by reason (the label of
// switchback_ingest_supplierbooking_compensations_total): the cancel
// request each sends.
var compensations = map[string]bookingsystem.CancelRequest{
	"partial_hold":     {Reason: "OTHER", ReasonDetails: "Switchback releases a partially made or partly lapsed hold (all or nothing)"},
	"refused_confirm":  {Reason: "OTHER", ReasonDetails: "Switchback cancels a confirmation it cannot accept (all or nothing)"},
	"failed_confirm":   {Reason: "OTHER", ReasonDetails: "a confirmation failed half way; Switchback cancels what it confirmed (all or nothing)"},
	"rejected_booking": {Reason: "SUPPLIER", ReasonDetails: "a booking of the order was rejected or cancelled by the supplier; Switchback cancels the rest (all or nothing)"},
}

// compensate cancels an order so that no part of a failed hold or booking
// stays held or sold (doc 3: order operations are all or nothing; rule 6:
// cancel order releases an in-progress order). It runs on its own
// deadline (settleContext), also when the operation's has passed: that is
// when a hold fails half made. Best effort: a failure is logged and
// counted; what is still held lapses by itself, but a confirmed booking
// does not (an OCTO hold's, whose confirmation is ours to undo): the
// error log and the failed count are the operator's cue.
func (r *Router) compensate(ctx context.Context, s supplier, ord order, reason string) {
	ctx, cancel := settleContext(ctx)
	defer cancel()
	_, err := ord.cancel(ctx, compensations[reason])
	result := "ok"
	if err != nil && !errors.Is(err, bookingsystem.ErrNotFound) { // no order: nothing was held
		result = "failed"
		r.log.Error("supplierbooking: cancelling an order to keep it all or nothing failed; what is held lapses by itself, what is confirmed stays",
			"supplier", s.sup.ID, "dialect", s.conn.Dialect, "hold", ord.hold(), "order", OrderID(ord.hold()), "reason", reason, "err", err)
	}
	r.metrics.compensations.WithLabelValues(reason, result).Inc()
}

// getHold reads the hold's order: ON_HOLD with every booking held is
// ACTIVE (expires: holdExpires); CONFIRMED or CANCELLED is RELEASED (the
// hold became a booking); EXPIRED, REJECTED, or ON_HOLD with a lapsed
// booking is EXPIRED.
func (r *Router) getHold(ctx context.Context, s supplier, id string) (schemas.Hold, error) {
	o, err := r.orderOf(s, id).read(ctx)
	if err != nil {
		return schemas.Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	if err := checkOrder(o, orderExpect{id: OrderID(id), holdID: id}); err != nil {
		return schemas.Hold{}, r.refuse("getOrder", s, err)
	}
	h := schemas.Hold{ID: id, Status: schemas.HoldExpired}
	switch o.Status {
	case bookingsystem.OnHold:
		if !slices.ContainsFunc(o.Bookings, func(b bookingsystem.Booking) bool { return b.Status != bookingsystem.OnHold }) {
			h.Status, h.Expires = schemas.HoldActive, holdExpires(o)
		}
	case bookingsystem.Confirmed, bookingsystem.Cancelled:
		h.Status = schemas.HoldReleased
	}
	return h, nil
}

// releaseHold cancels the hold's order (doc 3 rule 6: ON_HOLD → EXPIRED).
// An order already over is released; a confirmed one is CONFLICT (its
// booking is cancelled instead).
func (r *Router) releaseHold(ctx context.Context, s supplier, id string) error {
	orderID, ord := OrderID(id), r.orderOf(s, id)
	prev, err := ord.read(ctx)
	if err != nil {
		return fmt.Errorf("release hold %s: %w", id, err) // 404: internal/booking takes it as released
	}
	if err := checkOrder(prev, orderExpect{id: orderID, holdID: id}); err != nil {
		return r.refuse("getOrder", s, err)
	}
	switch prev.Status {
	case bookingsystem.Expired, bookingsystem.Rejected, bookingsystem.Cancelled:
		return nil
	case bookingsystem.Confirmed:
		return coded("CONFLICT", fmt.Sprintf("hold %s was confirmed into a booking; cancel the booking instead", id), nil, nil)
	}
	o, err := ord.cancel(ctx, bookingsystem.CancelRequest{Reason: "CUSTOMER", ReasonDetails: "hold released by the reseller"})
	if err != nil {
		return fmt.Errorf("release hold %s: %w", id, err)
	}
	if err := checkOrder(o, orderExpect{id: orderID, holdID: id, order: prior{prev.Status}, bookings: statuses(prev),
		after: []string{bookingsystem.Expired}, bookingsAfter: []string{bookingsystem.Expired, bookingsystem.Rejected}}); err != nil {
		return r.refuse("cancelOrder", s, err)
	}
	return nil
}

// statuses are an order's bookings' statuses by uuid (lower case).
func statuses(o bookingsystem.Order) map[string]prior {
	m := make(map[string]prior, len(o.Bookings))
	for _, b := range o.Bookings {
		m[strings.ToLower(b.UUID)] = prior{b.Status}
	}
	return m
}

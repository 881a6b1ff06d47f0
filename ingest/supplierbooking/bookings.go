package supplierbooking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/schemas"
)

// Reseller booking statuses (spec doc 2) from the order of a booking
// (doc 3), in view:
//
//	order CANCELLED                                   → CANCELLED
//	order CONFIRMED, a booking PENDING                → PENDING (polled until it resolves)
//	order CONFIRMED, a booking REJECTED or CANCELLED  → CANCELLED, once the rest is cancelled
//	order CONFIRMED, every booking CONFIRMED          → OPEN, with a ticket per booking
//
// REDEEMED is never produced: doc 3 has no redeemed status.

// createBooking confirms the hold's order (confirmOrder, all its bookings
// or none, doc 3; an OCTO hold's bookings one by one, reverted when one
// fails: octoOrder.confirm) with the customer as contact. The booking must
// use the whole hold: the hold is one order, confirmed whole. A hold of
// which a booking lapsed or was rejected can never be confirmed: it is
// released whole and the booking is CONFLICT, as is a confirmation that
// fails because a booking's hold has passed (the order REJECTED); a
// PENDING one is accepted (the partner's 202). A hold already confirmed
// (a retry after a lost answer) is answered from its order, without a
// second confirm.
func (r *Router) createBooking(ctx context.Context, s supplier, b schemas.Booking) (schemas.Booking, bool, error) {
	if b.HoldID == "" {
		return schemas.Booking{}, false, fmt.Errorf("create booking at %s without a hold: %w", s.sup.ID, ErrNeedsRecord)
	}
	orderID, ord := OrderID(b.HoldID), r.orderOf(s, b.HoldID)
	prev, found, err := readOrder(ctx, ord)
	if err != nil {
		return schemas.Booking{}, false, fmt.Errorf("create booking %s: %w", b.ID, err)
	}
	if !found {
		return schemas.Booking{}, false, coded("CONFLICT", fmt.Sprintf("hold %s is not held at the supplier's booking system; acquire a new hold", b.HoldID), nil, nil)
	}
	if err := checkOrder(prev, orderExpect{id: orderID, holdID: b.HoldID}); err != nil {
		return schemas.Booking{}, false, r.refuse("getOrder", s, err)
	}
	switch {
	case prev.Status == bookingsystem.OnHold && slices.ContainsFunc(prev.Bookings, func(x bookingsystem.Booking) bool { return x.Status != bookingsystem.OnHold }):
		r.compensate(ctx, s, ord, "partial_hold")
		return schemas.Booking{}, false, coded("CONFLICT", fmt.Sprintf("a booking of hold %s lapsed or was rejected at the supplier; acquire a new hold", b.HoldID), nil, nil)
	case prev.Status != bookingsystem.OnHold && prev.Status != bookingsystem.Confirmed: // CONFIRMED: a retry (below)
		return schemas.Booking{}, false, coded("CONFLICT", fmt.Sprintf("hold %s is %s at the supplier's booking system; acquire a new hold", b.HoldID, prev.Status), nil, nil)
	}
	if err := covers(ctx, s.conn, newAvailabilityIDs(r.opts.Catalog, s.sup.ID), prev, b.Items); err != nil {
		return schemas.Booking{}, false, err
	}
	instant, err := r.instantProducts(ctx, s, prev)
	if err != nil {
		return schemas.Booking{}, false, fmt.Errorf("create booking %s: %w", b.ID, err)
	}
	if prev.Status == bookingsystem.Confirmed {
		// A retry after a lost answer: the confirmation happened. doc 3
		// lists no CONFIRMED → CONFIRMED move, so confirm is not sent
		// again (a booking system may refuse it); the order is the answer,
		// checked as the confirmation's would have been.
		if err := checkOrder(prev, orderExpect{id: orderID, holdID: b.HoldID, instant: instant}); err != nil {
			return schemas.Booking{}, false, r.refuse("getOrder", s, err)
		}
		return r.booked(ctx, s, ord, b, prev)
	}
	ref := b.ResellerBookingRef
	if ref == "" {
		ref = b.ID
	}
	o, err := ord.confirm(ctx, bookingsystem.ConfirmRequest{ResellerReference: ref, Contact: contactOf(b.Customer)})
	if errors.Is(err, bookingsystem.ErrRejected) {
		return schemas.Booking{}, false, r.confirmRejected(ctx, s, ord, b, prev, err)
	}
	if err != nil {
		return schemas.Booking{}, false, fmt.Errorf("create booking %s: %w", b.ID, err)
	}
	// doc 3: after confirm, CONFIRMED (or PENDING without instant
	// confirmation) for every booking; nothing left held.
	exp := orderExpect{id: orderID, holdID: b.HoldID, order: prior{prev.Status}, bookings: statuses(prev), after: []string{bookingsystem.Confirmed},
		bookingsAfter: []string{bookingsystem.Confirmed, bookingsystem.Pending}, instant: instant}
	if err := checkOrder(o, exp); err != nil {
		r.compensate(ctx, s, ord, "refused_confirm")
		return schemas.Booking{}, false, r.refuse("confirmOrder", s, err)
	}
	return r.booked(ctx, s, ord, b, o)
}

// instantProducts are the products of the order's bookings that the
// catalog confirms instantly (instantConfirmation true): their bookings
// must never be PENDING (orderExpect.instant). A product the catalog no
// longer has is not known to be instant.
func (r *Router) instantProducts(ctx context.Context, s supplier, o bookingsystem.Order) (map[string]bool, error) {
	out := map[string]bool{}
	seen := map[string]bool{}
	for _, x := range o.Bookings {
		if seen[x.ProductID] {
			continue
		}
		seen[x.ProductID] = true
		p, err := r.opts.Catalog.Product(ctx, catalog.SystemScope(), s.sup.ID, x.ProductID)
		switch {
		case isNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("product %s: %w", x.ProductID, err)
		case p.InstantConfirmation:
			out[x.ProductID] = true
		}
	}
	return out, nil
}

// booked is the reseller's booking b of a confirmed order o (view); accepted
// while a booking awaits the supplier's decision.
func (r *Router) booked(ctx context.Context, s supplier, ord order, b schemas.Booking, o bookingsystem.Order) (schemas.Booking, bool, error) {
	out, err := r.view(ctx, s, ord, b, o)
	if err != nil {
		return schemas.Booking{}, false, err
	}
	return out, out.Status == schemas.BookingPending, nil
}

// confirmRejected explains a confirmOrder answered 400: the order is
// REJECTED when a booking's hold had passed (doc 3: the confirmation
// fails as REJECTED, nothing is confirmed; EXPIRED when the whole order
// lapsed meanwhile), which is CONFLICT; any other refusal is BAD_REQUEST.
// A held booking may have been confirmed and the confirmation reverted
// (doc 3: "changes are discarded or reverted"; an OCTO hold's, always):
// it may pass through CONFIRMED to CANCELLED.
func (r *Router) confirmRejected(ctx context.Context, s supplier, ord order, b schemas.Booking, prev bookingsystem.Order, cause error) error {
	orderID := OrderID(b.HoldID)
	ctx, cancel := settleContext(ctx) // the confirmation may have ended at the deadline
	defer cancel()
	o, found, err := readOrder(ctx, ord)
	if err == nil && found && o.Status != prev.Status {
		reverted := statuses(prev)
		for u, p := range reverted {
			if slices.Contains(p, bookingsystem.OnHold) {
				reverted[u] = append(p, bookingsystem.Confirmed)
			}
		}
		if err := checkOrder(o, orderExpect{id: orderID, holdID: b.HoldID, order: prior{prev.Status}, bookings: reverted,
			after: []string{bookingsystem.Rejected, bookingsystem.Expired}, bookingsAfter: []string{bookingsystem.Expired, bookingsystem.Rejected, bookingsystem.Cancelled}}); err != nil {
			return r.refuse("confirmOrder", s, err)
		}
		return coded("CONFLICT", fmt.Sprintf("the supplier's booking system rejected hold %s: a booking's hold had lapsed; nothing was confirmed, acquire a new hold", b.HoldID), nil, cause)
	}
	return coded("BAD_REQUEST", fmt.Sprintf("the supplier's booking system refused to confirm hold %s", b.HoldID), nil, cause)
}

// getBooking reads the order of a recorded booking; the move from the
// recorded status is checked (OPEN: its bookings were CONFIRMED; PENDING:
// PENDING or CONFIRMED).
func (r *Router) getBooking(ctx context.Context, s supplier, b schemas.Booking) (schemas.Booking, error) {
	ord, o, exp, err := r.bookedOrder(ctx, s, b)
	if err != nil {
		return schemas.Booking{}, err
	}
	if err := checkOrder(o, exp); err != nil {
		return schemas.Booking{}, r.refuse("getOrder", s, err)
	}
	return r.view(ctx, s, ord, b, o)
}

// bookedOrder reads the order of a recorded booking and what it is
// checked against.
func (r *Router) bookedOrder(ctx context.Context, s supplier, b schemas.Booking) (order, bookingsystem.Order, orderExpect, error) {
	if b.HoldID == "" {
		return nil, bookingsystem.Order{}, orderExpect{}, fmt.Errorf("booking %s at %s has no hold: %w", b.ID, s.sup.ID, ErrNeedsRecord)
	}
	orderID, ord := OrderID(b.HoldID), r.orderOf(s, b.HoldID)
	o, err := ord.read(ctx)
	if err != nil {
		return nil, bookingsystem.Order{}, orderExpect{}, fmt.Errorf("booking %s: %w", b.ID, err)
	}
	exp := orderExpect{id: orderID, holdID: b.HoldID, order: prior{bookingsystem.Confirmed}}
	switch b.Status {
	case schemas.BookingOpen:
		exp.otherBookings = prior{bookingsystem.Confirmed}
	case schemas.BookingPending:
		exp.otherBookings = prior{bookingsystem.Pending, bookingsystem.Confirmed}
	case schemas.BookingCancelled:
		exp.order = prior{bookingsystem.Cancelled}
	}
	return ord, o, exp, nil
}

// view maps a checked order to the reseller's booking b (see the table
// above). A confirmed order of which the supplier rejected or cancelled a
// booking is cancelled whole first (all or nothing); until that succeeds
// the booking is not reported cancelled.
func (r *Router) view(ctx context.Context, s supplier, ord order, b schemas.Booking, o bookingsystem.Order) (schemas.Booking, error) {
	out := b
	out.Status, out.Tickets, out.Cancelable = "", nil, nil
	switch o.Status {
	case bookingsystem.Cancelled:
		out.Status = schemas.BookingCancelled
		return out, nil
	case bookingsystem.Confirmed:
	default:
		return schemas.Booking{}, r.refuse("getOrder", s, &refusal{rule: RulePostcondition, item: "order", id: o.ID, to: o.Status})
	}
	has := func(sts ...string) bool {
		return slices.ContainsFunc(o.Bookings, func(x bookingsystem.Booking) bool { return slices.Contains(sts, x.Status) })
	}
	switch {
	case has(bookingsystem.Pending):
		out.Status = schemas.BookingPending
	case has(bookingsystem.Rejected, bookingsystem.Cancelled):
		if has(bookingsystem.Confirmed) {
			c, err := ord.cancel(ctx, compensations["rejected_booking"])
			result := "ok"
			if err == nil {
				err = checkOrder(c, orderExpect{id: o.ID, order: prior{bookingsystem.Confirmed}, bookings: statuses(o),
					after: []string{bookingsystem.Cancelled}, bookingsAfter: []string{bookingsystem.Cancelled, bookingsystem.Rejected}})
				if err != nil {
					err = r.refuse("cancelOrder", s, err)
				}
			}
			if err != nil {
				result = "failed"
			}
			r.metrics.compensations.WithLabelValues("rejected_booking", result).Inc()
			if err != nil {
				return schemas.Booking{}, fmt.Errorf("booking %s: cancel the rest of a partly rejected order: %w", b.ID, err)
			}
		}
		out.Status = schemas.BookingCancelled
	default:
		out.Status = schemas.BookingOpen
		out.Tickets = r.tickets(ctx, s, o, b)
		c := !slices.ContainsFunc(o.Bookings, func(x bookingsystem.Booking) bool { return !x.Cancellable })
		out.Cancelable = &c
	}
	return out, nil
}

// cancelBooking cancels the order of a recorded booking (doc 3 rule 6:
// CONFIRMED → CANCELLED, every booking). A cancelled order is done; a
// booking still PENDING in it or not cancellable now is CONFLICT.
func (r *Router) cancelBooking(ctx context.Context, s supplier, b schemas.Booking) error {
	ord, prev, exp, err := r.bookedOrder(ctx, s, b)
	if err != nil {
		return err
	}
	exp.order = prior{bookingsystem.Confirmed}
	if err := checkOrder(prev, exp); err != nil {
		return r.refuse("getOrder", s, err)
	}
	if prev.Status == bookingsystem.Cancelled {
		return nil
	}
	for _, x := range prev.Bookings {
		switch {
		case x.Status == bookingsystem.Pending:
			return coded("CONFLICT", fmt.Sprintf("booking %s awaits the supplier's decision; cancel it once it is resolved", b.ID), nil, nil)
		case x.Status == bookingsystem.Confirmed && !x.Cancellable:
			return coded("CONFLICT", fmt.Sprintf("booking %s is not cancellable at the supplier now", b.ID), nil, nil)
		}
	}
	o, err := ord.cancel(ctx, bookingsystem.CancelRequest{Reason: "CUSTOMER", ReasonDetails: "booking cancelled by the reseller"})
	if err != nil {
		return fmt.Errorf("cancel booking %s: %w", b.ID, err)
	}
	if err := checkOrder(o, orderExpect{id: prev.ID, holdID: b.HoldID, order: prior{bookingsystem.Confirmed}, bookings: statuses(prev),
		after: []string{bookingsystem.Cancelled}, bookingsAfter: []string{bookingsystem.Cancelled, bookingsystem.Rejected}}); err != nil {
		return r.refuse("cancelOrder", s, err)
	}
	return nil
}

// covers checks that the booking books the whole hold: per product and
// option, as many units as the order holds, and each named availability
// held, as conn's bookings name it (Connection.BookingAvailabilityID;
// internal/booking already checked that the hold covers the items).
func covers(ctx context.Context, conn bookingsystem.Connection, avails *availabilityIDs, o bookingsystem.Order, items []schemas.BookingItem) error {
	held := map[[2]string]int{}
	avail := map[[3]string]bool{}
	for _, x := range o.Bookings {
		if x.Status == bookingsystem.Rejected {
			continue
		}
		held[[2]string{x.ProductID, x.OptionID}] += len(x.UnitItems)
		if x.Availability != nil {
			avail[[3]string{x.ProductID, x.OptionID, x.Availability.ID}] = true
		}
	}
	booked := map[[2]string]int{}
	for i, it := range items {
		booked[[2]string{it.ProductID, it.RateID}] += it.Quantity
		if it.AvailabilityID == "" {
			continue
		}
		sys, err := avails.system(ctx, it.ProductID, it.RateID, it.AvailabilityID)
		if err != nil {
			return err
		}
		if !avail[[3]string{it.ProductID, it.RateID, conn.BookingAvailabilityID(sys)}] {
			return domainerr.Field(fmt.Sprintf("booking.items[%d].availabilityId", i), "is not held by the hold")
		}
	}
	if !maps.Equal(held, booked) {
		return domainerr.Field("booking.items", "must book the whole hold: at this supplier a hold is one order, confirmed all or nothing (spec doc 3)")
	}
	return nil
}

// contactOf is the order's contact (doc 3: contact of bookings in an
// order) from the booking's customer.
func contactOf(c *schemas.Customer) *bookingsystem.Contact {
	if c == nil || *c == (schemas.Customer{}) {
		return nil
	}
	str := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	return &bookingsystem.Contact{FullName: str(strings.TrimSpace(c.FirstName + " " + c.LastName)), FirstName: str(c.FirstName),
		LastName: str(c.LastName), EmailAddress: str(c.Email), PhoneNumber: str(c.Phone)}
}

// tickets are the tickets of a confirmed order o of booking b (spec doc
// 2, Ticket; docs/decisions.md, "Rates, holds and bookings of
// booking-system suppliers"):
//
//   - one per unit item that carries a ticket of its own (OCTO's
//     deliveryMethod TICKET: unitItems[].ticket), else one per booking
//     with its voucher (OCTO's VOUCHER), else one per booking (doc 3 shows
//     no delivery value) whose barcode is its supplierReference (its uuid
//     when there is none) as TEXT;
//   - barcode: the first delivery option that is a code (QR_CODE,
//     CODE128, AZTECCODE; OCTO's formats in the catalog's spelling), else
//     the first one (a PDF_URL or PKPASS_URL), {format, value};
//   - guests: the unit items by unit, each with the traveler type of the
//     rate's price of that unit (typeCode the age band, typeModifier,
//     typeName: spec doc 2 "taken from the age band, modifier and name of
//     the Price's traveler type"; the rate's prices are the units', see
//     bookingsync.UnitPrices), else the unit id;
//   - bookingItemIds: the items of b that the booking books (same
//     product, rate and availability);
//   - leadTraveler: the lead traveler of those items (isLead), else of b,
//     else b's customer (schemas.Booking.Lead);
//   - status OPEN (valid for redemption; the booking status vocabulary of
//     spec doc 2); extensions: the booking's uuid, product and option.
//
// The order is confirmed: the catalog reads these need run on a context
// of their own (settleContext, also past the operation's deadline), and
// one that fails only leaves a ticket without what it would have given
// (logged): the sale is made and must be answered.
func (r *Router) tickets(ctx context.Context, s supplier, o bookingsystem.Order, b schemas.Booking) []schemas.Ticket {
	ctx, cancel := settleContext(ctx)
	defer cancel()
	degraded := func(what string, err error) {
		r.log.Warn("supplierbooking: a ticket lacks what the catalog would give it", "supplier", s.sup.ID, "booking", b.ID, "what", what, "err", err)
	}
	avails := newAvailabilityIDs(r.opts.Catalog, s.sup.ID)
	type itemKey struct{ pid, rid, avail string }
	items := map[itemKey][]int{}
	for i, it := range b.Items {
		k := itemKey{it.ProductID, it.RateID, ""}
		if it.AvailabilityID != "" {
			sys, err := avails.system(ctx, it.ProductID, it.RateID, it.AvailabilityID)
			if err != nil {
				degraded("bookingItemIds", err)
				sys = bookingsystem.SystemAvailabilityID(it.AvailabilityID)
			}
			k.avail = s.conn.BookingAvailabilityID(sys)
		}
		items[k] = append(items[k], i)
	}
	types := map[[2]string]map[string]catalog.PriceTravelerType{}
	guestType := func(pid, oid, unit string) schemas.Guest {
		k := [2]string{pid, oid}
		tt, ok := types[k]
		if !ok {
			tt = map[string]catalog.PriceTravelerType{}
			rt, err := r.opts.Catalog.Rate(ctx, catalog.SystemScope(), s.sup.ID, pid, oid)
			switch {
			case isNotFound(err):
			case err != nil:
				degraded("guests", err)
			default:
				for _, p := range rt.Prices {
					if p.TravelerType != nil {
						id, _, _ := strings.Cut(p.ID, "~") // unitId~CUR
						tt[id] = *p.TravelerType
					}
				}
			}
			types[k] = tt
		}
		if t, ok := tt[unit]; ok && t.AgeBand != "" {
			return schemas.Guest{TypeCode: t.AgeBand, TypeModifier: t.Modifier, TypeName: t.Name}
		}
		return schemas.Guest{TypeCode: unit}
	}
	var out []schemas.Ticket
	for _, x := range o.Bookings {
		if x.Status != bookingsystem.Confirmed {
			continue
		}
		var ids []string
		var lead *schemas.Traveler
		k := itemKey{x.ProductID, x.OptionID, ""}
		if x.Availability != nil {
			k.avail = x.Availability.ID
		}
		idx := items[k]
		if len(idx) == 0 {
			k.avail = ""
			idx = items[k]
		}
		for _, i := range idx {
			ids = append(ids, b.Items[i].ID)
			if t := b.Items[i].Traveler; t != nil && t.IsLead && lead == nil {
				c := *t
				lead = &c
			}
		}
		if lead == nil {
			lead = b.Lead()
		}
		ext := map[string]string{"bookingUuid": x.UUID, "productId": x.ProductID, "optionId": x.OptionID}
		ticket := func(code schemas.Barcode, units []bookingsystem.UnitItem) schemas.Ticket {
			bc, _ := json.Marshal(code) // cannot fail: two strings
			var guests []schemas.Guest
			for _, u := range units {
				g := guestType(x.ProductID, x.OptionID, u.UnitID)
				k := slices.IndexFunc(guests, func(h schemas.Guest) bool { return h.TypeCode == g.TypeCode && h.TypeName == g.TypeName })
				if k < 0 {
					guests = append(guests, g)
					k = len(guests) - 1
				}
				guests[k].Count++
			}
			return schemas.Ticket{Barcode: bc, BookingItemIDs: slices.Clone(ids), Guests: guests, LeadTraveler: lead,
				Status: schemas.BookingOpen, Extensions: ext}
		}
		perUnit := len(x.UnitItems) > 0 && !slices.ContainsFunc(x.UnitItems, func(u bookingsystem.UnitItem) bool { return u.Ticket == nil || len(u.Ticket.DeliveryOptions) == 0 })
		switch {
		case perUnit:
			for _, u := range x.UnitItems {
				out = append(out, ticket(barcodeOf(u.Ticket), []bookingsystem.UnitItem{u}))
			}
		case x.Voucher != nil && len(x.Voucher.DeliveryOptions) > 0:
			out = append(out, ticket(barcodeOf(x.Voucher), x.UnitItems))
		default:
			value := x.UUID
			if x.SupplierReference != nil && *x.SupplierReference != "" {
				value = *x.SupplierReference
			}
			out = append(out, ticket(schemas.Barcode{Format: "TEXT", Value: value}, x.UnitItems))
		}
	}
	return out
}

// barcodeOf is the barcode of an OCTO ticket or voucher: its first
// delivery option that is a code, else its first.
func barcodeOf(t *bookingsystem.Ticket) schemas.Barcode {
	for _, d := range t.DeliveryOptions {
		switch d.DeliveryFormat {
		case "QR_CODE", "CODE128", "AZTECCODE":
			return schemas.Barcode{Format: d.DeliveryFormat, Value: d.DeliveryValue}
		}
	}
	d := t.DeliveryOptions[0]
	return schemas.Barcode{Format: d.DeliveryFormat, Value: d.DeliveryValue}
}

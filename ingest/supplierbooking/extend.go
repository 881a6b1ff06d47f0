package supplierbooking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/booking"
)

var _ booking.HoldExtender = (*Router)(nil)

// extendRequest is what an extension asks of a v2 booking system (doc 3
// rule 7: the reason MUST be stated). The reseller asked for it (OCTO's
// extend reservation names no reason), so OTHER with that said.
var extendRequest = bookingsystem.ExtendRequest{Reason: "OTHER", ReasonDetails: "the reseller extended its reservation"}

// ExtendHold holds a hold minutes more (issue 26, OCTO's extend
// reservation): a v2 booking system's order by extendOrder (doc 3 rule
// 7), an OCTO one's bookings one by one (OCTO's POST
// /bookings/{uuid}/extend). Either MAY hold it by another length or
// refuse; the expiry answered is the first of the order and its bookings.
// A partner supplier's hold cannot be extended: doc 2's partner interface
// has no such call (booking.ErrNotExtendable).
func (r *Router) ExtendHold(ctx context.Context, sid, id string, minutes int, _ string) (time.Time, error) {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return time.Time{}, err
	}
	if !s.system {
		return time.Time{}, booking.ErrNotExtendable
	}
	var out time.Time
	err = r.observe(ctx, "extend_hold", func(ctx context.Context) (err error) {
		out, err = r.extendHold(ctx, s, id, minutes)
		return err
	})
	return out, err
}

func (r *Router) extendHold(ctx context.Context, s supplier, id string, minutes int) (time.Time, error) {
	ord := r.orderOf(s, id)
	prev, err := ord.read(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("extend hold %s: %w", id, err)
	}
	if err := checkOrder(prev, orderExpect{id: OrderID(id), holdID: id}); err != nil {
		return time.Time{}, r.refuse("getOrder", s, err)
	}
	if prev.Status != bookingsystem.OnHold {
		return time.Time{}, coded("CONFLICT", fmt.Sprintf("hold %s is no longer held at the supplier (its order is %s)", id, prev.Status), nil, nil)
	}
	o, err := ord.extend(ctx, minutes)
	switch {
	case errors.Is(err, bookingsystem.ErrRejected):
		return time.Time{}, coded("CONFLICT", "the supplier's booking system refused to extend the hold", booking.ErrNotExtendable, err)
	case err != nil:
		return time.Time{}, fmt.Errorf("extend hold %s: %w", id, err)
	}
	if err := checkOrder(o, orderExpect{id: OrderID(id), holdID: id, order: prior{prev.Status}, bookings: statuses(prev),
		after: []string{bookingsystem.OnHold}, bookingsAfter: []string{bookingsystem.OnHold}}); err != nil {
		return time.Time{}, r.refuse("extendOrder", s, err)
	}
	exp := holdExpires(o)
	if exp.IsZero() {
		return time.Time{}, r.refuse("extendOrder", s, &refusal{rule: RulePostcondition, item: "order", id: OrderID(id), to: o.Status})
	}
	return exp, nil
}

// extend of a v2 order is extendOrder.
func (o v2Order) extend(ctx context.Context, minutes int) (bookingsystem.Order, error) {
	in := extendRequest
	in.HoldExpirationMinutes = minutes
	return o.sys.ExtendOrder(ctx, o.s.conn, o.s.sup.ID, o.id(), in)
}

// extend of an OCTO hold extends its bookings one by one (those known
// from the read before); one refused fails the extension, the others
// keep what they were given (an extension is no sale: nothing to undo).
func (o *octoOrder) extend(ctx context.Context, minutes int) (bookingsystem.Order, error) {
	if err := o.known(ctx); err != nil {
		return bookingsystem.Order{}, err
	}
	uuids, _ := o.snapshot()
	for _, u := range uuids {
		b, err := o.r.opts.BookingSystem.ExtendBooking(ctx, o.s.conn, u, minutes)
		if err != nil {
			return bookingsystem.Order{}, fmt.Errorf("extend booking %d of hold %s: %w", itemOf(o.holdID, u, len(uuids)), o.holdID, err)
		}
		o.note(b)
	}
	return o.order(), nil
}

package supplierbooking

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/booking"
)

// order is the bookings of one hold at a booking system, read and moved
// as one: doc 3's order OrderID(hold) for a v2 booking system (v2Order),
// or, since core OCTO has no orders, the hold's bookings BookingUUID(hold,
// i) one by one for an OCTO one (octoOrder). The flows of holds.go and
// bookings.go speak only to it, so both dialects get the same state
// machine checks (states.go) and the same compensations; every answer is
// a bs.Order (an OCTO one aggregated by OrderStatusOf).
type order interface {
	// hold is the hold id the order belongs to.
	hold() string
	// read is the order now; an error matching bs.ErrNotFound when none
	// of it exists.
	read(ctx context.Context) (bookingsystem.Order, error)
	// add is createBooking of one booking of the order.
	add(ctx context.Context, q bookingsystem.BookingRequest) (bookingsystem.Booking, error)
	// added is the order as the adds left it.
	added(ctx context.Context) (bookingsystem.Order, error)
	// confirm confirms every booking or none (doc 3: confirmOrder; an
	// order operation that fails on a booking fails whole). A call that
	// fails without a rejection (timeout, 5xx, an answer lost) may still
	// have confirmed: it is settled by reading again (settleConfirm), so
	// a sale the supplier made is never reported as failed.
	confirm(ctx context.Context, in bookingsystem.ConfirmRequest) (bookingsystem.Order, error)
	// cancel releases the held bookings and cancels the confirmed ones
	// (doc 3 rule 6: cancelOrder).
	cancel(ctx context.Context, in bookingsystem.CancelRequest) (bookingsystem.Order, error)
	// extend holds the bookings minutes more (extend.go).
	extend(ctx context.Context, minutes int) (bookingsystem.Order, error)
}

// orderOf is the order of hold holdID at the supplier's booking system,
// for one operation (an octoOrder remembers what it has seen).
func (r *Router) orderOf(s supplier, holdID string) order {
	if s.conn.Dialect == bookingsystem.DialectOCTO {
		return &octoOrder{r: r, s: s, holdID: holdID, last: map[string]bookingsystem.Booking{}}
	}
	return v2Order{sys: r.opts.BookingSystem, s: s, holdID: holdID}
}

// readOrder reads ord; found is false when none of it exists.
func readOrder(ctx context.Context, ord order) (o bookingsystem.Order, found bool, err error) {
	o, err = ord.read(ctx)
	switch {
	case errors.Is(err, bookingsystem.ErrNotFound):
		return bookingsystem.Order{}, false, nil
	case err != nil:
		return bookingsystem.Order{}, false, fmt.Errorf("read the order of hold %s: %w", ord.hold(), err)
	}
	return o, true, nil
}

// v2Order is doc 3's order: the booking system moves its bookings as one.
type v2Order struct {
	sys    BookingSystem
	s      supplier
	holdID string
}

func (o v2Order) hold() string { return o.holdID }
func (o v2Order) id() string   { return OrderID(o.holdID) }

func (o v2Order) read(ctx context.Context) (bookingsystem.Order, error) {
	return o.sys.GetOrder(ctx, o.s.conn, o.s.sup.ID, o.id())
}

func (o v2Order) add(ctx context.Context, q bookingsystem.BookingRequest) (bookingsystem.Booking, error) {
	return o.sys.CreateBooking(ctx, o.s.conn, q)
}

// added reads the order again; none is an empty order (refused by the
// caller: it must hold every booking).
func (o v2Order) added(ctx context.Context) (bookingsystem.Order, error) {
	got, err := o.read(ctx)
	if errors.Is(err, bookingsystem.ErrNotFound) {
		return bookingsystem.Order{ID: o.id()}, nil
	}
	return got, err
}

// confirm is confirmOrder, settled by a read of the order when it fails
// without a rejection: CONFIRMED is the answer (checked by the caller as
// any), still ON_HOLD (or unreadable) the failure, REJECTED or EXPIRED a
// rejection (doc 3: the confirmation failed; the caller explains it), any
// other status the answer, which the caller's checks refuse.
func (o v2Order) confirm(ctx context.Context, in bookingsystem.ConfirmRequest) (bookingsystem.Order, error) {
	got, err := o.sys.ConfirmOrder(ctx, o.s.conn, o.s.sup.ID, o.id(), in)
	if err == nil || errors.Is(err, bookingsystem.ErrRejected) {
		return got, err
	}
	sctx, cancel := settleContext(ctx)
	defer cancel()
	now, rerr := o.read(sctx)
	switch {
	case rerr != nil || now.Status == bookingsystem.OnHold:
		return bookingsystem.Order{}, err
	case now.Status == bookingsystem.Rejected || now.Status == bookingsystem.Expired:
		return bookingsystem.Order{}, fmt.Errorf("confirm order %s: %w (read again after: %w)", o.id(), bookingsystem.ErrRejected, err)
	}
	return now, nil
}

func (o v2Order) cancel(ctx context.Context, in bookingsystem.CancelRequest) (bookingsystem.Order, error) {
	return o.sys.CancelOrder(ctx, o.s.conn, o.s.sup.ID, o.id(), in)
}

// octoOrder is a hold's bookings at an OCTO booking system, created
// without orderId and moved one by one; Switchback keeps them all or
// nothing. A hold's items are created in index order and the hold stops
// at the first failure, so its bookings are BookingUUID(hold, 0..n-1):
// read asks for them until the first unknown uuid (n+1 reads, at most
// booking.MaxItems; holdParallelism at a time). confirm and cancel act on
// the bookings last read or added (read first when there are none). One
// per operation; add and cancel may run concurrently (mu).
type octoOrder struct {
	r      *Router
	s      supplier
	holdID string

	mu sync.Mutex
	// uuids are the bookings read or tried (an add whose answer was lost
	// may have made one), in the order read or tried; last is the latest
	// answer of each by uuid (lower case): a tried one without answer is
	// unknown.
	uuids []string
	last  map[string]bookingsystem.Booking
}

func (o *octoOrder) hold() string { return o.holdID }

func (o *octoOrder) track(u string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.trackLocked(strings.ToLower(u))
}

func (o *octoOrder) trackLocked(u string) {
	if !slices.Contains(o.uuids, u) {
		o.uuids = append(o.uuids, u)
	}
}

func (o *octoOrder) note(b bookingsystem.Booking) {
	o.mu.Lock()
	defer o.mu.Unlock()
	u := strings.ToLower(b.UUID)
	o.trackLocked(u)
	o.last[u] = b
}

// snapshot is the uuids known and their last answers, for a pass over
// them.
func (o *octoOrder) snapshot() ([]string, map[string]bookingsystem.Booking) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.uuids), maps.Clone(o.last)
}

// known reads the bookings when none is known yet.
func (o *octoOrder) known(ctx context.Context) error {
	if us, _ := o.snapshot(); len(us) > 0 {
		return nil
	}
	_, err := o.read(ctx)
	return err
}

// read asks for BookingUUID(hold, 0, 1, ...), holdParallelism at a time,
// up to the first unknown one: the bookings are those before it.
func (o *octoOrder) read(ctx context.Context) (bookingsystem.Order, error) {
	o.mu.Lock()
	o.uuids, o.last = nil, map[string]bookingsystem.Booking{}
	o.mu.Unlock()
	for base := 0; base < booking.MaxItems; base += holdParallelism {
		n := min(holdParallelism, booking.MaxItems-base)
		got, errs := make([]bookingsystem.Booking, n), make([]error, n)
		var wg sync.WaitGroup
		for k := range n {
			wg.Go(func() {
				got[k], errs[k] = o.r.opts.BookingSystem.GetBooking(ctx, o.s.conn, o.s.sup.ID, BookingUUID(o.holdID, base+k))
			})
		}
		wg.Wait()
		for k := range n {
			switch {
			case errors.Is(errs[k], bookingsystem.ErrNotFound):
				return o.readDone()
			case errs[k] != nil:
				return bookingsystem.Order{}, fmt.Errorf("read booking %d of hold %s: %w", base+k, o.holdID, errs[k])
			}
			o.note(got[k])
		}
	}
	return o.readDone()
}

func (o *octoOrder) readDone() (bookingsystem.Order, error) {
	if us, _ := o.snapshot(); len(us) == 0 {
		return bookingsystem.Order{}, fmt.Errorf("hold %s has no booking: %w", o.holdID, bookingsystem.ErrNotFound)
	}
	return o.order(), nil
}

// add creates the booking without orderId (core OCTO has none).
func (o *octoOrder) add(ctx context.Context, q bookingsystem.BookingRequest) (bookingsystem.Booking, error) {
	q.OrderID = ""
	o.track(q.UUID)
	b, err := o.r.opts.BookingSystem.CreateBooking(ctx, o.s.conn, q)
	if err == nil {
		o.note(b)
	}
	return b, err
}

// added is the adds' answers: they are the bookings as they are now.
func (o *octoOrder) added(context.Context) (bookingsystem.Order, error) { return o.order(), nil }

// confirm confirms the bookings one by one (those already confirmed or
// pending are a retry's and left alone). A confirmation that fails
// without a rejection (timeout, 5xx, an answer lost) is settled by
// reading that booking again: CONFIRMED or PENDING, it happened and the
// next one follows. When one fails, the order fails whole, as doc 3's
// confirmOrder: what was confirmed is cancelled and what is held released
// (compensate, reason failed_confirm), then the error is returned; a
// following read shows REJECTED (or EXPIRED).
func (o *octoOrder) confirm(ctx context.Context, in bookingsystem.ConfirmRequest) (bookingsystem.Order, error) {
	if err := o.known(ctx); err != nil {
		return bookingsystem.Order{}, err
	}
	uuids, last := o.snapshot()
	for _, u := range uuids {
		if b, ok := last[u]; ok && (b.Status == bookingsystem.Confirmed || b.Status == bookingsystem.Pending) {
			continue
		}
		b, err := o.r.opts.BookingSystem.ConfirmBooking(ctx, o.s.conn, o.s.sup.ID, u, in)
		if err != nil && !errors.Is(err, bookingsystem.ErrRejected) {
			b, err = o.settleConfirm(ctx, u, err)
		}
		if err != nil {
			o.r.compensate(ctx, o.s, o, "failed_confirm")
			return bookingsystem.Order{}, fmt.Errorf("confirm booking %d of hold %s: %w", itemOf(o.holdID, u, len(uuids)), o.holdID, err)
		}
		o.note(b)
	}
	return o.order(), nil
}

// settleConfirm reads booking u again after its confirmation failed with
// cause (not a rejection): CONFIRMED or PENDING is the answer the call
// lost; anything else, or no answer, is cause.
func (o *octoOrder) settleConfirm(ctx context.Context, u string, cause error) (bookingsystem.Booking, error) {
	sctx, cancel := settleContext(ctx)
	defer cancel()
	b, err := o.r.opts.BookingSystem.GetBooking(sctx, o.s.conn, o.s.sup.ID, u)
	if err != nil || (b.Status != bookingsystem.Confirmed && b.Status != bookingsystem.Pending) {
		if err == nil {
			o.note(b)
		}
		return bookingsystem.Booking{}, cause
	}
	return b, nil
}

// settleContext is ctx's values without its end, for SettleTimeout: the
// calls that find out or undo what a failed call left (reading a
// confirmation without answer again, a compensation) run even when the
// operation's own deadline has passed.
func settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), SettleTimeout)
}

// cancel cancels every booking that holds or sells something (ON_HOLD →
// EXPIRED, CONFIRMED → CANCELLED, and any whose state is unknown),
// holdParallelism at a time, going on past failures so that as little as
// possible stays held or sold. A PENDING booking cannot be cancelled (doc
// 3 lists no such move): it is an error, left to the supplier's decision.
func (o *octoOrder) cancel(ctx context.Context, in bookingsystem.CancelRequest) (bookingsystem.Order, error) {
	if err := o.known(ctx); err != nil {
		return bookingsystem.Order{}, err
	}
	uuids, last := o.snapshot()
	var mu sync.Mutex
	var failed []error
	fail := func(err error) {
		mu.Lock()
		failed = append(failed, err)
		mu.Unlock()
	}
	var g errgroup.Group
	g.SetLimit(holdParallelism)
	for _, u := range uuids {
		b, known := last[u]
		switch {
		case known && b.Status == bookingsystem.Pending:
			fail(fmt.Errorf("booking %s awaits the supplier's decision and cannot be cancelled (spec doc 3)", u))
			continue
		case known && b.Status != bookingsystem.OnHold && b.Status != bookingsystem.Confirmed:
			continue // EXPIRED, REJECTED, CANCELLED: nothing held or sold
		}
		g.Go(func() error {
			got, err := o.r.opts.BookingSystem.CancelBooking(ctx, o.s.conn, o.s.sup.ID, u, in)
			switch {
			case errors.Is(err, bookingsystem.ErrNotFound) && !known: // an add that made nothing
			case err != nil:
				fail(fmt.Errorf("cancel booking %s: %w", u, err))
			default:
				o.note(got)
			}
			return nil
		})
	}
	_ = g.Wait() // failures are collected in failed
	if len(failed) > 0 {
		return bookingsystem.Order{}, fmt.Errorf("hold %s: %d of %d bookings not cancelled: %w", o.holdID, len(failed), len(uuids), failed[0])
	}
	return o.order(), nil
}

// order is the known bookings as one order: OrderID(hold), the status
// OrderStatusOf them, utcExpiresAt the first hold of a held one.
func (o *octoOrder) order() bookingsystem.Order {
	out := bookingsystem.Order{ID: OrderID(o.holdID)}
	uuids, last := o.snapshot()
	for _, u := range uuids {
		if b, ok := last[u]; ok {
			out.Bookings = append(out.Bookings, b)
		}
	}
	out.Status = OrderStatusOf(out.Bookings)
	for _, b := range out.Bookings {
		if b.Status == bookingsystem.OnHold && b.UTCHoldExpiration != nil && (out.UTCExpiresAt == nil || b.UTCHoldExpiration.Before(*out.UTCExpiresAt)) {
			t := b.UTCHoldExpiration.UTC().Truncate(time.Second)
			out.UTCExpiresAt = &t
		}
	}
	return out
}

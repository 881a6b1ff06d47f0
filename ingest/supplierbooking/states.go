package supplierbooking

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
)

// The state machine of spec doc 3, "States and transitions", as tables.
// Every answer of the booking system is checked against them before the
// Router maps it (check*): a move doc 3 does not list is refused, never
// recorded.

// New is the state before a booking or an order exists (doc 3: "new
// booking").
const New = ""

type move struct{ from, to string }

// bookingMoves is doc 3's Booking table. ON_HOLD → EXPIRED is listed
// twice there (hold lapses; cancellation released before confirmation).
var bookingMoves = map[move]bool{
	{New, bookingsystem.Rejected}:                      true, // createBooking rejected
	{New, bookingsystem.OnHold}:                        true, // createBooking accepted
	{bookingsystem.OnHold, bookingsystem.Expired}:      true, // hold lapses, or cancelled before confirmation
	{bookingsystem.OnHold, bookingsystem.Confirmed}:    true, // confirmBooking accepted
	{bookingsystem.OnHold, bookingsystem.Pending}:      true, // supplier acceptance pending: instantConfirmation false (orderExpect.instant)
	{bookingsystem.Pending, bookingsystem.Rejected}:    true, // supplier decision: rejected
	{bookingsystem.Pending, bookingsystem.Confirmed}:   true, // supplier decision: accepted
	{bookingsystem.Confirmed, bookingsystem.Cancelled}: true, // cancellation confirmed
}

// orderMoves is doc 3's Order table. Its first row ("createBooking
// rejected → REJECTED (booking)") moves a booking, not an order: a
// rejected createBooking makes no order.
var orderMoves = map[move]bool{
	{New, bookingsystem.OnHold}:                        true, // createBooking with a new orderId
	{bookingsystem.OnHold, bookingsystem.Expired}:      true, // lapse, or cancelOrder before confirmation
	{bookingsystem.OnHold, bookingsystem.Confirmed}:    true, // confirmOrder
	{bookingsystem.OnHold, bookingsystem.Rejected}:     true, // confirmOrder fails
	{bookingsystem.Confirmed, bookingsystem.Cancelled}: true, // cancelOrder
}

// BookingTransition reports whether doc 3 lists from → to for a booking
// (from New for a new booking). Staying in a status is not a transition:
// callers accept from == to on their own (a repeated read, a retried call).
func BookingTransition(from, to string) bool { return bookingMoves[move{from, to}] }

// OrderTransition reports whether doc 3 lists from → to for an order.
func OrderTransition(from, to string) bool { return orderMoves[move{from, to}] }

// orderBookings is, for each order status, the statuses its bookings may
// have. Doc 3: "An order operation acts on all its bookings. If it fails on
// any booking the whole operation fails". So an ON_HOLD order has nothing
// confirmed; a CONFIRMED one nothing still held or lapsed (its bookings
// may be PENDING, and later REJECTED or CANCELLED one by one: the
// supplier's decision and a supplier-initiated cancellation are booking
// moves); a CANCELLED or EXPIRED one nothing held, pending or confirmed; a
// REJECTED one (failed confirmOrder, "any changes are discarded or
// reverted") nothing confirmed: a reverted confirmation is CANCELLED, the
// only move out of CONFIRMED (what an OCTO hold's confirmation that failed
// half way leaves, see OrderStatusOf). REJECTED bookings never held
// anything and may sit in any order.
var orderBookings = map[string][]string{
	bookingsystem.OnHold:    {bookingsystem.OnHold, bookingsystem.Expired, bookingsystem.Rejected},
	bookingsystem.Confirmed: {bookingsystem.Confirmed, bookingsystem.Pending, bookingsystem.Rejected, bookingsystem.Cancelled},
	bookingsystem.Cancelled: {bookingsystem.Cancelled, bookingsystem.Rejected},
	bookingsystem.Expired:   {bookingsystem.Expired, bookingsystem.Rejected},
	bookingsystem.Rejected:  {bookingsystem.OnHold, bookingsystem.Expired, bookingsystem.Rejected, bookingsystem.Cancelled},
}

// OrderStatusOf is the status of bookings seen as one order, for a
// booking system without orders (OCTO: a hold's bookings, octoOrder), in
// this order of precedence:
//
//	one CONFIRMED or PENDING            → CONFIRMED (the confirmation happened)
//	one ON_HOLD                         → ON_HOLD
//	CANCELLED ones beside EXPIRED ones  → REJECTED (a confirmation that failed half way, reverted)
//	CANCELLED ones                      → CANCELLED
//	otherwise (EXPIRED, REJECTED)       → EXPIRED (lapsed or released)
//
// A mix that all or nothing forbids (a confirmed booking beside a held or
// lapsed one: a confirmation still running, or one whose revert failed)
// is CONFIRMED, and BookingsAgree refuses it like any order of a v2
// booking system whose bookings disagree.
func OrderStatusOf(bookings []bookingsystem.Booking) string {
	has := func(sts ...string) bool {
		return slices.ContainsFunc(bookings, func(b bookingsystem.Booking) bool { return slices.Contains(sts, b.Status) })
	}
	switch {
	case has(bookingsystem.Confirmed, bookingsystem.Pending):
		return bookingsystem.Confirmed
	case has(bookingsystem.OnHold):
		return bookingsystem.OnHold
	case has(bookingsystem.Cancelled) && has(bookingsystem.Expired):
		return bookingsystem.Rejected
	case has(bookingsystem.Cancelled):
		return bookingsystem.Cancelled
	}
	return bookingsystem.Expired
}

// BookingsAgree reports whether a booking of an order may have status
// booking while the order has status order (all-or-nothing, doc 3).
func BookingsAgree(order, booking string) bool {
	return slices.Contains(orderBookings[order], booking)
}

// Rules of a refused answer: the label of
// switchback_ingest_supplierbooking_refused_answers_total.
const (
	RuleTransition    = "transition"           // a move doc 3 does not list
	RulePostcondition = "postcondition"        // not the status that must follow the call
	RuleDisagree      = "order_disagree"       // bookings disagree with their order's status
	RuleStray         = "stray_booking"        // the order holds bookings that are not the hold's
	RuleInstant       = "instant_confirmation" // PENDING for a product with instantConfirmation true
)

// refusal is an answer the Router refuses; check* return it.
type refusal struct {
	rule, item, id, from, to string
}

func (r *refusal) Error() string {
	if r.from == "" && r.to == "" {
		return fmt.Sprintf("%s %s: %s", r.item, r.id, r.rule)
	}
	return fmt.Sprintf("%s %s: %s %s → %s", r.item, r.id, r.rule, orNew(r.from), r.to)
}

func orNew(s string) string {
	if s == New {
		return "new"
	}
	return s
}

// prior is what a booking or order is known to have been before an
// answer: any of these statuses (a recorded reseller booking PENDING may
// hide CONFIRMED bookings, say). nil: unknown, the move is not checked.
type prior []string

// first is p's first status ("" when unknown), for a refusal's log.
func (p prior) first() string {
	if len(p) == 0 {
		return New
	}
	return p[0]
}

// reaches reports whether a status in p stays or moves to to.
func (p prior) reaches(to string) bool {
	for _, from := range p {
		if from == to || BookingTransition(from, to) {
			return true
		}
	}
	return false
}

func (p prior) reachesOrder(to string) bool {
	for _, from := range p {
		if from == to || OrderTransition(from, to) {
			return true
		}
	}
	return false
}

// orderExpect is what an order answer is checked against.
type orderExpect struct {
	id string
	// holdID: the order must hold exactly the hold's bookings
	// (BookingUUID(holdID, 0..n-1)).
	holdID string
	// order is the order's prior status; nil unknown.
	order prior
	// bookings are the bookings' prior statuses by uuid (lower case);
	// others take otherBookings (nil: unknown).
	bookings      map[string]prior
	otherBookings prior
	// after: the order statuses the call must lead to (nil: any).
	after []string
	// bookingsAfter: the booking statuses the call must lead to (nil: any).
	bookingsAfter []string
	// instant: the products whose catalog instantConfirmation is true;
	// a booking of one of them must not be PENDING (doc 3: "PENDING MAY
	// appear only for products with instantConfirmation false"; the
	// condition of the ON_HOLD → PENDING row, which bookingMoves cannot
	// see).
	instant map[string]bool
}

// checkOrder checks an order answer: the order's and every booking's move
// (doc 3 tables), the statuses that must follow the call, the bookings'
// agreement with the order's status and that the order is the hold's.
func checkOrder(o bookingsystem.Order, exp orderExpect) error {
	if exp.order != nil && !exp.order.reachesOrder(o.Status) {
		return &refusal{rule: RuleTransition, item: "order", id: o.ID, from: exp.order[0], to: o.Status}
	}
	if exp.after != nil && !slices.Contains(exp.after, o.Status) {
		return &refusal{rule: RulePostcondition, item: "order", id: o.ID, to: o.Status}
	}
	for _, b := range o.Bookings {
		if !BookingsAgree(o.Status, b.Status) {
			return &refusal{rule: RuleDisagree, item: "booking", id: b.UUID, from: o.Status, to: b.Status}
		}
		p, ok := exp.bookings[strings.ToLower(b.UUID)]
		if !ok {
			p = exp.otherBookings
		}
		if p != nil && !p.reaches(b.Status) {
			return &refusal{rule: RuleTransition, item: "booking", id: b.UUID, from: p[0], to: b.Status}
		}
		if exp.bookingsAfter != nil && !slices.Contains(exp.bookingsAfter, b.Status) {
			return &refusal{rule: RulePostcondition, item: "booking", id: b.UUID, to: b.Status}
		}
		if b.Status == bookingsystem.Pending && exp.instant[b.ProductID] {
			return &refusal{rule: RuleInstant, item: "booking", id: b.UUID, from: p.first(), to: b.Status}
		}
	}
	if exp.holdID != "" {
		want := map[string]bool{}
		for i := range o.Bookings {
			want[BookingUUID(exp.holdID, i)] = true
		}
		for _, b := range o.Bookings {
			if !want[strings.ToLower(b.UUID)] {
				return &refusal{rule: RuleStray, item: "booking", id: b.UUID}
			}
			delete(want, strings.ToLower(b.UUID)) // a uuid twice is stray too
		}
	}
	return nil
}

// checkBooking checks one booking answer: its move from p and the statuses
// the call must lead to.
func checkBooking(b bookingsystem.Booking, p prior, after []string) error {
	if p != nil && !p.reaches(b.Status) {
		return &refusal{rule: RuleTransition, item: "booking", id: b.UUID, from: p[0], to: b.Status}
	}
	if after != nil && !slices.Contains(after, b.Status) {
		return &refusal{rule: RulePostcondition, item: "booking", id: b.UUID, to: b.Status}
	}
	return nil
}

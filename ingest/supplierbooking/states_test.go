package supplierbooking

import (
	"errors"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/booking"
)

func TestBookingTransition_DocThreeTableOnly(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		want     bool
	}{
		// Every row of doc 3's Booking table.
		{"createBooking rejected", New, bookingsystem.Rejected, true},
		{"createBooking accepted", New, bookingsystem.OnHold, true},
		{"hold lapses or released before confirmation", bookingsystem.OnHold, bookingsystem.Expired, true},
		{"confirmBooking accepted", bookingsystem.OnHold, bookingsystem.Confirmed, true},
		{"supplier acceptance pending", bookingsystem.OnHold, bookingsystem.Pending, true},
		{"supplier decision rejected", bookingsystem.Pending, bookingsystem.Rejected, true},
		{"supplier decision accepted", bookingsystem.Pending, bookingsystem.Confirmed, true},
		{"cancellation confirmed", bookingsystem.Confirmed, bookingsystem.Cancelled, true},
		// A sample of what no row lists.
		{"new straight to confirmed", New, bookingsystem.Confirmed, false},
		{"new straight to pending", New, bookingsystem.Pending, false},
		{"held booking cancelled (it expires)", bookingsystem.OnHold, bookingsystem.Cancelled, false},
		{"held booking rejected (only orders are)", bookingsystem.OnHold, bookingsystem.Rejected, false},
		{"confirmed back on hold", bookingsystem.Confirmed, bookingsystem.OnHold, false},
		{"confirmed expires", bookingsystem.Confirmed, bookingsystem.Expired, false},
		{"pending cancelled", bookingsystem.Pending, bookingsystem.Cancelled, false},
		{"pending expires", bookingsystem.Pending, bookingsystem.Expired, false},
		{"expired revived", bookingsystem.Expired, bookingsystem.OnHold, false},
		{"expired confirmed", bookingsystem.Expired, bookingsystem.Confirmed, false},
		{"rejected confirmed", bookingsystem.Rejected, bookingsystem.Confirmed, false},
		{"cancelled confirmed again", bookingsystem.Cancelled, bookingsystem.Confirmed, false},
		{"staying is not a transition", bookingsystem.OnHold, bookingsystem.OnHold, false},
		{"unknown status", bookingsystem.OnHold, "MAYBE", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BookingTransition(tt.from, tt.to); got != tt.want {
				t.Errorf("BookingTransition(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestOrderTransition_DocThreeTableOnly(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		want     bool
	}{
		{"createBooking with a new orderId", New, bookingsystem.OnHold, true},
		{"lapse or cancelOrder before confirmation", bookingsystem.OnHold, bookingsystem.Expired, true},
		{"confirmOrder", bookingsystem.OnHold, bookingsystem.Confirmed, true},
		{"confirmOrder fails", bookingsystem.OnHold, bookingsystem.Rejected, true},
		{"cancelOrder of a confirmed order", bookingsystem.Confirmed, bookingsystem.Cancelled, true},
		{"a rejected createBooking makes no order", New, bookingsystem.Rejected, false},
		{"new straight to confirmed", New, bookingsystem.Confirmed, false},
		{"held order cancelled (it expires)", bookingsystem.OnHold, bookingsystem.Cancelled, false},
		{"confirmed expires", bookingsystem.Confirmed, bookingsystem.Expired, false},
		{"confirmed rejected", bookingsystem.Confirmed, bookingsystem.Rejected, false},
		{"expired revived", bookingsystem.Expired, bookingsystem.OnHold, false},
		{"rejected confirmed", bookingsystem.Rejected, bookingsystem.Confirmed, false},
		{"cancelled confirmed", bookingsystem.Cancelled, bookingsystem.Confirmed, false},
		{"pending is not an order status", bookingsystem.OnHold, bookingsystem.Pending, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OrderTransition(tt.from, tt.to); got != tt.want {
				t.Errorf("OrderTransition(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestBookingsAgree_AllOrNothing(t *testing.T) {
	tests := []struct {
		order, booking string
		want           bool
	}{
		{bookingsystem.OnHold, bookingsystem.OnHold, true},
		{bookingsystem.OnHold, bookingsystem.Expired, true}, // one booking's own hold lapsed
		{bookingsystem.OnHold, bookingsystem.Confirmed, false},
		{bookingsystem.OnHold, bookingsystem.Pending, false},
		{bookingsystem.Confirmed, bookingsystem.Confirmed, true},
		{bookingsystem.Confirmed, bookingsystem.Pending, true},
		{bookingsystem.Confirmed, bookingsystem.Rejected, true}, // supplier's decision on a PENDING one
		{bookingsystem.Confirmed, bookingsystem.OnHold, false},
		{bookingsystem.Confirmed, bookingsystem.Expired, false},
		{bookingsystem.Cancelled, bookingsystem.Cancelled, true},
		{bookingsystem.Cancelled, bookingsystem.Confirmed, false},
		{bookingsystem.Cancelled, bookingsystem.Pending, false},
		{bookingsystem.Expired, bookingsystem.Expired, true},
		{bookingsystem.Expired, bookingsystem.OnHold, false},
		{bookingsystem.Rejected, bookingsystem.Expired, true},
		{bookingsystem.Rejected, bookingsystem.Cancelled, true}, // a confirmation reverted ("discarded or reverted")
		{bookingsystem.Rejected, bookingsystem.Confirmed, false},
		{bookingsystem.Rejected, bookingsystem.Pending, false},
	}
	for _, tt := range tests {
		t.Run(tt.order+" holds "+tt.booking, func(t *testing.T) {
			if got := BookingsAgree(tt.order, tt.booking); got != tt.want {
				t.Errorf("BookingsAgree(%q, %q) = %v, want %v", tt.order, tt.booking, got, tt.want)
			}
		})
	}
}

func TestOrderStatusOf_OCTOBookingsAsOneOrder(t *testing.T) {
	tests := []struct {
		name     string
		bookings []string
		want     string
		agree    bool // BookingsAgree for every booking
	}{
		{"all held", []string{bookingsystem.OnHold, bookingsystem.OnHold}, bookingsystem.OnHold, true},
		{"one lapsed", []string{bookingsystem.OnHold, bookingsystem.Expired}, bookingsystem.OnHold, true},
		{"all released or lapsed", []string{bookingsystem.Expired, bookingsystem.Expired}, bookingsystem.Expired, true},
		{"rejected at creation", []string{bookingsystem.Rejected}, bookingsystem.Expired, true},
		{"all confirmed", []string{bookingsystem.Confirmed, bookingsystem.Confirmed}, bookingsystem.Confirmed, true},
		{"confirmed, one pending", []string{bookingsystem.Confirmed, bookingsystem.Pending}, bookingsystem.Confirmed, true},
		{"pending one rejected by the supplier", []string{bookingsystem.Confirmed, bookingsystem.Rejected}, bookingsystem.Confirmed, true},
		{"all cancelled", []string{bookingsystem.Cancelled, bookingsystem.Cancelled}, bookingsystem.Cancelled, true},
		{"cancelled beside a rejected one", []string{bookingsystem.Cancelled, bookingsystem.Rejected}, bookingsystem.Cancelled, true},
		{"confirmation failed half way, reverted", []string{bookingsystem.Cancelled, bookingsystem.Expired, bookingsystem.Expired}, bookingsystem.Rejected, true},
		// What all or nothing forbids: refused, never mapped.
		{"confirmed beside a held one", []string{bookingsystem.Confirmed, bookingsystem.OnHold}, bookingsystem.Confirmed, false},
		{"confirmed beside a lapsed one", []string{bookingsystem.Confirmed, bookingsystem.Expired}, bookingsystem.Confirmed, false},
		{"cancelled beside a held one", []string{bookingsystem.Cancelled, bookingsystem.OnHold}, bookingsystem.OnHold, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bks []bookingsystem.Booking
			for _, st := range tt.bookings {
				bks = append(bks, bookingsystem.Booking{Status: st})
			}
			got, agree := OrderStatusOf(bks), true
			for _, b := range bks {
				agree = agree && BookingsAgree(got, b.Status)
			}
			if got != tt.want || agree != tt.agree {
				t.Fatalf("OrderStatusOf(%v) = %s (agree %v), want %s (agree %v)", tt.bookings, got, agree, tt.want, tt.agree)
			}
		})
	}
}

func TestCheckOrder_RefusesWhatDocThreeDoesNotAllow(t *testing.T) {
	const hold = "h-1"
	u0, u1 := BookingUUID(hold, 0), BookingUUID(hold, 1)
	order := func(st string, bsts ...string) bookingsystem.Order {
		o := bookingsystem.Order{ID: OrderID(hold), Status: st}
		for i, s := range bsts {
			o.Bookings = append(o.Bookings, bookingsystem.Booking{UUID: BookingUUID(hold, i), Status: s, ProductID: "P" + strconv.Itoa(i)})
		}
		return o
	}
	held := map[string]prior{u0: {bookingsystem.OnHold}, u1: {bookingsystem.OnHold}}
	tests := []struct {
		name     string
		o        bookingsystem.Order
		exp      orderExpect
		wantRule string // "" accepted
	}{
		{"confirm of a held order", order(bookingsystem.Confirmed, bookingsystem.Confirmed, bookingsystem.Pending),
			orderExpect{holdID: hold, order: prior{bookingsystem.OnHold}, bookings: held, after: []string{bookingsystem.Confirmed}, bookingsAfter: []string{bookingsystem.Confirmed, bookingsystem.Pending}}, ""},
		{"confirm answering PENDING for a product confirmed instantly", order(bookingsystem.Confirmed, bookingsystem.Confirmed, bookingsystem.Pending),
			orderExpect{holdID: hold, order: prior{bookingsystem.OnHold}, bookings: held, after: []string{bookingsystem.Confirmed}, instant: map[string]bool{"P1": true}}, RuleInstant},
		{"confirm answering PENDING, another product confirmed instantly", order(bookingsystem.Confirmed, bookingsystem.Confirmed, bookingsystem.Pending),
			orderExpect{holdID: hold, order: prior{bookingsystem.OnHold}, bookings: held, after: []string{bookingsystem.Confirmed}, instant: map[string]bool{"P0": true}}, ""},
		{"confirm leaving a booking held", order(bookingsystem.Confirmed, bookingsystem.Confirmed, bookingsystem.OnHold),
			orderExpect{holdID: hold, order: prior{bookingsystem.OnHold}, bookings: held, after: []string{bookingsystem.Confirmed}}, RuleDisagree},
		{"confirm answering the order still held", order(bookingsystem.OnHold, bookingsystem.OnHold, bookingsystem.OnHold),
			orderExpect{holdID: hold, order: prior{bookingsystem.OnHold}, bookings: held, after: []string{bookingsystem.Confirmed}}, RulePostcondition},
		{"cancel of a held order answering CANCELLED", order(bookingsystem.Cancelled, bookingsystem.Cancelled, bookingsystem.Cancelled),
			orderExpect{holdID: hold, order: prior{bookingsystem.OnHold}, bookings: held, after: []string{bookingsystem.Expired}}, RuleTransition},
		{"cancel of a held order", order(bookingsystem.Expired, bookingsystem.Expired, bookingsystem.Expired),
			orderExpect{holdID: hold, order: prior{bookingsystem.OnHold}, bookings: held, after: []string{bookingsystem.Expired}, bookingsAfter: []string{bookingsystem.Expired, bookingsystem.Rejected}}, ""},
		{"a confirmed booking moved back on hold", order(bookingsystem.OnHold, bookingsystem.OnHold),
			orderExpect{holdID: hold, order: prior{bookingsystem.Confirmed}, otherBookings: prior{bookingsystem.Confirmed}}, RuleTransition},
		{"pending resolved", order(bookingsystem.Confirmed, bookingsystem.Confirmed, bookingsystem.Rejected),
			orderExpect{holdID: hold, order: prior{bookingsystem.Confirmed}, otherBookings: prior{bookingsystem.Pending, bookingsystem.Confirmed}}, ""},
		{"an open booking's part rejected", order(bookingsystem.Confirmed, bookingsystem.Confirmed, bookingsystem.Rejected),
			orderExpect{holdID: hold, order: prior{bookingsystem.Confirmed}, otherBookings: prior{bookingsystem.Confirmed}}, RuleTransition},
		{"a booking that is not the hold's", bookingsystem.Order{ID: OrderID(hold), Status: bookingsystem.OnHold, Bookings: []bookingsystem.Booking{{UUID: BookingUUID("other", 0), Status: bookingsystem.OnHold}}},
			orderExpect{holdID: hold}, RuleStray},
		{"a booking twice", bookingsystem.Order{ID: OrderID(hold), Status: bookingsystem.OnHold, Bookings: []bookingsystem.Booking{{UUID: u0, Status: bookingsystem.OnHold}, {UUID: u0, Status: bookingsystem.OnHold}}},
			orderExpect{holdID: hold}, RuleStray},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOrder(tt.o, tt.exp)
			var rf *refusal
			switch {
			case tt.wantRule == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantRule != "" && (!errors.As(err, &rf) || rf.rule != tt.wantRule):
				t.Fatalf("err = %v, want rule %s", err, tt.wantRule)
			}
		})
	}
}

func TestNewRouter_ToleratesRegisteredMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := NewRouter(Options{Catalog: nilCatalog{}, Registerer: reg})
	b := NewRouter(Options{Catalog: nilCatalog{}, Registerer: reg}) // a second router in one process
	b.metrics.refused.WithLabelValues(RuleStray).Inc()
	if got := counter(a.metrics.refused.WithLabelValues(RuleStray)); got != 1 {
		t.Fatalf("the routers do not share their counters: %v", got)
	}
}

// nilCatalog is never called: NewRouter only needs a Catalog.
type nilCatalog struct{ Catalog }

// An operation, the settling of its failure and internal/booking's record
// of its answer all end before the write lock they run under can lapse.
func TestDeadlines_EndInsideTheLock(t *testing.T) {
	if total := OperationTimeout + SettleTimeout + booking.PublishTimeout; total >= booking.LockTTL {
		t.Fatalf("operation %s + settling %s + publish %s = %s, not inside the lock's %s",
			OperationTimeout, SettleTimeout, booking.PublishTimeout, total, booking.LockTTL)
	}
	if r := NewRouter(Options{Catalog: nilCatalog{}}); r.opts.OperationTimeout != OperationTimeout {
		t.Fatalf("default operation timeout %s, want %s", r.opts.OperationTimeout, OperationTimeout)
	}
}

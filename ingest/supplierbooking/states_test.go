package supplierbooking

import (
	"errors"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	bs "github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/booking"
)

func TestBookingTransition_DocThreeTableOnly(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		want     bool
	}{
		// Every row of doc 3's Booking table.
		{"createBooking rejected", New, bs.Rejected, true},
		{"createBooking accepted", New, bs.OnHold, true},
		{"hold lapses or released before confirmation", bs.OnHold, bs.Expired, true},
		{"confirmBooking accepted", bs.OnHold, bs.Confirmed, true},
		{"supplier acceptance pending", bs.OnHold, bs.Pending, true},
		{"supplier decision rejected", bs.Pending, bs.Rejected, true},
		{"supplier decision accepted", bs.Pending, bs.Confirmed, true},
		{"cancellation confirmed", bs.Confirmed, bs.Cancelled, true},
		// A sample of what no row lists.
		{"new straight to confirmed", New, bs.Confirmed, false},
		{"new straight to pending", New, bs.Pending, false},
		{"held booking cancelled (it expires)", bs.OnHold, bs.Cancelled, false},
		{"held booking rejected (only orders are)", bs.OnHold, bs.Rejected, false},
		{"confirmed back on hold", bs.Confirmed, bs.OnHold, false},
		{"confirmed expires", bs.Confirmed, bs.Expired, false},
		{"pending cancelled", bs.Pending, bs.Cancelled, false},
		{"pending expires", bs.Pending, bs.Expired, false},
		{"expired revived", bs.Expired, bs.OnHold, false},
		{"expired confirmed", bs.Expired, bs.Confirmed, false},
		{"rejected confirmed", bs.Rejected, bs.Confirmed, false},
		{"cancelled confirmed again", bs.Cancelled, bs.Confirmed, false},
		{"staying is not a transition", bs.OnHold, bs.OnHold, false},
		{"unknown status", bs.OnHold, "MAYBE", false},
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
		{"createBooking with a new orderId", New, bs.OnHold, true},
		{"lapse or cancelOrder before confirmation", bs.OnHold, bs.Expired, true},
		{"confirmOrder", bs.OnHold, bs.Confirmed, true},
		{"confirmOrder fails", bs.OnHold, bs.Rejected, true},
		{"cancelOrder of a confirmed order", bs.Confirmed, bs.Cancelled, true},
		{"a rejected createBooking makes no order", New, bs.Rejected, false},
		{"new straight to confirmed", New, bs.Confirmed, false},
		{"held order cancelled (it expires)", bs.OnHold, bs.Cancelled, false},
		{"confirmed expires", bs.Confirmed, bs.Expired, false},
		{"confirmed rejected", bs.Confirmed, bs.Rejected, false},
		{"expired revived", bs.Expired, bs.OnHold, false},
		{"rejected confirmed", bs.Rejected, bs.Confirmed, false},
		{"cancelled confirmed", bs.Cancelled, bs.Confirmed, false},
		{"pending is not an order status", bs.OnHold, bs.Pending, false},
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
		{bs.OnHold, bs.OnHold, true},
		{bs.OnHold, bs.Expired, true}, // one booking's own hold lapsed
		{bs.OnHold, bs.Confirmed, false},
		{bs.OnHold, bs.Pending, false},
		{bs.Confirmed, bs.Confirmed, true},
		{bs.Confirmed, bs.Pending, true},
		{bs.Confirmed, bs.Rejected, true}, // supplier's decision on a PENDING one
		{bs.Confirmed, bs.OnHold, false},
		{bs.Confirmed, bs.Expired, false},
		{bs.Cancelled, bs.Cancelled, true},
		{bs.Cancelled, bs.Confirmed, false},
		{bs.Cancelled, bs.Pending, false},
		{bs.Expired, bs.Expired, true},
		{bs.Expired, bs.OnHold, false},
		{bs.Rejected, bs.Expired, true},
		{bs.Rejected, bs.Cancelled, true}, // a confirmation reverted ("discarded or reverted")
		{bs.Rejected, bs.Confirmed, false},
		{bs.Rejected, bs.Pending, false},
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
		{"all held", []string{bs.OnHold, bs.OnHold}, bs.OnHold, true},
		{"one lapsed", []string{bs.OnHold, bs.Expired}, bs.OnHold, true},
		{"all released or lapsed", []string{bs.Expired, bs.Expired}, bs.Expired, true},
		{"rejected at creation", []string{bs.Rejected}, bs.Expired, true},
		{"all confirmed", []string{bs.Confirmed, bs.Confirmed}, bs.Confirmed, true},
		{"confirmed, one pending", []string{bs.Confirmed, bs.Pending}, bs.Confirmed, true},
		{"pending one rejected by the supplier", []string{bs.Confirmed, bs.Rejected}, bs.Confirmed, true},
		{"all cancelled", []string{bs.Cancelled, bs.Cancelled}, bs.Cancelled, true},
		{"cancelled beside a rejected one", []string{bs.Cancelled, bs.Rejected}, bs.Cancelled, true},
		{"confirmation failed half way, reverted", []string{bs.Cancelled, bs.Expired, bs.Expired}, bs.Rejected, true},
		// What all or nothing forbids: refused, never mapped.
		{"confirmed beside a held one", []string{bs.Confirmed, bs.OnHold}, bs.Confirmed, false},
		{"confirmed beside a lapsed one", []string{bs.Confirmed, bs.Expired}, bs.Confirmed, false},
		{"cancelled beside a held one", []string{bs.Cancelled, bs.OnHold}, bs.OnHold, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bks []bs.Booking
			for _, st := range tt.bookings {
				bks = append(bks, bs.Booking{Status: st})
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
	order := func(st string, bsts ...string) bs.Order {
		o := bs.Order{ID: OrderID(hold), Status: st}
		for i, s := range bsts {
			o.Bookings = append(o.Bookings, bs.Booking{UUID: BookingUUID(hold, i), Status: s, ProductID: "P" + strconv.Itoa(i)})
		}
		return o
	}
	held := map[string]prior{u0: {bs.OnHold}, u1: {bs.OnHold}}
	tests := []struct {
		name     string
		o        bs.Order
		exp      orderExpect
		wantRule string // "" accepted
	}{
		{"confirm of a held order", order(bs.Confirmed, bs.Confirmed, bs.Pending),
			orderExpect{holdID: hold, order: prior{bs.OnHold}, bookings: held, after: []string{bs.Confirmed}, bookingsAfter: []string{bs.Confirmed, bs.Pending}}, ""},
		{"confirm answering PENDING for a product confirmed instantly", order(bs.Confirmed, bs.Confirmed, bs.Pending),
			orderExpect{holdID: hold, order: prior{bs.OnHold}, bookings: held, after: []string{bs.Confirmed}, instant: map[string]bool{"P1": true}}, RuleInstant},
		{"confirm answering PENDING, another product confirmed instantly", order(bs.Confirmed, bs.Confirmed, bs.Pending),
			orderExpect{holdID: hold, order: prior{bs.OnHold}, bookings: held, after: []string{bs.Confirmed}, instant: map[string]bool{"P0": true}}, ""},
		{"confirm leaving a booking held", order(bs.Confirmed, bs.Confirmed, bs.OnHold),
			orderExpect{holdID: hold, order: prior{bs.OnHold}, bookings: held, after: []string{bs.Confirmed}}, RuleDisagree},
		{"confirm answering the order still held", order(bs.OnHold, bs.OnHold, bs.OnHold),
			orderExpect{holdID: hold, order: prior{bs.OnHold}, bookings: held, after: []string{bs.Confirmed}}, RulePostcondition},
		{"cancel of a held order answering CANCELLED", order(bs.Cancelled, bs.Cancelled, bs.Cancelled),
			orderExpect{holdID: hold, order: prior{bs.OnHold}, bookings: held, after: []string{bs.Expired}}, RuleTransition},
		{"cancel of a held order", order(bs.Expired, bs.Expired, bs.Expired),
			orderExpect{holdID: hold, order: prior{bs.OnHold}, bookings: held, after: []string{bs.Expired}, bookingsAfter: []string{bs.Expired, bs.Rejected}}, ""},
		{"a confirmed booking moved back on hold", order(bs.OnHold, bs.OnHold),
			orderExpect{holdID: hold, order: prior{bs.Confirmed}, otherBookings: prior{bs.Confirmed}}, RuleTransition},
		{"pending resolved", order(bs.Confirmed, bs.Confirmed, bs.Rejected),
			orderExpect{holdID: hold, order: prior{bs.Confirmed}, otherBookings: prior{bs.Pending, bs.Confirmed}}, ""},
		{"an open booking's part rejected", order(bs.Confirmed, bs.Confirmed, bs.Rejected),
			orderExpect{holdID: hold, order: prior{bs.Confirmed}, otherBookings: prior{bs.Confirmed}}, RuleTransition},
		{"a booking that is not the hold's", bs.Order{ID: OrderID(hold), Status: bs.OnHold, Bookings: []bs.Booking{{UUID: BookingUUID("other", 0), Status: bs.OnHold}}},
			orderExpect{holdID: hold}, RuleStray},
		{"a booking twice", bs.Order{ID: OrderID(hold), Status: bs.OnHold, Bookings: []bs.Booking{{UUID: u0, Status: bs.OnHold}, {UUID: u0, Status: bs.OnHold}}},
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

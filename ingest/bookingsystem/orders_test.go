package bookingsystem_test

import (
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// The simulated booking system's order state machine (spec doc 3, Order)
// through the client: the rows TestOrders_AllOrNothing does not walk (the
// lapse, retries of a done move) and a sample of the moves no row lists,
// each refused (400) without changing the order.
func TestOrderStateMachine(t *testing.T) {
	type step struct {
		op      string // add (a booking held 60 min), add-short (5 min), confirm, cancel, extend, lapse (61 min), wait (10 min), get
		want    string // the order's status after the step ("" when an error is wanted)
		wantErr error
	}
	rejected := bookingsystem.ErrRejected
	tests := []struct {
		name  string
		steps []step
	}{
		{"held, lapses, no way out", []step{{"add", "ON_HOLD", nil}, {"lapse", "EXPIRED", nil},
			{"confirm", "", rejected}, {"extend", "", rejected}, {"add", "", rejected}, {"cancel", "EXPIRED", nil}}},
		{"held, released, no way out", []step{{"add", "ON_HOLD", nil}, {"cancel", "EXPIRED", nil},
			{"confirm", "", rejected}, {"extend", "", rejected}, {"add", "", rejected}, {"get", "EXPIRED", nil}}},
		{"confirmed, cancelled, no way back", []step{{"add", "ON_HOLD", nil}, {"add", "ON_HOLD", nil}, {"confirm", "CONFIRMED", nil},
			{"confirm", "CONFIRMED", nil}, {"extend", "", rejected}, {"add", "", rejected}, {"lapse", "CONFIRMED", nil},
			{"cancel", "CANCELLED", nil}, {"confirm", "", rejected}, {"cancel", "CANCELLED", nil}}},
		{"confirmation fails: rejected, no way out", []step{{"add", "ON_HOLD", nil}, {"add-short", "ON_HOLD", nil}, {"wait", "ON_HOLD", nil},
			{"confirm", "", rejected}, {"get", "REJECTED", nil}, {"confirm", "", rejected}, {"cancel", "", rejected},
			{"extend", "", rejected}, {"add", "", rejected}, {"get", "REJECTED", nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
			slot := openSlot(t, e, "S1-P2", bookingsystem.OpeningHours)
			var uuids []string
			for i, s := range tt.steps {
				var o bookingsystem.Order
				var err error
				switch s.op {
				case "add", "add-short":
					r := bookingReq("S1-P2", slot)
					r.OrderID, r.HoldExpirationMinutes = "O1", 60
					if s.op == "add-short" {
						r.HoldExpirationMinutes = 5
					}
					if _, err = e.c.CreateBooking(ctx, e.conn, r); err == nil {
						uuids = append(uuids, r.UUID)
						o, err = e.c.GetOrder(ctx, e.conn, "S1", "O1")
					}
				case "confirm":
					o, err = e.c.ConfirmOrder(ctx, e.conn, "S1", "O1", bookingsystem.ConfirmRequest{})
				case "cancel":
					o, err = e.c.CancelOrder(ctx, e.conn, "S1", "O1", bookingsystem.CancelRequest{Reason: "CUSTOMER"})
				case "extend":
					o, err = e.c.ExtendOrder(ctx, e.conn, "S1", "O1", bookingsystem.ExtendRequest{Reason: "CUSTOMER_REQUESTED", HoldExpirationMinutes: 30})
				case "lapse", "wait":
					e.clock.add(map[string]time.Duration{"lapse": 61 * time.Minute, "wait": 10 * time.Minute}[s.op])
					fallthrough
				case "get":
					o, err = e.c.GetOrder(ctx, e.conn, "S1", "O1")
				}
				if s.wantErr != nil {
					if !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d %s: err %v, want %v", i, s.op, err, s.wantErr)
					}
					continue
				}
				if err != nil || o.Status != s.want || len(o.Bookings) != len(uuids) {
					t.Fatalf("step %d %s: order %s with %d bookings, err %v; want %s with %d", i, s.op, o.Status, len(o.Bookings), err, s.want, len(uuids))
				}
			}
		})
	}
}

// Doc 3, Booking: "new booking | createBooking | rejected | REJECTED", and
// Order: a rejected createBooking makes no order. REJECTED has no way out.
func TestCreateBooking_RejectedWhenTheUnitsDoNotFitMakesNoOrder(t *testing.T) {
	e := newEnv(t, bookingsim.Config{}, bookingsystem.Options{})
	as, _, err := e.c.Availability(ctx, e.conn, avReq("S1-P1", bookingsystem.StartTime))
	if err != nil {
		t.Fatal(err)
	}
	var slot string
	var vacancies int
	for _, a := range as {
		if a.Status == bookingsystem.Available || a.Status == bookingsystem.Limited {
			slot, vacancies = a.ID, *a.Vacancies
			break
		}
	}
	if slot == "" {
		t.Fatal("no open slot")
	}
	req := bookingReq("S1-P1", slot)
	req.OrderID, req.UnitItems = "O-full", make([]bookingsystem.UnitItem, vacancies+1)
	for i := range req.UnitItems {
		req.UnitItems[i] = bookingsystem.UnitItem{UnitID: "adult"}
	}
	b, err := e.c.CreateBooking(ctx, e.conn, req)
	if err != nil || b.Status != bookingsystem.Rejected || b.UTCHoldExpiration != nil {
		t.Fatalf("create: %+v %v, want REJECTED", b, err)
	}
	if _, err := e.c.GetOrder(ctx, e.conn, "S1", "O-full"); !errors.Is(err, bookingsystem.ErrNotFound) {
		t.Fatalf("order of a rejected booking: %v, want not found", err)
	}
	if _, err := e.c.ConfirmBooking(ctx, e.conn, "S1", req.UUID, bookingsystem.ConfirmRequest{}); !errors.Is(err, bookingsystem.ErrRejected) {
		t.Fatalf("confirm a rejected booking: %v", err)
	}
	if _, err := e.c.CancelBooking(ctx, e.conn, "S1", req.UUID, bookingsystem.CancelRequest{Reason: "CUSTOMER"}); !errors.Is(err, bookingsystem.ErrRejected) {
		t.Fatalf("cancel a rejected booking: %v", err)
	}
	again, _, err := e.c.Availability(ctx, e.conn, avReq("S1-P1", bookingsystem.StartTime))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range again {
		if a.ID == slot && *a.Vacancies != vacancies {
			t.Fatalf("vacancies %d → %d: a rejected booking holds nothing", vacancies, *a.Vacancies)
		}
	}
}

package supplierbooking

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/processors/bookingchange"
	"github.com/switchbackhq/switchback/schemas"
)

const pollLease = 10 * time.Millisecond

// service is internal/booking's Service over the env's Router, its real
// redis-server and catalog, on the env's clock.
func (e *env) service() *booking.Service {
	return booking.New(booking.Options{Redis: e.Redis, Publisher: e.Rec, Partner: e.router, Catalog: e.Store,
		Logger: e.Logger, PollLease: pollLease, Clock: e.clock.now})
}

// lastBookingChange is the change of the last booking event published.
func (e *env) lastBookingChange(t *testing.T) schemas.BookingRecord {
	t.Helper()
	var rec schemas.BookingRecord
	for _, env := range e.Rec.Envelopes(t) {
		if env.Type == schemas.EventBooking {
			if err := json.Unmarshal(env.Data, &rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	return rec
}

func TestService_HoldBookGetCancelOnABookingSystemSupplier(t *testing.T) {
	tests := []struct {
		name string
		book bool // book the hold and cancel the booking; else release the hold
	}{
		{"hold, book, read, cancel", true},
		{"hold, release", false},
	}
	for _, dialect := range dialects {
		for _, tt := range tests {
			t.Run(dialect+"/"+tt.name, func(t *testing.T) {
				e := startDialect(t, dialect)
				svc, p := e.service(), e.reseller()
				h, err := svc.CreateHold(ctx, p, "req-h", schemas.Hold{ID: "h-svc", Items: []schemas.HoldItem{
					item("S1-P2", 1, e.freeSlot(), 2), item("S1-P4", 2, e.freeSlot(), 1)}})
				if err != nil || h.Status != schemas.HoldActive || !h.Expires.Equal(e.clock.now().Add(15*time.Minute)) {
					t.Fatalf("hold %+v err %v", h, err)
				}
				if got, err := svc.Hold(ctx, p, "req", h.ID); err != nil || got.Status != schemas.HoldActive {
					t.Fatalf("read hold %+v err %v", got, err)
				}
				if !tt.book {
					if err := svc.ReleaseHold(ctx, p, "req", h.ID); err != nil {
						t.Fatal(err)
					}
					if st := e.simStatuses(booking.PartnerID("hold", p.ChannelID, h.ID), 2); !all(st, bookingsystem.Expired) {
						t.Fatalf("simulator statuses %v, want EXPIRED (doc 3: cancelOrder of ON_HOLD)", st)
					}
					if got, err := svc.Hold(ctx, p, "req", h.ID); err != nil || got.Status != schemas.HoldReleased {
						t.Fatalf("released hold %+v err %v", got, err)
					}
					return
				}
				res, err := svc.CreateBooking(ctx, p, "req-b", bookingFor("bk-svc", h))
				if err != nil || res.Accepted || res.Booking.Status != schemas.BookingOpen || len(res.Booking.Tickets) != wantTickets(dialect, h.Items) {
					t.Fatalf("booking %+v err %v", res, err)
				}
				if st := e.simStatuses(booking.PartnerID("hold", p.ChannelID, h.ID), 2); !all(st, bookingsystem.Confirmed) {
					t.Fatalf("simulator statuses %v, want CONFIRMED", st)
				}
				if got, err := svc.Booking(ctx, p, "req", "bk-svc"); err != nil || got.Booking.Status != schemas.BookingOpen {
					t.Fatalf("read booking %+v err %v", got, err)
				}
				got, err := svc.CancelBooking(ctx, p, "req-c", "bk-svc")
				if err != nil || got.Booking.Status != schemas.BookingCancelled {
					t.Fatalf("cancel %+v err %v", got, err)
				}
				if st := e.simStatuses(booking.PartnerID("hold", p.ChannelID, h.ID), 2); !all(st, bookingsystem.Cancelled) {
					t.Fatalf("simulator statuses %v, want CANCELLED", st)
				}
				if rec := e.lastBookingChange(t); rec.Change != schemas.ChangeCanceled || rec.CanceledBy != schemas.CanceledByReseller {
					t.Fatalf("last booking event %+v, want canceled by the reseller", rec)
				}
				// Cancelling again changes nothing and calls nothing.
				calls := e.sim.Calls()
				if again, err := svc.CancelBooking(ctx, p, "req-c2", "bk-svc"); err != nil || again.Booking.Status != schemas.BookingCancelled || e.sim.Calls() != calls {
					t.Fatalf("second cancel %+v err %v calls %d→%d", again, err, calls, e.sim.Calls())
				}
			})
		}
	}
}

func TestService_PendingBookingResolvesThroughThePoller(t *testing.T) {
	tests := []struct {
		name         string
		accept       [2]bool
		wantStatus   string
		wantSim      []string
		wantCanceler string
	}{
		{"supplier accepts both", [2]bool{true, true}, schemas.BookingOpen, []string{bookingsystem.Confirmed, bookingsystem.Confirmed}, ""},
		// All or nothing: the accepted one is cancelled when the other is
		// rejected.
		{"supplier rejects one", [2]bool{true, false}, schemas.BookingCancelled, []string{bookingsystem.Cancelled, bookingsystem.Rejected}, schemas.CanceledByPartner},
	}
	for _, dialect := range dialects {
		for _, tt := range tests {
			t.Run(dialect+"/"+tt.name, func(t *testing.T) {
				e := startDialect(t, dialect)
				svc, p := e.service(), e.reseller()
				s1, _ := e.slotWithRoom(t, "S1-P3", "S1-P3-O1", 2)
				s2, _ := e.slotWithRoom(t, "S1-P3", "S1-P3-O2", 1)
				h, err := svc.CreateHold(ctx, p, "req-h", schemas.Hold{ID: "h-pending", Items: []schemas.HoldItem{item("S1-P3", 1, s1, 2), item("S1-P3", 2, s2, 1)}})
				if err != nil {
					t.Fatal(err)
				}
				res, err := svc.CreateBooking(ctx, p, "req-b", bookingFor("bk-pending", h))
				if err != nil || !res.Accepted || res.Booking.Status != schemas.BookingPending || len(res.Booking.Tickets) != 0 {
					t.Fatalf("booking %+v err %v, want accepted and PENDING (instantConfirmation false)", res, err)
				}
				if _, err := svc.CancelBooking(ctx, p, "req-c", "bk-pending"); codeOf(err) != "CONFLICT" {
					t.Fatalf("cancel while PENDING: %v, want CONFLICT", err)
				}
				poller := bookingchange.NewPoller(bookingchange.PollerOptions{Bookings: svc, Logger: e.Logger})
				poller.Poll(ctx) // nothing decided yet
				if rec, _ := svc.Record(ctx, p.ChannelID, "bk-pending"); rec.Booking.Status != schemas.BookingPending || !rec.AwaitingTickets {
					t.Fatalf("before the decision: %+v", rec)
				}
				for i, ok := range tt.accept {
					if err := e.sim.Decide(BookingUUID(booking.PartnerID("hold", p.ChannelID, h.ID), i), ok); err != nil {
						t.Fatal(err)
					}
				}
				var rec schemas.BookingRecord
				for deadline := time.Now().Add(10 * time.Second); ; {
					e.clock.add(2 * pollLease) // the claimed booking is due again
					poller.Poll(ctx)
					if rec, err = svc.Record(ctx, p.ChannelID, "bk-pending"); err != nil {
						t.Fatal(err)
					}
					if rec.Booking.Status != schemas.BookingPending {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the booking never left PENDING")
					}
				}
				if rec.Booking.Status != tt.wantStatus || rec.AwaitingTickets || rec.CanceledBy != tt.wantCanceler {
					t.Fatalf("record %+v, want %s", rec, tt.wantStatus)
				}
				if want := wantTickets(dialect, h.Items); tt.wantStatus == schemas.BookingOpen && (len(rec.Booking.Tickets) != want || rec.Change != schemas.ChangeTicketsAdded) {
					t.Fatalf("resolved booking: %d tickets, change %s; want %d, tickets-added", len(rec.Booking.Tickets), rec.Change, want)
				}
				for i, want := range tt.wantSim {
					if got := e.sim.BookingStatus(BookingUUID(booking.PartnerID("hold", p.ChannelID, h.ID), i)); got != want {
						t.Fatalf("simulator booking %d is %s, want %s", i, got, want)
					}
				}
			})
		}
	}
}

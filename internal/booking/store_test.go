package booking

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func newService(t *testing.T, now time.Time) *Service {
	t.Helper()
	rdb := testharness.RedisClient(t, 0)
	return New(Options{Redis: rdb, Clock: func() time.Time { return now }})
}

func apply(t *testing.T, s *Service, typ string, version int64, rec any) {
	t.Helper()
	data, _ := json.Marshal(rec)
	if _, err := s.Apply(context.Background(), schemas.Envelope{ID: "e", Type: typ, Version: version, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// TestOpenBookings_CountsWhatIsNotFinal: a supplier's ACTIVE unexpired
// holds not used by a booking, and its bookings neither CANCELLED nor
// REDEEMED until 30 days after their last start time, keep it from being
// deleted; each change of a record moves it in or out.
func TestOpenBookings_CountsWhatIsNotFinal(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		typ  string
		rec  any
		open bool
	}{
		{"active hold", schemas.EventHold, schemas.HoldRecord{ChannelID: "c", SupplierID: "s", Hold: schemas.Hold{ID: "h", Status: schemas.HoldActive, Expires: now.Add(time.Minute)}}, true},
		{"expired hold", schemas.EventHold, schemas.HoldRecord{ChannelID: "c", SupplierID: "s", Hold: schemas.Hold{ID: "h", Status: schemas.HoldActive, Expires: now.Add(-time.Minute)}}, false},
		{"released hold", schemas.EventHold, schemas.HoldRecord{ChannelID: "c", SupplierID: "s", Hold: schemas.Hold{ID: "h", Status: schemas.HoldReleased, Expires: now.Add(time.Minute)}}, false},
		{"hold used by a booking", schemas.EventHold, schemas.HoldRecord{ChannelID: "c", SupplierID: "s", BookingID: "b", Hold: schemas.Hold{ID: "h", Status: schemas.HoldActive, Expires: now.Add(time.Minute)}}, false},
		{"open booking ahead", schemas.EventBooking, booked("c", "b", schemas.BookingOpen, now.AddDate(0, 0, 3)), true},
		{"pending booking", schemas.EventBooking, booked("c", "b", schemas.BookingPending, now.AddDate(0, 0, 3)), true},
		{"open booking just past", schemas.EventBooking, booked("c", "b", schemas.BookingOpen, now.AddDate(0, 0, -29)), true},
		{"open booking long past", schemas.EventBooking, booked("c", "b", schemas.BookingOpen, now.AddDate(0, 0, -31)), false},
		{"open booking without a start time", schemas.EventBooking, booked("c", "b", schemas.BookingOpen, time.Time{}), true},
		{"cancelled booking", schemas.EventBooking, booked("c", "b", schemas.BookingCancelled, now.AddDate(0, 0, 3)), false},
		{"redeemed booking", schemas.EventBooking, booked("c", "b", schemas.BookingRedeemed, now.AddDate(0, 0, 3)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t, now)
			apply(t, s, tt.typ, 1, tt.rec)
			n, err := s.OpenBookings(context.Background(), "s")
			if err != nil || (n == 1) != tt.open || n > 1 {
				t.Fatalf("OpenBookings = %d, %v; want open=%v", n, err, tt.open)
			}
			if other, _ := s.OpenBookings(context.Background(), "other"); other != 0 {
				t.Fatalf("another supplier counts %d", other)
			}
		})
	}
	t.Run("a booking cancelled later leaves", func(t *testing.T) {
		s := newService(t, now)
		apply(t, s, schemas.EventBooking, 1, booked("c", "b", schemas.BookingOpen, now.AddDate(0, 0, 3)))
		apply(t, s, schemas.EventBooking, 2, booked("c", "b", schemas.BookingCancelled, now.AddDate(0, 0, 3)))
		if n, _ := s.OpenBookings(context.Background(), "s"); n != 0 {
			t.Fatalf("OpenBookings = %d after the cancel, want 0", n)
		}
	})
}

func booked(channel, id, status string, start time.Time) schemas.BookingRecord {
	return schemas.BookingRecord{ChannelID: channel, SupplierID: "s", Booking: schemas.Booking{ID: id, Status: status,
		Items: []schemas.BookingItem{{SupplierID: "s", ProductID: "p", RateID: "r", Quantity: 1, StartTime: start}}}}
}

// TestRecords_AreKeptPerChannel: the same booking id in two channels is
// two records (issue 18, finding 4).
func TestRecords_AreKeptPerChannel(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := newService(t, now)
	apply(t, s, schemas.EventBooking, 1, booked("chan-a", "bk-1", schemas.BookingOpen, now.AddDate(0, 0, 1)))
	apply(t, s, schemas.EventBooking, 1, booked("chan-b", "bk-1", schemas.BookingCancelled, now.AddDate(0, 0, 1)))
	a, errA := s.Record(context.Background(), "chan-a", "bk-1")
	b, errB := s.Record(context.Background(), "chan-b", "bk-1")
	if errA != nil || errB != nil || a.Booking.Status != schemas.BookingOpen || b.Booking.Status != schemas.BookingCancelled {
		t.Fatalf("records %+v %v / %+v %v", a, errA, b, errB)
	}
	if _, err := s.Record(context.Background(), "chan-c", "bk-1"); err == nil {
		t.Fatal("a third channel finds a record")
	}
	first, retry := PartnerID("booking", "chan-a", "bk-1"), PartnerID("booking", "chan-a", "bk-1")
	if first == PartnerID("booking", "chan-b", "bk-1") || first != retry {
		t.Fatal("partner ids must differ by channel and be the same for a retry")
	}
}

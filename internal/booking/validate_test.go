package booking

import (
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

func TestCovers(t *testing.T) {
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	hold := schemas.Hold{Items: []schemas.HoldItem{
		{SupplierID: "S", ProductID: "P", RateID: "R1", Quantity: 2, At: at, AvailabilityID: "A1"},
		{SupplierID: "S", ProductID: "P", RateID: "R2", Quantity: 1},
	}}
	item := func(rid string, q int, start time.Time, av string) schemas.BookingItem {
		return schemas.BookingItem{SupplierID: "S", ProductID: "P", RateID: rid, Quantity: q, StartTime: start, AvailabilityID: av}
	}
	tests := []struct {
		name  string
		items []schemas.BookingItem
		ok    bool
		bad   int
	}{
		{"exactly the hold", []schemas.BookingItem{item("R1", 2, at, "A1"), item("R2", 1, time.Time{}, "")}, true, 0},
		{"less than held", []schemas.BookingItem{item("R1", 1, at, "")}, true, 0},
		{"split over two items", []schemas.BookingItem{item("R1", 1, at, ""), item("R1", 1, time.Time{}, "A1")}, true, 0},
		{"more than held", []schemas.BookingItem{item("R1", 3, at, "")}, false, 0},
		{"more than held over two items", []schemas.BookingItem{item("R1", 2, at, ""), item("R1", 1, at, "")}, false, 1},
		{"another rate", []schemas.BookingItem{item("R3", 1, at, "")}, false, 0},
		{"another start time", []schemas.BookingItem{item("R1", 1, at.Add(time.Hour), "")}, false, 0},
		{"another availability", []schemas.BookingItem{item("R1", 1, at, "A2")}, false, 0},
		{"another product", []schemas.BookingItem{{SupplierID: "S", ProductID: "Q", RateID: "R1", Quantity: 1}}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad, ok := covers(hold, tc.items)
			if ok != tc.ok || (!ok && bad != tc.bad) {
				t.Fatalf("covers = %d, %v; want %d, %v", bad, ok, tc.bad, tc.ok)
			}
		})
	}
}

func TestHoldView_ExpiredActiveHoldIsExpired(t *testing.T) {
	exp := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	rec := schemas.HoldRecord{Hold: schemas.Hold{ID: "h", Status: schemas.HoldActive, Expires: exp}}
	tests := []struct {
		name   string
		status string
		now    time.Time
		want   string
	}{
		{"active before expiry", schemas.HoldActive, exp.Add(-time.Second), schemas.HoldActive},
		{"active at expiry", schemas.HoldActive, exp, schemas.HoldExpired},
		{"released after expiry", schemas.HoldReleased, exp.Add(time.Hour), schemas.HoldReleased},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec.Hold.Status = tc.status
			if got := HoldView(rec, tc.now).Status; got != tc.want {
				t.Fatalf("status = %s, want %s", got, tc.want)
			}
		})
	}
}

// FuzzBookingBody: a booking body from outside, decoded as the API does,
// through the checks that need no server (item ids and quantities, one
// supplier, hold coverage). Never a panic; what checkItems accepts has
// every id and a quantity in range, all of one supplier.
func FuzzBookingBody(f *testing.F) {
	f.Add([]byte(`{"booking":{"id":"b1","holdId":"h1","items":[{"supplierId":"s1","productId":"p1","rateId":"r1","quantity":2,"startTime":"2026-11-22T09:00:00Z"}]}}`))
	f.Add([]byte(`{"booking":{"id":"b1","items":[{"supplierId":"s1","productId":"p1","rateId":"r1","quantity":0}]}}`))
	f.Add([]byte(`{"booking":{"id":"b1","items":[]}}`))
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	hold := schemas.Hold{Items: []schemas.HoldItem{{SupplierID: "s1", ProductID: "p1", RateID: "r1", Quantity: 2, At: at}}}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in struct {
			Booking *schemas.Booking `json:"booking"`
		}
		if httpapi.DecodeJSON(body, &in) != nil || in.Booking == nil {
			return
		}
		b := *in.Booking
		sid, err := checkItems("booking", len(b.Items), func(i int) (itemRef, int) {
			it := b.Items[i]
			return itemRef{it.SupplierID, it.ProductID, it.RateID}, it.Quantity
		})
		_, _ = covers(hold, b.Items)
		if err != nil {
			return
		}
		for _, it := range b.Items {
			if it.SupplierID != sid || it.ProductID == "" || it.RateID == "" || it.Quantity < 1 || it.Quantity > MaxQuantity {
				t.Fatalf("accepted item %+v (supplier %q)", it, sid)
			}
		}
		// Dates: within one year back and two years ahead, so that no
		// DateTime column downstream can wrap (issue 18).
		if checkBookingDates(b, at) != nil {
			return
		}
		from, until := bounds.Window(at)
		for _, it := range b.Items {
			if !it.StartTime.IsZero() && (it.StartTime.Before(from) || it.StartTime.After(until)) {
				t.Fatalf("accepted start time %s outside %s..%s", it.StartTime, from, until)
			}
		}
	})
}

// TestDates_OfHoldsAndBookingsAreBounded: issue 18 found holds at years
// 0001 and 9999 accepted; a time outside one year back to two years ahead
// is 400 INVALID_FIELD naming the item's field.
func TestDates_OfHoldsAndBookingsAreBounded(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		at    time.Time
		field string // "" accepted
	}{
		{"tomorrow", now.AddDate(0, 0, 1), ""},
		{"half a year back", now.AddDate(0, -6, 0), ""},
		{"almost two years ahead", now.AddDate(2, 0, -1), ""},
		{"year 0001", time.Date(1, 1, 1, 9, 0, 0, 0, time.UTC), "items[0]"},
		{"year 9999", time.Date(9999, 12, 31, 9, 0, 0, 0, time.UTC), "items[0]"},
		{"1970 (a wrapped DateTime)", time.Date(1970, 1, 1, 6, 28, 15, 0, time.UTC), "items[0]"},
		{"two years and a week ahead", now.AddDate(2, 0, 7), "items[0]"},
		{"a year and a week back", now.AddDate(-1, 0, -7), "items[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			herr := checkHoldDates(schemas.Hold{Items: []schemas.HoldItem{{At: tt.at}}}, now)
			berr := checkBookingDates(schemas.Booking{Items: []schemas.BookingItem{{StartTime: tt.at}}}, now)
			for _, c := range []struct {
				err   error
				field string
			}{{herr, "hold.items[0].at"}, {berr, "booking.items[0].startTime"}} {
				if tt.field == "" {
					if c.err != nil {
						t.Fatalf("%s refused: %v", c.field, c.err)
					}
					continue
				}
				var fe *domainerr.FieldError
				if !errors.As(c.err, &fe) || fe.Field != c.field {
					t.Fatalf("err %v, want INVALID_FIELD on %s", c.err, c.field)
				}
			}
		})
	}
	age := 200
	err := checkBookingDates(schemas.Booking{Items: []schemas.BookingItem{{Traveler: &schemas.Traveler{Age: &age}}}}, now)
	var fe *domainerr.FieldError
	if !errors.As(err, &fe) || fe.Field != "booking.items[0].traveler.age" {
		t.Fatalf("age 200: %v", err)
	}
}

package bookingsystem_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
)

// Every parser of booking-system answers: no panic, a whole-body failure
// is ErrMalformed, and nothing accepted breaks a data rule.

func checkErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, bookingsystem.ErrMalformed) {
		t.Fatalf("error %v is not ErrMalformed", err)
	}
}

func idOK(id string) bool { return id != "" && len([]rune(id)) <= bookingsystem.MaxIDLength }

func FuzzParseSuppliers(f *testing.F) {
	f.Add([]byte(`[{"id":"S1","name":"n","endpoint":"https://bs.example/v2","contact":{"website":"w"}}]`))
	f.Add([]byte(`[{"id":"S1","endpoint":"ftp://x"},{"id":"S1","endpoint":"http://a"}]`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := bookingsystem.ParseSuppliers(body)
		checkErr(t, err)
		for _, s := range out {
			if !idOK(s.ID) || s.Endpoint == "" {
				t.Fatalf("accepted %+v", s)
			}
		}
	})
}

func FuzzParseProducts(f *testing.F) {
	f.Add([]byte(`[{"id":"P1","timeZone":"UTC","availabilityType":"START_TIME","options":[{"id":"O1","units":[{"id":"adult"}]}]}]`))
	f.Add([]byte(`[{"id":"P1","timeZone":"Europe/Paris","availabilityType":"OPENING_HOURS","options":[]},{"id":3}]`))
	f.Add([]byte(`[null]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := bookingsystem.ParseProducts(body)
		checkErr(t, err)
		for _, p := range out {
			if !idOK(p.ID) || len(p.Options) == 0 || (p.AvailabilityType != bookingsystem.StartTime && p.AvailabilityType != bookingsystem.OpeningHours) {
				t.Fatalf("accepted %+v", p)
			}
		}
	})
}

func FuzzParseAvailability(f *testing.F) {
	f.Add([]byte(`[{"id":"a","optionId":"O1","localDateTimeStart":"2026-11-23T09:00:00.5+01:00","localDateTimeEnd":"2026-11-23T11:00:00+01:00","status":"AVAILABLE","vacancies":3}]`), false)
	f.Add([]byte(`[{"id":"a","optionId":"O1","localDateTimeStart":"2026-11-23T09:00:00Z","localDateTimeEnd":"2026-11-23T12:00:00Z","status":"FREESALE"},{"id":"b","optionId":"O1","localDateTimeStart":"2026-11-23T12:00:00Z","localDateTimeEnd":"2026-11-23T13:00:00Z","status":"FREESALE"}]`), true)
	f.Add([]byte(`[{"id":"a","vacancies":-1}]`), false)
	f.Fuzz(func(t *testing.T, body []byte, opening bool) {
		typ := bookingsystem.StartTime
		if opening {
			typ = bookingsystem.OpeningHours
		}
		out, _, err := bookingsystem.ParseAvailability(body, bookingsystem.AvailabilityExpect{AvailabilityType: typ,
			LocalDateStart: "2026-11-22", LocalDateEnd: "2026-12-01"})
		checkErr(t, err)
		for i, a := range out {
			switch {
			case !idOK(a.ID) || !idOK(a.OptionID),
				!slices.Contains([]string{"FREESALE", "AVAILABLE", "LIMITED", "SOLD_OUT", "CLOSED"}, a.Status),
				opening != (a.Status == bookingsystem.Freesale),
				a.Vacancies != nil && *a.Vacancies < 0,
				!a.LocalDateTimeStart.Before(a.LocalDateTimeEnd),
				a.LocalDateTimeStart.Nanosecond() != 0 || a.LocalDateTimeEnd.Nanosecond() != 0:
				t.Fatalf("accepted %+v", a)
			}
			for _, b := range out[i+1:] {
				if opening && a.OptionID == b.OptionID && !a.LocalDateTimeEnd.Before(b.LocalDateTimeStart) && !b.LocalDateTimeEnd.Before(a.LocalDateTimeStart) &&
					a.LocalDateTimeStart.Format("2006-01-02") == b.LocalDateTimeStart.Format("2006-01-02") {
					t.Fatalf("accepted touching ranges %+v %+v", a, b)
				}
			}
		}
	})
}

const bookingSeed = `{"uuid":"0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b","status":"ON_HOLD","utcHoldExpiration":"2026-11-22T08:30:00.25Z","productId":"P1","optionId":"O1","availability":{"id":"a","localDateTimeStart":"2026-11-23T09:00:00Z","localDateTimeEnd":"2026-11-23T11:00:00Z"},"unitItems":[{"unitId":"adult"}]}`

func FuzzParseBooking(f *testing.F) {
	f.Add([]byte(bookingSeed))
	f.Add([]byte(`{"uuid":"x","status":"MAYBE"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, ps, err := bookingsystem.ParseBooking(body, bookingsystem.BookingExpect{})
		checkParsedBooking(t, b, ps, err, true)
	})
}

// checkParsedBooking holds a parsed booking to what both dialects'
// parsers promise: an error or problems return no booking, an accepted one
// has a known status and a usable product id and, where holdExpires (doc
// 3's v2 rule; OCTO makes it nullable), a hold has its expiry.
func checkParsedBooking(t *testing.T, b bookingsystem.Booking, ps []bookingsystem.Problem, err error, holdExpires bool) {
	t.Helper()
	checkErr(t, err)
	if err != nil || ps != nil {
		if b.UUID != "" {
			t.Fatal("a rejected booking was returned")
		}
		return
	}
	if !slices.Contains([]string{"ON_HOLD", "EXPIRED", "PENDING", "REJECTED", "CONFIRMED", "CANCELLED"}, b.Status) ||
		!idOK(b.ProductID) || (holdExpires && b.Status == "ON_HOLD" && b.UTCHoldExpiration == nil) {
		t.Fatalf("accepted %+v", b)
	}
}

func FuzzParseOrder(f *testing.F) {
	f.Add([]byte(`{"id":"O1","status":"ON_HOLD","utcExpiresAt":"2026-11-22T08:30:00Z","bookings":[` + bookingSeed + `]}`))
	f.Add([]byte(`{"id":"O1","status":"CONFIRMED","bookings":[{"uuid":"bad"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		o, ps, err := bookingsystem.ParseOrder(body, bookingsystem.OrderExpect{})
		checkErr(t, err)
		if err != nil || ps != nil {
			if o.ID != "" {
				t.Fatal("a rejected order was returned")
			}
			return
		}
		if !idOK(o.ID) {
			t.Fatalf("accepted %+v", o)
		}
	})
}

func FuzzParsePriceSchedule(f *testing.F) {
	f.Add([]byte(`[{"optionId":"O1","localDateStart":"2026-11-22","localDateEnd":"2026-12-01","unitPricing":[{"unitId":"adult","currency":"EUR","currencyPrecision":2,"retail":5000,"net":4000}]}]`))
	f.Add([]byte(`[{"optionId":"O1","localDateStart":"2026-12-01","localDateEnd":"2026-11-22"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := bookingsystem.ParsePriceSchedule(body)
		checkErr(t, err)
		for _, e := range out {
			if !idOK(e.OptionID) || e.LocalDateStart >= e.LocalDateEnd {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

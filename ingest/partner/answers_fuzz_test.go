package partner

import (
	"errors"
	"testing"

	"github.com/switchbackhq/switchback/schemas"
)

// FuzzParseHold: any partner answer to a hold call (spec doc 2) is a hold
// with an id and no negative quantity, its times in UTC, or ErrMalformed;
// never a panic. The answer must echo the request id.
func FuzzParseHold(f *testing.F) {
	f.Add([]byte(`{"hold":{"id":"h1","status":"ON_HOLD","items":[{"rateId":"r","quantity":2}],"expires":"2026-11-22T10:00:00+01:00"},"meta":{"reqId":"r"}}`))
	f.Add([]byte(`{"hold":{"id":"","items":[]},"meta":{"reqId":"r"}}`))
	f.Add([]byte(`{"hold":null,"meta":{"reqId":"r"}}`))
	f.Add([]byte(`{"hold":{"id":"h","items":[{"quantity":-1}]},"meta":{"reqId":"x"}}`))
	f.Add([]byte(`{"meta":{"reqId":"r"}}{}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var h schemas.Hold
		err := parseHold(body, "r", &h)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if h.ID == "" {
			t.Fatal("accepted a hold without id")
		}
		for _, it := range h.Items {
			if it.Quantity < 0 {
				t.Fatalf("accepted a negative quantity: %+v", it)
			}
		}
		if h.Expires.Location().String() != "UTC" || h.Retrieved.Location().String() != "UTC" {
			t.Fatalf("times not in UTC: %v %v", h.Expires, h.Retrieved)
		}
	})
}

// FuzzParseBooking: likewise for a booking answer.
func FuzzParseBooking(f *testing.F) {
	f.Add([]byte(`{"booking":{"id":"b1","status":"CONFIRMED","items":[{"rateId":"r","quantity":1,"startTime":"2026-11-22T09:00:00+02:00"}]},"meta":{"reqId":"r"}}`))
	f.Add([]byte(`{"booking":{"id":"b1","items":[{"quantity":-3}]},"meta":{"reqId":"r"}}`))
	f.Add([]byte(`{"booking":{},"meta":{}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b schemas.Booking
		err := parseBooking(body, "r", &b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if b.ID == "" {
			t.Fatal("accepted a booking without id")
		}
		for _, it := range b.Items {
			if it.Quantity < 0 {
				t.Fatalf("accepted a negative quantity: %+v", it)
			}
			if it.StartTime.Location().String() != "UTC" {
				t.Fatalf("start time not in UTC: %v", it.StartTime)
			}
		}
	})
}

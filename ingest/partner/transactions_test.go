package partner_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/schemas"
)

func testHold() schemas.Hold {
	return schemas.Hold{ID: "h1", Items: []schemas.HoldItem{{SupplierID: "S1", ProductID: "P1", RateID: "R1", Quantity: 2}}}
}

func TestHoldsAndBookings_AgainstTheSimulatedPartner(t *testing.T) {
	s, url := sim(t, partnersim.Config{TxConfig: partnersim.TxConfig{HoldTTL: time.Hour}})
	c := partner.NewClient(partner.Options{Outbound: allowLoopback})
	ctx := context.Background()
	h, err := c.CreateHold(ctx, conn(url), testHold(), "req-h")
	if err != nil || h.ID != "h1" || h.Status != schemas.HoldActive || !h.Expires.Equal(t0.Add(time.Hour)) {
		t.Fatalf("create hold: %+v %v", h, err)
	}
	b := schemas.Booking{ID: "b1", HoldID: "h1", Items: []schemas.BookingItem{{SupplierID: "S1", ProductID: "P1", RateID: "R1", Quantity: 2}}}
	got, accepted, err := c.CreateBooking(ctx, conn(url), b, "req-b")
	if err != nil || accepted || got.Status != schemas.BookingOpen || len(got.Tickets) != 1 {
		t.Fatalf("create booking: %+v %v %v", got, accepted, err)
	}
	if _, _, err := c.CreateBooking(ctx, conn(url), b, "req-b2"); err != nil || s.BookingsCreated() != 1 {
		t.Fatalf("replay: %v, created %d", err, s.BookingsCreated())
	}
	if err := c.CancelBooking(ctx, conn(url), "b1", "req-c"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetBooking(ctx, conn(url), "b1", "req-g"); err != nil || got.Status != schemas.BookingCancelled {
		t.Fatalf("get: %+v %v", got, err)
	}
	if err := c.ReleaseHold(ctx, conn(url), "h1", "req-r"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetHold(ctx, conn(url), "h1", "req-gh"); err != nil || got.Status != schemas.HoldReleased {
		t.Fatalf("get hold: %+v %v", got, err)
	}
	// A booking on a released hold is the partner's 409.
	b.ID = "b2"
	if _, _, err := c.CreateBooking(ctx, conn(url), b, "req-b3"); !errors.Is(err, partner.ErrConflict) {
		t.Fatalf("booking on a released hold: %v", err)
	}
	if _, err := c.GetBooking(ctx, conn(url), "nope", "req-n"); !errors.Is(err, partner.ErrNotFound) {
		t.Fatalf("unknown booking: %v", err)
	}
}

func TestCreateBooking_AcceptedIs202(t *testing.T) {
	_, url := sim(t, partnersim.Config{TxConfig: partnersim.TxConfig{AcceptBookings: true, TicketsAfter: time.Hour}})
	c := partner.NewClient(partner.Options{Outbound: allowLoopback})
	if _, err := c.CreateHold(context.Background(), conn(url), testHold(), "r1"); err != nil {
		t.Fatal(err)
	}
	b := schemas.Booking{ID: "b1", HoldID: "h1", Items: []schemas.BookingItem{{SupplierID: "S1", ProductID: "P1", RateID: "R1", Quantity: 1}}}
	got, accepted, err := c.CreateBooking(context.Background(), conn(url), b, "r2")
	if err != nil || !accepted || got.Status != schemas.BookingPending || len(got.Tickets) != 0 {
		t.Fatalf("accepted booking: %+v %v %v", got, accepted, err)
	}
}

func TestWriteCalls_StatusMappingAndReqIDCheck(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   error
		kind   string
	}{
		{"409", 409, `{"code":"CONFLICT","message":"internal partner detail"}`, partner.ErrConflict, partner.KindStatus},
		{"413", 413, `{}`, partner.ErrTooLarge, partner.KindStatus},
		{"400", 400, `{}`, partner.ErrRejected, partner.KindStatus},
		{"500", 500, `{}`, partner.ErrUnavailable, partner.KindStatus},
		{"reqId mismatch", 201, `{"hold":{"id":"h1","items":[]},"meta":{"reqId":"other"}}`, partner.ErrUnavailable, partner.KindMalformed},
		{"no hold", 201, `{"meta":{"reqId":"req-1"}}`, partner.ErrUnavailable, partner.KindMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Request-ID") != "req-1" || r.Header.Get("X-API-Key") != "k" {
					w.WriteHeader(418)
					return
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			_, err := partner.NewClient(partner.Options{Outbound: allowLoopback}).CreateHold(context.Background(), conn(ts.URL), testHold(), "req-1")
			var ce *partner.CallError
			if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.Kind != tc.kind {
				t.Fatalf("err = %v", err)
			}
			if tc.status == 409 && errors.Is(err, partner.ErrConflict) {
				var coded interface{ ErrorCode() string }
				if !errors.As(err, &coded) || coded.ErrorCode() != "CONFLICT" {
					t.Fatalf("code = %v", err)
				}
			}
		})
	}
}

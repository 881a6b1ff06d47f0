package supplierbooking

import (
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
	"github.com/switchbackhq/switchback/schemas"
)

// TestExtendHold_HoldsEveryBookingLongerInEitherDialect: a held order
// (v2: extendOrder) or an OCTO hold's bookings (one by one) are held
// minutes more from now, the expiry the system answers; a hold no longer
// held is refused, and a booking system capping the extension gives its
// own expiry.
func TestExtendHold_HoldsEveryBookingLongerInEitherDialect(t *testing.T) {
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			e := startWith(t, dialect, func(c *bookingsim.Config) { c.MaxExtendMinutes = 45 })
			h := schemas.Hold{ID: "hold-extend", Items: []schemas.HoldItem{item("S1-P2", 1, e.freeSlot(), 2), item("S1-P2", 2, e.freeSlot(), 1)}}
			if _, err := e.router.CreateHoldFor(ctx, sid, catalogtest.ChannelA, h, "req"); err != nil {
				t.Fatal(err)
			}
			e.clock.add(5 * time.Minute)
			for _, tc := range []struct {
				minutes int
				want    time.Duration
			}{{30, 30 * time.Minute}, {120, 45 * time.Minute}} { // capped by the system
				until, err := e.router.ExtendHold(ctx, sid, h.ID, tc.minutes, "req")
				if err != nil {
					t.Fatalf("extend %d: %v", tc.minutes, err)
				}
				if want := e.clock.now().Add(tc.want); !until.Equal(want) {
					t.Fatalf("extend %d: until %s, want %s", tc.minutes, until, want)
				}
				for _, b := range e.holdBookings(t, h.ID, 2) {
					if b.Status != bookingsystem.OnHold || b.UTCHoldExpiration == nil || !b.UTCHoldExpiration.Equal(until) {
						t.Fatalf("booking %+v: want ON_HOLD until %s", b, until)
					}
				}
			}
			if err := e.router.ReleaseHold(ctx, sid, h.ID, "req"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.router.ExtendHold(ctx, sid, h.ID, 10, "req"); err == nil || errors.Is(err, booking.ErrNotExtendable) {
				t.Fatalf("extend of a released hold: %v, want a refusal of its state", err)
			}
		})
	}
}

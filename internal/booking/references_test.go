package booking

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// TestReferences_FindHoldsByResellerAndSupplierReference: Apply keeps, from
// the records alone, a hold's id under its reseller reference (the hold's
// ext, then its booking's resellerBookingRef, the booking naming the hold)
// and under its SupplierReference, within its channel only.
func TestReferences_FindHoldsByResellerAndSupplierReference(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	s := newService(t, now)
	apply(t, s, schemas.EventHold, 1, schemas.HoldRecord{ChannelID: "c", SupplierID: "s",
		Hold: schemas.Hold{ID: "h1", Status: schemas.HoldActive, Ext: map[string]string{ExtResellerReference: "R-1"}}})
	apply(t, s, schemas.EventHold, 1, schemas.HoldRecord{ChannelID: "other", SupplierID: "s",
		Hold: schemas.Hold{ID: "h9", Status: schemas.HoldActive, Ext: map[string]string{ExtResellerReference: "R-1"}}})
	b := booked("c", "b1", schemas.BookingOpen, now.AddDate(0, 0, 3))
	b.Booking.HoldID, b.Booking.ResellerBookingRef = "h1", "R-2"
	apply(t, s, schemas.EventBooking, 1, b)

	for _, tc := range []struct {
		name string
		get  func() ([]string, error)
		want []string
	}{
		{"the hold's reference", func() ([]string, error) { return s.HoldsByResellerReference(ctx, "c", "R-1") }, []string{"h1"}},
		{"its booking's reference names the hold", func() ([]string, error) { return s.HoldsByResellerReference(ctx, "c", "R-2") }, []string{"h1"}},
		{"another channel's", func() ([]string, error) { return s.HoldsByResellerReference(ctx, "other", "R-1") }, []string{"h9"}},
		{"unknown reference", func() ([]string, error) { return s.HoldsByResellerReference(ctx, "c", "R-3") }, nil},
		{"supplier reference", func() ([]string, error) { return s.HoldsBySupplierReference(ctx, "c", SupplierReference("c", "h1")) }, []string{"h1"}},
		{"supplier reference of another channel", func() ([]string, error) {
			return s.HoldsBySupplierReference(ctx, "other", SupplierReference("c", "h1"))
		}, nil},
		{"empty reference", func() ([]string, error) { return s.HoldsByResellerReference(ctx, "c", "") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("%v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestSupplierReference_IsStableShortAndUnambiguous(t *testing.T) {
	a, b := SupplierReference("c", "h1"), SupplierReference("c", "h1")
	if a != b {
		t.Fatalf("%s then %s for the same hold", a, b)
	}
	if !regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{10}$`).MatchString(a) {
		t.Errorf("%q: want 10 characters of Crockford base32", a)
	}
	if a == SupplierReference("c2", "h1") || a == SupplierReference("c", "h2") {
		t.Errorf("%s shared by another hold", a)
	}
}

// TestExtendHold_RefusesBadMinutesAndUnknownHolds: what is refused before
// the supplier's system is asked.
func TestExtendHold_RefusesBadMinutesAndUnknownHolds(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := newService(t, now)
	p := principals.Principal{ID: "r1", Role: principals.RoleReseller, ChannelID: "c"}
	for _, tc := range []struct {
		name    string
		minutes int
		want    error
	}{
		{"zero minutes", 0, nil},
		{"more than a week", MaxExtendMinutes + 1, nil},
		{"unknown hold", 10, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.ExtendHold(context.Background(), p, "r", "nope", tc.minutes)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("%v, want an error (%v)", err, tc.want)
			}
		})
	}
}

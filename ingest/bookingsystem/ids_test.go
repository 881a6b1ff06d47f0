package bookingsystem

import (
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog"
)

func TestAvailabilityIDRoundTrip(t *testing.T) {
	tests := []struct {
		name, in string
		asIs     bool
	}{
		{"plain id kept", "A1-2026-11-22", true},
		{"OCTO local date-time encoded", "2026-11-22T09:00:00+01:00", false},
		{"id with our prefix encoded, so it decodes back to itself", "b64.abc", false},
		{"id with a space and a slash encoded", "a b/c", false},
		{"longest valid id kept", strings.Repeat("x", 1024), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CatalogAvailabilityID(tt.in)
			if (got == tt.in) != tt.asIs {
				t.Fatalf("CatalogAvailabilityID(%q) = %q, kept as is = %v, want %v", tt.in, got, got == tt.in, tt.asIs)
			}
			if !tt.asIs && !strings.HasPrefix(got, "b64.") {
				t.Fatalf("encoded id %q lacks the b64. prefix", got)
			}
			if !catalog.ValidID(got) {
				t.Fatalf("catalog id %q is not a valid catalog id", got)
			}
			if back := SystemAvailabilityID(got); back != tt.in {
				t.Fatalf("SystemAvailabilityID(%q) = %q, want %q", got, back, tt.in)
			}
		})
	}
}

// OCTO opening ranges get ids of their own that map back to the day they
// were split from, whatever the day's id holds.
func TestOCTOAvailabilityID_RangesMapBackToTheirDay(t *testing.T) {
	tests := []struct {
		name, id string
		ranges   [][2]string
	}{
		{"OCTO local date-time", "2026-11-22T00:00:00+01:00", [][2]string{{"09:00", "12:00"}, {"13:00", "18:00"}}},
		{"id holding the range mark", "day#09:00-12:00", [][2]string{{"09:00", "12:00"}, {"13:00", "18:00"}}},
		{"id holding escapes", "a%23b%25c%", [][2]string{{"00:00", "24:00"}}},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			own := octoID(tt.id)
			if strings.Contains(own, "#") || OCTOAvailabilityID(own) != tt.id {
				t.Fatalf("day id %q → %q → %q", tt.id, own, OCTOAvailabilityID(own))
			}
			ids := []string{own}
			for _, r := range tt.ranges {
				ids = append(ids, octoRangeID(tt.id, r[0], r[1]))
			}
			for _, id := range ids {
				if back := OCTOAvailabilityID(id); back != tt.id {
					t.Fatalf("OCTOAvailabilityID(%q) = %q, want %q", id, back, tt.id)
				}
				if other, dup := seen[id]; dup {
					t.Fatalf("id %q of %q is also one of %q", id, tt.id, other)
				}
				seen[id] = tt.id
				if back := SystemAvailabilityID(CatalogAvailabilityID(id)); back != id {
					t.Fatalf("catalog round trip of %q gives %q", id, back)
				}
			}
			octo := Connection{Dialect: DialectOCTO}
			if got := octo.BookingAvailabilityID(ids[len(ids)-1]); got != tt.id {
				t.Fatalf("OCTO booking availability %q, want the day %q", got, tt.id)
			}
			if got := (Connection{}).BookingAvailabilityID(ids[len(ids)-1]); got != ids[len(ids)-1] {
				t.Fatalf("v2 booking availability %q, want the id itself", got)
			}
		})
	}
}

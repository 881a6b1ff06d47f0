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

package changerequest

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog"
)

func TestCatalogAvailabilityID(t *testing.T) {
	tests := []struct {
		in      string
		encoded bool
	}{
		{"slot-2026-11-22-09", false},
		{"2026-11-22T09:00:00+01:00", true},
		{"a b/c", true},
	}
	for _, tt := range tests {
		got := CatalogAvailabilityID(tt.in)
		if !catalog.ValidID(got) {
			t.Errorf("%q → %q, not a valid catalog id", tt.in, got)
		}
		if enc := strings.HasPrefix(got, "b64."); enc != tt.encoded {
			t.Errorf("%q → %q, encoded %v, want %v", tt.in, got, enc, tt.encoded)
		}
		if tt.encoded {
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(got, "b64."))
			if err != nil || string(raw) != tt.in {
				t.Errorf("%q → %q does not decode back (%q, %v)", tt.in, got, raw, err)
			}
		} else if got != tt.in {
			t.Errorf("valid id %q changed to %q", tt.in, got)
		}
	}
}

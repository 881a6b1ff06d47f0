package bookingsystem

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/catalog"
)

// TestCatalogAvailabilityID_UUIDUniqueAndStable: the catalog's id of a
// booking system's availability is a UUID (spec doc 2), the same when the
// same availability is read again, and different for the same upstream
// id of another option, product or supplier (OCTO's ids are local
// date-times, the same for every option).
func TestCatalogAvailabilityID_UUIDUniqueAndStable(t *testing.T) {
	const up = "2026-11-22T09:00:00+01:00"
	id := CatalogAvailabilityID("S1", "P1", "O1", up)
	if u, err := uuid.Parse(id); err != nil || u.Version() != 5 || !catalog.ValidID(id) {
		t.Fatalf("CatalogAvailabilityID = %q: want a version 5 UUID that is a catalog id (%v)", id, err)
	}
	if again := CatalogAvailabilityID("S1", "P1", "O1", up); again != id {
		t.Fatalf("read again: %q, want the same %q", again, id)
	}
	seen := map[string]string{id: "S1/P1/O1"}
	for _, k := range [][4]string{{"S1", "P1", "O2", up}, {"S1", "P2", "O1", up}, {"S2", "P1", "O1", up}, {"S1", "P1", "O1", up + "#09:00-12:00"},
		{"S1", "P1\x00O1", "", up}} {
		got := CatalogAvailabilityID(k[0], k[1], k[2], k[3])
		if prev, dup := seen[got]; dup {
			t.Fatalf("%v and %s share the id %s", k, prev, got)
		}
		seen[got] = strings.Join(k[:], "/")
	}
}

// TestCatalogAvailabilityID_IsUUIDv5: the id is RFC 4122's name-based
// UUID of the four joined by NUL in availabilityNamespace (what
// uuid.NewSHA1 makes), pinned to one value (ids are stored and held by:
// they must never change), for names shorter and longer than the stack
// buffer it is hashed in.
func TestCatalogAvailabilityID_IsUUIDv5(t *testing.T) {
	if got := CatalogAvailabilityID("S1", "P1", "O1", "2026-11-22T09:00:00+01:00"); got != "12357e38-3dd2-5df9-8791-c255797568dd" {
		t.Fatalf("CatalogAvailabilityID = %s, want the id every earlier version derived", got)
	}
	long := strings.Repeat("x", 300)
	for _, k := range [][4]string{{"", "", "", ""}, {"S1", "P1", "O1", "a"}, {long, "P", "O", "id"}, {"S", "P", "O", long}, {"é", "\x00", "O", "🙂"}} {
		want := uuid.NewSHA1(availabilityNamespace, []byte(strings.Join(k[:], "\x00"))).String()
		if got := CatalogAvailabilityID(k[0], k[1], k[2], k[3]); got != want {
			t.Errorf("CatalogAvailabilityID(%q) = %s, want uuid.NewSHA1's %s", k, got, want)
		}
	}
}

func FuzzCatalogAvailabilityID(f *testing.F) {
	f.Add("S1", "P1", "O1", "2026-11-22T09:00:00+01:00")
	f.Add(strings.Repeat("s", 200), "p", "o", strings.Repeat("i", 60))
	f.Fuzz(func(t *testing.T, s, p, o, id string) {
		want := uuid.NewSHA1(availabilityNamespace, []byte(s+"\x00"+p+"\x00"+o+"\x00"+id)).String()
		if got := CatalogAvailabilityID(s, p, o, id); got != want {
			t.Fatalf("CatalogAvailabilityID(%q, %q, %q, %q) = %s, want %s", s, p, o, id, got, want)
		}
	})
}

// Ids stored by earlier versions ("b64." and the upstream id's base64url)
// still map back, so holds by them keep working; other ids are kept.
func TestSystemAvailabilityID_ReadsLegacyIDs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"b64." + base64.RawURLEncoding.EncodeToString([]byte("2026-11-22T09:00:00+01:00")), "2026-11-22T09:00:00+01:00"},
		{"A1-2026-11-22", "A1-2026-11-22"},
		{"b64.!!not-base64", "b64.!!not-base64"},
	}
	for _, tt := range tests {
		if got := SystemAvailabilityID(tt.in); got != tt.want {
			t.Errorf("SystemAvailabilityID(%q) = %q, want %q", tt.in, got, tt.want)
		}
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

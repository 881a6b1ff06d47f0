package bookingsystem

import (
	"encoding/base64"
	"strings"

	"github.com/switchbackhq/switchback/internal/catalog"
)

// availabilityIDPrefix marks a booking system's availability id that the
// catalog could not store as is.
const availabilityIDPrefix = "b64."

// CatalogAvailabilityID is a booking system's availability id as the
// catalog stores it: as is when it is a valid catalog id, else (OCTO ids
// are local date-times such as 2026-11-22T09:00:00+01:00) "b64." and its
// unpadded base64url, which is reversible (SystemAvailabilityID), so a
// booking can name the booking system's id again.
func CatalogAvailabilityID(id string) string {
	if catalog.ValidID(id) && !strings.HasPrefix(id, availabilityIDPrefix) {
		return id
	}
	return availabilityIDPrefix + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// SystemAvailabilityID is the booking system's id of a catalog
// availability id (the inverse of CatalogAvailabilityID).
func SystemAvailabilityID(catalogID string) string {
	rest, ok := strings.CutPrefix(catalogID, availabilityIDPrefix)
	if !ok {
		return catalogID
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return catalogID // not one of ours: a catalog id that merely looks like it
	}
	return string(b)
}

// OCTO availability ids. OCTO sends an OPENING_HOURS availability for a
// whole day with its openingHours; doc 3 rule 2 wants one availability per
// contiguous range, so ParseOCTOAvailability splits a day of two or more
// ranges into one availability per range, each with an id made of the
// day's id and its range:
//
//	<day's id, escaped>#<from>-<to>     2026-11-22T00:00:00+01:00#09:00-12:00
//
// Every OCTO availability id the client returns is escaped ('%' → "%25",
// '#' → "%23"; OCTO's ids, local date-times, have neither and are kept as
// they are), so a '#' marks a range and only a range: every id maps back
// to exactly one OCTO availability (OCTOAvailabilityID) and no two ranges
// or days share an id.
var (
	octoEscaper   = strings.NewReplacer("%", "%25", "#", "%23")
	octoUnescaper = strings.NewReplacer("%23", "#", "%25", "%")
)

// octoID is an OCTO availability id as the client returns it (escaped).
func octoID(id string) string { return octoEscaper.Replace(id) }

// octoRangeID is the id of the opening range from–to ("HH:MM") of the
// OCTO availability id.
func octoRangeID(id, from, to string) string { return octoID(id) + "#" + from + "-" + to }

// OCTOAvailabilityID is the OCTO availability an availability id of an
// OCTO answer (as the client returned it) stands for: the day an opening
// range was split from, else the availability itself. It is what OCTO
// knows: the client sends it when booking or checking units, and an OCTO
// booking names it (Connection.BookingAvailabilityID).
func OCTOAvailabilityID(id string) string {
	if i := strings.IndexByte(id, '#'); i >= 0 {
		id = id[:i]
	}
	return octoUnescaper.Replace(id)
}

// BookingAvailabilityID is the availability id that the booking system's
// bookings name when a booking is made for availability id (an id the
// client returned): OCTO books the day an opening range was split from
// (OCTOAvailabilityID), v2 the availability itself. Callers compare a
// booking with its request by it.
func (c Connection) BookingAvailabilityID(id string) string {
	if c.octo() {
		return OCTOAvailabilityID(id)
	}
	return id
}

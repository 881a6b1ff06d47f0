package bookingsystem

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"

	"github.com/google/uuid"
)

// availabilityIDPrefix marks a booking system's availability id that an
// earlier version of the synchronization stored as "b64." and its
// unpadded base64url (SystemAvailabilityID still reads it back, so holds
// by such an id keep working until the next synchronization replaces it).
const availabilityIDPrefix = "b64."

// availabilityNamespace is the namespace of CatalogAvailabilityID's
// name-based UUIDs: fixed forever, since a re-read must derive the same id.
var availabilityNamespace = uuid.MustParse("5c0b7a33-2f4e-4b8a-9d61-0e8f2d7c4a19")

// CatalogAvailabilityID is the catalog's id of availability id (as the
// client returned it) of option optionID of product productID of supplier
// supplierID: a version 5 UUID of the four. Spec doc 2 gives an
// availability "id: UUID, unique per availability"; a booking system's
// ids are unique only within their option (doc 3) and are often local
// date-times (OCTO: every option of a product has the same ones), so they
// cannot be the catalog's ids. Derived, not drawn: the same availability
// read again (a refresh of the same window) has the same id, so a reseller
// holds by an id it read before. The catalog keeps the booking system's id
// beside it (catalog.Availability.SystemID) for the hold.
//
// It is uuid.NewSHA1(availabilityNamespace, the four joined by NUL)
// computed over one buffer on the stack (a full synchronization derives
// one per availability: hundreds of thousands), which
// TestCatalogAvailabilityID_IsUUIDv5 and FuzzCatalogAvailabilityID hold to.
func CatalogAvailabilityID(supplierID, productID, optionID, id string) string {
	var stack [256]byte
	b := append(stack[:0], availabilityNamespace[:]...)
	b = append(append(b, supplierID...), 0)
	b = append(append(b, productID...), 0)
	b = append(append(b, optionID...), 0)
	b = append(b, id...)
	sum := sha1.Sum(b)
	var u uuid.UUID
	copy(u[:], sum[:])
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}

// SystemAvailabilityID is the booking system's id of a catalog
// availability id stored by an earlier synchronization ("b64." and the
// id's base64url); any other id is returned as it is (a catalog id that
// is the booking system's own, as operators of v2 systems sometimes push).
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

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

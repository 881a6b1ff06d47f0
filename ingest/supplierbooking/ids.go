package supplierbooking

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

// Namespace of the name-based (version 5) UUIDs Switchback derives for a
// booking system: fixed forever, since a retry must derive the same ids.
var Namespace = uuid.MustParse("29326359-b83b-4d91-bdf6-c48cdceca8c1")

// OrderID is the orderId of the order a hold makes (doc 3 rule 5: one
// orderId groups the hold's bookings). Derived from the hold id, so a
// retried hold names the same order; a UUID, so a reseller's hold id never
// collides with another platform's order at the same supplier.
func OrderID(holdID string) string {
	return uuid.NewSHA1(Namespace, []byte("order\x00"+holdID)).String()
}

// BookingUUID is the uuid of the booking for item i of a hold (doc 3:
// "generated for the initial create request, MUST never change"; rule 4:
// the idempotency key). A retried hold sends the same uuids, so it is the
// same bookings.
func BookingUUID(holdID string, i int) string {
	return uuid.NewSHA1(Namespace, []byte("booking\x00"+holdID+"\x00"+strconv.Itoa(i))).String()
}

// ChannelUUID is the channelId a booking names (doc 3: a uuid): the
// channel's id when it is a UUID, else one derived from it.
func ChannelUUID(channelID string) string {
	if u, err := uuid.Parse(channelID); err == nil && len(channelID) == 36 {
		return u.String()
	}
	return uuid.NewSHA1(Namespace, []byte("channel\x00"+channelID)).String()
}

// availabilityIDs maps the catalog's availability ids of one operation's
// items to the booking system's: the catalog keeps the booking system's
// id of every availability a synchronization wrote (its SystemID; the
// catalog's id is a UUID derived from it, bookingsystem.CatalogAvailabilityID).
// An id the catalog does not have (an availability of an earlier version's
// "b64." form, or an operator's own id) is read by
// bookingsystem.SystemAvailabilityID. Each rate's set is read once.
type availabilityIDs struct {
	cat  Catalog
	sid  string
	sets map[[2]string]map[string]string
}

func newAvailabilityIDs(cat Catalog, sid string) *availabilityIDs {
	return &availabilityIDs{cat: cat, sid: sid, sets: map[[2]string]map[string]string{}}
}

// system is the booking system's id of availability id of rate rid of
// product pid (an id the client returned: ingest/bookingsystem maps OCTO
// ranges back to their day).
func (a *availabilityIDs) system(ctx context.Context, pid, rid, id string) (string, error) {
	k := [2]string{pid, rid}
	m, ok := a.sets[k]
	if !ok {
		set, err := a.cat.Availabilities(ctx, catalog.SystemScope(), a.sid, pid, rid)
		if err != nil && !isNotFound(err) {
			return "", fmt.Errorf("availabilities of %s/%s: %w", pid, rid, err)
		}
		m = make(map[string]string, len(set.Availabilities))
		for _, av := range set.Availabilities {
			if av.SystemID != "" {
				m[av.ID] = av.SystemID
			}
		}
		a.sets[k] = m
	}
	if sys, ok := m[id]; ok {
		return sys, nil
	}
	return bookingsystem.SystemAvailabilityID(id), nil
}

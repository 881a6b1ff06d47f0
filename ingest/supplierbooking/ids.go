package supplierbooking

import (
	"strconv"

	"github.com/google/uuid"
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

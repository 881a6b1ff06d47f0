package booking

import (
	"encoding/json"
	"strconv"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/schemas"
)

// The reseller contract of holds and bookings (spec doc 2, "Hold" and
// "Booking (partner interface)"), the same whatever kind of supplier made
// them (operator-pushed through a partner, a partner, a booking system v2
// or OCTO): what a partner's or a booking system's answer leaves out is
// filled here, from the request and the catalog (docs/decisions.md,
// "Holds and bookings: one contract for every supplier").
//
//   - item ids: an item sent without one gets itemID (derived, so a
//     retried request sends the same ids to the supplier's system);
//   - ext (of the hold or booking and of each item): the request's, when
//     the supplier's answer has none (the reseller's own data);
//   - the embedded Rate of every item: the rate as the reseller's channel
//     reads it (GET .../rates/{rate_id}: the binding's priceTags applied)
//     when the hold or booking is made, replacing a partner's own;
//   - retrieved on every hold answer: when the answer was issued;
//   - tickets: bookingItemIds (the items a ticket is for) and leadTraveler
//     (schemas.Booking.Lead) when the supplier gave none;
//   - cancelable: when the supplier said nothing, whether every item's
//     rate is cancelable;
//   - final states are final: a CANCELLED booking is cancelable false and
//     its tickets are CANCELLED (void; the booking status vocabulary of
//     spec doc 2, where tickets have none of their own).

// itemNamespace is the namespace of itemID's name-based UUIDs: fixed
// forever, since a retry must derive the same ids.
var itemNamespace = uuid.MustParse("b7e3f0a2-6c1d-4e58-9a2f-3d8c5b7e1f04")

// itemID is the id of item i of a hold or booking (kind "hold" or
// "booking") sent without one; key is the id the supplier's system knows
// it by (PartnerID: unique across channels).
func itemID(kind, key string, i int) string {
	return uuid.NewSHA1(itemNamespace, []byte(kind+"\x00"+key+"\x00"+strconv.Itoa(i))).String()
}

// holdItemIDs gives every item of h without an id its itemID.
func holdItemIDs(h *schemas.Hold, key string) {
	for i := range h.Items {
		if h.Items[i].ID == "" {
			h.Items[i].ID = itemID("hold", key, i)
		}
	}
}

// bookingItemIDs gives every item of b without an id its itemID.
func bookingItemIDs(b *schemas.Booking, key string) {
	for i := range b.Items {
		if b.Items[i].ID == "" {
			b.Items[i].ID = itemID("booking", key, i)
		}
	}
}

// rateSet is the channel's rendering of each rate of a request's items.
type rateSet map[itemRef]json.RawMessage

// holdAnswer completes the supplier's answer got to hold request in: the
// items' ids (the request's, by position, where the answer has none) and
// their embedded Rate.
func holdAnswer(got *schemas.Hold, in schemas.Hold, rates rateSet) {
	if len(got.Items) == 0 {
		got.Items = in.Items
	}
	if got.Ext == nil {
		got.Ext = in.Ext // the reseller's own data (the request is a subset of the response)
	}
	for i := range got.Items {
		it := &got.Items[i]
		if it.ID == "" && i < len(in.Items) {
			it.ID = in.Items[i].ID
		}
		if it.Ext == nil && i < len(in.Items) {
			it.Ext = in.Items[i].Ext
		}
		if r, ok := rates[itemRef{it.SupplierID, it.ProductID, it.RateID}]; ok {
			it.Rate = r
		}
	}
}

// bookingAnswer completes the supplier's answer got to booking request in
// as holdAnswer does, then completeBooking.
func bookingAnswer(got *schemas.Booking, in schemas.Booking, rates rateSet) {
	if len(got.Items) == 0 {
		got.Items = in.Items
	}
	if got.Ext == nil {
		got.Ext = in.Ext
	}
	for i := range got.Items {
		it := &got.Items[i]
		if it.ID == "" && i < len(in.Items) {
			it.ID = in.Items[i].ID
		}
		if it.Ext == nil && i < len(in.Items) {
			it.Ext = in.Items[i].Ext
		}
		if it.Traveler == nil && i < len(in.Items) {
			it.Traveler = in.Items[i].Traveler
		}
		if r, ok := rates[itemRef{it.SupplierID, it.ProductID, it.RateID}]; ok {
			it.Rate = r
		}
	}
	if got.Customer == nil {
		got.Customer = in.Customer
	}
	if got.Cancelable == nil && got.Status != schemas.BookingCancelled {
		c := len(got.Items) > 0
		for _, it := range got.Items {
			var r struct {
				Cancelable bool `json:"cancelable"`
			}
			if len(it.Rate) == 0 || json.Unmarshal(it.Rate, &r) != nil || !r.Cancelable {
				c = false
			}
		}
		got.Cancelable = &c
	}
	completeBooking(got)
}

// TicketVoid is the status of the tickets of a cancelled booking: they can
// no longer be redeemed. Spec doc 2 gives tickets a status without its
// values; CANCELLED is the booking status vocabulary's word for it.
const TicketVoid = schemas.BookingCancelled

// completeBooking fills what the supplier's tickets lack (bookingItemIds:
// the item of the same position when there are as many tickets as items,
// else every item; leadTraveler: b.Lead()) and makes a CANCELLED booking
// final: cancelable false, every ticket TicketVoid.
func completeBooking(b *schemas.Booking) {
	if len(b.Tickets) > 0 {
		b.Tickets = append([]schemas.Ticket(nil), b.Tickets...)
	}
	lead := b.Lead()
	for i := range b.Tickets {
		t := &b.Tickets[i]
		if len(t.BookingItemIDs) == 0 || (len(t.BookingItemIDs) == 1 && t.BookingItemIDs[0] == "") {
			t.BookingItemIDs = nil
			switch {
			case len(b.Tickets) == len(b.Items):
				t.BookingItemIDs = []string{b.Items[i].ID}
			default:
				for _, it := range b.Items {
					t.BookingItemIDs = append(t.BookingItemIDs, it.ID)
				}
			}
		}
		if t.LeadTraveler == nil && lead != nil {
			l := *lead
			t.LeadTraveler = &l
		}
	}
	if b.Status == schemas.BookingCancelled {
		no := false
		b.Cancelable = &no
		for i := range b.Tickets {
			b.Tickets[i].Status = TicketVoid
		}
	}
}

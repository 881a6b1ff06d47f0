package booking

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/switchbackhq/switchback/schemas"
)

func TestItemID_DerivedStableAndDistinct(t *testing.T) {
	a, b := itemID("booking", "bk-1", 0), itemID("booking", "bk-1", 0)
	if a != b || a == itemID("booking", "bk-1", 1) || a == itemID("hold", "bk-1", 0) || a == itemID("booking", "bk-2", 0) {
		t.Fatalf("item ids: %s %s", a, b)
	}
	h := schemas.Hold{ID: "h1", Items: []schemas.HoldItem{{ID: "mine"}, {}}}
	holdItemIDs(&h, "h1")
	if h.Items[0].ID != "mine" || h.Items[1].ID != itemID("hold", "h1", 1) {
		t.Fatalf("hold items %+v", h.Items)
	}
}

// TestCompleteBooking_FillsTicketsAndMakesCancelledFinal: what a
// supplier's tickets lack is filled from the booking, and a cancelled
// booking is not cancelable and its tickets are void, whoever the supplier.
func TestCompleteBooking_FillsTicketsAndMakesCancelledFinal(t *testing.T) {
	yes := true
	items := []schemas.BookingItem{{ID: "i1"}, {ID: "i2", Traveler: &schemas.Traveler{FirstName: "Grace", IsLead: true}}}
	tests := []struct {
		name       string
		b          schemas.Booking
		wantIDs    [][]string
		wantLead   string
		wantStatus string
		cancelable *bool
	}{
		{"one ticket per item: its item", schemas.Booking{Status: schemas.BookingOpen, Cancelable: &yes, Items: items,
			Tickets: []schemas.Ticket{{Status: "VALID"}, {Status: "VALID"}}}, [][]string{{"i1"}, {"i2"}}, "Grace", "VALID", &yes},
		{"one ticket for two items: both", schemas.Booking{Status: schemas.BookingOpen, Items: items, Tickets: []schemas.Ticket{{}}},
			[][]string{{"i1", "i2"}}, "Grace", "", nil},
		{"the supplier's own are kept", schemas.Booking{Status: schemas.BookingOpen, Items: items, Tickets: []schemas.Ticket{
			{BookingItemIDs: []string{"i2"}, LeadTraveler: &schemas.Traveler{FirstName: "Ada"}}}}, [][]string{{"i2"}}, "Ada", "", nil},
		{"no lead traveler: the customer", schemas.Booking{Status: schemas.BookingOpen, Items: items[:1], Customer: &schemas.Customer{FirstName: "Ada"},
			Tickets: []schemas.Ticket{{}}}, [][]string{{"i1"}}, "Ada", "", nil},
		{"cancelled: final", schemas.Booking{Status: schemas.BookingCancelled, Cancelable: &yes, Items: items,
			Tickets: []schemas.Ticket{{Status: "VALID"}, {Status: schemas.BookingOpen}}}, [][]string{{"i1"}, {"i2"}}, "Grace", TicketVoid, new(bool)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			before, _ := json.Marshal(tt.b.Tickets)
			completeBooking(&b)
			for i, tk := range b.Tickets {
				if !slices.Equal(tk.BookingItemIDs, tt.wantIDs[i]) || tk.LeadTraveler == nil || tk.LeadTraveler.FirstName != tt.wantLead ||
					(tt.wantStatus != "" && tk.Status != tt.wantStatus) {
					t.Fatalf("ticket %d: %+v lead %+v", i, tk, tk.LeadTraveler)
				}
			}
			if (tt.cancelable == nil) != (b.Cancelable == nil) || (b.Cancelable != nil && *b.Cancelable != *tt.cancelable) {
				t.Fatalf("cancelable %v, want %v", b.Cancelable, tt.cancelable)
			}
			if after, _ := json.Marshal(tt.b.Tickets); string(after) != string(before) {
				t.Fatal("the booking's tickets were changed in place (records are shared)")
			}
		})
	}
}

// TestBookingAnswer_EmbedsRatesAndDerivesCancelable: items get the
// channel's Rate and the request's ids; without the supplier's word, a
// booking is cancelable when every item's rate is.
func TestBookingAnswer_EmbedsRatesAndDerivesCancelable(t *testing.T) {
	ref := itemRef{"s", "p", "r"}
	in := schemas.Booking{ID: "b", Items: []schemas.BookingItem{{ID: "i1", SupplierID: "s", ProductID: "p", RateID: "r", Quantity: 1}}}
	for _, tt := range []struct {
		rate string
		want bool
	}{{`{"id":"r","cancelable":true}`, true}, {`{"id":"r","cancelable":false}`, false}} {
		got := schemas.Booking{Status: schemas.BookingOpen, Items: []schemas.BookingItem{{SupplierID: "s", ProductID: "p", RateID: "r", Quantity: 1}}}
		bookingAnswer(&got, in, rateSet{ref: json.RawMessage(tt.rate)})
		if got.Items[0].ID != "i1" || string(got.Items[0].Rate) != tt.rate || got.Cancelable == nil || *got.Cancelable != tt.want {
			t.Fatalf("rate %s: %+v cancelable %v", tt.rate, got.Items[0], got.Cancelable)
		}
	}
}

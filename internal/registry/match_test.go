package registry

import (
	"testing"

	"github.com/switchbackhq/switchback/schemas"
)

func TestRuleMatches_AppliesTheSpecFilterSemantics(t *testing.T) {
	rule := func(typ string, cfg Config) Rule { return Rule{Type: typ, Config: cfg} }
	ids := func(s ...string) []string { return s }
	rate := Item{SupplierID: "S1", ProductID: "P1", RateID: "R1"}
	product := Item{SupplierID: "S1", ProductID: "P1"}
	supplier := Item{SupplierID: "S1"}
	booking := []Item{{SupplierID: "S1", ProductID: "P1", RateID: "R1"}, {SupplierID: "S2", ProductID: "P2", RateID: "R2"}}
	tests := []struct {
		name  string
		rule  Rule
		op    string
		items []Item
		want  bool
	}{
		// "When omitted or empty, the rule applies to everything visible."
		{"empty filters select every rate", rule(schemas.TypeRate, Config{}), OpUpdated, []Item{rate}, true},
		{"empty filters select every availability change", rule(schemas.TypeAvailability, Config{}), "", []Item{rate}, true},
		{"empty filter arrays are absent filters", rule(schemas.TypeRate, Config{SupplierIDs: ids(), ProductIDs: ids(), RateIDs: ids()}), OpUpdated, []Item{rate}, true},
		{"a disabled rule selects nothing", Rule{Type: schemas.TypeRate, Disabled: true}, OpUpdated, []Item{rate}, false},

		// "When supplierIDs, productIDs or rateIDs are given, only the matching."
		{"supplier filter holding the supplier", rule(schemas.TypeProduct, Config{SupplierIDs: ids("S0", "S1")}), OpUpdated, []Item{product}, true},
		{"supplier filter without the supplier", rule(schemas.TypeProduct, Config{SupplierIDs: ids("S2")}), OpUpdated, []Item{product}, false},
		{"product filter without the product", rule(schemas.TypeRate, Config{ProductIDs: ids("P2")}), OpUpdated, []Item{rate}, false},
		{"rate filter holding the rate", rule(schemas.TypePriceSchedule, Config{RateIDs: ids("R1")}), "", []Item{rate}, true},
		{"rate filter without the rate", rule(schemas.TypeAvailability, Config{RateIDs: ids("R2")}), "", []Item{rate}, false},
		{"every given filter must hold the item", rule(schemas.TypeRate, Config{SupplierIDs: ids("S1"), ProductIDs: ids("P9")}), OpUpdated, []Item{rate}, false},
		{"an item naming no product fails a product filter", rule(schemas.TypeRate, Config{ProductIDs: ids("P1")}), OpUpdated, []Item{supplier}, false},

		// Per type: only the filters of spec doc 1's "Config by rule type".
		{"a supplier rule has no product filter", rule(schemas.TypeSupplier, Config{ProductIDs: ids("P9")}), OpUpdated, []Item{supplier}, true},
		{"a channelbinding rule has no rate filter", rule(schemas.TypeChannelBinding, Config{RateIDs: ids("R9")}), OpRemoved, []Item{product}, true},
		{"a channelbinding rule has a product filter", rule(schemas.TypeChannelBinding, Config{ProductIDs: ids("P9")}), OpRemoved, []Item{product}, false},
		{"an unknown type applies every filter it carries", rule("", Config{ProductIDs: ids("P2")}), "", []Item{rate}, false},
		{"an unknown type without filters selects", rule("", Config{MaxLookAheadDays: 7}), "", []Item{rate}, true},

		// Operations ("for the subscribed operations").
		{"operation subscribed", rule(schemas.TypeChannelBinding, Config{Operations: ids(OpRemoved)}), OpRemoved, []Item{product}, true},
		{"operation not subscribed", rule(schemas.TypeChannelBinding, Config{Operations: ids(OpCreated, OpUpdated)}), OpRemoved, []Item{product}, false},
		{"no operations means every one", rule(schemas.TypeBooking, Config{}), OpTicketsAdded, booking, true},
		{"types without operations ignore op", rule(schemas.TypeAvailability, Config{Operations: ids(OpUpdated)}), "", []Item{rate}, true},

		// A booking: one of its items must pass every filter together.
		{"booking: second item passes", rule(schemas.TypeBooking, Config{ProductIDs: ids("P2"), RateIDs: ids("R2")}), OpCanceled, booking, true},
		{"booking: filters split over two items", rule(schemas.TypeBooking, Config{ProductIDs: ids("P1"), RateIDs: ids("R2")}), OpCanceled, booking, false},
		{"booking: no item passes", rule(schemas.TypeBooking, Config{SupplierIDs: ids("S9")}), OpCanceled, booking, false},
		{"booking: operation not subscribed", rule(schemas.TypeBooking, Config{Operations: ids(OpTicketsAdded)}), OpCanceled, booking, false},
		{"no item selects nothing", rule(schemas.TypeBooking, Config{}), OpCanceled, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.Matches(tt.op, tt.items...); got != tt.want {
				t.Errorf("Matches(%q, %+v) = %v, want %v", tt.op, tt.items, got, tt.want)
			}
		})
	}
}

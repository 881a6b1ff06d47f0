package booking

import (
	"testing"

	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

func TestMatches(t *testing.T) {
	b := schemas.Booking{ID: "b", Items: []schemas.BookingItem{
		{SupplierID: "S1", ProductID: "P1", RateID: "R1"},
		{SupplierID: "S1", ProductID: "P2", RateID: "R2"},
	}}
	rule := func(disabled bool, ops []string, sids, pids, rids []string) registry.Rule {
		return registry.Rule{Disabled: disabled, Config: registry.Config{Operations: ops, SupplierIDs: sids, ProductIDs: pids, RateIDs: rids}}
	}
	all := []string{schemas.OperationCanceled, schemas.OperationTicketsAdded}
	tests := []struct {
		name string
		r    registry.Rule
		op   string
		want bool
	}{
		{"every operation, no filter", rule(false, all, nil, nil, nil), schemas.OperationCanceled, true},
		{"no operations means every one", rule(false, nil, nil, nil, nil), schemas.OperationTicketsAdded, true},
		{"disabled", rule(true, all, nil, nil, nil), schemas.OperationCanceled, false},
		{"operation not subscribed", rule(false, []string{schemas.OperationTicketsAdded}, nil, nil, nil), schemas.OperationCanceled, false},
		{"supplier filter matches", rule(false, all, []string{"S1"}, nil, nil), schemas.OperationCanceled, true},
		{"supplier filter misses", rule(false, all, []string{"S9"}, nil, nil), schemas.OperationCanceled, false},
		{"second item matches product and rate", rule(false, all, nil, []string{"P2"}, []string{"R2"}), schemas.OperationCanceled, true},
		{"filters must match one item together", rule(false, all, nil, []string{"P1"}, []string{"R2"}), schemas.OperationCanceled, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.r, b, tc.op); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

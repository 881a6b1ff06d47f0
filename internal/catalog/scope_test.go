package catalog

import (
	"errors"
	"testing"

	"github.com/switchbackhq/switchback/internal/principals"
)

// The scope a principal gets is the one its role had when the Store took
// the principal itself: an admin every supplier, an operator its own
// (and an owner for what it creates), a reseller nothing.
func TestScopeOf_GivesEachRoleItsCatalogScope(t *testing.T) {
	own := &Supplier{SupplierData: SupplierData{ID: "s1"}, Owner: "op-a"}
	other := &Supplier{SupplierData: SupplierData{ID: "s2"}, Owner: "op-b"}
	unowned := &Supplier{SupplierData: SupplierData{ID: "s3"}}
	tests := []struct {
		name              string
		scope             Scope
		own, other, unown bool
		owner             string
		ownerErr          error
	}{
		{"admin", ScopeOf(principals.Principal{ID: "adm", Role: principals.RoleAdmin}), true, true, true, "", nil},
		{"system", SystemScope(), true, true, true, "", nil},
		{"operator", ScopeOf(principals.Principal{ID: "op-a", Role: principals.RoleOperator}), true, false, false, "op-a", nil},
		{"operator scope", OperatorScope("op-a"), true, false, false, "op-a", nil},
		{"operator without id", OperatorScope(""), false, false, false, "", nil},
		{"reseller", ScopeOf(principals.Principal{ID: "r", Role: principals.RoleReseller, ChannelID: "c"}), false, false, false, "", ErrForbidden},
		{"zero", Scope{}, false, false, false, "", ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scope.CanManage(own); got != tt.own {
				t.Errorf("manages its own supplier: %t, want %t", got, tt.own)
			}
			if got := tt.scope.CanManage(other); got != tt.other {
				t.Errorf("manages another operator's supplier: %t, want %t", got, tt.other)
			}
			if got := tt.scope.CanManage(unowned); got != tt.unown {
				t.Errorf("manages a supplier without owner: %t, want %t", got, tt.unown)
			}
			owner, err := tt.scope.Owner()
			if owner != tt.owner || !errors.Is(err, tt.ownerErr) || (tt.ownerErr == nil && err != nil) {
				t.Errorf("owner %q, %v; want %q, %v", owner, err, tt.owner, tt.ownerErr)
			}
		})
	}
}

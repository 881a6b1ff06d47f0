package catalog

import (
	"fmt"

	"github.com/switchbackhq/switchback/internal/principals"
)

// Scope is which suppliers a caller of the Store's operator methods may
// see and touch (ARCHITECTURE.md): every supplier (an admin, or the
// service itself), or the suppliers one operator created
// (Supplier.Owner). A supplier out of scope is ErrNotFound, never
// ErrForbidden, so that an operator cannot learn which ids other
// operators use. The zero Scope sees nothing: a write under it is
// ErrForbidden (a reseller has no catalog scope; its reads go through
// the channel's binding, catalogredis/reseller.go, not through a Scope).
//
// The fields are unexported so that a scope comes from a principal
// (ScopeOf, the HTTP handlers) or is named for what it is (SystemScope,
// OperatorScope), never assembled by hand.
type Scope struct {
	kind     scopeKind
	operator string // kind scopeOperator: the operator's principal id
}

type scopeKind uint8

const (
	scopeNone scopeKind = iota
	scopeAll
	scopeOperator
)

// SystemScope is the scope of the service's own work, which acts for no
// principal: the booking-system syncs, change requests, the partner and
// booking clients and the availability cache read and write every
// supplier. Trusted internal callers only; HTTP handlers use ScopeOf.
func SystemScope() Scope { return Scope{kind: scopeAll} }

// OperatorScope is the scope of operator operatorID: the suppliers it
// created. An empty id manages nothing (but creates suppliers without an
// owner, as an operator principal without an id always did).
func OperatorScope(operatorID string) Scope {
	return Scope{kind: scopeOperator, operator: operatorID}
}

// ScopeOf is the catalog scope of an authenticated principal: an admin
// every supplier, an operator its own, a reseller none.
func ScopeOf(p principals.Principal) Scope {
	switch p.Role {
	case principals.RoleAdmin:
		return SystemScope()
	case principals.RoleOperator:
		return OperatorScope(p.OperatorID())
	}
	return Scope{}
}

// All reports whether the scope covers every supplier.
func (sc Scope) All() bool { return sc.kind == scopeAll }

// String names the scope for logs and errors (no secret in it).
func (sc Scope) String() string {
	switch sc.kind {
	case scopeAll:
		return "all suppliers"
	case scopeOperator:
		return "operator " + sc.operator
	}
	return "no catalog scope"
}

// CanManage reports whether sup is in the scope.
func (sc Scope) CanManage(sup *Supplier) bool {
	switch sc.kind {
	case scopeAll:
		return true
	case scopeOperator:
		return sc.operator != "" && sup.Owner == sc.operator
	}
	return false
}

// Owner is the Owner of a supplier created in the scope: the operator's
// id, or none for the whole catalog (only the whole catalog's scope
// manages it then).
func (sc Scope) Owner() (string, error) {
	switch sc.kind {
	case scopeAll:
		return "", nil
	case scopeOperator:
		return sc.operator, nil
	}
	return "", fmt.Errorf("%s: %w", sc, ErrForbidden)
}

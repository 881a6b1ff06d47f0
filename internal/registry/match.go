package registry

import "slices"

// Item is what a notification is about, as a rule's id filters see it: the
// Supplier, Product and Rate it names (empty where it names none, such as
// the Product and Rate of a supplier notification).
type Item struct {
	SupplierID, ProductID, RateID string
}

// Matches reports whether the rule selects a notification of operation op
// about one of items. It is spec doc 1's "Filter semantics", the one copy
// every processor applies:
//
//   - a disabled rule selects nothing ("triggers no notifications");
//   - a rule whose type has operations selects only the operations it
//     subscribes to, none given meaning every one (docs/decisions.md,
//     "Operations left out"); op is ignored for types without operations
//     (availability, priceschedule);
//   - every non-empty id filter of the rule's type must contain the item's
//     id ("when supplierIDs, productIDs or rateIDs are given, notifications
//     are delivered only for the matching Suppliers, Products or Rates");
//     an absent or empty filter means everything visible to the
//     subscriber's channel, which the caller has already narrowed to;
//   - with several items (a booking's), one item must pass every filter
//     together: a booking of S1/P1 and S2/P2 does not match a rule
//     filtering S1 and P2. No item selects nothing.
//
// Which filters a type has is spec doc 1's "Config by rule type"
// (typeSpecs): a filter the type does not have is not applied (a supplier
// rule's productIDs, were one stored, would not narrow it). A rule of a
// type the registry does not know applies every filter and operation list
// it carries.
func (r Rule) Matches(op string, items ...Item) bool {
	if r.Disabled {
		return false
	}
	spec, known := typeSpecs[r.Type]
	if !known {
		spec = typeSpec{operations: r.Config.Operations, supplierIDs: true, productIDs: true, rateIDs: true}
	}
	c := r.Config
	if spec.operations != nil && len(c.Operations) > 0 && !slices.Contains(c.Operations, op) {
		return false
	}
	for _, it := range items {
		if (!spec.supplierIDs || inFilter(c.SupplierIDs, it.SupplierID)) &&
			(!spec.productIDs || inFilter(c.ProductIDs, it.ProductID)) &&
			(!spec.rateIDs || inFilter(c.RateIDs, it.RateID)) {
			return true
		}
	}
	return false
}

// inFilter: an empty filter admits every id.
func inFilter(ids []string, id string) bool { return len(ids) == 0 || slices.Contains(ids, id) }

package catalogredis

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/principals"
)

type openCount map[string]int

func (o openCount) OpenBookings(_ context.Context, sid string) (int, error) { return o[sid], nil }

// TestSupplierIDs_AreTheirOperatorsForEver: a deleted supplier's id stays
// its operator's (issue 18, finding 3): another operator creating it gets
// the same 409 as for an id in use, naming nobody; the operator who
// deleted it, or an admin, may create it again. The tombstone survives a
// rebuild of the view from the topic.
func TestSupplierIDs_AreTheirOperatorsForEver(t *testing.T) {
	s, rec, rdb := newStore(t)
	ctx := context.Background()
	opB := catalog.ScopeOf(principals.Principal{ID: "op-b", Role: principals.RoleOperator})
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("sup-r", "A's")); err != nil {
		t.Fatal(err)
	}
	_, live := s.CreateSupplier(ctx, opB, supplierIn("sup-r", "B's"))
	if !errors.Is(live, catalog.ErrConflict) {
		t.Fatalf("B creating A's live id: %v, want ErrConflict", live)
	}
	if err := s.DeleteSupplier(ctx, opA, "sup-r"); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T) {
		t.Helper()
		_, err := s.CreateSupplier(ctx, opB, supplierIn("sup-r", "B's"))
		if !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("B creating A's deleted id: %v, want ErrConflict", err)
		}
		if err.Error() != live.Error() || strings.Contains(err.Error(), "op-a") {
			t.Fatalf("the refusal %q differs from a live id's %q or names the owner", err, live)
		}
	}
	check(t)
	// The view rebuilt from the topic keeps the tombstone.
	if err := testharness.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	for _, env := range rec.Envelopes(t) {
		if _, err := s.Apply(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	check(t)
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("sup-r", "A's again")); err != nil {
		t.Fatalf("A creating its own deleted id: %v", err)
	}
	if err := s.DeleteSupplier(ctx, opA, "sup-r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSupplier(ctx, admin, supplierIn("sup-r", "admin's")); err != nil {
		t.Fatalf("an admin: %v", err)
	}
}

// TestDeleteSupplier_RefusedWhileItHasOpenBookings: a supplier with holds
// or bookings that are not final cannot be deleted (409), so that their
// cancels can never follow its id elsewhere.
func TestDeleteSupplier_RefusedWhileItHasOpenBookings(t *testing.T) {
	s, _, _ := newStore(t)
	open := openCount{"sup-b": 2}
	s.open = open
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("sup-b", "booked")); err != nil {
		t.Fatal(err)
	}
	err := s.DeleteSupplier(ctx, opA, "sup-b")
	if !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "2 holds or bookings") {
		t.Fatalf("delete with open bookings: %v, want ErrConflict saying how many", err)
	}
	if _, err := s.Supplier(ctx, opA, "sup-b"); err != nil {
		t.Fatalf("the supplier is gone after a refused delete: %v", err)
	}
	open["sup-b"] = 0
	if err := s.DeleteSupplier(ctx, opA, "sup-b"); err != nil {
		t.Fatalf("delete once final: %v", err)
	}
}

// TestConnectionRef_NamesTheSystemNotTheCredentials: rotating credentials
// keeps the ref, another baseUrl or kind changes it.
func TestConnectionRef_NamesTheSystemNotTheCredentials(t *testing.T) {
	base := catalog.Connection{Kind: catalog.ConnectionPartner, BaseURL: "https://p.example/api", Credentials: catalog.Credentials{APIKey: "k", APISecret: "s"}}
	rotated := base
	rotated.Credentials = catalog.Credentials{APIKey: "k2", APISecret: "s2"}
	moved := base
	moved.BaseURL = "https://other.example/api"
	kind := base
	kind.Kind = catalog.ConnectionOCTO
	if base.Ref() != rotated.Ref() || base.Ref() == moved.Ref() || base.Ref() == kind.Ref() {
		t.Fatalf("refs: base %s rotated %s moved %s kind %s", base.Ref(), rotated.Ref(), moved.Ref(), kind.Ref())
	}
}

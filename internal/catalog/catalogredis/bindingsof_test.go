package catalogredis

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog"
)

// TestBindingsOf_AnswersAsBindingsDoesInOrder: the batch read gives every
// product named, in order, what the one-product read gives (an unbound and
// an unknown product included), so the processor may use either.
func TestBindingsOf_AnswersAsBindingsDoesInOrder(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	for _, c := range []string{"chan-a", "chan-b"} {
		if _, err := s.CreateChannel(ctx, catalog.ChannelInput{ID: c, Name: c, CompanyName: "Co " + c}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateSupplier(ctx, admin, supplierIn("s1", "one")); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []string{"p1", "p2", "p3"} {
		var pin catalog.ProductInput
		if err := json.Unmarshal([]byte(`{"id":"`+pid+`","name":"P","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`), &pin); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpsertProducts(ctx, admin, "s1", []catalog.ProductInput{pin}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []struct{ pid, cid string }{{"p1", "chan-b"}, {"p1", "chan-a"}, {"p3", "chan-a"}} {
		if _, err := s.CreateBinding(ctx, admin, "s1", b.pid, b.cid, catalog.BindingInput{}); err != nil {
			t.Fatal(err)
		}
	}
	refs := []catalog.ProductRef{{SupplierID: "s1", ProductID: "p3"}, {SupplierID: "s1", ProductID: "p2"},
		{SupplierID: "s1", ProductID: "p1"}, {SupplierID: "s9", ProductID: "nope"}}
	got, err := s.BindingsOf(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(refs) {
		t.Fatalf("%d answers for %d products", len(got), len(refs))
	}
	wantChannels := [][]string{{"chan-a"}, {}, {"chan-a", "chan-b"}, {}}
	for i, ref := range refs {
		one, err := s.Bindings(ctx, ref.SupplierID, ref.ProductID)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(one)
		if string(a) != string(b) {
			t.Errorf("%v: batch read %s, one read %s", ref, a, b)
		}
		var cids []string
		for _, bd := range got[i] {
			if bd.SupplierID != ref.SupplierID || bd.ProductID != ref.ProductID {
				t.Errorf("%v: binding of %s/%s", ref, bd.SupplierID, bd.ProductID)
			}
			cids = append(cids, bd.ChannelID)
		}
		if len(cids) != len(wantChannels[i]) {
			t.Errorf("%v: channels %v, want %v", ref, cids, wantChannels[i])
			continue
		}
		for j := range cids {
			if cids[j] != wantChannels[i][j] {
				t.Errorf("%v: channels %v, want %v", ref, cids, wantChannels[i])
			}
		}
	}
}

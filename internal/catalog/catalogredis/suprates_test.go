package catalogredis

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// countingPub counts the Publish calls a write makes.
type countingPub struct {
	*recorder
	calls atomic.Int64
}

func (c *countingPub) Publish(ctx context.Context, msgs ...stream.Message) error {
	c.calls.Add(1)
	return c.recorder.Publish(ctx, msgs...)
}

func rateIn(t *testing.T, id, name string) catalog.RateInput {
	t.Helper()
	var rin catalog.RateInput
	mustUnmarshal(t, fmt.Sprintf(`{"id":%q,"name":%q,"cancelable":true,"holdable":false,"maxTravelers":10,"minTravelers":1,"prices":[]}`, id, name), &rin)
	return rin
}

// seedSupplierRates makes supplier s1 with products p1, p2 and p3, p2
// bound whole to chan-a, and p1 holding rates r1 and r2.
func seedSupplierRates(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateChannel(ctx, catalog.ChannelInput{ID: "chan-a", Name: "A", CompanyName: "Co A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSupplier(ctx, admin, supplierIn("s1", "one")); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []string{"p1", "p2", "p3"} {
		var pin catalog.ProductInput
		mustUnmarshal(t, `{"id":"`+pid+`","name":"P","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`, &pin)
		if _, err := s.UpsertProducts(ctx, admin, "s1", []catalog.ProductInput{pin}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateBinding(ctx, admin, "s1", "p2", "chan-a", catalog.BindingInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertRates(ctx, admin, "s1", "p1", []catalog.RateInput{rateIn(t, "r1", "One"), rateIn(t, "r2", "Two")}); err != nil {
		t.Fatal(err)
	}
}

// written is what a write left: its events (without their ids and
// times), the products' rates, and how many publishes it took.
type written struct {
	events    []string
	rates     map[string][]catalog.Rate
	answers   [][]catalog.Rate
	publishes int64
}

// TestUpsertSupplierRates_WritesWhatPerProductUpsertsWriteInOnePublish:
// the supplier-wide bulk gives the events, the stored rates and the
// answers that one UpsertRates per product gives (a changed, an unchanged
// and a new rate; a new rate of a bound product naming its channel), in
// one publish instead of one per product.
func TestUpsertSupplierRates_WritesWhatPerProductUpsertsWriteInOnePublish(t *testing.T) {
	ctx := context.Background()
	rdb := testharness.RedisClient(t, 0)
	ins := []catalog.ProductRates{
		{ProductID: "p1", Rates: []catalog.RateInput{rateIn(t, "r1", "One renamed"), rateIn(t, "r2", "Two"), rateIn(t, "r3", "Three")}},
		{ProductID: "p2", Rates: []catalog.RateInput{rateIn(t, "r1", "Bound")}},
		{ProductID: "p3", Rates: []catalog.RateInput{rateIn(t, "ra", "A"), rateIn(t, "rb", "B")}},
	}
	run := func(bulk bool) written {
		t.Helper()
		if err := testharness.FlushAll(ctx, rdb); err != nil {
			t.Fatal(err)
		}
		pub := &countingPub{recorder: &recorder{}}
		s := NewStore(Options{Redis: rdb, Publisher: pub, Secrets: testharness.Keyring(t)})
		seedSupplierRates(t, s)
		pub.Reset()
		pub.calls.Store(0)
		var w written
		if bulk {
			out, err := s.UpsertSupplierRates(ctx, admin, "s1", ins)
			if err != nil {
				t.Fatal(err)
			}
			w.answers = out
		} else {
			for _, pr := range ins {
				out, err := s.UpsertRates(ctx, admin, "s1", pr.ProductID, pr.Rates)
				if err != nil {
					t.Fatal(err)
				}
				w.answers = append(w.answers, out)
			}
		}
		w.publishes = pub.calls.Load()
		for _, env := range pub.Envelopes(t) {
			w.events = append(w.events, fmt.Sprintf("%s %s v%d deleted=%v %s", env.Type, env.Key, env.Version, env.Deleted, env.Data))
		}
		w.rates = map[string][]catalog.Rate{}
		for _, pr := range ins {
			rs, err := s.Rates(ctx, admin, "s1", pr.ProductID)
			if err != nil {
				t.Fatal(err)
			}
			w.rates[pr.ProductID] = rs
		}
		return w
	}
	one, bulk := run(false), run(true)
	if one.publishes != 3 || bulk.publishes != 1 {
		t.Errorf("publishes: %d one product at a time, %d in bulk; want 3 and 1", one.publishes, bulk.publishes)
	}
	if len(one.events) != 5 {
		t.Fatalf("one product at a time published %d events, want 5 (r2 unchanged):\n%q", len(one.events), one.events)
	}
	if !reflect.DeepEqual(one.events, bulk.events) {
		t.Errorf("events differ:\none at a time %q\nbulk         %q", one.events, bulk.events)
	}
	if !reflect.DeepEqual(one.rates, bulk.rates) {
		t.Errorf("stored rates differ:\none at a time %+v\nbulk         %+v", one.rates, bulk.rates)
	}
	if !reflect.DeepEqual(one.answers, bulk.answers) {
		t.Errorf("answers differ:\none at a time %+v\nbulk         %+v", one.answers, bulk.answers)
	}
}

// TestUpsertSupplierRates_RefusesTheWholeBulk: a bulk with a product
// unknown, given twice, without rates, with a rate the catalog refuses,
// or with more than MaxBulk rates in all writes nothing.
func TestUpsertSupplierRates_RefusesTheWholeBulk(t *testing.T) {
	ctx := context.Background()
	pub := &countingPub{recorder: &recorder{}}
	s := NewStore(Options{Redis: testharness.RedisClient(t, 0), Publisher: pub, Secrets: testharness.Keyring(t)})
	seedSupplierRates(t, s)
	good := catalog.ProductRates{ProductID: "p3", Rates: []catalog.RateInput{rateIn(t, "ra", "A")}}
	unnamed := rateIn(t, "rx", "")
	many := make([]catalog.RateInput, catalog.MaxBulk)
	for i := range many {
		many[i] = rateIn(t, fmt.Sprintf("m%d", i), "M")
	}
	tests := []struct {
		name      string
		ins       []catalog.ProductRates
		wantField string // a field error on it; "" for wantErr
		wantErr   error
	}{
		{"no product", nil, "products", nil},
		{"a product twice", []catalog.ProductRates{good, good}, "products[1].productId", nil},
		{"a product without rates", []catalog.ProductRates{good, {ProductID: "p1"}}, "products[1].rates", nil},
		{"a rate refused", []catalog.ProductRates{good, {ProductID: "p1", Rates: []catalog.RateInput{unnamed}}}, "products[1].rates[0].name", nil},
		{"more than MaxBulk in all", []catalog.ProductRates{good, {ProductID: "p1", Rates: many}}, "products", nil},
		{"an unknown product", []catalog.ProductRates{good, {ProductID: "nope", Rates: []catalog.RateInput{rateIn(t, "r9", "N")}}}, "", catalog.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub.calls.Store(0)
			_, err := s.UpsertSupplierRates(ctx, admin, "s1", tt.ins)
			var fe *domainerr.FieldError
			switch {
			case tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField):
				t.Fatalf("err = %v, want a field error on %s", err, tt.wantField)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if n := pub.calls.Load(); n != 0 {
				t.Errorf("%d publishes, want none", n)
			}
			rs, err := s.Rates(ctx, admin, "s1", "p3")
			if err != nil || len(rs) != 0 {
				t.Errorf("p3 has rates %+v (%v) after a refused bulk, want none", rs, err)
			}
		})
	}
}

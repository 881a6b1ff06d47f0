package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

// wireEvents are catalog events of every kind and shape, with the
// characters encoding/json escapes: the records whose bytes on the topics
// testdata/events holds (written by the Event of before schemas owned the
// payload, so that any change of the bytes fails the test).
func wireEvents() map[string]Event {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	max := 9
	avail := AvailabilitySet{SupplierID: "s1", ProductID: "p1", RateID: "r1", Version: 3, Availabilities: []Availability{
		{ID: "a1", Start: at, End: at.Add(time.Hour), Capacity: 4, MaxCapacity: &max, SystemID: "x<1>"}}}
	sup := Supplier{SupplierData: SupplierData{ID: "s1", Name: "Tours <&> Co"}, Version: 2,
		Connection: Connection{Kind: "octo", BaseURL: "https://example.test/octo", Credentials: Credentials{APIKey: "sealed:abc"}}, Owner: "op-a"}
	prod := Product{ProductData: ProductData{ID: "p1", Name: "Walk & talk"}, SupplierID: "s1", Version: 5}
	rate := Rate{SupplierID: "s1", ProductID: "p1", RateData: RateData{ID: "r1", Name: "Adult"}, Version: 7}
	bind := Binding{SupplierID: "s1", ProductID: "p1", ChannelID: "c1", RateIDs: []string{"r1"}, PriceAt: PriceAtSale,
		PriceTags: []string{}, Valid: Validity{From: at}, Version: 2}
	prior := &schemas.CatalogPrior{Version: 1, Fingerprint: "f00"}
	ps := PriceSchedule{SupplierID: "s1", ProductID: "p1", RateID: "r1", Version: 4, Entries: []PriceScheduleEntry{
		{From: "2026-03-01", Until: "2026-03-31", Prices: []Price{}}}}
	return map[string]Event{
		"channel":                   {Kind: schemas.CatalogKindChannel, ChannelID: "c1", Channel: &Channel{ID: "c1", Name: "C", CompanyName: "C & Co", Version: 1}},
		"supplier-created":          {Kind: schemas.CatalogKindSupplier, SupplierID: "s1", Supplier: &sup},
		"supplier-updated":          {Kind: schemas.CatalogKindSupplier, SupplierID: "s1", Supplier: &sup, Prior: prior},
		"supplier-deleted":          {Kind: schemas.CatalogKindSupplier, SupplierID: "s1", Owner: "op-a", Prior: prior},
		"product":                   {Kind: schemas.CatalogKindProduct, SupplierID: "s1", ProductID: "p1", Product: &prod, Prior: prior},
		"rate-created":              {Kind: schemas.CatalogKindRate, SupplierID: "s1", ProductID: "p1", RateID: "r1", Rate: &rate, BoundChannels: []string{}},
		"rate-deleted":              {Kind: schemas.CatalogKindRate, SupplierID: "s1", ProductID: "p1", RateID: "r1", Prior: prior, BoundChannels: []string{"c1", "c2"}},
		"rate-updated":              {Kind: schemas.CatalogKindRate, SupplierID: "s1", ProductID: "p1", RateID: "r1", Rate: &rate, Prior: prior},
		"binding":                   {Kind: schemas.CatalogKindBinding, SupplierID: "s1", ProductID: "p1", ChannelID: "c1", Binding: &bind, PriorBinding: &bind},
		"binding-deleted":           {Kind: schemas.CatalogKindBinding, SupplierID: "s1", ProductID: "p1", ChannelID: "c1", PriorBinding: &bind},
		"availability":              {Kind: schemas.CatalogKindAvailability, SupplierID: "s1", ProductID: "p1", RateID: "r1", Availability: &avail},
		"availability-deleted":      {Kind: schemas.CatalogKindAvailability, SupplierID: "s1", ProductID: "p1", RateID: "r1"},
		"priceschedule":             {Kind: schemas.CatalogKindPriceSchedule, SupplierID: "s1", ProductID: "p1", RateID: "r1", PriceSchedule: &ps, PriorPrices: ps.Entries, Batch: "b1"},
		"priceschedule-empty-prior": {Kind: schemas.CatalogKindPriceSchedule, SupplierID: "s1", ProductID: "p1", RateID: "r1", PriceSchedule: &ps, PriorPrices: []PriceScheduleEntry{}},
	}
}

// The records keep their bytes: an Event encodes to the golden record,
// the record decodes to the same Event, and schemas.CatalogEvent (the
// payload's owner) reads and writes it unchanged.
func TestEvent_WireIsTheGoldenRecord(t *testing.T) {
	for name, ev := range wireEvents() {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "events", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(&ev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n%s\nwant\n%s", got, want)
			}
			var back Event
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			if len(ev.PriorPrices) == 0 {
				ev.PriorPrices = nil // omitempty: an empty prior is absent, read as nil
			}
			if !reflect.DeepEqual(back, ev) {
				t.Errorf("decoded %+v, want %+v", back, ev)
			}
			var rec schemas.CatalogEvent
			if err := json.Unmarshal(want, &rec); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(&rec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, want) {
				t.Errorf("schemas.CatalogEvent wrote\n%s\nwant\n%s", again, want)
			}
			if rec.EntityKey() != ev.EntityKey() || rec.Kind.Topic() == "" {
				t.Errorf("record key %q topic %q, event key %q", rec.EntityKey(), rec.Kind.Topic(), ev.EntityKey())
			}
		})
	}
}

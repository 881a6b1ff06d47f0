package catalogredis

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/schemas"
)

func availWireCases() []catalog.AvailabilitySet {
	paris, _ := time.LoadLocation("Europe/Paris")
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	max := 40
	return []catalog.AvailabilitySet{
		{SupplierID: "s1", ProductID: "p1", RateID: "r1", Availabilities: []catalog.Availability{}, Version: 1},
		{SupplierID: "s1", ProductID: "p1", RateID: "r1", Availabilities: []catalog.Availability{
			{ID: "w", Start: start, End: start.Add(2 * time.Hour), Capacity: 10},
			{ID: "b64.abc<&>", Start: start.In(paris).Add(time.Nanosecond), End: start.Add(3 * time.Hour), Capacity: 0, MaxCapacity: &max},
			{ID: "7f1f3a52-4a1e-5b9e-9d0c-3c6f7a1b2c3d", Start: start, End: start.Add(time.Hour), Capacity: 3, SystemID: "2026-12-01T10:00:00+01:00#09:00-12:00"},
		}, Version: 42},
		{SupplierID: `a"b`, ProductID: "Zürich", RateID: "\u2028", Availabilities: nil},
	}
}

func TestAvailWire_MatchesEncodingJSON(t *testing.T) {
	for i, set := range availWireCases() {
		want, _ := json.Marshal(set)
		got := availSetJSON(set)
		if string(got) != string(want) {
			t.Fatalf("case %d set\n got %s\nwant %s", i, got, want)
		}
		ev := catalog.Event{Kind: schemas.CatalogKindAvailability, SupplierID: set.SupplierID, ProductID: set.ProductID, RateID: set.RateID, Availability: &set}
		wantEv, _ := json.Marshal(ev)
		if gotEv := availEventJSON(set, got); string(gotEv) != string(wantEv) {
			t.Fatalf("case %d event\n got %s\nwant %s", i, gotEv, wantEv)
		}
		env := schemas.Envelope{ID: "e1", Type: schemas.CatalogEventType(schemas.CatalogKindAvailability, false), Key: ev.EntityKey(), Version: set.Version,
			Time: time.Date(2026, 11, 25, 10, 0, 0, 123000, time.UTC), Source: "catalog", Data: wantEv}
		wantEnv, _ := json.Marshal(env)
		gotEnv, ok := envelopeJSON(env)
		if !ok || string(gotEnv) != string(wantEnv) {
			t.Fatalf("case %d envelope\n got %s\nwant %s", i, gotEnv, wantEnv)
		}
	}
	deleted := schemas.Envelope{ID: "e2", Type: "catalog.rate.deleted", Key: "s/p/r", Time: time.Unix(0, 0).UTC(), Deleted: true}
	want, _ := json.Marshal(deleted)
	if got, ok := envelopeJSON(deleted); !ok || string(got) != string(want) {
		t.Fatalf("deleted envelope\n got %s\nwant %s", got, want)
	}
}

// Data that encoding/json would rewrite (compact, HTML-escape) is not
// copied: envelopeJSON declines, and the caller marshals.
func TestEnvelopeJSON_DeclinesDataEncodingJSONRewrites(t *testing.T) {
	for _, data := range []string{`{ "a": 1 }`, "{\"a\":\n1}", `{"a":"<b>"}`, `{"a":"x&y"}`, "{\"a\":\"\u2028\"}"} {
		env := schemas.Envelope{ID: "e1", Type: "catalog.availability.upserted", Key: "s/p/r", Time: time.Unix(0, 0).UTC(), Data: json.RawMessage(data)}
		want, _ := json.Marshal(env)
		if got, ok := envelopeJSON(env); ok {
			t.Errorf("data %q copied: got %s, encoding/json writes %s", data, got, want)
		}
	}
}

package catalogredis

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// availRecordValue is an availability event record as the writer
// publishes it.
func availRecordValue(set catalog.AvailabilitySet) []byte {
	raw := availSetJSON(set)
	env := schemas.Envelope{ID: "e1", Type: schemas.CatalogEventType(schemas.CatalogKindAvailability, false), Key: set.SupplierID + "/" + set.ProductID + "/" + set.RateID,
		Version: set.Version, Time: time.Date(2026, 11, 25, 10, 0, 0, 123000, time.UTC), Source: "catalog", Data: availEventJSON(set, raw)}
	v, _ := envelopeJSON(env)
	return v
}

// checkAvailRecord: when the fast path takes a record, what it applies is
// what the slow path (DecodeMessage, DecodeEvent, encoding/json) applies.
func checkAvailRecord(t *testing.T, value []byte) {
	t.Helper()
	rec, ok := availRecordFast(value)
	if !ok {
		return
	}
	env, isCatalog, err := DecodeMessage(stream.Message{Topic: schemas.TopicAvailability, Value: value})
	if err != nil || !isCatalog {
		t.Fatalf("fast path took %q; slow path: catalog=%v %v", value, isCatalog, err)
	}
	ev, err := catalog.DecodeEvent(env)
	if err != nil {
		t.Fatalf("fast path took %q; DecodeEvent: %v", value, err)
	}
	var fromFast catalog.AvailabilitySet
	if err := json.Unmarshal(rec.set, &fromFast); err != nil {
		t.Fatalf("fast path's set %q does not decode: %v", rec.set, err)
	}
	if string(catalogwire.MustJSON(fromFast)) != string(catalogwire.MustJSON(ev.Availability)) || rec.version != env.Version || !rec.at.Equal(env.Time) ||
		rec.sid != ev.SupplierID || rec.pid != ev.ProductID || rec.rid != ev.RateID {
		t.Fatalf("fast path on %q: %+v, slow %+v %+v", value, rec, env, ev)
	}
}

func TestAvailRecordFast_TakesTheWritersRecordsAndAgrees(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	max := 9
	plain := catalog.AvailabilitySet{SupplierID: "s1", ProductID: "p1", RateID: "r1", Version: 7, Availabilities: []catalog.Availability{
		{ID: "w1", Start: start, End: start.Add(time.Hour), Capacity: 3},
		{ID: "b64.abc", Start: start.Add(2 * time.Hour), End: start.Add(3 * time.Hour), Capacity: 0, MaxCapacity: &max},
	}}
	for i, set := range append(availWireCases(), plain) {
		if set.Version == 0 {
			continue
		}
		v := availRecordValue(set)
		if _, ok := availRecordFast(v); !ok && (set.Version == 7 || len(set.Availabilities) == 0) {
			t.Fatalf("case %d: the writer's own plain record %s was not taken by the fast path", i, v)
		}
		checkAvailRecord(t, v)
		if got := RecordType(v); got != schemas.CatalogEventType(schemas.CatalogKindAvailability, false) {
			t.Fatalf("RecordType = %q", got)
		}
	}
}

func FuzzAvailRecordFast(f *testing.F) {
	for _, set := range availWireCases() {
		f.Add(availRecordValue(set))
	}
	f.Add([]byte(`{"id":"e","type":"catalog.availability.upserted","key":"s/p/r","version":2,"time":"2026-01-01T00:00:00Z","data":{"kind":"availability","supplierId":"s","productId":"p","rateId":"r","availability":{"supplierId":"s","productId":"p","rateId":"r","availabilities":[],"version":2}}}`))
	f.Fuzz(func(t *testing.T, value []byte) { checkAvailRecord(t, value) })
}

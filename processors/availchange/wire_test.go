package availchange

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/schemas"
)

func snapshotValue(tb testing.TB, s schemas.Snapshot) []byte {
	tb.Helper()
	m, err := availcache.SnapshotMessage(s, s.Retrieved)
	if err != nil {
		tb.Fatal(err)
	}
	return m.Value
}

func sampleSnapshot() schemas.Snapshot {
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	maxCap := 12
	return schemas.Snapshot{SupplierID: "S1", ProductID: "P1", RateID: "R1", Start: at, End: at.Add(72 * time.Hour),
		Retrieved: at.Add(time.Minute + 123456789), Expires: at.Add(time.Hour), Availabilities: []schemas.Availability{
			{ID: "a", Start: at.Add(9 * time.Hour), End: at.Add(11 * time.Hour), Capacity: 5},
			{ID: "b", Start: at.Add(33 * time.Hour), End: at.Add(35 * time.Hour), Capacity: 0, MaxCapacity: &maxCap},
		}}
}

func TestDecodeSnapshotFast_AgreesWithEncodingJSON(t *testing.T) {
	produced := snapshotValue(t, sampleSnapshot())
	tests := []struct {
		name     string
		value    string
		wantFast bool
	}{
		{"the producer's wire form", string(produced), true},
		{"whitespace and other key order", `{ "data" : {"rateId":"R","productId":"P","supplierId":"S","end":"2026-11-23T00:00:00+01:00","start":"2026-11-22T00:00:00Z",
			"availabilities":[ {"capacity":-1,"end":"2026-11-22T02:00:00Z","start":"2026-11-22T01:00:00Z","x":[1,2.5e3,{"y":null}]} ],"retrieved":"2026-11-22T00:00:00.5Z"},
			"type":"availability.snapshot", "id":"e1", "version": 7, "time":"2026-11-22T00:00:00Z", "deleted": false }`, true},
		{"no availabilities", `{"id":"e","type":"availability.snapshot","time":"2026-11-22T00:00:00Z","data":{"supplierId":"S","productId":"P","rateId":"R","start":"2026-11-22T00:00:00Z","end":"2026-11-23T00:00:00Z","retrieved":"2026-11-22T00:00:00Z","availabilities":null}}`, true},
		{"escaped string", `{"id":"e\u0031","type":"availability.snapshot","time":"2026-11-22T00:00:00Z","data":{"supplierId":"S","productId":"P","rateId":"R","start":"2026-11-22T00:00:00Z","end":"2026-11-23T00:00:00Z","retrieved":"2026-11-22T00:00:00Z"}}`, false},
		{"key in another case", `{"ID":"e","type":"availability.snapshot","time":"2026-11-22T00:00:00Z","data":{"supplierId":"S","productId":"P","rateId":"R","start":"2026-11-22T00:00:00Z","end":"2026-11-23T00:00:00Z","retrieved":"2026-11-22T00:00:00Z"}}`, false},
		{"fractional capacity", `{"id":"e","type":"availability.snapshot","time":"2026-11-22T00:00:00Z","data":{"supplierId":"S","productId":"P","rateId":"R","start":"2026-11-22T00:00:00Z","end":"2026-11-23T00:00:00Z","retrieved":"2026-11-22T00:00:00Z","availabilities":[{"capacity":1.5}]}}`, false},
		{"trailing garbage", string(produced) + "x", false},
		{"empty window", `{"id":"e","type":"availability.snapshot","time":"2026-11-22T00:00:00Z","data":{"supplierId":"S","productId":"P","rateId":"R","start":"2026-11-22T00:00:00Z","end":"2026-11-22T00:00:00Z"}}`, false},
		{"another type", `{"id":"e","type":"catalog.availability.upserted","data":{}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok := decodeFast([]byte(tt.value))
			if ok != tt.wantFast {
				t.Fatalf("fast path took it: %v, want %v", ok, tt.wantFast)
			}
			if !ok {
				return
			}
			slow, ok, err := decodeJSON([]byte(tt.value))
			if err != nil || !ok {
				t.Fatalf("encoding/json refuses what the fast path took: %v", err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("fast %+v\nslow %+v", fast, slow)
			}
		})
	}
}

// FuzzDecode: whatever the fast path accepts (a snapshot or an operator's
// push), the encoding/json path (catalog.DecodeEvent for a push) accepts
// too and decodes to the same input.
func FuzzDecode(f *testing.F) {
	f.Add(snapshotValue(f, sampleSnapshot()))
	f.Add([]byte(`{"id":"e","type":"availability.snapshot","time":"2026-11-22T00:00:00Z","version":-0,"data":{"supplierId":"S","productId":"P","rateId":"R","start":"2026-11-22T00:00:00Z","end":"2026-11-23T00:00:00Z","retrieved":"2026-11-22T00:00:00Z","availabilities":[{"start":"2026-11-22T00:00:00Z","end":"2026-11-22T01:00:00Z","capacity":3,"q":[true,{}]}]}}`))
	f.Add([]byte(`{"id":"e1","type":"catalog.availability.upserted","key":"s1/p1/r1","version":3,"time":"2026-11-25T10:00:00.000123Z","source":"catalog","data":{"kind":"availability","supplierId":"s1","productId":"p1","rateId":"r1","availability":{"supplierId":"s1","productId":"p1","rateId":"r1","availabilities":[{"id":"w","start":"2026-12-01T09:00:00Z","end":"2026-12-01T11:00:00Z","capacity":10,"maxCapacity":12}],"version":3}}}`))
	f.Add([]byte(`{"id":"e1","type":"catalog.availability.upserted","key":"s1/p1/r1","version":2,"time":"2026-11-25T10:00:00Z","data":{"kind":"availability","supplierId":"s1","productId":"p1","rateId":"r1","availability":{"supplierId":"s1","productId":"p1","rateId":"r1","availabilities":[{"id":"w","start":"2026-12-01T09:00:00Z","end":"2026-12-01T11:00:00Z","capacity":1,"systemId":"2026-12-01T10:00:00+01:00"}],"version":2}}}`))
	f.Add([]byte(`{"id":"e","type":"availability.snapshot","time":"2026-11-22T00:00:00Z","data":{"supplierId":"S","productId":"P","rateId":"R","start":"2026-11-22T00:00:00Z","end":"2026-11-23T00:00:00Z","retrieved":"2026-11-22T00:00:00Z","availabilities":[{"start":"2026-11-22T00:00:00Z","end":"2026-11-22T01:00:00Z","capacity":3,"systemId":7}]}}`))
	f.Add([]byte(`{"id":"e1","type":"catalog.availability.upserted","key":"s1/p1/r1","version":1,"time":"2026-11-25T10:00:00Z","data":{"kind":"availability","supplierId":"s1","productId":"p1","rateId":"r1","availability":{"supplierId":"s1","productId":"p1","rateId":"r1","availabilities":[],"version":1}}}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		fast, ok := decodeFast(value)
		if !ok {
			return
		}
		slow, ok, err := decodeJSON(value)
		if err != nil || !ok {
			t.Fatalf("encoding/json refuses what the fast path took: ok %v, %v", ok, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %+v\nslow %+v", fast, slow)
		}
	})
}

// TestDecodePushFast_TakesABookingSystemsPush: a set a booking-system
// synchronization writes (each slot with the system's own id, some with a
// maxCapacity), encoded as the catalog encodes its events, takes the fast
// path and decodes as encoding/json does. A full synchronization writes
// thousands of such sets.
func TestDecodePushFast_TakesABookingSystemsPush(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	twelve := 12
	set := catalog.AvailabilitySet{SupplierID: "S1", ProductID: "S1-P1", RateID: "S1-P1-O1", Version: 4, Availabilities: []catalog.Availability{
		{ID: "5c0b7a33-2f4e-5b8a-9d61-0e8f2d7c4a19", SystemID: "2026-12-01T09:00:00+01:00", Start: at, End: at.Add(2 * time.Hour), Capacity: 10, MaxCapacity: &twelve},
		{ID: "6c0b7a33-2f4e-5b8a-9d61-0e8f2d7c4a19", SystemID: "2026-12-01T13:00:00+01:00", Start: at.Add(4 * time.Hour), End: at.Add(6 * time.Hour), Capacity: 0},
	}}
	ev := catalog.Event{Kind: schemas.CatalogKindAvailability, SupplierID: "S1", ProductID: "S1-P1", RateID: "S1-P1-O1", Availability: &set}
	v := catalogwire.MustJSON(schemas.Envelope{ID: "e1", Type: pushType, Key: ev.EntityKey(), Version: 4, Time: at, Source: "catalog",
		Data: catalogwire.MustJSON(&ev)})
	fast, ok := decodeFast(v)
	if !ok || len(fast.slots) != 2 || fast.slots[0].Vacancies != 10 {
		t.Fatalf("fast path on a booking system's push %s: %+v %v", v, fast, ok)
	}
	slow, _, err := decodeJSON(v)
	if err != nil || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast %+v\nslow %+v (%v)", fast, slow, err)
	}
}

func TestDecodePushFast_TakesThePlainPush(t *testing.T) {
	v := []byte(`{"id":"e1","type":"catalog.availability.upserted","key":"s1/p1/r1","version":3,"time":"2026-11-25T10:00:00.000123Z","source":"catalog","data":{"kind":"availability","supplierId":"s1","productId":"p1","rateId":"r1","availability":{"supplierId":"s1","productId":"p1","rateId":"r1","availabilities":[{"id":"w","start":"2026-12-01T09:00:00Z","end":"2026-12-01T11:00:00Z","capacity":10}],"version":3}}}`)
	fast, ok := decodeFast(v)
	if !ok || len(fast.slots) != 1 || fast.slots[0].Vacancies != 10 || fast.version != 3 {
		t.Fatalf("fast path on a plain push: %+v %v", fast, ok)
	}
	slow, _, err := decodeJSON(v)
	if err != nil || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast %+v\nslow %+v (%v)", fast, slow, err)
	}
}

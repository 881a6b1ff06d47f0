package availchange

import (
	"reflect"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/availcache"
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

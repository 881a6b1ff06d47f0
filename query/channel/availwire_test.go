package channel

import (
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// TestDecodeAvailabilities_TakesWhatOperatorsSend: the bodies operators
// and this repository's tools send go the fast path, with encoding/json's
// value; the unusual ones are left to encoding/json.
func TestDecodeAvailabilities_TakesWhatOperatorsSend(t *testing.T) {
	tests := []struct {
		name string
		body string
		fast bool
	}{
		{"bench/e2elatency's push", `{"availabilities":[{"id":"w","start":"2026-12-01T09:00:00Z","end":"2026-12-01T11:00:00Z","capacity":7}]}`, true},
		{"every member, an offset, spaces", ` { "availabilities" : [ {"id":"a1","start":"2026-12-01T09:00:00+01:00","end":"2026-12-01T11:00:00.5+01:00","capacity":0,"maxCapacity":12,"systemId":"bs-9"} , {"id":"a2","start":"2026-12-02T09:00:00Z","end":"2026-12-02T10:00:00Z","capacity":3} ] } `, true},
		{"empty list", `{"availabilities":[]}`, true},
		{"empty availability", `{"availabilities":[{}]}`, true},
		{"key in another case", `{"availabilities":[{"ID":"a"}]}`, false},
		{"unknown key", `{"availabilities":[{"id":"a","color":"red"}]}`, false},
		{"duplicate key", `{"availabilities":[{"id":"a","id":"b"}]}`, false},
		{"null list", `{"availabilities":null}`, false},
		{"null maxCapacity", `{"availabilities":[{"maxCapacity":null}]}`, false},
		{"escaped id", `{"availabilities":[{"id":"a\u0041"}]}`, false},
		{"fractional capacity", `{"availabilities":[{"capacity":1.5}]}`, false},
		{"not a time", `{"availabilities":[{"start":"tomorrow"}]}`, false},
		{"trailing data", `{"availabilities":[]} x`, false},
		{"no list", `{}`, false},
		{"empty body", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decodeAvailabilities([]byte(tt.body))
			if ok != tt.fast {
				t.Fatalf("fast path ok = %v, want %v", ok, tt.fast)
			}
			if ok {
				sameAsEncodingJSON(t, []byte(tt.body), got)
			}
		})
	}
}

// sameAsEncodingJSON fails unless encoding/json (the handler's slow path)
// takes body too and reads the same availabilities: the same members,
// times at the same instant with the same offset and zone name, a
// maxCapacity given or not. (Not compared as encoded again: both take
// offsets such as +24:00 that time.Time cannot encode.)
func sameAsEncodingJSON(t *testing.T, body []byte, fast []catalog.Availability) {
	t.Helper()
	var in availabilitiesRequest
	if err := httpapi.DecodeJSON(body, &in); err != nil {
		t.Fatalf("fast path took %q, encoding/json refuses it: %v", body, err)
	}
	if len(fast) != len(in.Availabilities) {
		t.Fatalf("body %q: %d availabilities on the fast path, %d with encoding/json", body, len(fast), len(in.Availabilities))
	}
	for i, a := range fast {
		b := in.Availabilities[i]
		if a.ID != b.ID || a.SystemID != b.SystemID || a.Capacity != b.Capacity ||
			(a.MaxCapacity == nil) != (b.MaxCapacity == nil) || (a.MaxCapacity != nil && *a.MaxCapacity != *b.MaxCapacity) ||
			!sameTime(a.Start, b.Start) || !sameTime(a.End, b.End) {
			t.Fatalf("body %q, availability %d:\n fast path     %+v\n encoding/json %+v", body, i, a, b)
		}
	}
}

func sameTime(a, b time.Time) bool {
	an, ao := a.Zone()
	bn, bo := b.Zone()
	return a.Equal(b) && an == bn && ao == bo
}

func FuzzDecodeAvailabilities(f *testing.F) {
	for _, s := range []string{
		`{"availabilities":[{"id":"w","start":"2026-12-01T09:00:00Z","end":"2026-12-01T11:00:00Z","capacity":7}]}`,
		`{"availabilities":[{"id":"a1","start":"2026-12-01T09:00:00+01:00","end":"2026-12-01T11:00:00.5-01:30","capacity":-0,"maxCapacity":12,"systemId":"x"}]}`,
		`{"availabilities":[{},{"capacity":9223372036854775807}]}`,
		`{"availabilities":[{"start":"2026-12-01T24:00:00Z"}]}`,
		`{"availabilities":[{"start":"0000-01-01T00:00:00+23:59"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeAvailabilities(body)
		if !ok {
			return
		}
		sameAsEncodingJSON(t, body, got)
	})
}

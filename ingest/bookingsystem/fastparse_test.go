package bookingsystem

import (
	"reflect"
	"testing"
)

var fastSeeds = []string{
	`[{"id":"a","optionId":"O1","localDateTimeStart":"2026-11-23T09:00:00.5+01:00","localDateTimeEnd":"2026-11-23T11:00:00+01:00","status":"AVAILABLE","vacancies":3}]`,
	`[ {"id":"a","optionId":"O1","localDateTimeStart":"2026-11-23T09:00:00Z","localDateTimeEnd":"2026-11-23T12:00:00Z","status":"FREESALE","extra":{"x":[1,2.5,null]}} ,
	   {"id":"b","optionId":"O1","localDateTimeStart":"2026-11-23T12:00:00Z","localDateTimeEnd":"2026-11-23T13:00:00Z","status":"FREESALE","available":true} ]`,
	`[]`,
	`[{"id":"a","vacancies":-1}]`,
	`[{"ID":"a"}]`,
	`[{"id":"a\u00e9"}]`,
	`[{"id":"a","vacancies":1.5}]`,
	`[{"id":"a","vacancies":null}]`,
	`[{"id":"a","vacancies":1,"vacancies":2}]`,
	`{"id":"a"}`,
	`[{"id":"a"}] x`,
	`[{"id":"a","localDateTimeStart":"2026-13-01T00:00:00Z"}]`,
}

// TestDecodeV2AvailabilityFast_AgreesOrDeclines: on every seed the fast
// path either declines or gives exactly what encoding/json gives, and the
// plain answers a booking system sends are taken by it.
func TestDecodeV2AvailabilityFast_AgreesOrDeclines(t *testing.T) {
	for i, body := range fastSeeds {
		checkFastAgrees(t, []byte(body))
		if _, _, ok := decodeV2AvailabilityFast([]byte(body)); i < 3 && !ok {
			t.Errorf("seed %d (a plain answer) declined by the fast path", i)
		}
	}
}

func checkFastAgrees(t *testing.T, body []byte) {
	t.Helper()
	items, idx, ok := decodeV2AvailabilityFast(body)
	if !ok {
		return
	}
	want, wantIdx, ps, err := decodeItems[v2Availability](body, "availability")
	if err != nil || len(ps) != 0 {
		t.Fatalf("fast path accepted %q; encoding/json: %v %+v", body, err, ps)
	}
	if len(items) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(items, want) || !reflect.DeepEqual(idx, wantIdx) {
		t.Fatalf("fast path on %q:\n got %+v %v\nwant %+v %v", body, items, idx, want, wantIdx)
	}
}

func FuzzDecodeV2AvailabilityFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkFastAgrees(t, body) })
}

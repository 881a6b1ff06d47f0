package schemas

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestReadEnvelope_TakesThePlainShapeOnly(t *testing.T) {
	tests := []struct {
		name   string
		value  string
		wantOK bool
	}{
		{"every key", `{"id":"e1","type":"t","key":"k","version":7,"time":"2026-11-26T05:00:00Z","source":"s","deleted":true,"data":{"a":[1,2]}}`, true},
		{"no data", `{"id":"e1","type":"t","key":"k","time":"2026-11-26T05:00:00Z"}`, true},
		{"unknown key skipped", `{"id":"e1","type":"t","key":"k","time":"2026-11-26T05:00:00Z","extra":{"x":1},"data":[]}`, true},
		{"repeated key", `{"id":"e1","id":"e2","type":"t","key":"k","time":"2026-11-26T05:00:00Z"}`, false},
		{"folded key", `{"ID":"e1","type":"t","key":"k","time":"2026-11-26T05:00:00Z"}`, false},
		{"escaped string", `{"id":"e\u0031","type":"t","key":"k","time":"2026-11-26T05:00:00Z"}`, false},
		{"null data", `{"id":"e1","type":"t","key":"k","time":"2026-11-26T05:00:00Z","data":null}`, false},
		{"fractional version", `{"id":"e1","type":"t","key":"k","version":1.5,"time":"2026-11-26T05:00:00Z"}`, false},
		{"trailing bytes", `{"id":"e1","type":"t","key":"k","time":"2026-11-26T05:00:00Z"}x`, false},
		{"not an object", `[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ReadEnvelope([]byte(tt.value))
			if ok != tt.wantOK {
				t.Fatalf("ReadEnvelope ok = %v, want %v", ok, tt.wantOK)
			}
			if ok {
				requireSameEnvelope(t, []byte(tt.value), got)
			}
		})
	}
}

// requireSameEnvelope fails unless encoding/json reads value as got.
func requireSameEnvelope(t *testing.T, value []byte, got Envelope) {
	t.Helper()
	var want Envelope
	if err := json.Unmarshal(value, &want); err != nil {
		t.Fatalf("ReadEnvelope took %q, encoding/json refuses it: %v", value, err)
	}
	if got.ID != want.ID || got.Type != want.Type || got.Key != want.Key || got.Version != want.Version ||
		!got.Time.Equal(want.Time) || got.Source != want.Source || got.Deleted != want.Deleted || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("ReadEnvelope(%q) = %+v, encoding/json reads %+v", value, got, want)
	}
	if got.Time.Location().String() != want.Time.Location().String() {
		t.Fatalf("ReadEnvelope(%q) time zone %v, encoding/json %v", value, got.Time.Location(), want.Time.Location())
	}
}

func FuzzReadEnvelope(f *testing.F) {
	f.Add([]byte(`{"id":"e1","type":"t","key":"k","version":7,"time":"2026-11-26T05:00:00.123+01:00","source":"s","deleted":false,"data":{"a":"b"}}`))
	f.Add([]byte(`{"id":"","type":"t","key":"k","time":"2026-11-26T05:00:00Z","data":[{"x":null}]}`))
	f.Add([]byte(`{"Type":"t"}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		if got, ok := ReadEnvelope(value); ok {
			requireSameEnvelope(t, value, got)
		}
	})
}

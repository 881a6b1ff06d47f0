package jsonwire

import (
	"bytes"
	"encoding/json"
	"testing"
)

var rawCases = []struct {
	raw  string
	asIs bool
}{
	{`{"a":1}`, true},
	{`[1,"x",null,true,{"b":[]}]`, true},
	{`"é\u00e9"`, true},
	{`{ "a": 1 }`, false},
	{"{\"a\":\n1}", false},
	{"[1,\t2]", false},
	{"{\"a\":1}\r\n", false},
	{`{"a":"<b>"}`, false},
	{`{"a":"x&y"}`, false},
	{`{"a":"x>y"}`, false},
	{"{\"a\":\"\u2028\"}", false},
	{"{\"a\":\"\u2029\"}", false},
	{`{"a":"two words"}`, false}, // conservative: encoding/json keeps it, we do not check
}

func TestRawAsIs(t *testing.T) {
	for _, tc := range rawCases {
		if got := RawAsIs([]byte(tc.raw)); got != tc.asIs {
			t.Errorf("RawAsIs(%q) = %v, want %v", tc.raw, got, tc.asIs)
		}
	}
}

// FuzzRawAsIs: whatever RawAsIs passes, encoding/json writes as it is.
func FuzzRawAsIs(f *testing.F) {
	for _, tc := range rawCases {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) || !RawAsIs([]byte(raw)) {
			return
		}
		got, err := json.Marshal(json.RawMessage(raw))
		if err != nil || !bytes.Equal(got, []byte(raw)) {
			t.Fatalf("RawAsIs(%q) but encoding/json writes %q (%v)", raw, got, err)
		}
	})
}

package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/switchbackhq/switchback/query/apierror"
)

// fuzzBody has the shapes request bodies have: strings, numbers,
// booleans, nested objects and lists, a raw value.
type fuzzBody struct {
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	Ratio  float64           `json:"ratio"`
	On     *bool             `json:"on"`
	Tags   []string          `json:"tags"`
	Labels map[string]string `json:"labels"`
	Inner  *struct {
		ID    string `json:"id"`
		Items []struct {
			Qty int `json:"qty"`
		} `json:"items"`
	} `json:"inner"`
	Raw json.RawMessage `json:"raw"`
}

// FuzzDecodeJSON: every request body goes through DecodeJSON. Any bytes
// give either a value or a 400 error object (MALFORMED_JSON or
// INVALID_FIELD naming the field), never a panic nor another kind of
// error; a decoded value encodes and decodes back to itself.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{``, ` `, `{}`, `null`, `[]`, `{"name":"a","count":1}`, `{"name":1}`, `{"nme":"a"}`, `{"inner":{"items":[{"qty":"x"}]}}`,
		`{"count":1e400}`, `{"name":"a"} {}`, `{"raw":{"x":[1,2,{"y":null}]},"labels":{"k":"v"}}`, "{\"name\":\"\xff\"}", `{"count":-0,"ratio":1e-400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v fuzzBody
		err := DecodeJSON(body, &v)
		if err != nil {
			var ae *apierror.Error
			if !errors.As(err, &ae) || (ae.Code != apierror.MalformedJSON && ae.Code != apierror.InvalidField) {
				t.Fatalf("%q: error %v is not a MALFORMED_JSON or INVALID_FIELD error object", body, err)
			}
			// data.field is the name as the client spelled it, which may
			// be "" (a key "" is an unknown field too), so only its
			// presence is required.
			if _, named := ae.Data["field"]; ae.Code == apierror.InvalidField && !named {
				t.Fatalf("%q: INVALID_FIELD without data.field: %v", body, ae)
			}
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%q: decoded value does not encode: %v", body, err)
		}
		var w fuzzBody
		if err := DecodeJSON(again, &w); err != nil {
			t.Fatalf("%q: re-encoded %s does not decode: %v", body, again, err)
		}
		// RawMessage keeps the client's spelling; compare it as JSON.
		v.Raw, w.Raw = canonical(t, v.Raw), canonical(t, w.Raw)
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("%q: decode(encode(v)) != v:\n%+v\n%+v", body, v, w)
		}
	})
}

// canonical is raw re-encoded, nil for null (an absent raw value encodes
// as null).
func canonical(t *testing.T, raw json.RawMessage) json.RawMessage {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		t.Fatalf("raw value %q does not decode: %v", raw, err)
	}
	b, _ := json.Marshal(x)
	return b
}

// FuzzRequestID: a client's X-Request-ID is echoed (header, bodies, logs)
// only when it is 1 to 128 printable ASCII characters; anything else is
// replaced, so it cannot forge log lines or bloat answers.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{"", "abc", "a\nb", "x\x00", "é", string(make([]byte, 129)), "req-1 with spaces"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		ok := saneRequestID(v)
		printable := len(v) > 0 && len(v) <= maxRequestIDLen
		for _, c := range v {
			if c < 0x20 || c > 0x7e {
				printable = false
			}
		}
		if ok != printable {
			t.Fatalf("%q: sane = %v, want %v", v, ok, printable)
		}
	})
}

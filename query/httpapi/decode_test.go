package httpapi

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/query/apierror"
)

type decodeTarget struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Inner struct {
		Flag bool `json:"flag"`
	} `json:"inner"`
	Valid *struct {
		From time.Time `json:"from,omitzero"`
	} `json:"valid,omitempty"`
	Items []struct {
		At time.Time `json:"at,omitzero"`
	} `json:"items,omitempty"`
	embedded
}

type embedded struct {
	When time.Time `json:"when,omitzero"`
}

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name string
		body string
		code apierror.Code // "" means success
		data map[string]string
	}{
		{"valid object", `{"name":"a","count":2,"inner":{"flag":true}}`, "", nil},
		{"surrounding whitespace is fine", " \n{\"name\":\"a\"}\n ", "", nil},
		{"empty body", ``, apierror.MalformedJSON, nil},
		{"whitespace only", "  \n", apierror.MalformedJSON, nil},
		{"syntax error names the offset", `{"name" "a"}`, apierror.MalformedJSON, map[string]string{"offset": "8"}},
		{"truncated", `{"name":"a"`, apierror.MalformedJSON, map[string]string{"offset": "11"}},
		{"trailing data", `{"name":"a"} {"name":"b"}`, apierror.MalformedJSON, map[string]string{"offset": "13"}},
		{"array instead of object", `[1,2]`, apierror.MalformedJSON, nil},
		{"unknown field", `{"name":"a","nmae":"b"}`, apierror.InvalidField, map[string]string{"field": "nmae"}},
		{"wrong type names the field", `{"count":"two"}`, apierror.InvalidField, map[string]string{"field": "count"}},
		{"wrong type in a nested field names its path", `{"inner":{"flag":"yes"}}`, apierror.InvalidField, map[string]string{"field": "inner.flag"}},
		// A value its type refuses (a time that is not RFC 3339) is a bad
		// value, named: never MALFORMED_JSON with a Go layout string.
		{"a bad time names its field", `{"valid":{"from":"next tuesday"}}`, apierror.InvalidField, map[string]string{"field": "valid.from"}},
		{"a bad time in a list names its index", `{"items":[{"at":"2026-11-22T09:00:00Z"},{"at":"09:00"}]}`, apierror.InvalidField, map[string]string{"field": "items[1].at"}},
		{"a bad time of an embedded struct", `{"when":"yesterday"}`, apierror.InvalidField, map[string]string{"field": "when"}},
		{"valid times", `{"valid":{"from":"2026-11-22T09:00:00+01:00"},"items":[{"at":"2026-11-22T09:00:00Z"}],"when":"2026-11-22T09:00:00Z"}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v decodeTarget
			err := DecodeJSON([]byte(tt.body), &v)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			var ae *apierror.Error
			if !errors.As(err, &ae) || ae.Code != tt.code || ae.Message == "" {
				t.Fatalf("err = %#v, want %s with a message", err, tt.code)
			}
			if strings.Contains(ae.Message, "2006-01-02T15:04:05Z07:00") {
				t.Errorf("message quotes a Go layout: %q", ae.Message)
			}
			for k, want := range tt.data {
				if ae.Data[k] != want {
					t.Errorf("data[%s] = %q, want %q (message %q)", k, ae.Data[k], want, ae.Message)
				}
			}
		})
	}
}

func TestDecodeJSON_NonPointerIsABugNotA400(t *testing.T) {
	err := DecodeJSON([]byte(`{}`), decodeTarget{})
	if got := apierror.From(err); got.Code != apierror.Internal {
		t.Fatalf("code = %s, want INTERNAL", got.Code)
	}
}

func TestSaneRequestID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"uuid", "3f0c2a9e-8d6b-4f7a-9c1e-2b5d7e9f0a13", true},
		{"printable with spaces", "my req 1", true},
		{"empty", "", false},
		{"128 chars", string(make128('a')), true},
		{"129 chars", string(make128('a')) + "a", false},
		{"newline", "a\nb", false},
		{"non-ASCII", "é", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := saneRequestID([]byte(tt.id)); got != tt.want {
				t.Errorf("saneRequestID(%q) = %t, want %t", tt.id, got, tt.want)
			}
		})
	}
}

func make128(c byte) []byte {
	b := make([]byte, 128)
	for i := range b {
		b[i] = c
	}
	return b
}

func TestAppendUUIDv4_IsAVersion4UUIDAndAllocatesNothing(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		var b [36]byte
		appendUUIDv4(&b)
		id := string(b[:])
		if len(id) != 36 || id[14] != '4' || !strings.ContainsAny(id[19:20], "89ab") || strings.Count(id, "-") != 4 || seen[id] {
			t.Fatalf("bad or repeated UUIDv4 %q", id)
		}
		seen[id] = true
	}
	var b [36]byte
	if n := testing.AllocsPerRun(100, func() { appendUUIDv4(&b) }); n != 0 {
		t.Errorf("appendUUIDv4 allocates %.0f times", n)
	}
}

package registryapi

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/schemas"
)

// FuzzTestBody: a test notification body (spec doc 1, POST
// /{type}/test/{id}) of any bytes, for any type, either builds a
// notification of that type whose payload is JSON, or is refused with a
// 400 naming the problem (a malformed body, or a field error); never a
// panic.
func FuzzTestBody(f *testing.F) {
	for _, typ := range schemas.NotificationTypes() {
		f.Add(typ, []byte(`{"supplierID":"s1","productID":"p1","rateID":"r1","operation":"updated"}`))
	}
	for _, s := range []string{``, `{}`, `{"supplierID":""}`, `{"start":"2026-06-01T10:00:00Z","end":"yesterday"}`, `{"bookingID":"\u0000"}`,
		`{"supplierID":"s","productID":"p","rateID":"r","start":"2026-06-01T10:00:00Z","end":"2026-06-01T12:00:00Z"}`, `{"operation":"exploded"}`} {
		f.Add("availability", []byte(s))
		f.Add("booking", []byte(s))
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, typ string, body []byte) {
		in, err := parseTestBody(body)
		if err != nil {
			if !isBadRequest(err) {
				t.Fatalf("%q: decode error %v is not a 400 error object", body, err)
			}
			return
		}
		n, err := registry.BuildTestNotification("sub-1", typ, in, now)
		if err != nil {
			var fe *registry.FieldError
			if errors.As(err, &fe) && fe.Field != "" {
				return
			}
			if errors.Is(err, registry.ErrNotFound) {
				return // not a rule type
			}
			t.Fatalf("%s %q: refusal %v names no field", typ, body, err)
		}
		if n.Type != typ || n.ID == "" || n.Subscriber != "sub-1" || !json.Valid(n.Payload) {
			t.Fatalf("%s %q: notification %+v", typ, body, n)
		}
	})
}

// FuzzMetadataBody: PUT /metadata with any bytes either decodes to the two
// settings, a throttleDelay that validates parsing to a delay that is not
// negative, or is refused with a 400; never a panic.
func FuzzMetadataBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"throttleDelay":"1s"}`, `{"throttleDelay":"-1s"}`, `{"throttleDelay":"1h30m","disableAll":true}`,
		`{"disableAll":"yes"}`, `{"throttleDelay":"9999999999h"}`, `{"meta":{"x":1},"createdOn":"2026"}`, `{"throttleDelay":"1.5ms"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := parseMetadataBody(body)
		if err != nil {
			if !isBadRequest(err) {
				t.Fatalf("%q: error %v is not a 400 error object", body, err)
			}
			return
		}
		if in.ThrottleDelay != nil {
			if d, err := registry.ParseThrottleDelay(*in.ThrottleDelay); err == nil && d < 0 {
				t.Fatalf("%q: throttleDelay %q parses to a negative %v", body, *in.ThrottleDelay, d)
			}
		}
	})
}

// isBadRequest says whether err is a 400 error object: malformed JSON or
// an invalid field.
func isBadRequest(err error) bool {
	var ae *apierror.Error
	return errors.As(err, &ae) && (ae.Code == apierror.MalformedJSON || ae.Code == apierror.InvalidField)
}

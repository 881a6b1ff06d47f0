package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedSig makes the golden bodies reproducible.
var fixedSig = schemas.Signature{Sum: webhook.Sign("golden-key", 1700000000, "00112233445566778899aabbccddeeff"), Timestamp: 1700000000, Token: "00112233445566778899aabbccddeeff"}

func TestBody_GoldenPerType(t *testing.T) {
	payloads := map[string]any{
		schemas.TypeChannelBinding: schemas.ChannelBindingPayload{SupplierID: "S1", ProductID: "P1", Operation: "created"},
		schemas.TypeSupplier:       schemas.SupplierPayload{SupplierID: "S1", Operation: "updated"},
		schemas.TypeProduct:        schemas.ProductPayload{SupplierID: "S1", ProductID: "P1", Operation: "updated"},
		schemas.TypeRate:           schemas.RatePayload{SupplierID: "S1", ProductID: "P1", RateID: "R1", Operation: "updated"},
		schemas.TypeAvailability:   schemas.AvailabilityPayload{SupplierID: "S1", ProductID: "P1", RateID: "R1", Start: "2026-12-01T00:00:00Z", End: "2026-12-08T00:00:00Z"},
		schemas.TypePriceSchedule:  schemas.PriceSchedulePayload{SupplierID: "S1", ProductID: "P1", Start: "2026-12-01T00:00:00Z", End: "2026-12-08T00:00:00Z"},
		schemas.TypeBooking:        schemas.BookingPayload{BookingID: "B1", StartTime: "2026-12-01T09:00:00Z", ResellerBookingReference: "R-42", Operation: "canceled"},
	}
	for _, typ := range schemas.NotificationTypes() {
		t.Run(typ, func(t *testing.T) {
			raw, err := json.Marshal(payloads[typ])
			if err != nil {
				t.Fatal(err)
			}
			body, err := webhook.Body(schemas.Notification{Type: typ, Payload: raw}, fixedSig)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(body) {
				t.Fatalf("invalid JSON: %s", body)
			}
			golden := filepath.Join("testdata", "body_"+typ+".json")
			if *update {
				if err := os.WriteFile(golden, append(body, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(append(body, '\n'), want) {
				t.Errorf("body differs from %s:\n got %s\nwant %s", golden, body, want)
			}
			// Flat object: every payload field at the top level, plus signature.
			var got map[string]any
			_ = json.Unmarshal(body, &got)
			var fields map[string]any
			_ = json.Unmarshal(raw, &fields)
			for k, v := range fields {
				if got[k] != v {
					t.Errorf("field %s = %v, want %v", k, got[k], v)
				}
			}
			if len(got) != len(fields)+1 {
				t.Errorf("got %d top-level fields, want payload's %d + signature", len(got), len(fields))
			}
		})
	}
}

func TestAppendBody_EdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		wantErr error
		want    string
	}{
		{"empty object", `{}`, nil, `{"signature":` + sigJSON() + `}`},
		{"whitespace kept valid", " {\n \"a\" : 1 \n} ", nil, `{"a" : 1,"signature":` + sigJSON() + `}`},
		{"existing signature replaced", `{"a":1,"signature":{"sum":"forged"}}`, nil, `{"a":1,"signature":` + sigJSON() + `}`},
		{"array", `[1]`, webhook.ErrInvalidPayload, ""},
		{"truncated", `{"a":`, webhook.ErrInvalidPayload, ""},
		{"two objects", `{}{}`, webhook.ErrInvalidPayload, ""},
		{"empty", ``, webhook.ErrInvalidPayload, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhook.AppendBody(nil, json.RawMessage(tt.payload), fixedSig)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func sigJSON() string {
	b, _ := json.Marshal(fixedSig)
	return string(b)
}

func BenchmarkAppendBody(b *testing.B) {
	payload := json.RawMessage(`{"supplierID":"S1","productID":"P1","rateID":"R1","start":"2026-12-01T00:00:00Z","end":"2026-12-08T00:00:00Z"}`)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = webhook.AppendBody(buf[:0], payload, fixedSig)
	}
}

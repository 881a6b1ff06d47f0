package schemas

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewChangeRequestEvent_IsTheRequestsRecord: the envelope is keyed by
// the request id, carries its version and the time it was recorded in UTC,
// with a new id, and DecodeChangeRequest reads the request and the type
// back; a record no reader can order, or of another type, is refused.
func TestNewChangeRequestEvent_IsTheRequestsRecord(t *testing.T) {
	at := time.Date(2026, 3, 1, 7, 0, 0, 0, time.FixedZone("x", 3600))
	r := ChangeRequest{ID: "r1", CreateRequest: ChangeRequestCreate{SupplierID: "s1", ProductID: "p1"}, Inserted: at,
		Mode: "standard", Status: "WAITING", StartDate: "2026-03-01", EndDate: "2026-05-30", Owner: "op", Version: 3}
	env, err := NewChangeRequestEvent(ChangeRequestStatusChanged, r, at, "ingest/changerequest")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(env.ID); err != nil || env.Type != ChangeRequestStatusChanged || env.Key != "r1" || env.Version != 3 ||
		!env.Time.Equal(at) || env.Time.Location() != time.UTC || env.Source != "ingest/changerequest" {
		t.Errorf("envelope %+v", env)
	}
	value, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	back, typ, err := DecodeChangeRequest(value)
	if err != nil || typ != ChangeRequestStatusChanged || back.ID != "r1" || back.Owner != "op" || back.Version != 3 || back.CreateRequest != r.CreateRequest {
		t.Errorf("decoded %s %+v, %v", typ, back, err)
	}

	refused := []struct {
		name string
		typ  string
		r    ChangeRequest
	}{
		{"no id", ChangeRequestRequested, ChangeRequest{Version: 1}},
		{"no version", ChangeRequestRequested, ChangeRequest{ID: "r1"}},
		{"another type", "changerequest.other", ChangeRequest{ID: "r1", Version: 1}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewChangeRequestEvent(tt.typ, tt.r, at, "x"); !errors.Is(err, ErrInvalidChangeRequest) {
				t.Errorf("NewChangeRequestEvent: %v, want ErrInvalidChangeRequest", err)
			}
			data, _ := json.Marshal(tt.r)
			value, _ := json.Marshal(Envelope{ID: "e", Type: tt.typ, Time: at, Data: data})
			if _, typ, err := DecodeChangeRequest(value); !errors.Is(err, ErrInvalidChangeRequest) || typ != tt.typ {
				t.Errorf("DecodeChangeRequest: %s, %v, want its type and ErrInvalidChangeRequest", typ, err)
			}
		})
	}
	if _, typ, err := DecodeChangeRequest([]byte(`{`)); !errors.Is(err, ErrInvalidChangeRequest) || typ != "" {
		t.Errorf("not JSON: %q, %v", typ, err)
	}
}

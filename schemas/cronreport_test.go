package schemas

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewCronReportEvent_IsTheReportsRecord: the envelope is keyed by the
// report id, timed by its insertion in UTC, written once (Version 1), with
// a new id, and DecodeCronReport reads the report back; a report without
// what readers need is refused on both sides.
func TestNewCronReportEvent_IsTheReportsRecord(t *testing.T) {
	at := time.Date(2026, 3, 1, 7, 0, 0, 5, time.FixedZone("x", 3600))
	r := CronReport{ID: 42, Inserted: at, InsertedMs: at.UnixMilli(), ExternalSystemID: "s1", ErrorCount: 1,
		ErrorReport: []CronReportError{{Entity: "option", ID: "o1", Message: "option o1: down"}}, RunID: "run", RequestKey: "run/s1"}
	env, err := NewCronReportEvent(r, "ingest/cronsync")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(env.ID); err != nil || env.Type != CronReportInserted || env.Key != "42" || env.Version != 1 ||
		!env.Time.Equal(at) || env.Time.Location() != time.UTC || env.Source != "ingest/cronsync" {
		t.Errorf("envelope %+v", env)
	}
	value, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeCronReport(value)
	if err != nil || back.ID != r.ID || !back.Inserted.Equal(at) || len(back.ErrorReport) != 1 || back.ErrorReport[0] != r.ErrorReport[0] {
		t.Errorf("decoded %+v, %v", back, err)
	}

	tests := []struct {
		name string
		r    CronReport
	}{
		{"no id", CronReport{Inserted: at, ExternalSystemID: "s1", RequestKey: "k"}},
		{"no supplier", CronReport{ID: 1, Inserted: at, RequestKey: "k"}},
		{"no time", CronReport{ID: 1, ExternalSystemID: "s1", RequestKey: "k"}},
		{"no request key", CronReport{ID: 1, Inserted: at, ExternalSystemID: "s1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewCronReportEvent(tt.r, "x"); !errors.Is(err, ErrInvalidCronReport) {
				t.Errorf("NewCronReportEvent: %v, want ErrInvalidCronReport", err)
			}
			data, _ := json.Marshal(tt.r)
			value, _ := json.Marshal(Envelope{ID: "e", Type: CronReportInserted, Time: at, Data: data})
			if _, err := DecodeCronReport(value); !errors.Is(err, ErrInvalidCronReport) {
				t.Errorf("DecodeCronReport: %v, want ErrInvalidCronReport", err)
			}
		})
	}
	for _, value := range []string{`{`, `{"type":"other","data":{}}`, `{"type":"cronreport.inserted","data":[1]}`} {
		if _, err := DecodeCronReport([]byte(value)); !errors.Is(err, ErrInvalidCronReport) {
			t.Errorf("DecodeCronReport(%s): %v, want ErrInvalidCronReport", value, err)
		}
	}
}

package changerequest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden records under testdata/records")

// wireRequests are a request's records through its statuses, with
// characters encoding/json escapes and times outside UTC: the records
// testdata/records holds, written by the Store of before schemas owned the
// payload, so that a change of the bytes on TopicChangeRequest fails the
// test.
func wireRequests() map[string]struct {
	typ string
	req Request
} {
	at := time.Date(2026, 3, 1, 6, 0, 0, 123000000, time.UTC)
	began := at.Add(time.Second).In(time.FixedZone("x", 3600))
	done := at.Add(time.Minute)
	waiting := Request{ID: "6b0f7a52-9a1e-4c39-8f36-2d7c9f1e0a11", CreateRequest: CreateRequest{SupplierID: "s<1>", ProductID: "p&1"},
		Inserted: at, Mode: ModeStandard, Status: StatusWaiting, StartDate: "2026-03-01", EndDate: "2026-05-30", Owner: "op-é", Version: 1}
	working := waiting
	working.Status, working.BeganWorking, working.Version = StatusWorking, &began, 2
	partial := working
	partial.Status, partial.FinishedWorking, partial.Errors, partial.Version = StatusPartialFailure, &done, []string{"rate r1: 503 \"busy\"", "day 2026-03-02: \u2028"}, 3
	price := waiting
	price.Mode, price.EndDate, price.Errors = ModePriceSchedule, "2027-03-01", []string{}
	unowned := Request{ID: "r2", Inserted: at, Status: StatusFailed, Errors: []string{""}, Version: 9}
	return map[string]struct {
		typ string
		req Request
	}{
		"requested":              {schemas.ChangeRequestRequested, waiting},
		"working":                {schemas.ChangeRequestStatusChanged, working},
		"partial-failure":        {schemas.ChangeRequestStatusChanged, partial},
		"price-schedule-no-errs": {schemas.ChangeRequestRequested, price},
		"zero-fields":            {schemas.ChangeRequestStatusChanged, unowned},
	}
}

// TestStore_CommitPublishesTheGoldenRecord: what the Store publishes for
// a request and its status changes is, byte for byte, the golden record
// (the envelope's id aside), keyed by the request id, and the golden
// record reads back as the request, through schemas.DecodeChangeRequest
// and through the Store.
func TestStore_CommitPublishesTheGoldenRecord(t *testing.T) {
	now := time.Date(2026, 3, 1, 6, 2, 0, 0, time.FixedZone("z", -3600))
	for name, tt := range wireRequests() {
		t.Run(name, func(t *testing.T) {
			s, rec, _ := newStore(t, func() time.Time { return now })
			if err := s.commit(context.Background(), tt.typ, tt.req); err != nil {
				t.Fatal(err)
			}
			msgs := rec.Messages()
			if len(msgs) != 1 {
				t.Fatalf("published %d records, want 1", len(msgs))
			}
			m := msgs[0]
			if m.Topic != schemas.TopicChangeRequest || string(m.Key) != tt.req.ID || !m.Time.Equal(now) {
				t.Errorf("topic %q key %q time %v, want %q, the request id and %v", m.Topic, m.Key, m.Time, schemas.TopicChangeRequest, now)
			}
			want := testharness.Golden(t, filepath.Join("testdata", "records", name+".json"), testharness.WithGoldenID(t, m.Value), *update)
			// schemas.ChangeRequest, the payload's owner, reads the golden
			// record and writes its data back unchanged.
			var env schemas.Envelope
			if err := json.Unmarshal(want, &env); err != nil {
				t.Fatal(err)
			}
			decoded, dtyp, err := schemas.DecodeChangeRequest(want)
			if err != nil || dtyp != tt.typ {
				t.Fatalf("schemas.DecodeChangeRequest: %s, %v", dtyp, err)
			}
			again, err := json.Marshal(decoded)
			if err != nil || !bytes.Equal(again, env.Data) {
				t.Fatalf("schemas.ChangeRequest wrote\n%s (%v)\nwant\n%s", again, err, env.Data)
			}
			m.Value = want
			back, typ, err := s.HandleMessage(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			w := tt.req
			if len(w.Errors) == 0 {
				w.Errors = nil // omitempty: no errors is absent, read as nil
			}
			if typ != tt.typ || !sameRequest(back, w) {
				t.Errorf("read back %s %+v, want %s %+v", typ, back, tt.typ, w)
			}
		})
	}
}

// sameRequest compares two requests, times by instant.
func sameRequest(a, b Request) bool {
	eq := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	if !a.Inserted.Equal(b.Inserted) || !eq(a.BeganWorking, b.BeganWorking) || !eq(a.FinishedWorking, b.FinishedWorking) {
		return false
	}
	a.Inserted, a.BeganWorking, a.FinishedWorking = b.Inserted, b.BeganWorking, b.FinishedWorking
	return reflect.DeepEqual(a, b)
}

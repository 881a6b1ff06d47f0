package cronreport

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden records under testdata/records")

// wireReports are reports of every shape, with characters encoding/json
// escapes and a time outside UTC: the records testdata/records holds,
// written by the Store of before schemas owned the payload, so that a
// change of the bytes on TopicCronReports fails the test.
func wireReports() map[string]Report {
	at := time.Date(2026, 3, 1, 6, 0, 0, 123456789, time.UTC)
	return map[string]Report{
		"no-errors": {Summary: Summary{ID: 42, Inserted: at, ExternalSystemID: "s1"}, RunID: "run-1", RequestKey: "run-1/s1",
			Began: at.Add(-time.Minute), Products: 3, Options: 4, Availabilities: 500},
		"errors": {Summary: Summary{ID: 1<<53 - 1, Inserted: at, ExternalSystemID: "s<&>é", ErrorCount: 3},
			ErrorReport: NewErrorReport([]string{"option o-1: 503 Service Unavailable", "connection reset \"by peer\"", "product p1: bad\u2028line"}),
			RunID:       "manual-7", RequestKey: "manual-7/s<&>é", Offset: 17, Began: at.Add(-time.Second), Products: 1},
		"zoned-times": {Summary: Summary{ID: 7, Inserted: at.In(time.FixedZone("x", 3600)), ExternalSystemID: "s2"},
			RequestKey: "k", Began: time.Date(2026, 2, 28, 23, 0, 0, 0, time.FixedZone("y", -7200))},
	}
}

// TestStore_PutPublishesTheGoldenRecord: what Put publishes is, byte for
// byte, the golden record (the envelope's id aside), keyed by the report
// id, and the golden record reads back as the report, through
// schemas.DecodeCronReport and through the Store.
func TestStore_PutPublishesTheGoldenRecord(t *testing.T) {
	now := time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)
	for name, r := range wireReports() {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			s := NewStore(Options{Redis: rdbFor(t), Publisher: rec, Clock: func() time.Time { return now }})
			if err := s.Put(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			msgs := rec.Messages()
			if len(msgs) != 1 {
				t.Fatalf("published %d records, want 1", len(msgs))
			}
			m := msgs[0]
			if m.Topic != schemas.TopicCronReports || string(m.Key) != strconv.FormatInt(r.ID, 10) || !m.Time.Equal(r.Inserted) {
				t.Errorf("topic %q key %q time %v, want %q, the id and %v", m.Topic, m.Key, m.Time, schemas.TopicCronReports, r.Inserted)
			}
			want := testharness.Golden(t, filepath.Join("testdata", "records", name+".json"), testharness.WithGoldenID(t, m.Value), *update)
			// schemas.CronReport, the payload's owner, reads the golden
			// record and writes its data back unchanged.
			var env schemas.Envelope
			if err := json.Unmarshal(want, &env); err != nil {
				t.Fatal(err)
			}
			decoded, err := schemas.DecodeCronReport(want)
			if err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(decoded)
			if err != nil || !bytes.Equal(again, env.Data) {
				t.Fatalf("schemas.CronReport wrote\n%s (%v)\nwant\n%s", again, err, env.Data)
			}
			m.Value = want
			back, err := s.HandleMessage(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			if back.ID != r.ID || !back.Inserted.Equal(r.Inserted) || back.RequestKey != r.RequestKey || back.Offset != r.Offset ||
				back.ErrorCount != r.ErrorCount || len(back.ErrorReport) != len(r.ErrorReport) || back.Items() != r.Items() {
				t.Errorf("read back %+v, want %+v", back, r)
			}
		})
	}
}

package dispatcher

import (
	"bytes"
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

// wireRecord is one record the dispatcher writes to a topic.
type wireRecord struct {
	topic, typ, key string
	data            any
}

// wireRecords are the dispatcher's records of every kind and shape (the
// schedule and its end on TopicDeliveries; attempts, suppressions and
// auto-disables on TopicHistory), with characters encoding/json escapes
// and a time outside UTC: the records testdata/records holds, written by
// the dispatcher of before schemas owned the payloads, so that a change of
// the bytes on either topic fails the test.
func wireRecords() map[string]wireRecord {
	cases := encodeCases()
	at := time.Date(2026, 11, 25, 9, 30, 1, 123456789, time.UTC)
	return map[string]wireRecord{
		"scheduled":         {schemas.TopicDeliveries, schemas.EventDeliveryScheduled, "sub-1", cases[0]},
		"scheduled-odd":     {schemas.TopicDeliveries, schemas.EventDeliveryScheduled, `a"b\c<d>&`, cases[1]},
		"done":              {schemas.TopicDeliveries, schemas.EventDeliveryDone, "sub-1", cases[2]},
		"done-no-sub":       {schemas.TopicDeliveries, schemas.EventDeliveryDone, "sub-1", cases[3]},
		"attempt-delivered": {schemas.TopicHistory, schemas.HistoryDeliveryAttempt, "sub-1", cases[4]},
		"attempt-retry":     {schemas.TopicHistory, schemas.HistoryDeliveryAttempt, "sub-1", cases[5]},
		"attempt-failed":    {schemas.TopicHistory, schemas.HistoryDeliveryAttempt, "sub-1", cases[6]},
		"suppressed":        {schemas.TopicHistory, schemas.HistoryNotificationSuppressed, "sub-1", cases[7]},
		"auto-disabled": {schemas.TopicHistory, schemas.HistorySubscriberAutoDisabled, "sub-1",
			schemas.SubscriberAutoDisabled{Subscriber: "sub-1", Backlog: 100001, Limit: 100000, Reason: "backlog <bound> reached", At: at}},
	}
}

// TestRecords_AreTheGoldenRecords: each record, written by hand
// (recordMessage) and through encoding/json (envelopeMessage), is byte for
// byte the golden record (the envelope's id aside), the golden data reads
// back into its schemas type and writes the same bytes, and a pending
// delivery in Redis is the schedule's data.
func TestRecords_AreTheGoldenRecords(t *testing.T) {
	at := time.Date(2026, 11, 25, 9, 30, 1, 987654321, time.FixedZone("x", 3600))
	for name, w := range wireRecords() {
		t.Run(name, func(t *testing.T) {
			slow, err := envelopeMessage(w.topic, w.typ, w.key, "", at, w.data)
			if err != nil {
				t.Fatal(err)
			}
			want := testharness.Golden(t, filepath.Join("testdata", "records", name+".json"), testharness.WithGoldenID(t, slow.Value), *update)
			if slow.Topic != w.topic || string(slow.Key) != w.key {
				t.Errorf("topic %q key %q, want %q %q", slow.Topic, slow.Key, w.topic, w.key)
			}
			fast, err := recordMessage(w.topic, w.typ, w.key, at, w.data)
			if err != nil {
				t.Fatal(err)
			}
			if got := testharness.WithGoldenID(t, fast.Value); !bytes.Equal(got, want) {
				t.Fatalf("by hand\n%s\nwant\n%s", got, want)
			}
			// The payload's type in schemas reads the golden record's data
			// and writes it back unchanged (records already on the topics
			// still decode).
			var env schemas.Envelope
			if err := json.Unmarshal(want, &env); err != nil {
				t.Fatal(err)
			}
			back := reflect.New(reflect.TypeOf(w.data))
			if err := json.Unmarshal(env.Data, back.Interface()); err != nil {
				t.Fatal(err)
			}
			if again, err := json.Marshal(back.Elem().Interface()); err != nil || !bytes.Equal(again, env.Data) {
				t.Fatalf("%T wrote\n%s (%v)\nwant\n%s", w.data, again, err, env.Data)
			}
			if s, ok := w.data.(schemas.ScheduledDelivery); ok {
				raw, err := encodeScheduled(s)
				if err != nil || !bytes.Equal(raw, env.Data) {
					t.Fatalf("in Redis %s (%v), want the record's data %s", raw, err, env.Data)
				}
			}
		})
	}
}

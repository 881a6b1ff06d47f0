package dispatcher

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

func encodeCases() []any {
	at := time.Date(2026, 11, 25, 9, 30, 1, 123456789, time.UTC)
	next := at.Add(10 * time.Second)
	n := schemas.Notification{ID: "2f1c8a4e-5d0b-4c1e-9a3f-7b6d5e4c3b2a", Subscriber: "sub-1", Type: schemas.TypeAvailability,
		EntityKey: "s1/p1/r1", Supplier: "s1", Payload: json.RawMessage(`{"supplierID":"s1","rateID":"r1"}`), CreatedAt: at, Source: "processors/availability"}
	odd := n
	odd.Subscriber, odd.EntityKey, odd.Supplier, odd.Source = `a"b\c<d>&`, "Zürich/\u2028/\x01", "", ""
	return []any{
		schemas.ScheduledDelivery{Notification: n, Attempt: 1, At: at},
		schemas.ScheduledDelivery{Notification: odd, Attempt: 3, At: at.In(time.FixedZone("x", 3600))},
		schemas.DoneDelivery{DeliveryID: n.ID, Subscriber: "sub-1", Outcome: schemas.OutcomeDelivered, Attempt: 1, At: at},
		schemas.DoneDelivery{DeliveryID: n.ID, Outcome: schemas.OutcomeFailed, Attempt: 11, At: at},
		schemas.DeliveryAttemptRecord{DeliveryID: n.ID, Subscriber: "sub-1", Type: n.Type, EntityKey: n.EntityKey, Attempt: 1, Status: 200, LatencyMs: 3, Outcome: schemas.OutcomeDelivered, At: at},
		schemas.DeliveryAttemptRecord{DeliveryID: n.ID, Subscriber: "sub-1", Type: n.Type, Attempt: 2, Status: 503, Outcome: schemas.OutcomeRetry, Error: "subscriber answered 503 <x>", At: at, NextAttemptAt: &next},
		schemas.DeliveryAttemptRecord{DeliveryID: n.ID, Subscriber: "sub-1", Type: n.Type, Attempt: 11, Outcome: schemas.OutcomeFailed, Error: "timeout", At: at, Notification: &odd},
		schemas.NotificationSuppressedRecord{DeliveryID: n.ID, Subscriber: "sub-1", Type: n.Type, EntityKey: n.EntityKey, Reason: "disableAll is set", At: at, Notification: n},
	}
}

// TestEncode_MatchesEncodingJSON: the hand-written records are byte for
// byte what encoding/json writes, envelope included.
func TestEncode_MatchesEncodingJSON(t *testing.T) {
	for i, data := range encodeCases() {
		want, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendRecord(nil, data)
		if !ok || string(got) != string(want) {
			t.Fatalf("case %d (%T): ok=%v\n got %s\nwant %s", i, data, ok, got, want)
		}
		at := time.Date(2026, 11, 25, 9, 30, 1, 987654321, time.UTC)
		m, err := recordMessage(schemas.TopicHistory, schemas.HistoryDeliveryAttempt, "sub-1", at, data)
		if err != nil {
			t.Fatal(err)
		}
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatal(err)
		}
		wantEnv, _ := json.Marshal(schemas.Envelope{ID: env.ID, Type: schemas.HistoryDeliveryAttempt, Key: "sub-1", Time: at.Truncate(time.Millisecond),
			Source: sourceDispatcher, Data: want})
		if string(m.Value) != string(wantEnv) {
			t.Fatalf("case %d envelope\n got %s\nwant %s", i, m.Value, wantEnv)
		}
	}
}

// TestEncode_UnusualValuesTakeEncodingJSON: a payload that is not compact
// or a time encoding/json refuses is not written by hand.
func TestEncode_UnusualValuesTakeEncodingJSON(t *testing.T) {
	base := encodeCases()[0].(schemas.ScheduledDelivery)
	spaced := base
	spaced.Notification.Payload = json.RawMessage(`{ "rateID": "r1" }`)
	far := base
	far.At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, r := range []schemas.ScheduledDelivery{spaced, far} {
		if _, ok := appendScheduled(nil, r); ok {
			t.Fatalf("%+v written by hand", r)
		}
	}
	raw, err := encodeScheduled(spaced)
	want, _ := json.Marshal(spaced)
	if err != nil || string(raw) != string(want) {
		t.Fatalf("fallback %s (%v), want %s", raw, err, want)
	}
}

func FuzzEncodeRecords(f *testing.F) {
	f.Add("sub", "s1/p1/r1", "s1", `{"a":1}`, "err", int64(1764000000), 3)
	f.Add(`"<&>`, "\u2028", "", `[1,2]`, "\xff", int64(-1), 11)
	f.Fuzz(func(t *testing.T, sub, ent, supplier, payload, errText string, sec int64, attempt int) {
		at := time.Unix(sec, 0).UTC()
		n := schemas.Notification{ID: "id", Subscriber: sub, Type: "rate", EntityKey: ent, Supplier: supplier,
			Payload: json.RawMessage(payload), CreatedAt: at, Source: errText}
		for _, data := range []any{
			schemas.ScheduledDelivery{Notification: n, Attempt: attempt, At: at},
			schemas.DeliveryAttemptRecord{DeliveryID: "id", Subscriber: sub, Type: "rate", EntityKey: ent, Attempt: attempt, Outcome: "failed", Error: errText, At: at, Notification: &n},
			schemas.NotificationSuppressedRecord{DeliveryID: "id", Subscriber: sub, Type: "rate", Reason: errText, At: at, Notification: n},
			schemas.DoneDelivery{DeliveryID: "id", Subscriber: sub, Outcome: errText, Attempt: attempt, At: at},
		} {
			got, ok := appendRecord(nil, data)
			want, err := json.Marshal(data)
			if ok && (err != nil || string(got) != string(want)) {
				t.Fatalf("%T written by hand as\n%s\nencoding/json: %s (%v)", data, got, want, err)
			}
		}
	})
}

func TestDecodeScheduled_MatchesEncodingJSON(t *testing.T) {
	for i, c := range encodeCases() {
		s, ok := c.(schemas.ScheduledDelivery)
		if !ok {
			continue
		}
		raw, err := encodeScheduled(s)
		if err != nil {
			t.Fatal(err)
		}
		var want schemas.ScheduledDelivery
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeScheduled(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: %+v (%v), want %+v", i, got, err, want)
		}
		if i == 0 {
			if _, fast := decodeScheduledFast(raw); !fast {
				t.Fatalf("case %d: the plain record was not read by the fast path", i)
			}
		}
	}
}

func FuzzDecodeScheduled(f *testing.F) {
	for _, c := range encodeCases() {
		if s, ok := c.(schemas.ScheduledDelivery); ok {
			raw, _ := encodeScheduled(s)
			f.Add(raw)
		}
	}
	f.Add([]byte(`{"notification":{"id":"x","payload":{"a":[1,2]},"ID":"y"},"attempt":2,"at":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"notification":null,"attempt":1.5}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := decodeScheduledFast(raw)
		if !ok {
			return
		}
		var want schemas.ScheduledDelivery
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("fast path accepted %q; encoding/json: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path on %q:\n got %+v\nwant %+v", raw, got, want)
		}
	})
}

func FuzzDecodeNotification(f *testing.F) {
	n := encodeCases()[0].(schemas.ScheduledDelivery).Notification
	bare, _ := appendNotification(nil, n)
	f.Add(bare)
	env, _ := NotificationMessage(n)
	f.Add(env.Value)
	f.Add([]byte(`{"id":"1","subscriber":"s","type":"rate","payload":{"x":"\u00e9"},"Source":"y"}`))
	f.Add([]byte(`{"id":5,"type":"notification","time":"x","data":{"id":"1","subscriber":"s","type":"rate"}}`))
	f.Add([]byte(`{"type":"notification","data":{"id":"1","subscriber":"s","type":"rate"},"type":"rate","id":"2","subscriber":"t"}`))
	f.Add([]byte(`{"id":"1","subscriber":"s","type":"notification"}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		got, err := DecodeNotification(value)
		// The reference: encoding/json reading both shapes.
		want, werr := schemas.DecodeNotification(value)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: err %v; encoding/json: %v", value, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", value, got, want)
		}
	})
}

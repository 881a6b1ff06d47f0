package availchange

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

// checkWire compares the hand-written records with encoding/json's for
// one change and one notification built from the arguments.
func checkWire(t *testing.T, eventID, sid, sub, supplier, source string, at, start time.Time, oldV, newV int) {
	t.Helper()
	in := input{env: schemas.Envelope{ID: eventID, Time: at}, sid: sid, pid: "P1", rid: "R1", source: source}
	c := Change{Start: start, End: start.Add(2 * time.Hour), Old: oldV, New: newV}
	fast, err := historyValue(in, c, at)
	slow, slowErr := historyValueJSON(in, c, at.UTC())
	if (err != nil) != (slowErr != nil) || !bytes.Equal(fast, slow) {
		t.Fatalf("availability.changed\nfast %s (%v)\nslow %s (%v)", fast, err, slow, slowErr)
	}
	span := Span{From: start, To: start.Add(26 * time.Hour)}
	payload, err := availabilityPayload(sid, "P1", "R1", span)
	slowPayload, slowErr := availabilityPayloadJSON(sid, "P1", "R1", span)
	if (err != nil) != (slowErr != nil) || !bytes.Equal(payload, slowPayload) {
		t.Fatalf("payload\nfast %s\nslow %s", payload, slowPayload)
	}
	n := schemas.Notification{ID: NotificationID(eventID, sub, span), Subscriber: sub, Type: schemas.TypeAvailability,
		EntityKey: sid + "/P1/R1", Supplier: supplier, Payload: payload, CreatedAt: at, Source: Source}
	note, produced, err := notificationValues(n)
	slowNote, slowProduced, slowErr := notificationValuesJSON(n)
	if (err != nil) != (slowErr != nil) || !bytes.Equal(note, slowNote) || !bytes.Equal(produced, slowProduced) {
		t.Fatalf("notification\nfast %s\n     %s (%v)\nslow %s\n     %s (%v)", note, produced, err, slowNote, slowProduced, slowErr)
	}
	if err != nil {
		return
	}
	// The record is the topic's envelope, and reads back as n does through
	// encoding/json (which turns invalid UTF-8 into U+FFFD).
	bare, _ := json.Marshal(n)
	want, _ := schemas.DecodeNotification(bare)
	back, err := schemas.DecodeNotification(note)
	if err != nil || !back.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("record %s read back as %+v, %v", note, back, err)
	}
	back.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(back, want) {
		t.Fatalf("record %s read back as\n %+v\nwant %+v", note, back, want)
	}
	var env schemas.Envelope
	if err := json.Unmarshal(note, &env); err != nil || env.Type != schemas.EventNotification || env.ID != back.ID || env.Key != back.Subscriber {
		t.Fatalf("record %s: envelope %+v, %v", note, env, err)
	}
}

func TestWire_MatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 4, 5, 120000000, time.UTC)
	start := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name                             string
		eventID, sid, sub, supplier, src string
		at, start                        time.Time
		oldV, newV                       int
	}{
		{"plain", "0b6f-e1", "S1", "sub-a", "", "partner", at, start, 5, 2},
		{"negative and zero vacancies", "e", "S1", "sub-a", "", "push", at, start, -3, 0},
		{"event time with an offset", "e", "S1", "sub-a", "", "partner", at.In(time.FixedZone("X", 5*3600+30*60)), start, 1, 0},
		{"slot with nanoseconds and an offset", "e", "S1", "sub-a", "", "partner", at, start.Add(7).In(time.FixedZone("Y", -3600)), 1, 0},
		{"with a supplier share", "e", "S1", "sub-a", "S1", "partner", at, start, 1, 0},
		{"HTML characters are escaped by encoding/json", "e<&>", "S&1", "sub<a>", "S<1>", "partner", at, start, 1, 2},
		{"quotes, backslashes and control characters", "e\"", "S\\1", "s\nub", "S\"", "par\ttner", at, start, 1, 2},
		{"non-ASCII", "é", "S€", "sub\u2028", "", "partner", at, start, 1, 2},
		{"no subscriber (an error both ways)", "e", "S1", "", "", "partner", at, start, 1, 2},
		{"zero event time (an error both ways)", "e", "S1", "sub-a", "", "partner", time.Time{}, start, 1, 2},
		{"year past 9999", "e", "S1", "sub-a", "", "partner", at, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkWire(t, tt.eventID, tt.sid, tt.sub, tt.supplier, tt.src, tt.at, tt.start, tt.oldV, tt.newV)
		})
	}
}

func FuzzWire(f *testing.F) {
	f.Add("e1", "S1", "sub-a", "", "partner", int64(1795000000), int64(0), 0, 5, 2)
	f.Add("e1", "S1", "sub-a", "S1", "partner", int64(1795000000), int64(123456789), 330, 5, 2)
	f.Fuzz(func(t *testing.T, eventID, sid, sub, supplier, source string, sec, nsec int64, offMin, oldV, newV int) {
		at := time.Unix(sec%(300*365*86400), nsec%1e9).In(time.FixedZone("", (offMin%(30*60))*60))
		checkWire(t, eventID, sid, sub, supplier, source, at, at.Add(time.Duration(oldV)*time.Hour), oldV, newV)
	})
}

// A payload that encoding/json would rewrite (compact, HTML-escape) is
// not copied by hand: the record is still encoding/json's.
func TestNotificationValues_PayloadEncodingJSONRewrites(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 4, 5, 0, time.UTC)
	for _, payload := range []string{`{ "a": 1 }`, "{\"a\":\n1}", `{"a":"<b>"}`, `{"a":"x&y"}`, "{\"a\":\"\u2028\"}", `{"a":"ok"}`} {
		n := schemas.Notification{ID: "i", Subscriber: "s", Type: schemas.TypeAvailability, EntityKey: "S1/P1/R1",
			Payload: json.RawMessage(payload), CreatedAt: at, Source: Source}
		note, produced, err := notificationValues(n)
		wantNote, wantProduced, wantErr := notificationValuesJSON(n)
		if err != nil || wantErr != nil || !bytes.Equal(note, wantNote) || !bytes.Equal(produced, wantProduced) {
			t.Errorf("payload %q\nfast %s (%v)\nslow %s (%v)", payload, note, err, wantNote, wantErr)
		}
	}
}

// The envelope is written into one buffer sized up front, whatever the
// lengths of its times (nanoseconds and an offset are the longest): the
// hot path allocates once per notification record, as it did for the bare
// notification.
func TestAppendNotificationEvent_FitsItsBuffer(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 4, 5, 123456789, time.FixedZone("X", -(9*3600+30*60)))
	tests := []struct {
		name string
		n    schemas.Notification
	}{
		{"longest times, a supplier and a source", schemas.Notification{ID: NotificationID("0b6f-e1", "sub-a", Span{From: at}), Subscriber: "sub-a",
			Type: schemas.TypeAvailability, EntityKey: "S1/P1/R1", Supplier: "S1", Payload: json.RawMessage(`{"supplierID":"S1"}`), CreatedAt: at, Source: Source}},
		{"one-byte strings, no source", schemas.Notification{ID: "i", Subscriber: "s", Type: "t", Payload: json.RawMessage(`{}`), CreatedAt: at}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := appendNotificationEvent(nil, tt.n); len(got) > notificationEventCap(tt.n) {
				t.Fatalf("record of %d bytes, buffer of %d", len(got), notificationEventCap(tt.n))
			}
			if a := testing.AllocsPerRun(100, func() {
				_ = appendNotificationEvent(make([]byte, 0, notificationEventCap(tt.n)), tt.n)
			}); a != 1 {
				t.Fatalf("%v allocations, want the buffer's one", a)
			}
		})
	}
}

package schemas

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func testNotification() Notification {
	return Notification{ID: "d-1", Subscriber: "sub-a", Type: TypeRate, EntityKey: "S1/P1/R1",
		Payload:   json.RawMessage(`{"supplierID":"S1","productID":"P1","rateID":"R1","operation":"updated"}`),
		CreatedAt: time.Date(2026, 11, 26, 3, 4, 5, 6000, time.FixedZone("X", 3600)), Source: "processors/catalog"}
}

// The envelope's bytes are pinned: the dispatcher's one-pass reader and
// processors/availchange's hand-written encoder are held to them.
func TestNewNotificationEvent_WritesTheTopicsEnvelope(t *testing.T) {
	env, err := NewNotificationEvent(testNotification())
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"d-1","type":"notification","key":"sub-a","time":"2026-11-26T02:04:05.000006Z","source":"processors/catalog",` +
		`"data":{"id":"d-1","subscriber":"sub-a","type":"rate","entityKey":"S1/P1/R1","payload":{"supplierID":"S1","productID":"P1","rateID":"R1","operation":"updated"},"createdAt":"2026-11-26T03:04:05.000006+01:00","source":"processors/catalog"}}`
	if string(got) != want {
		t.Fatalf("encoded\n %s\nwant\n %s", got, want)
	}
	// A redelivered event gives the same record: the id is the
	// notification's, nothing is drawn at random.
	again, _ := NewNotificationEvent(testNotification())
	if b, _ := json.Marshal(again); string(b) != want {
		t.Fatalf("second encoding differs:\n %s", b)
	}
}

func TestNewNotificationEvent_RefusesAnUndeliverableNotification(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Notification)
	}{
		{"no id", func(n *Notification) { n.ID = "" }},
		{"no subscriber", func(n *Notification) { n.Subscriber = "" }},
		{"no type", func(n *Notification) { n.Type = "" }},
		{"payload not JSON", func(n *Notification) { n.Payload = json.RawMessage(`{`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := testNotification()
			tt.edit(&n)
			if _, err := NewNotificationEvent(n); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestDecodeNotification_ReadsTheEnvelopeAndTheBareShape(t *testing.T) {
	n := testNotification()
	env, _ := NewNotificationEvent(n)
	envelope, _ := json.Marshal(env)
	bare, _ := json.Marshal(n)
	tests := []struct {
		name    string
		value   string
		want    Notification
		invalid bool // ErrInvalidNotification rather than a JSON error
		wantErr bool
	}{
		{"envelope", string(envelope), n, false, false},
		{"bare notification (records of before the envelope)", string(bare), n, false, false},
		{"envelope with another id (a replay)", `{"id":"other","type":"notification","key":"sub-a","data":` + string(bare) + `}`, n, false, false},
		{"envelope keys other than type and data are not read", `{"id":5,"type":"notification","time":"x","data":` + string(bare) + `}`, n, false, false},
		{"not JSON", `{`, Notification{}, false, true},
		{"envelope whose data is not a notification", `{"type":"notification","data":[1]}`, Notification{}, false, true},
		{"bare without id", `{"subscriber":"s","type":"rate"}`, Notification{}, true, true},
		{"envelope without subscriber", `{"type":"notification","data":{"id":"1","type":"rate"}}`, Notification{}, true, true},
		{"envelope with null data", `{"id":"1","type":"notification","data":null}`, Notification{}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeNotification([]byte(tt.value))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if errors.Is(err, ErrInvalidNotification) != tt.invalid {
					t.Fatalf("err = %v, want ErrInvalidNotification: %v", err, tt.invalid)
				}
				return
			}
			// Times compare by instant: the zone survives, the monotonic
			// reading does not matter.
			if !got.CreatedAt.Equal(tt.want.CreatedAt) {
				t.Fatalf("createdAt %v, want %v", got.CreatedAt, tt.want.CreatedAt)
			}
			got.CreatedAt, tt.want.CreatedAt = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

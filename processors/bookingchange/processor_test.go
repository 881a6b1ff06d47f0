package bookingchange

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

type fakeSubscribers map[string][]string

func (f fakeSubscribers) OnChannel(_ context.Context, channelID string) ([]string, error) {
	return f[channelID], nil
}

// fakeRules holds each subscriber's booking rule; a subscriber without
// one has none (registry.ErrNotFound).
type fakeRules map[string]registry.Rule

func (f fakeRules) Rule(_ context.Context, subscriber, typ string) (registry.Rule, error) {
	r, ok := f[subscriber]
	if !ok || typ != schemas.TypeBooking {
		return registry.Rule{}, fmt.Errorf("%s rule of %s: %w", typ, subscriber, registry.ErrNotFound)
	}
	return r, nil
}

// The filter semantics are registry.Rule.Matches's (its table test); this
// checks what the processor hands it: the operation and every item of the
// booking, for each subscriber of the booking's channel.
func TestNotifications_GoToTheSubscribersWhoseRuleMatchesOneItem(t *testing.T) {
	rule := func(cfg registry.Config) registry.Rule { return registry.Rule{Type: schemas.TypeBooking, Config: cfg} }
	rules := fakeRules{
		"all":         rule(registry.Config{}),
		"second-item": rule(registry.Config{ProductIDs: []string{"P2"}, RateIDs: []string{"R2"}}),
		"split":       rule(registry.Config{ProductIDs: []string{"P1"}, RateIDs: []string{"R2"}}),
		"tickets":     rule(registry.Config{Operations: []string{schemas.OperationTicketsAdded}}),
		"disabled":    {Type: schemas.TypeBooking, Disabled: true},
	}
	subs := fakeSubscribers{"C1": {"split", "all", "tickets", "second-item", "disabled", "no-rule", "all"}}
	p := &Processor{opts: Options{Subscribers: subs, Rules: rules}}
	rec := schemas.BookingRecord{ChannelID: "C1", Booking: schemas.Booking{ID: "B1", Items: []schemas.BookingItem{
		{SupplierID: "S1", ProductID: "P1", RateID: "R1"},
		{SupplierID: "S1", ProductID: "P2", RateID: "R2"},
	}}}
	env := schemas.Envelope{ID: "ev1", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}

	tests := []struct {
		op   string
		want []string
	}{
		{schemas.OperationCanceled, []string{"all", "second-item"}},
		{schemas.OperationTicketsAdded, []string{"all", "second-item", "tickets"}},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			notes, err := p.notifications(context.Background(), env, rec, tt.op)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range notes {
				got = append(got, n.Subscriber)
				if n.Type != schemas.TypeBooking || n.EntityKey != "booking/B1" || n.ID != NotificationID(env.ID, n.Subscriber, tt.op) {
					t.Errorf("notification %+v: want type booking, entity booking/B1, the event's id", n)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("subscribers notified = %v, want %v", got, tt.want)
			}
		})
	}
}

// A booking's notifications go to TopicNotifications in the topic's
// envelope, keyed and identified as the notification is, and a redelivered
// event writes the same records byte for byte.
func TestMessages_NotificationRecordsAreTheTopicsEnvelope(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &Processor{
		opts: Options{Subscribers: fakeSubscribers{"C1": {"sub-a", "sub-b"}},
			Rules:        fakeRules{"sub-a": {Type: schemas.TypeBooking}, "sub-b": {Type: schemas.TypeBooking}},
			Clock:        func() time.Time { return at.Add(time.Minute) },
			MaxNotifyAge: time.Hour},
		notes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_notes"}, []string{"operation"}),
	}
	data, err := json.Marshal(schemas.BookingRecord{ChannelID: "C1", Change: schemas.ChangeCanceled, PreviousStatus: "CONFIRMED",
		Booking: schemas.Booking{ID: "B1", Status: schemas.BookingCancelled, Items: []schemas.BookingItem{{SupplierID: "S1", ProductID: "P1", RateID: "R1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ev := schemas.Envelope{ID: "ev1", Type: schemas.EventBooking, Key: "B1", Version: 2, Time: at, Data: data}
	records := func() []stream.Message {
		msgs, err := p.Messages(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		var out []stream.Message
		for _, m := range msgs {
			if m.Topic == schemas.TopicNotifications {
				out = append(out, m)
			}
		}
		return out
	}
	first := records()
	if len(first) != 2 {
		t.Fatalf("%d notification records, want one per subscriber", len(first))
	}
	for i, m := range first {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatal(err)
		}
		n, err := schemas.DecodeNotification(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if env.Type != schemas.EventNotification || env.ID != n.ID || env.Key != n.Subscriber || string(m.Key) != n.Subscriber ||
			n.ID != NotificationID(ev.ID, n.Subscriber, schemas.OperationCanceled) {
			t.Errorf("record %s: envelope %+v, notification %+v", m.Value, env, n)
		}
		if again := records(); !bytes.Equal(again[i].Value, m.Value) {
			t.Errorf("redelivered event wrote\n %s\nthen\n %s", m.Value, again[i].Value)
		}
	}
}

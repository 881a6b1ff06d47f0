package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// historyRecorder is a stream.Publisher that keeps what it was given, or
// fails with err.
type historyRecorder struct {
	mu   sync.Mutex
	msgs []stream.Message
	err  error
}

func (h *historyRecorder) Publish(_ context.Context, msgs ...stream.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	h.msgs = append(h.msgs, msgs...)
	return nil
}

func TestTestSender_RecordsTheTestInTheDeliveryLog(t *testing.T) {
	tests := []struct {
		name             string
		answer           int
		wantOutcome      string
		wantNotification bool
		wantError        string
	}{
		{"delivered: no notification kept", http.StatusOK, schemas.OutcomeDelivered, false, ""},
		{"refused: failed, replayable", http.StatusServiceUnavailable, schemas.OutcomeFailed, true, "subscriber answered 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tt.answer) }))
			defer sink.Close()
			rec := &historyRecorder{}
			ts := testSender{s: webhook.NewSender(webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true}), time.Now),
				history: rec, log: slog.New(slog.DiscardHandler)}
			in := registry.TestInput{SupplierID: strPtr("s1"), Operation: strPtr("updated")}
			n, err := registry.BuildTestNotification("sub-1", schemas.TypeSupplier, in, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			rule := registry.Rule{ID: "r1", Type: schemas.TypeSupplier, URL: sink.URL + "/hook", SecurityKey: "key-0123"}
			status, err := ts.SendTest(context.Background(), rule, n)
			if status != tt.answer || err != nil {
				t.Fatalf("SendTest = %d, %v; want %d", status, err, tt.answer)
			}
			if len(rec.msgs) != 1 {
				t.Fatalf("%d history messages, want 1", len(rec.msgs))
			}
			m := rec.msgs[0]
			var env schemas.Envelope
			if err := json.Unmarshal(m.Value, &env); err != nil {
				t.Fatal(err)
			}
			var a schemas.DeliveryAttempt
			if err := json.Unmarshal(env.Data, &a); err != nil {
				t.Fatal(err)
			}
			if m.Topic != schemas.TopicHistory || string(m.Key) != "sub-1" || env.Type != schemas.HistoryDeliveryAttempt || env.Source != "test" {
				t.Errorf("message topic %s key %s type %s source %s", m.Topic, m.Key, env.Type, env.Source)
			}
			if a.DeliveryID != n.ID || a.Subscriber != "sub-1" || a.Type != schemas.TypeSupplier || a.Attempt != 1 || a.Status != tt.answer ||
				a.Outcome != tt.wantOutcome || a.Error != tt.wantError {
				t.Errorf("attempt = %+v", a)
			}
			var kept schemas.Notification
			if tt.wantNotification {
				if err := json.Unmarshal(a.Notification, &kept); err != nil || kept.ID != n.ID || kept.Subscriber != "sub-1" {
					t.Errorf("kept notification %s (%v): want the test notification, for replay", a.Notification, err)
				}
			} else if len(a.Notification) != 0 {
				t.Errorf("a delivered test keeps its notification: %s", a.Notification)
			}
			for _, leak := range []string{sink.URL, "key-0123"} {
				if strings.Contains(string(m.Value), leak) {
					t.Errorf("history record holds %q", leak)
				}
			}
		})
	}
}

func TestTestSender_AnswersEvenWhenTheRecordFails(t *testing.T) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer sink.Close()
	ts := testSender{s: webhook.NewSender(webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true}), time.Now),
		history: &historyRecorder{err: errors.New("broker down")}, log: slog.New(slog.DiscardHandler)}
	n, err := registry.BuildTestNotification("sub-1", schemas.TypeSupplier, registry.TestInput{SupplierID: strPtr("s1")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if status, err := ts.SendTest(context.Background(), registry.Rule{URL: sink.URL, SecurityKey: "k"}, n); status != 200 || err != nil {
		t.Fatalf("SendTest = %d, %v; want the subscriber's 200", status, err)
	}
}

func strPtr(s string) *string { return &s }

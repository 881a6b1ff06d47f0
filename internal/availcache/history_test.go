package availcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/schemas"
)

func onTopic(msgs []stream.Message, topic string) []stream.Message {
	var out []stream.Message
	for _, m := range msgs {
		if m.Topic == topic {
			out = append(out, m)
		}
	}
	return out
}

// batches records each Publish call as one batch; while hold is set, a
// Publish of history events waits for it to be closed.
type batches struct {
	mu   sync.Mutex
	got  [][]stream.Message
	hold chan struct{}
}

func (b *batches) Publish(ctx context.Context, msgs ...stream.Message) error {
	b.mu.Lock()
	hold := b.hold
	b.mu.Unlock()
	if hold != nil && len(onTopic(msgs, schemas.TopicHistory)) > 0 {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, append([]stream.Message(nil), msgs...))
	return nil
}

func (b *batches) all() [][]stream.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]stream.Message(nil), b.got...)
}

// partnerCallOf decodes a history message strictly: nothing but the
// envelope and the PartnerCall fields.
func partnerCallOf(t *testing.T, m stream.Message) (schemas.Envelope, schemas.PartnerCall) {
	t.Helper()
	var env schemas.Envelope
	dec := json.NewDecoder(bytes.NewReader(m.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("history envelope %s: %v", m.Value, err)
	}
	var c schemas.PartnerCall
	dec = json.NewDecoder(bytes.NewReader(env.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("partner call %s: %v", env.Data, err)
	}
	if env.Type != schemas.HistoryPartnerCall || env.Key != "S1" || string(m.Key) != "S1" || env.Source != Source || env.ID == "" || env.Time.IsZero() {
		t.Errorf("envelope %+v (message key %q)", env, m.Key)
	}
	return env, c
}

func TestPartnerCallHistory_OneEventPerCallInTheSnapshotBatch(t *testing.T) {
	e := newEnv(t)
	pub := &batches{}
	s := New(Options{Redis: e.Redis, Catalog: e.Cat, Partner: partner.NewClient(partner.Options{Outbound: allowLoopback, Timeout: 2 * time.Second}),
		Publisher: pub, Clock: e.Clock.Now, Deadline: 2 * time.Second})
	ctx := context.Background()
	for range 2 {
		if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil {
			t.Fatal(err)
		}
	}
	e.Clock.Add(6 * time.Minute) // stale: a second partner call
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil {
		t.Fatal(err)
	}
	got := pub.all()
	if len(got) != 2 || e.Sim.Calls() != 2 {
		t.Fatalf("%d publishes for %d partner calls, want one per call", len(got), e.Sim.Calls())
	}
	ids := map[string]bool{}
	for i, batch := range got {
		snaps, hist := onTopic(batch, schemas.TopicAvailability), onTopic(batch, schemas.TopicHistory)
		if len(snaps) != 2 || len(hist) != 1 {
			t.Fatalf("batch %d: %d snapshots and %d history events, want 2 and 1", i, len(snaps), len(hist))
		}
		env, c := partnerCallOf(t, hist[0])
		ids[env.ID] = true
		want := schemas.PartnerCall{System: schemas.SystemPartner, SupplierID: "S1", Operation: "availabilities",
			Status: 200, Outcome: schemas.CallOK, LatencyMs: c.LatencyMs}
		if c != want || c.LatencyMs < 0 {
			t.Errorf("batch %d: call %+v, want %+v", i, c, want)
		}
		if strings.Contains(string(hist[0].Value), e.Cat.URL) {
			t.Errorf("history event names the partner's URL: %s", hist[0].Value)
		}
	}
	if len(ids) != 2 {
		t.Errorf("event ids %v: want one per call", ids)
	}
}

// TestPartnerCallHistory_FailedCallDoesNotHoldTheRead: a failing partner's
// call is recorded (outcome error, status 500) by a publish that the read
// does not wait for: with that publish blocked, the read still answers at
// once.
func TestPartnerCallHistory_FailedCallDoesNotHoldTheRead(t *testing.T) {
	e := newEnv(t)
	pub := &batches{hold: make(chan struct{})}
	s := New(Options{Redis: e.Redis, Catalog: e.Cat, Partner: partner.NewClient(partner.Options{Outbound: allowLoopback, Timeout: 2 * time.Second}),
		Publisher: pub, Clock: e.Clock.Now, Deadline: 5 * time.Second})
	e.Sim.Update(func(c *partnersim.Config) { c.ErrorRate = 1 })
	start := time.Now()
	_, err := s.load(context.Background(), "r", "chan-a", "S1", "P1", "", day)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the read took %v with the history publish blocked", took)
	}
	if n := len(pub.all()); n != 0 {
		t.Fatalf("%d batches published while held", n)
	}
	close(pub.hold)
	deadline := time.Now().Add(5 * time.Second)
	for len(pub.all()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the failed call's history event was never published")
		}
		time.Sleep(5 * time.Millisecond)
	}
	batch := pub.all()[0]
	if len(batch) != 1 || batch[0].Topic != schemas.TopicHistory {
		t.Fatalf("batch %+v: want the history event alone", batch)
	}
	_, c := partnerCallOf(t, batch[0])
	if c.Outcome != schemas.CallError || c.Status != 500 || c.Error != partner.KindStatus || c.Operation != "availabilities" {
		t.Errorf("call %+v: want outcome error, status 500, error %q", c, partner.KindStatus)
	}
}

func TestNewPartnerCall_OutcomeByFailureKind(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		outcome string
		status  int
		errText string
	}{
		{"ok", nil, schemas.CallOK, 200, ""},
		{"timeout", &partner.CallError{Kind: partner.KindTimeout}, schemas.CallTimeout, 0, partner.KindTimeout},
		{"breaker", &partner.CallError{Kind: partner.KindBreaker}, schemas.CallBreakerOpen, 0, partner.KindBreaker},
		{"status", &partner.CallError{Kind: partner.KindStatus, Status: 503}, schemas.CallError, 503, partner.KindStatus},
		{"transport", &partner.CallError{Kind: partner.KindTransport}, schemas.CallError, 0, partner.KindTransport},
		{"context deadline", context.DeadlineExceeded, schemas.CallTimeout, 0, partner.KindTimeout},
		{"other, text not kept", errors.New("dial tcp 10.1.2.3:443 https://user:pw@partner"), schemas.CallError, 0, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newPartnerCall("S1", "availabilities", t0, 15*time.Millisecond, tt.err).rec
			if c.Outcome != tt.outcome || c.Status != tt.status || c.Error != tt.errText || c.LatencyMs != 15 {
				t.Errorf("%+v, want outcome %s status %d error %q", c, tt.outcome, tt.status, tt.errText)
			}
		})
	}
}

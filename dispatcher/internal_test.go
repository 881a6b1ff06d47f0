package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

func TestRetryPolicy_Next(t *testing.T) {
	p := retryPolicy{schedule: DefaultSchedule, jitter: 0, maxRetryAfter: time.Hour}
	tests := []struct {
		name    string
		attempt int
		res     webhook.Result
		want    time.Duration
		wantOK  bool
	}{
		{"first failure waits the first step", 1, webhook.Result{Status: 500}, 10 * time.Second, true},
		{"tenth failure waits the last step", 10, webhook.Result{Status: 500}, 8 * time.Hour, true},
		{"eleventh failure is final", 11, webhook.Result{Status: 500}, 0, false},
		{"connection error retried", 1, webhook.Result{Err: errors.New("connection refused")}, 10 * time.Second, true},
		{"429 Retry-After honoured", 1, webhook.Result{Status: 429, RetryAfter: 90 * time.Second}, 90 * time.Second, true},
		{"503 Retry-After bounded", 1, webhook.Result{Status: 503, RetryAfter: 48 * time.Hour}, time.Hour, true},
		{"Retry-After on a 500 ignored", 1, webhook.Result{Status: 500, RetryAfter: time.Minute}, 10 * time.Second, true},
		{"Retry-After cannot add attempts", 11, webhook.Result{Status: 429, RetryAfter: time.Second}, 0, false},
		{"url refused is final at once", 1, webhook.Result{Err: fmt.Errorf("x: %w", webhook.ErrURLNotAllowed)}, 0, false},
		{"bad payload is final at once", 1, webhook.Result{Err: webhook.ErrInvalidPayload}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := p.next(tt.attempt, tt.res)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("next = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetryPolicy_JitterStaysWithinItsFraction(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999999} {
		p := retryPolicy{schedule: []time.Duration{time.Minute}, jitter: 0.5, float64: func() float64 { return r }}
		got, _ := p.next(1, webhook.Result{Status: 500})
		if got < 30*time.Second || got > time.Minute {
			t.Errorf("r=%v: wait %v outside [30s, 1m]", r, got)
		}
	}
}

func TestDefaultSchedule_SpansAboutSixteenHours(t *testing.T) {
	var total time.Duration
	for _, s := range DefaultSchedule {
		total += s
	}
	if total < 15*time.Hour || total > 17*time.Hour {
		t.Errorf("schedule spans %v", total)
	}
}

func TestRebuildState_FoldsScheduleAndDoneEvents(t *testing.T) {
	v := &view{prefix: "p:"}
	n := func(id, entity string) schemas.Notification {
		return schemas.Notification{ID: id, Subscriber: "s", Type: "rate", EntityKey: entity}
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	sched := func(no schemas.Notification, attempt int, at time.Time) schemas.Envelope {
		raw, _ := json.Marshal(schemas.ScheduledDelivery{Notification: no, Attempt: attempt, At: at})
		return schemas.Envelope{Type: schemas.EventDeliveryScheduled, Data: raw}
	}
	done := func(id, outcome string) schemas.Envelope {
		raw, _ := json.Marshal(schemas.DoneDelivery{DeliveryID: id, Outcome: outcome, At: at})
		return schemas.Envelope{Type: schemas.EventDeliveryDone, Data: raw}
	}
	s := newRebuildState()
	for _, e := range []schemas.Envelope{
		sched(n("a", "E"), 1, at),
		sched(n("b", "E"), 1, at),
		sched(n("c", "F"), 1, at),
		sched(n("a", "E"), 2, at.Add(time.Minute)), // a retried: keeps its place before b
		done("c", schemas.OutcomeDelivered),
		sched(n("d", ""), 1, at),
		done("d", schemas.OutcomeDelivered),
		sched(n("d", ""), 1, at.Add(time.Hour)), // d replayed after it was done
		{Type: "something.else"},
	} {
		if err := s.apply(e); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.pending) != 3 {
		t.Fatalf("pending %d, want a, b, d", len(s.pending))
	}
	if got := s.pending["a"].rec; got.Attempt != 2 || !got.At.Equal(at.Add(time.Minute)) {
		t.Errorf("a = %+v, want its latest schedule", got)
	}
	if _, ok := s.done["c"]; !ok {
		t.Error("c not remembered as done")
	}
	if _, ok := s.done["d"]; ok {
		t.Error("d replayed after done is still marked done")
	}
	chains := s.chains(v)
	e := chains[v.chainKey(n("a", "E"))]
	if len(e) != 2 || e[0].rec.Notification.ID != "a" || e[1].rec.Notification.ID != "b" {
		t.Errorf("chain E = %v, want a then b", e)
	}
	if s.skipped != 1 {
		t.Errorf("skipped %d, want 1", s.skipped)
	}
}

// The intake reads every shape a TopicNotifications record has had: the
// envelope every producer writes now (its id the notification's, or a
// replay's own), and the bare notification the processors wrote before the
// envelope, which stays on the topic for its retention after an upgrade.
func TestDecodeNotification_ReadsTheEnvelopeAndTheBareShape(t *testing.T) {
	n := schemas.Notification{ID: "1", Subscriber: "s", Type: "rate", Payload: json.RawMessage(`{"rateID":"R"}`)}
	env, err := NotificationMessage(n)
	if err != nil {
		t.Fatal(err)
	}
	bare, _ := json.Marshal(n)
	tests := []struct {
		name    string
		value   []byte
		wantErr bool
	}{
		{"envelope", env.Value, false},
		{"envelope of a replay (an id of its own)", []byte(`{"id":"r-9","type":"notification","key":"s","time":"2026-11-26T00:00:00Z","source":"replay","data":` + string(bare) + `}`), false},
		{"envelope with data first", []byte(`{"data":` + string(bare) + `,"type":"notification"}`), false},
		{"bare notification (before the envelope)", bare, false},
		{"not json", []byte("{"), true},
		{"no id", []byte(`{"subscriber":"s","type":"rate"}`), true},
		{"envelope without subscriber", []byte(`{"type":"notification","data":{"id":"1","type":"rate"}}`), true},
		{"envelope without data", []byte(`{"id":"1","type":"notification","key":"s"}`), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeNotification(tt.value)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && (got.ID != "1" || got.Subscriber != "s" || got.Type != "rate" || string(got.Payload) != `{"rateID":"R"}`) {
				t.Errorf("decoded %+v", got)
			}
		})
	}
	if string(env.Key) != "s" || env.Topic != schemas.TopicNotifications {
		t.Errorf("message key %q topic %q", env.Key, env.Topic)
	}
}

// A replay is an event of its own: its envelope's id is not the
// notification's (which the processor's record carries), while the
// notification inside, delivery id included, is the same.
func TestReplay_EnvelopeHasAnIdOfItsOwn(t *testing.T) {
	n := schemas.Notification{ID: "d-1", Subscriber: "s", Type: "rate", Payload: json.RawMessage(`{}`), CreatedAt: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	pub := &recordingPublisher{}
	if got, err := Replay(context.Background(), pub, "s", "rate", time.Time{}, time.Time{}, []schemas.Notification{n}); err != nil || got != 1 {
		t.Fatalf("Replay = %d, %v", got, err)
	}
	if len(pub.msgs) != 1 {
		t.Fatalf("%d records", len(pub.msgs))
	}
	var env schemas.Envelope
	if err := json.Unmarshal(pub.msgs[0].Value, &env); err != nil {
		t.Fatal(err)
	}
	if env.Type != schemas.EventNotification || env.ID == "" || env.ID == n.ID || env.Source != sourceReplay {
		t.Errorf("replay envelope %+v", env)
	}
	got, err := DecodeNotification(pub.msgs[0].Value)
	if err != nil || got.ID != n.ID || got.Source != sourceReplay {
		t.Errorf("replayed notification %+v, %v", got, err)
	}
}

// The dispatcher's intake reads what NotificationMessage writes (replays)
// in one pass, not through encoding/json.
func TestDecodeEnvelopeFast_ReadsWhatNotificationMessageWrites(t *testing.T) {
	n := schemas.Notification{ID: "1", Subscriber: "s", Type: "rate", EntityKey: "S/P/R", Supplier: "S",
		Payload: json.RawMessage(`{"rateID":"R"}`), Source: "replay", CreatedAt: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	env, err := NotificationMessage(n)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := decodeEnvelopeFast(env.Value)
	if !ok {
		t.Fatalf("fast path refused %s", env.Value)
	}
	if !reflect.DeepEqual(got, n) {
		t.Errorf("got %+v\nwant %+v", got, n)
	}
	for _, v := range []string{
		`{"type":"notification","Data":{"id":"1"}}`,                         // another case: encoding/json's
		`{"type":"notification","data":{"id":"1"},"data":{"id":"2"}}`,       // repeated
		`{"type":"notification","data":null}`,                               // not an object
		`{"type":"other","data":{"id":"1","subscriber":"s","type":"rate"}}`, // not a notification envelope
	} {
		if _, ok := decodeEnvelopeFast([]byte(v)); ok {
			t.Errorf("fast path took %s", v)
		}
	}
}

func TestMetrics_BacklogIsADistributionWithoutSubscriberLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	newMetrics(reg) // a second dispatcher in the process shares the collectors
	m.observeBacklogs(map[string]int64{"a": 0, "b": 5, "c": 500, "d": 20000})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetValue() == "a" || lp.GetValue() == "d" {
					t.Errorf("%s has a subscriber id as a label", mf.GetName())
				}
			}
			key := mf.GetName()
			if len(mt.GetLabel()) == 1 {
				key += "{" + mt.GetLabel()[0].GetValue() + "}"
			}
			got[key] = mt.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"switchback_dispatcher_backlog":                        20505,
		"switchback_dispatcher_backlog_max":                    20000,
		"switchback_dispatcher_subscribers_by_backlog{0}":      1,
		"switchback_dispatcher_subscribers_by_backlog{10}":     2,
		"switchback_dispatcher_subscribers_by_backlog{1000}":   3,
		"switchback_dispatcher_subscribers_by_backlog{100000}": 4,
		"switchback_dispatcher_subscribers_by_backlog{+Inf}":   4,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// The history sink (processors/historysink) decodes delivery rows into the
// schemas types: the dispatcher's records must carry the same fields.
func TestHistoryRecords_DecodeAsTheSinksSchemas(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	raw, _ := json.Marshal(schemas.DeliveryAttemptRecord{DeliveryID: "d", Subscriber: "s", Type: "rate", Attempt: 2, Status: 503, LatencyMs: 12, Outcome: schemas.OutcomeRetry, Error: "e", At: at})
	var a schemas.DeliveryAttempt
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if want := (schemas.DeliveryAttempt{DeliveryID: "d", Subscriber: "s", Type: "rate", Attempt: 2, Status: 503, LatencyMs: 12, Outcome: "retry", Error: "e", At: at}); !reflect.DeepEqual(a, want) {
		t.Errorf("attempt decodes as %+v, want %+v", a, want)
	}
	// A suppressed record carries its whole notification, so that it can be
	// replayed from history alone.
	n := schemas.Notification{ID: "d", Subscriber: "s", Type: "rate", EntityKey: "s1/p1/r1", Payload: json.RawMessage(`{"supplierID":"s1"}`), CreatedAt: at}
	raw, _ = json.Marshal(schemas.NotificationSuppressedRecord{DeliveryID: "d", Subscriber: "s", Type: "rate", Reason: "disableAll is set", At: at, Notification: n})
	var sup schemas.NotificationSuppressed
	if err := json.Unmarshal(raw, &sup); err != nil {
		t.Fatal(err)
	}
	var back schemas.Notification
	if err := json.Unmarshal(sup.Notification, &back); err != nil {
		t.Fatalf("suppressed notification does not decode: %v", err)
	}
	sup.Notification = nil
	if want := (schemas.NotificationSuppressed{DeliveryID: "d", Subscriber: "s", Type: "rate", Reason: "disableAll is set", At: at}); !reflect.DeepEqual(sup, want) {
		t.Errorf("suppressed decodes as %+v, want %+v", sup, want)
	}
	if back.ID != n.ID || back.EntityKey != n.EntityKey || string(back.Payload) != string(n.Payload) || !back.CreatedAt.Equal(at) {
		t.Errorf("notification round trip = %+v, want %+v", back, n)
	}
	for _, o := range []string{schemas.OutcomeDelivered, schemas.OutcomeRetry, schemas.OutcomeFailed, schemas.OutcomeSuppressed, schemas.OutcomeDropped} {
		if !slices.Contains([]string{schemas.OutcomeDelivered, schemas.OutcomeRetry, schemas.OutcomeFailed, schemas.OutcomeSuppressed, schemas.OutcomeDropped}, o) {
			t.Errorf("outcome %q unknown to schemas", o)
		}
	}
}

// TestReleaseLane_HoldsTheLeaseForTheRestOfTheThrottleGap: the last send
// time is in one instance's memory; releasing with a hold keeps another
// instance off the subscriber's lane until the throttle gap has passed.
func TestReleaseLane_HoldsTheLeaseForTheRestOfTheThrottleGap(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	v := &view{rdb: rdb, prefix: "p:"}
	ctx := context.Background()
	tests := []struct {
		name      string
		hold      time.Duration
		freeAfter time.Duration // fast-forward after which B may take it
	}{
		{"no throttle gap left: released at once", 0, 0},
		{"a gap left: held for it", 400 * time.Millisecond, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := "sub-" + tt.name
			if ok, err := v.acquireLane(ctx, sub, "A", time.Minute); err != nil || !ok {
				t.Fatalf("A acquire: %v %v", ok, err)
			}
			if err := v.releaseLane(ctx, sub, "A", tt.hold); err != nil {
				t.Fatal(err)
			}
			ok, err := v.acquireLane(ctx, sub, "B", time.Minute)
			if err != nil || ok != (tt.freeAfter == 0) {
				t.Fatalf("B acquire right after release = %v (%v), want %v", ok, err, tt.freeAfter == 0)
			}
			if tt.freeAfter > 0 {
				mr.FastForward(tt.freeAfter)
				if ok, err := v.acquireLane(ctx, sub, "B", time.Minute); err != nil || !ok {
					t.Fatalf("B acquire after the gap = %v (%v), want true", ok, err)
				}
			}
		})
	}
	// Releasing a lease another owner holds changes nothing.
	if err := v.releaseLane(ctx, "sub-x", "A", 0); err != nil {
		t.Fatal(err)
	}
	if ok, _ := v.acquireLane(ctx, "sub-y", "B", time.Minute); !ok {
		t.Fatal("B acquire sub-y")
	}
	if err := v.releaseLane(ctx, "sub-y", "A", 0); err != nil {
		t.Fatal(err)
	}
	if ok, _ := v.acquireLane(ctx, "sub-y", "C", time.Minute); ok {
		t.Fatal("A's release freed B's lease")
	}
}

// recordingPublisher keeps what is published.
type recordingPublisher struct{ msgs []stream.Message }

func (p *recordingPublisher) Publish(_ context.Context, msgs ...stream.Message) error {
	p.msgs = append(p.msgs, msgs...)
	return nil
}

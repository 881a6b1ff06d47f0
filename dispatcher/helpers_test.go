package dispatcher_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/dispatcher"
	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// env is one test's world: an embedded broker, miniredis, a registry fake
// at the Subscriptions seam, and a producer.
type env struct {
	t       *testing.T
	brokers []string
	prod    *stream.Producer
	mr      *miniredis.Miniredis
	rdb     redis.UniversalClient
	subs    *fakeSubs
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, false)
}

// newRealEnv is newEnv on a real redis-server (testharness.Redis: skipped
// where none is installed, unless integration is required): for the tests
// that push thousands of deliveries through the Lua scripts, which
// miniredis runs one at a time in an interpreter.
func newRealEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, true)
}

func newEnvWith(t *testing.T, real bool) *env {
	t.Helper()
	b, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	brokers := []string{b.Addr()}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var topics []schemas.Topic
	for _, tp := range schemas.Topics() {
		switch tp.Name {
		case schemas.TopicNotifications, schemas.TopicDeliveries, schemas.TopicHistory, schemas.TopicDeadLetter:
			topics = append(topics, tp)
		}
	}
	if err := stream.EnsureTopics(ctx, brokers, topics); err != nil {
		t.Fatalf("ensure topics: %v", err)
	}
	prod := stream.NewProducer(stream.ProducerConfig{Brokers: brokers})
	t.Cleanup(func() { _ = prod.Close() })
	var mr *miniredis.Miniredis
	var rdb redis.UniversalClient
	if !real {
		mr = miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		rdb = c
	} else {
		// A redis-server, or the shared Redis Cluster with
		// SWITCHBACK_TEST_REDIS=cluster.
		rdb = testharness.RedisClient(t, 64)
	}
	return &env{t: t, brokers: brokers, prod: prod, mr: mr, rdb: rdb, subs: newFakeSubs()}
}

// running is a dispatcher started by start.
type running struct {
	d    *dispatcher.Dispatcher
	reg  *prometheus.Registry
	stop func() error
}

// start runs a dispatcher with test timings (milliseconds), adjusted by
// opt, until the returned stop (or the test's end).
func (e *env) start(opt func(*dispatcher.Options)) *running {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	client := webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true, Timeout: 2 * time.Second})
	o := dispatcher.Options{
		Brokers:         e.brokers,
		Redis:           e.rdb,
		Publisher:       e.prod,
		Subscriptions:   e.subs,
		Sender:          webhook.NewSender(client, nil),
		Schedule:        []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond},
		Jitter:          -1,
		PollInterval:    10 * time.Millisecond,
		Lease:           3 * time.Second,
		ShutdownTimeout: 5 * time.Second,
		MetricsInterval: 50 * time.Millisecond,
		Registerer:      reg,
		Logger:          testLogger(e.t),
	}
	if opt != nil {
		opt(&o)
	}
	d, err := dispatcher.New(o)
	if err != nil {
		e.t.Fatalf("new dispatcher: %v", err)
	}
	stop := testharness.RunInBackground(e.t, "dispatcher", 30*time.Second, d.Run)
	return &running{d: d, reg: reg, stop: stop}
}

func (e *env) publish(ns ...schemas.Notification) {
	e.t.Helper()
	msgs := make([]stream.Message, len(ns))
	for i, n := range ns {
		m, err := dispatcher.NotificationMessage(n)
		if err != nil {
			e.t.Fatal(err)
		}
		msgs[i] = m
	}
	if err := e.prod.Publish(e.t.Context(), msgs...); err != nil {
		e.t.Fatalf("publish: %v", err)
	}
}

// history returns the history events of type typ (all if "").
func (e *env) history(typ string) []schemas.Envelope {
	e.t.Helper()
	var out []schemas.Envelope
	ctx, cancel := context.WithTimeout(e.t.Context(), 10*time.Second)
	defer cancel()
	err := stream.ReadAll(ctx, e.brokers, schemas.TopicHistory, func(m stream.Message) error {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			return err
		}
		if typ == "" || env.Type == typ {
			out = append(out, env)
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("read history: %v", err)
	}
	return out
}

// attempts returns the delivery.attempt records, by delivery id, in order.
func (e *env) attempts() map[string][]schemas.DeliveryAttemptRecord {
	out := map[string][]schemas.DeliveryAttemptRecord{}
	for _, env := range e.history(schemas.HistoryDeliveryAttempt) {
		var a schemas.DeliveryAttemptRecord
		if err := json.Unmarshal(env.Data, &a); err != nil {
			e.t.Fatal(err)
		}
		out[a.DeliveryID] = append(out[a.DeliveryID], a)
	}
	return out
}

func (e *env) suppressed() map[string]schemas.NotificationSuppressedRecord {
	out := map[string]schemas.NotificationSuppressedRecord{}
	for _, env := range e.history(schemas.HistoryNotificationSuppressed) {
		var r schemas.NotificationSuppressedRecord
		if err := json.Unmarshal(env.Data, &r); err != nil {
			e.t.Fatal(err)
		}
		out[r.DeliveryID] = r
	}
	return out
}

// fakeSubs is the registry at the Subscriptions seam: rules and metadata in
// maps. It stands in for the registry store, which another package owns.
type fakeSubs struct {
	mu           sync.Mutex
	rules        map[string]map[string]rule
	throttle     map[string]time.Duration
	disableAll   map[string]bool
	disableCalls map[string]int
	failSettings map[string]bool
}

type rule struct {
	url, key string
	disabled bool
}

func newFakeSubs() *fakeSubs {
	return &fakeSubs{
		rules: map[string]map[string]rule{}, throttle: map[string]time.Duration{},
		disableAll: map[string]bool{}, disableCalls: map[string]int{}, failSettings: map[string]bool{},
	}
}

func (f *fakeSubs) setRule(sub, typ string, r rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rules[sub] == nil {
		f.rules[sub] = map[string]rule{}
	}
	f.rules[sub][typ] = r
}

func (f *fakeSubs) setThrottle(sub string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.throttle[sub] = d
}

func (f *fakeSubs) setDisableAll(sub string, v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disableAll[sub] = v
}

func (f *fakeSubs) setFailSettings(sub string, v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSettings[sub] = v
}

func (f *fakeSubs) disableCallsOf(sub string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.disableCalls[sub]
}

func (f *fakeSubs) Target(_ context.Context, sub, typ string) (webhook.Target, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rules[sub][typ]
	if !ok {
		return webhook.Target{}, false, dispatcher.ErrNoRule
	}
	return webhook.Target{URL: r.url, SecurityKey: r.key}, !r.disabled, nil
}

func (f *fakeSubs) Settings(_ context.Context, sub string) (time.Duration, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSettings[sub] {
		return 0, false, fmt.Errorf("registry unavailable")
	}
	return f.throttle[sub], f.disableAll[sub], nil
}

func (f *fakeSubs) DisableAll(_ context.Context, sub, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disableCalls[sub]++
	f.disableAll[sub] = true
	return nil
}

// sink is a subscriber's webhook endpoint on loopback, recording every
// request and answering what respond says.
type sink struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []sinkReq
	perID   map[string]int
	respond func(id string, nth int) (status int, header http.Header)
}

type sinkReq struct {
	at     time.Time
	id     string
	typ    string
	body   []byte
	status int
}

func newSink(t *testing.T, respond func(id string, nth int) (int, http.Header)) *sink {
	t.Helper()
	s := &sink{perID: map[string]int{}, respond: respond}
	if s.respond == nil {
		s.respond = func(string, int) (int, http.Header) { return 200, nil }
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get(schemas.HeaderDeliveryID)
		s.mu.Lock()
		s.perID[id]++
		nth := s.perID[id]
		respond := s.respond
		s.mu.Unlock()
		status, h := respond(id, nth)
		s.mu.Lock()
		s.reqs = append(s.reqs, sinkReq{at: at, id: id, typ: r.Header.Get(webhook.HeaderNotificationType), body: body, status: status})
		s.mu.Unlock()
		for k, vs := range h {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) setRespond(f func(id string, nth int) (int, http.Header)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = f
}

func (s *sink) requests() []sinkReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkReq(nil), s.reqs...)
}

// deliveredIDs counts 2xx answers per delivery id.
func (s *sink) deliveredIDs() map[string]int {
	out := map[string]int{}
	for _, r := range s.requests() {
		if r.status >= 200 && r.status < 300 {
			out[r.id]++
		}
	}
	return out
}

func (s *sink) url(path string) string { return s.srv.URL + path }

// note is a notification of sub and typ for entity, with the type's payload.
func note(sub, typ, entity string) schemas.Notification {
	var payload any
	switch typ {
	case schemas.TypeSupplier:
		payload = schemas.SupplierPayload{SupplierID: entity, Operation: "updated"}
	case schemas.TypeProduct:
		payload = schemas.ProductPayload{SupplierID: "S1", ProductID: entity, Operation: "updated"}
	case schemas.TypeBooking:
		payload = schemas.BookingPayload{BookingID: entity, StartTime: "2026-12-01T09:00:00Z", Operation: "canceled"}
	default:
		payload = schemas.RatePayload{SupplierID: "S1", ProductID: "P1", RateID: entity, Operation: "updated"}
	}
	raw, _ := json.Marshal(payload)
	return schemas.Notification{
		ID: uuid.NewString(), Subscriber: sub, Type: typ, EntityKey: typ + "/" + entity,
		Payload: raw, CreatedAt: time.Now().UTC().Truncate(time.Millisecond), Source: "test",
	}
}

// specSum is the subscriber's computation of spec doc 1, Authentication 1,
// written from the text: HMAC-SHA256 keyed by securityKey over the decimal
// timestamp immediately followed by the token, lowercase hex.
func specSum(securityKey string, timestamp int64, token string) string {
	mac := hmac.New(sha256.New, []byte(securityKey))
	fmt.Fprintf(mac, "%d%s", timestamp, token)
	return hex.EncodeToString(mac.Sum(nil))
}

package cronsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/cronreport"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestMain(m *testing.M) { testharness.Main(m) }

// fakeSyncer stands for ingest/catalogsync (another package): it answers
// per supplier and counts what it was asked.
type fakeSyncer struct {
	mu      sync.Mutex
	calls   []string
	results map[string]Result
	errs    map[string]error
	// started, if set, is told each call; a call then waits for its ctx.
	started chan string
}

func (f *fakeSyncer) SyncSupplier(ctx context.Context, sid string, from, to time.Time) (Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, sid)
	started := f.started
	res, err := f.results[sid], f.errs[sid]
	f.mu.Unlock()
	if !to.After(from) {
		return Result{}, fmt.Errorf("empty window %s..%s", from, to)
	}
	if started != nil {
		started <- sid
		<-ctx.Done()
		return Result{}, ctx.Err()
	}
	return res, err
}

func (f *fakeSyncer) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// failing wraps a publisher and fails while fail is set.
type failing struct {
	stream.Publisher
	mu   sync.Mutex
	fail bool
}

func (f *failing) set(v bool) { f.mu.Lock(); f.fail = v; f.mu.Unlock() }
func (f *failing) Publish(ctx context.Context, msgs ...stream.Message) error {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return errors.New("broker unreachable")
	}
	return f.Publisher.Publish(ctx, msgs...)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// env is the real catalog (Redis, embedded broker) with booking-system
// suppliers s1 (operator) and s2 (OCTO, operator 2), and a partner
// supplier p1 that the full sync does not cover.
func env(t *testing.T) *catalogtest.Env {
	t.Helper()
	e := catalogtest.Start(t, catalogtest.Options{Kafka: true})
	kind := func(body, k string) string {
		return strings.Replace(body, `"kind":"partner"`, `"kind":"`+k+`"`, 1)
	}
	e.As(t, e.Operator).CreateSupplier(kind(catalogtest.SupplierBody("s1", "One", "S1", "k", "s"), "bookingsystem"))
	e.As(t, e.Operator2).CreateSupplier(kind(catalogtest.SupplierBody("s2", "Two", "S2", "k", "s"), "octo"))
	e.As(t, e.Operator).CreateSupplier(catalogtest.SupplierBody("p1", "Partner", "P1", "k", "s"))
	return e
}

// requests reads the request topic.
func requests(t *testing.T, brokers []string) ([]stream.Message, []Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var msgs []stream.Message
	if err := stream.ReadAll(ctx, brokers, schemas.TopicCronSync, func(m stream.Message) error { msgs = append(msgs, m); return nil }); err != nil {
		t.Fatal(err)
	}
	reqs := make([]Request, len(msgs))
	for i, m := range msgs {
		r, err := decodeRequest(m)
		if err != nil {
			t.Fatalf("offset %d: %v", m.Offset, err)
		}
		reqs[i] = r
	}
	return msgs, reqs
}

// history reads the sync report history events, by event id.
func history(t *testing.T, brokers []string) map[string]schemas.SyncReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]schemas.SyncReport{}
	err := stream.ReadAll(ctx, brokers, schemas.TopicHistory, func(m stream.Message) error {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			return err
		}
		if env.Type != schemas.HistorySyncReport {
			return nil
		}
		var p schemas.SyncReport
		if err := json.Unmarshal(env.Data, &p); err != nil {
			return err
		}
		out[env.ID] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(reqs []Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Key
	}
	return out
}

// TestScheduler_OneInstanceEnqueuesEachSlot: of two schedulers on one
// Redis, exactly one enqueues a slot's run (one request per booking-system
// supplier, partner suppliers left out), including when both check at
// once; the next slot is enqueued once again.
func TestScheduler_OneInstanceEnqueuesEachSlot(t *testing.T) {
	e := env(t)
	clk := &clock{t: time.Date(2026, 5, 10, 7, 20, 0, 0, time.UTC)}
	mk := func() *Scheduler {
		return NewScheduler(SchedulerOptions{Redis: e.Redis, Publisher: e.Producer, Suppliers: e.Store, Interval: time.Hour,
			HorizonDays: 30, Clock: clk.Now})
	}
	a, b := mk(), mk()
	ctx := context.Background()
	steps := []struct {
		name    string
		advance time.Duration
		check   *Scheduler
		wantRun string // "" = nothing enqueued
	}{
		{"a takes the slot", 0, a, "cron-20260510T070000Z"},
		{"b finds it taken", 0, b, ""},
		{"a finds it done", 0, a, ""},
		{"later in the slot: still done", 30 * time.Minute, b, ""},
		{"next slot: b takes it", 15 * time.Minute, b, "cron-20260510T080000Z"},
		{"a finds it taken", 0, a, ""},
	}
	for _, st := range steps {
		clk.Add(st.advance)
		run, err := st.check.Check(ctx)
		if err != nil || run.ID != st.wantRun {
			t.Fatalf("%s: run %q (%v), want %q", st.name, run.ID, err, st.wantRun)
		}
		if st.wantRun != "" && (run.Suppliers != 2 || run.Trigger != TriggerSchedule) {
			t.Fatalf("%s: %+v, want 2 suppliers", st.name, run)
		}
	}
	// Both at once, on a new slot, many times over: one run.
	clk.Add(time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []string
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			run, err := s.Check(ctx)
			if err != nil {
				t.Error(err)
			}
			if run.ID != "" {
				mu.Lock()
				got = append(got, run.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != 1 || got[0] != "cron-20260510T090000Z" {
		t.Fatalf("concurrent checks enqueued %v, want one run", got)
	}
	_, reqs := requests(t, e.Brokers)
	want := []string{"cron-20260510T070000Z/s1", "cron-20260510T070000Z/s2", "cron-20260510T080000Z/s1", "cron-20260510T080000Z/s2",
		"cron-20260510T090000Z/s1", "cron-20260510T090000Z/s2"}
	if fmt.Sprint(keys(reqs)) != fmt.Sprint(want) {
		t.Fatalf("requests %v, want %v", keys(reqs), want)
	}
	if r := reqs[0]; r.From != "2026-05-10" || r.To != "2026-06-09" || r.Index != 1 || r.Of != 2 || r.SupplierID != "s1" {
		t.Errorf("first request %+v: want the window today + 30 days, 1 of 2", r)
	}
}

// TestScheduler_ConnectedSuppliersAreSynchronizedAtOnce: a supplier
// connected (or pointed at another endpoint) after the slot's run gets a
// first synchronization at the next check instead of hours later, once
// however many instances check, under a key that derives from its
// connection (so the worker reports it once); suppliers of a run are not
// synchronized again by it, and with the schedule off nothing is.
func TestScheduler_ConnectedSuppliersAreSynchronizedAtOnce(t *testing.T) {
	e := env(t)
	clk := &clock{t: time.Date(2026, 5, 10, 7, 20, 0, 0, time.UTC)}
	mk := func(interval time.Duration) *Scheduler {
		return NewScheduler(SchedulerOptions{Redis: e.Redis, Publisher: e.Producer, Suppliers: e.Store, Interval: interval,
			HorizonDays: 30, Clock: clk.Now})
	}
	a, b, off := mk(time.Hour), mk(time.Hour), mk(0)
	ctx := context.Background()
	bsBody := func(id, url string) string {
		body := strings.Replace(catalogtest.SupplierBody(id, "Three", "S3", "k", "s"), `"kind":"partner"`, `"kind":"bookingsystem"`, 1)
		return strings.Replace(body, "https://partner.example.com/api/", url, 1)
	}
	steps := []struct {
		name   string
		before func()
		check  *Scheduler
		want   []string // suppliers of the first synchronizations enqueued
	}{
		{"the slot's run covers s1 and s2", func() {
			if run, err := a.Check(ctx); err != nil || run.Suppliers != 2 {
				t.Fatalf("slot run %+v (%v)", run, err)
			}
		}, a, nil},
		{"s3 connected after the run", func() {
			e.As(t, e.Operator).CreateSupplier(bsBody("s3", "https://bs.example.com/v2"))
		}, b, []string{"s3"}},
		{"seen by the other instance: nothing more", nil, a, nil},
		{"schedule off: nothing", func() {
			e.As(t, e.Operator).CreateSupplier(bsBody("s4", "https://bs.example.com/v2"))
		}, off, nil},
		{"s4 once the schedule is on", nil, a, []string{"s4"}},
		{"s3 pointed at another endpoint", func() {
			e.As(t, e.Operator).PutSupplier("s3", bsBody("s3", "https://other.example.com/v2"))
		}, b, []string{"s3"}},
		{"nothing new", nil, b, nil},
	}
	_, before := requests(t, e.Brokers)
	seen := len(before)
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		n, err := st.check.Connected(ctx)
		if err != nil || n != len(st.want) {
			t.Fatalf("%s: enqueued %d (%v), want %v", st.name, n, err, st.want)
		}
		_, reqs := requests(t, e.Brokers)
		var got []string
		for _, r := range reqs[seen:] {
			if r.Trigger == TriggerConnected {
				got = append(got, r.SupplierID)
				if !strings.HasPrefix(r.Key, r.RunID+"/") || r.Of != 1 || r.From != "2026-05-10" || r.To != "2026-06-09" {
					t.Errorf("%s: request %+v", st.name, r)
				}
			}
		}
		seen = len(reqs)
		if fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Fatalf("%s: first synchronizations of %v, want %v", st.name, got, st.want)
		}
	}
	// Two instances that both miss the memory (a flushed Redis, or two
	// checks at once) enqueue the same keys: the worker reports each once.
	for _, s := range []*Scheduler{a, b} {
		if err := e.Redis.Del(ctx, a.connectedKey()).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Connected(ctx); err != nil || n != 4 {
			t.Fatalf("after the flush: enqueued %d (%v), want 4", n, err)
		}
	}
	_, reqs := requests(t, e.Brokers)
	last := keys(reqs[len(reqs)-8:])
	if fmt.Sprint(last[:4]) != fmt.Sprint(last[4:]) {
		t.Fatalf("the two instances enqueued different keys: %v", last)
	}
}

// TestScheduler_ClaimsThatDidNotEnqueue: a failed enqueue releases its
// claim (the next check retries); a claim whose holder died holds the slot
// until it expires, then the run is enqueued with the same keys.
func TestScheduler_ClaimsThatDidNotEnqueue(t *testing.T) {
	e := env(t)
	clk := &clock{t: time.Date(2026, 5, 10, 7, 20, 0, 0, time.UTC)}
	pub := &failing{Publisher: e.Producer}
	s := NewScheduler(SchedulerOptions{Redis: e.Redis, Publisher: pub, Suppliers: e.Store, Interval: time.Hour, Clock: clk.Now})
	ctx := context.Background()

	pub.set(true)
	if run, err := s.Check(ctx); err == nil || run.ID != "" {
		t.Fatalf("with the broker down: run %q, err %v; want an error", run.ID, err)
	}
	pub.set(false)
	if run, err := s.Check(ctx); err != nil || run.ID != "cron-20260510T070000Z" {
		t.Fatalf("after the failure: run %q (%v), want the slot's run", run.ID, err)
	}

	clk.Add(time.Hour) // a new slot, claimed by an instance that dies
	n, _ := s.slot()
	if err := e.Redis.Set(ctx, s.slotKey(n), "claim:dead", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if run, err := s.Check(ctx); err != nil || run.ID != "" {
		t.Fatalf("while the claim holds: run %q (%v)", run.ID, err)
	}
	if err := e.Redis.Del(ctx, s.slotKey(n)).Err(); err != nil { // the claim expires
		t.Fatal(err)
	}
	if run, err := s.Check(ctx); err != nil || run.ID != "cron-20260510T080000Z" {
		t.Fatalf("after the claim expired: run %q (%v)", run.ID, err)
	}
	_, reqs := requests(t, e.Brokers)
	if len(reqs) != 4 {
		t.Fatalf("requests %v, want 2 runs of 2", keys(reqs))
	}
}

// TestScheduler_OffStillRunsNow: with interval 0 nothing is scheduled,
// and RunNow enqueues a manual run.
func TestScheduler_OffStillRunsNow(t *testing.T) {
	e := env(t)
	s := NewScheduler(SchedulerOptions{Redis: e.Redis, Publisher: e.Producer, Suppliers: e.Store})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run with the schedule off: %v (ctx %v); want an immediate nil", err, ctx.Err())
	}
	if run, err := s.Check(ctx); err != nil || run.ID != "" {
		t.Fatalf("Check with the schedule off: %q (%v)", run.ID, err)
	}
	run, err := s.RunNow(ctx)
	if err != nil || run.Trigger != TriggerManual || run.Suppliers != 2 || !strings.HasPrefix(run.ID, "manual-") {
		t.Fatalf("RunNow = %+v (%v)", run, err)
	}
	_, reqs := requests(t, e.Brokers)
	if len(reqs) != 2 || reqs[1].Trigger != TriggerManual || reqs[1].RunID != run.ID {
		t.Fatalf("requests %+v", reqs)
	}
}

// newWorker returns a worker on e with a report store and a syncer.
func newWorker(e *catalogtest.Env, sy Syncer, o WorkerOptions) (*Worker, *cronreport.Store) {
	store := cronreport.NewStore(cronreport.Options{Redis: e.Redis, Publisher: e.Producer})
	o.Brokers, o.Store, o.Syncer, o.Redis, o.Logger = e.Brokers, store, sy, e.Redis, e.Logger
	if o.Publisher == nil {
		o.Publisher = e.Producer
	}
	return NewWorker(o), store
}

func runNow(t *testing.T, e *catalogtest.Env) Run {
	t.Helper()
	run, err := NewScheduler(SchedulerOptions{Redis: e.Redis, Publisher: e.Producer, Suppliers: e.Store}).RunNow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestWorker_OneReportPerRequestThroughRedeliveryDuplicatesAndRebuild:
// each request is synchronized once and reported once with id offset + 1,
// whether it is redelivered (a crash before the commit), enqueued twice,
// or redelivered after the view was flushed and rebuilt from the topic;
// each report has its history event.
func TestWorker_OneReportPerRequestThroughRedeliveryDuplicatesAndRebuild(t *testing.T) {
	e := env(t)
	sy := &fakeSyncer{results: map[string]Result{
		"s1": {Products: 1, Options: 2, Availabilities: 30},
		"s2": {Products: 1, Options: 1, Errors: []string{"option o1: 503 Service Unavailable", "a general failure"}},
	}}
	w, store := newWorker(e, sy, WorkerOptions{})
	ctx := context.Background()
	runNow(t, e)
	msgs, reqs := requests(t, e.Brokers)
	handleAll := func(t *testing.T, msgs []stream.Message) {
		t.Helper()
		for _, m := range msgs {
			if err := w.Handle(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(t *testing.T) {
		t.Helper()
		if calls := sy.Calls(); fmt.Sprint(calls) != "[s1 s2]" {
			t.Fatalf("synchronized %v, want s1 and s2 once each", calls)
		}
		list, err := store.List(ctx, cronreport.Filter{AllSuppliers: true})
		if err != nil || len(list) != 2 {
			t.Fatalf("reports %+v (%v), want 2", list, err)
		}
		for i := range msgs[:2] {
			r, err := store.ByRequest(ctx, reqs[i].Key)
			if err != nil || r.ID != cronreport.ID(reqs[i].Key, 0) || r.ExternalSystemID != reqs[i].SupplierID {
				t.Fatalf("report of %s: %+v (%v), want id %d", reqs[i].Key, r, err, cronreport.ID(reqs[i].Key, 0))
			}
		}
		s2, _ := store.ByRequest(ctx, reqs[1].Key)
		if s2.ErrorCount != 2 || s2.ErrorReport[0] != (cronreport.ErrorItem{Entity: "option", ID: "o1", Message: "option o1: 503 Service Unavailable"}) ||
			s2.ErrorReport[1].Entity != "" {
			t.Errorf("s2's report %+v", s2)
		}
		h := history(t, e.Brokers)
		if len(h) != 2 {
			t.Fatalf("history events %d, want 2 (one per report, however often published)", len(h))
		}
		for _, p := range h {
			if p.ExternalSystemID == "s2" && (p.ErrorCount != 2 || len(p.ErrorReport) != 2 || p.Items != 2 || p.ID != s2.ID) {
				t.Errorf("history of s2 %+v", p)
			}
			if p.ExternalSystemID == "s1" && (p.ErrorCount != 0 || p.ErrorReport != nil || p.Items != 33) {
				t.Errorf("history of s1 %+v", p)
			}
		}
	}
	steps := []struct {
		name string
		do   func(t *testing.T)
	}{
		{"first delivery", func(t *testing.T) { handleAll(t, msgs) }},
		{"redelivered", func(t *testing.T) { handleAll(t, msgs) }},
		{"enqueued again with the same keys", func(t *testing.T) {
			vals := make([]stream.Message, len(msgs))
			for i, m := range msgs {
				vals[i] = stream.Message{Topic: m.Topic, Key: m.Key, Value: m.Value}
			}
			if err := e.Producer.Publish(ctx, vals...); err != nil {
				t.Fatal(err)
			}
			all, _ := requests(t, e.Brokers)
			if len(all) != 4 {
				t.Fatalf("%d requests on the topic, want 4", len(all))
			}
			handleAll(t, all)
		}},
		{"view flushed, rebuilt, redelivered", func(t *testing.T) {
			if err := testharness.FlushAll(ctx, e.Redis); err != nil {
				t.Fatal(err)
			}
			if err := store.Rebuild(ctx, e.Brokers); err != nil {
				t.Fatal(err)
			}
			handleAll(t, msgs)
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			check(t)
		})
	}
}

// TestWorker_CrashMidRunRedoesIt: a synchronization interrupted by
// shutdown leaves no report and is not committed; delivered again, it is
// run and reported once.
func TestWorker_CrashMidRunRedoesIt(t *testing.T) {
	e := env(t)
	sy := &fakeSyncer{started: make(chan string, 1), results: map[string]Result{"s1": {Products: 1}}}
	w, store := newWorker(e, sy, WorkerOptions{})
	runNow(t, e)
	msgs, reqs := requests(t, e.Brokers)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Handle(ctx, msgs[0]) }()
	<-sy.started // mid-run
	cancel()
	if err := <-done; err == nil {
		t.Fatal("an interrupted run returned nil: its offset would be committed")
	}
	if _, err := store.ByRequest(context.Background(), reqs[0].Key); !errors.Is(err, cronreport.ErrNotFound) {
		t.Fatalf("interrupted run left a report (%v)", err)
	}
	sy.mu.Lock()
	sy.started = nil
	sy.mu.Unlock()
	if err := w.Handle(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Handle(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	r, err := store.ByRequest(context.Background(), reqs[0].Key)
	if err != nil || r.ID != cronreport.ID(reqs[0].Key, 0) || len(sy.Calls()) != 2 {
		t.Fatalf("after redelivery: %+v (%v), calls %v; want one report, run twice in all", r, err, sy.Calls())
	}
}

// TestWorker_HistoryFailureIsRetriedWithoutASecondRun: when the history
// event cannot be published the request is not done (not committed); the
// retry publishes it without synchronizing again.
func TestWorker_HistoryFailureIsRetriedWithoutASecondRun(t *testing.T) {
	e := env(t)
	sy := &fakeSyncer{}
	hist := &failing{Publisher: e.Producer, fail: true}
	w, store := newWorker(e, sy, WorkerOptions{Publisher: hist})
	runNow(t, e)
	msgs, reqs := requests(t, e.Brokers)
	ctx := context.Background()
	if err := w.Handle(ctx, msgs[0]); err == nil {
		t.Fatal("history not published, yet the request was done")
	}
	if _, err := store.ByRequest(ctx, reqs[0].Key); err != nil {
		t.Fatalf("report not recorded before the history: %v", err)
	}
	hist.set(false)
	if err := w.Handle(ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	if len(sy.Calls()) != 1 || len(history(t, e.Brokers)) != 1 {
		t.Fatalf("calls %v, history %d; want one of each", sy.Calls(), len(history(t, e.Brokers)))
	}
}

// TestWorker_Outcomes: what each kind of request leaves behind.
func TestWorker_Outcomes(t *testing.T) {
	e := env(t)
	runNow(t, e)
	msgs, reqs := requests(t, e.Brokers)
	bad := stream.Message{Topic: schemas.TopicCronSync, Value: []byte(`{"type":"cronsync.requested","data":{"key":"x"}}`), Offset: 99}
	first := cronreport.ID(reqs[0].Key, 0)
	tests := []struct {
		name       string
		sy         *fakeSyncer
		o          WorkerOptions
		msg        stream.Message
		setup      func(t *testing.T, s *cronreport.Store)
		wantReport bool
		wantErrors []string // messages of the report's errorReport
		wantCalls  int
	}{
		{"the whole synchronization failed: one error naming the supplier",
			&fakeSyncer{errs: map[string]error{"s1": errors.New("connection refused")}}, WorkerOptions{}, msgs[0], nil,
			true, []string{"supplier s1: connection refused"}, 1},
		{"past the timeout: the report says so",
			&fakeSyncer{started: make(chan string, 1)}, WorkerOptions{Timeout: 50 * time.Millisecond}, msgs[0], nil,
			true, []string{"supplier s1: synchronization did not finish within 50ms: context deadline exceeded"}, 1},
		{"stale: not run, no report",
			&fakeSyncer{}, WorkerOptions{Clock: func() time.Time { return time.Now().Add(25 * time.Hour) }}, msgs[0], nil, false, nil, 0},
		{"not a request: skipped", &fakeSyncer{}, WorkerOptions{}, bad, nil, false, nil, 0},
		{"its id held by another request's report: the next id, the other not overwritten", &fakeSyncer{}, WorkerOptions{}, msgs[0],
			func(t *testing.T, s *cronreport.Store) {
				err := s.Put(context.Background(), cronreport.Report{Summary: cronreport.Summary{ID: first, Inserted: time.Now(),
					ExternalSystemID: "s9", ErrorCount: 1}, ErrorReport: cronreport.NewErrorReport([]string{"older"}), RequestKey: "an-older-request"})
				if err != nil {
					t.Fatal(err)
				}
			}, true, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := testharness.FlushAll(context.Background(), e.Redis); err != nil {
				t.Fatal(err)
			}
			w, store := newWorker(e, tt.sy, tt.o)
			if tt.setup != nil {
				tt.setup(t, store)
			}
			if err := w.Handle(context.Background(), tt.msg); err != nil {
				t.Fatal(err)
			}
			r, err := store.ByRequest(context.Background(), reqs[0].Key)
			if tt.msg.Offset != msgs[0].Offset {
				r, err = store.Get(context.Background(), cronreport.ID("x", 0))
			}
			if older, oerr := store.Get(context.Background(), first); oerr == nil && older.RequestKey == "an-older-request" {
				if older.ErrorCount != 1 || r.ID == first {
					t.Fatalf("the other request's report was overwritten: %+v, ours %+v", older, r)
				}
				if r.ID != cronreport.ID(reqs[0].Key, 1) {
					t.Fatalf("report id %d, want the next candidate %d", r.ID, cronreport.ID(reqs[0].Key, 1))
				}
			}
			if !tt.wantReport {
				if !errors.Is(err, cronreport.ErrNotFound) {
					t.Fatalf("report %+v (%v), want none", r, err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, it := range r.ErrorReport {
					got = append(got, it.Message)
				}
				if fmt.Sprint(got) != fmt.Sprint(tt.wantErrors) || r.ErrorCount != len(tt.wantErrors) {
					t.Errorf("errors %q (count %d), want %q", got, r.ErrorCount, tt.wantErrors)
				}
			}
			if n := len(tt.sy.Calls()); n != tt.wantCalls {
				t.Errorf("synchronized %d times, want %d", n, tt.wantCalls)
			}
		})
	}
}

// TestWorker_RunConsumesTheTopic: the worker's consumer group takes runs
// from the topic, reports every supplier and logs the run's end.
func TestWorker_RunConsumesTheTopic(t *testing.T) {
	e := env(t)
	sy := &fakeSyncer{}
	w, store := newWorker(e, sy, WorkerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	run := runNow(t, e)
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := store.List(context.Background(), cronreport.Filter{AllSuppliers: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reports %+v after 30s, want 2", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(e.Logs.String(), "full synchronization run finished"); {
		if time.Now().After(deadline) {
			t.Fatalf("no run-finished log line:\n%s", e.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if logs := e.Logs.String(); !strings.Contains(logs, "run="+run.ID) || strings.Count(logs, "full synchronization run finished") != 1 {
		t.Errorf("run logs:\n%s", logs)
	}
}

// viewsFence is the views' epoch as the test sets it ("" = lost).
type viewsFence struct {
	mu    sync.Mutex
	epoch string
}

func (f *viewsFence) Epoch(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch, nil
}

func (f *viewsFence) set(e string) { f.mu.Lock(); f.epoch = e; f.mu.Unlock() }

// losingSyncer loses the Redis views during its first run, which then
// reads the catalog as empty and reports every product missing.
type losingSyncer struct {
	fakeSyncer
	fence *viewsFence
}

func (l *losingSyncer) SyncSupplier(ctx context.Context, sid string, from, to time.Time) (Result, error) {
	res, err := l.fakeSyncer.SyncSupplier(ctx, sid, from, to)
	if len(l.Calls()) == 1 {
		l.fence.set("")
		return Result{Errors: []string{"product p1: not found"}}, nil
	}
	return res, err
}

// TestWorker_ViewsLostDuringARunLeaveNoReport: a report is final (a
// redelivery finds it and does not run again), so a run during which
// Redis lost its views records none; run again after the rebuild, it is
// reported once, from the good run.
func TestWorker_ViewsLostDuringARunLeaveNoReport(t *testing.T) {
	e := env(t)
	fence := &viewsFence{epoch: "e1"}
	sy := &losingSyncer{fakeSyncer: fakeSyncer{results: map[string]Result{"s1": {Products: 1}}}, fence: fence}
	w, store := newWorker(e, sy, WorkerOptions{Fence: fence})
	runNow(t, e)
	msgs, reqs := requests(t, e.Brokers)
	err := w.Handle(stream.FencedContext(context.Background(), fence, "e1"), msgs[0])
	if !errors.Is(err, stream.ErrFenced) {
		t.Fatalf("Handle on lost views = %v, want ErrFenced", err)
	}
	if _, err := store.ByRequest(context.Background(), reqs[0].Key); !errors.Is(err, cronreport.ErrNotFound) {
		t.Fatalf("a run on lost views left a report (%v)", err)
	}
	fence.set("e2")
	if err := w.Handle(stream.FencedContext(context.Background(), fence, "e2"), msgs[0]); err != nil {
		t.Fatal(err)
	}
	r, err := store.ByRequest(context.Background(), reqs[0].Key)
	if err != nil || r.ErrorCount != 0 || len(sy.Calls()) != 2 {
		t.Fatalf("after the rebuild: %+v (%v), calls %v; want one clean report, two runs", r, err, sy.Calls())
	}
}

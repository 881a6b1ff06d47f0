package views_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/embedded"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/views"
)

// topicView is a Redis view rebuilt from an in-memory "topic": a hash of
// every record. gate, when set, holds Rebuild until it is closed, so that
// a test sees the guard while it rebuilds.
type topicView struct {
	key     string
	records map[string]string
	runs    atomic.Int32
	entered chan struct{} // receives when Rebuild starts (non-blocking)
	gate    atomic.Pointer[chan struct{}]
}

func newTopicView(key string) *topicView {
	return &topicView{key: key, records: map[string]string{"p1": "Alpine tour", "p2": "Canyon walk"}, entered: make(chan struct{}, 16)}
}

func (v *topicView) hold() (release func()) {
	for len(v.entered) > 0 {
		<-v.entered // the earlier rebuilds'
	}
	ch := make(chan struct{})
	v.gate.Store(&ch)
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (v *topicView) rebuild(rdb redis.UniversalClient) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		v.runs.Add(1)
		select {
		case v.entered <- struct{}{}:
		default:
		}
		if g := v.gate.Load(); g != nil {
			select {
			case <-*g:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		for id, val := range v.records {
			if err := rdb.HSet(ctx, v.key, id, val).Err(); err != nil {
				return err
			}
		}
		return nil
	}
}

// process is one Switchback process's guard, with its own Redis client
// carrying the OnConnect hook, as cmd/switchback/internal/app wires it.
type process struct {
	g    *views.Guard
	rdb  *redis.Client
	reg  *prometheus.Registry
	stop func()
}

func newProcess(t *testing.T, url string, vs ...views.View) *process {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	g := views.New(views.Options{PollInterval: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Logger: testharness.Logger(t), Registerer: reg})
	opts.OnConnect = g.OnConnect
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	g.Bind(rdb)
	for _, v := range vs {
		g.Register(v)
	}
	return &process{g: g, rdb: rdb, reg: reg, stop: func() {}}
}

func (p *process) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := p.g.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func (p *process) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.g.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var once sync.Once
	p.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(p.stop)
}

func (p *process) epoch(t *testing.T) string {
	t.Helper()
	e, err := p.g.Epoch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// metric is a series of the process's metric name: the one whose label
// has value, or with label "" the first.
func (p *process) metric(t *testing.T, name, label, value string) float64 {
	t.Helper()
	var labels map[string]string
	if label != "" {
		labels = map[string]string{label: value}
	}
	return testharness.MetricValue(t, p.reg, name, labels)
}

// TestGuard_StartSetsAnEpochThatTheNextStartAdopts: the first process on
// an empty Redis rebuilds every view (those OnlyWhenLost too) and sets an
// epoch of this server run; a process started next finds it, rebuilds the
// idempotent views as every start does, leaves the OnlyWhenLost ones
// alone (the live state is ahead of any fold) and adopts the epoch.
func TestGuard_StartSetsAnEpochThatTheNextStartAdopts(t *testing.T) {
	url := testharness.Redis(t)
	catalog, fold := newTopicView("view:catalog"), newTopicView("view:fold")
	mk := func() *process {
		p := newProcess(t, url)
		p.g.Register(views.View{Name: "catalog", Rebuild: catalog.rebuild(p.rdb)})
		p.g.Register(views.View{Name: "fold", OnlyWhenLost: true, Rebuild: fold.rebuild(p.rdb)})
		return p
	}
	a := mk()
	if a.g.Ready() {
		t.Fatal("ready before Start")
	}
	if err := a.g.Check(t.Context()); err == nil || !strings.Contains(err.Error(), "catalog, fold") {
		t.Fatalf("Check before Start = %v, want the views named as rebuilding", err)
	}
	a.start(t)
	e1 := a.epoch(t)
	info, err := a.rdb.Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !a.g.Ready() || e1 == "" || !strings.Contains(info, "run_id:"+strings.Split(e1, "/")[0]) {
		t.Fatalf("after Start: ready %v, epoch %q (want one prefixed by the server's run id)", a.g.Ready(), e1)
	}
	if a.metric(t, "switchback_views_rebuilds_total", "outcome", "rebuilt") != 1 || a.metric(t, "switchback_views_ready", "", "") != 1 {
		t.Error("metrics: want one rebuild and ready 1")
	}

	b := mk()
	b.start(t)
	if got := b.epoch(t); got != e1 || !b.g.Ready() {
		t.Fatalf("second start: epoch %q ready %v, want the first's %q", got, b.g.Ready(), e1)
	}
	if catalog.runs.Load() != 2 || fold.runs.Load() != 1 {
		t.Errorf("rebuilds: catalog %d (want 2, every start), fold %d (want 1, only when lost)", catalog.runs.Load(), fold.runs.Load())
	}
	if b.metric(t, "switchback_views_rebuilds_total", "outcome", "adopted") != 1 {
		t.Error("second start: want one adopted rebuild")
	}
}

// reader reads a view the way the API does (internal httpapi): 503 while
// not ready; a miss is served as 404 only once Confirm holds. It counts
// every answer that is neither correct nor 503.
type reader struct {
	p                  *process
	key                string
	want               map[string]string
	wrong, ok, refused atomic.Int64
	firstWrong         atomic.Value
	stopped            atomic.Bool
	done               chan struct{}
}

func startReader(p *process, key string, want map[string]string) *reader {
	r := &reader{p: p, key: key, want: want, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		ctx := context.Background()
		for !r.stopped.Load() {
			for id, want := range r.want {
				gen, ready := r.p.g.Current()
				if !ready {
					r.refused.Add(1)
					continue
				}
				got, err := r.p.rdb.HGet(ctx, r.key, id).Result()
				switch {
				case errors.Is(err, redis.Nil):
					if r.p.g.Confirm(ctx, gen) == nil {
						r.wrong.Add(1) // a 404 for an existing record
						r.firstWrong.CompareAndSwap(nil, "404 for "+id)
					} else {
						r.refused.Add(1)
					}
				case err != nil:
					r.refused.Add(1) // Redis unreachable: 503
				case got != want:
					r.wrong.Add(1)
					r.firstWrong.CompareAndSwap(nil, "wrong value for "+id)
				default:
					r.ok.Add(1)
				}
			}
		}
	}()
	return r
}

func (r *reader) stop() { r.stopped.Store(true); <-r.done }

// TestGuard_LostViewsAreRebuiltAndReadsAreCorrectOr503: Redis loses the
// views under load (FLUSHALL, FLUSHDB, or the marker alone, as an
// eviction would); the guard notices, answers "not ready" (503) while the
// views are rebuilt, rebuilds them and sets a new epoch. A second process
// that is not rebuilding (its guard does not poll) never serves a wrong
// 404 either: its Confirm finds the marker gone, or changed once the first
// process rebuilt. Readers never see an answer that is neither correct nor
// a 503.
func TestGuard_LostViewsAreRebuiltAndReadsAreCorrectOr503(t *testing.T) {
	tests := []struct {
		name string
		lose func(ctx context.Context, rdb *redis.Client) error
	}{
		{"FLUSHALL", func(ctx context.Context, rdb *redis.Client) error { return rdb.FlushAll(ctx).Err() }},
		{"FLUSHDB", func(ctx context.Context, rdb *redis.Client) error { return rdb.FlushDB(ctx).Err() }},
		{"FLUSHALL ASYNC", func(ctx context.Context, rdb *redis.Client) error { return rdb.FlushAllAsync(ctx).Err() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := testharness.Redis(t)
			cat := newTopicView("view:catalog")
			a := newProcess(t, url)
			a.g.Register(views.View{Name: "catalog", Rebuild: cat.rebuild(a.rdb)})
			b := newProcess(t, url)
			b.g.Register(views.View{Name: "catalog", Rebuild: cat.rebuild(b.rdb)})
			a.start(t)
			b.start(t)
			e1 := a.epoch(t)
			changes := atomic.Int32{}
			a.g.OnChange(func() { changes.Add(1) })
			a.run(t) // b does not poll: "a process that did not notice"

			ra := startReader(a, cat.key, cat.records)
			rb := startReader(b, cat.key, cat.records)
			t.Cleanup(ra.stop)
			t.Cleanup(rb.stop)
			testharness.Eventually(t, 5*time.Second, "reads served", func() bool { return ra.ok.Load() > 10 && rb.ok.Load() > 10 })

			release := cat.hold()
			if err := tt.lose(t.Context(), a.rdb); err != nil {
				t.Fatal(err)
			}
			testharness.Eventually(t, 5*time.Second, "the loss noticed", func() bool { return !a.g.Ready() })
			<-cat.entered // the rebuild is running (held)
			if err := a.g.Check(t.Context()); err == nil {
				t.Error("Check = nil while rebuilding (/readyz would say ready)")
			}
			if a.metric(t, "switchback_views_ready", "", "") != 0 {
				t.Error("ready gauge 1 while rebuilding")
			}
			// Reads go on while the views are being rebuilt.
			before := ra.refused.Load()
			testharness.Eventually(t, 5*time.Second, "reads refused while rebuilding", func() bool { return ra.refused.Load() > before+10 })
			release()
			testharness.Eventually(t, 10*time.Second, "ready again", func() bool { return a.g.Ready() })
			e2 := a.epoch(t)
			if e2 == "" || e2 == e1 {
				t.Fatalf("epoch after the rebuild %q, want a new one (was %q)", e2, e1)
			}
			if n, err := a.rdb.HLen(t.Context(), cat.key).Result(); err != nil || n != int64(len(cat.records)) {
				t.Fatalf("view after the rebuild: %d records (%v), want %d", n, err, len(cat.records))
			}
			if changes.Load() < 2 {
				t.Errorf("OnChange called %d times, want at least 2 (lost, complete)", changes.Load())
			}
			// b, which never polled, adopts the new epoch when it does.
			b.run(t)
			testharness.Eventually(t, 5*time.Second, "the other process ready under the new epoch", func() bool {
				gen, ready := b.g.Current()
				return ready && b.g.Confirm(t.Context(), gen) == nil
			})
			checkpoint := ra.ok.Load()
			testharness.Eventually(t, 5*time.Second, "reads served again", func() bool { return ra.ok.Load() > checkpoint+10 })
			ra.stop()
			rb.stop()
			for name, r := range map[string]*reader{"rebuilding process": ra, "process not polling": rb} {
				if n := r.wrong.Load(); n != 0 {
					t.Errorf("%s: %d wrong answers (first: %v), want none: correct or 503", name, n, r.firstWrong.Load())
				}
			}
			if got := a.metric(t, "switchback_views_losses_total", "cause", "missing"); got != 1 {
				t.Errorf("losses{missing} = %v, want 1", got)
			}
			if got := a.metric(t, "switchback_views_rebuilds_total", "outcome", "rebuilt") + a.metric(t, "switchback_views_rebuilds_total", "outcome", "adopted"); got < 2 {
				t.Errorf("rebuilds = %v, want the start's and the loss's", got)
			}
		})
	}
}

// TestGuard_LossDuringTheRebuildStartsItOver: Redis is flushed again
// while the views are being rebuilt; the first rebuild must not set the
// epoch over a view it lost, so the guard starts over, and once the epoch
// is back the view is complete.
func TestGuard_LossDuringTheRebuildStartsItOver(t *testing.T) {
	url := testharness.Redis(t)
	cat := newTopicView("view:catalog")
	a := newProcess(t, url)
	a.g.Register(views.View{Name: "catalog", Rebuild: cat.rebuild(a.rdb)})
	a.start(t)
	a.run(t)

	release := cat.hold()
	if err := a.rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	<-cat.entered
	if err := a.rdb.FlushAll(t.Context()).Err(); err != nil { // the sentinel goes too
		t.Fatal(err)
	}
	release()
	testharness.Eventually(t, 10*time.Second, "ready again", func() bool { return a.g.Ready() })
	if n, _ := a.rdb.HLen(t.Context(), cat.key).Result(); n != int64(len(cat.records)) {
		t.Fatalf("marker set over an incomplete view: %d records, want %d", n, len(cat.records))
	}
	if got := a.metric(t, "switchback_views_rebuilds_total", "outcome", "interrupted"); got < 1 {
		t.Errorf("rebuilds{interrupted} = %v, want at least 1", got)
	}
	if left, _ := a.rdb.Keys(t.Context(), views.DefaultKey+":rebuilding:*").Result(); len(left) != 0 {
		t.Errorf("rebuild sentinels left behind: %v", left)
	}
}

// startOwnRedis starts a redis-server the test owns (so it can kill and
// restart it), with its append-only file in dir.
func startOwnRedis(t *testing.T, dir, addr string) *embedded.Redis {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (redis-server) skipped with -short")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err := embedded.StartRedis(ctx, embedded.RedisOptions{DataDir: dir, Addr: addr, RequireServer: true, Logger: testharness.Logger(t)})
	if errors.Is(err, embedded.ErrNotInstalled) {
		if testharness.RequireIntegration() {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skip("redis-server not installed")
	}
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestGuard_RestartedRedisIsNoticedAndRebuilt: redis-server is stopped
// and started again on the same address, either empty (restarted without
// its data) or from its append-only file (its data is as old as the last
// fsync, and the marker came back with it). Either way the guard sees the
// new server run on the first reconnect, and rebuilds under a new epoch.
func TestGuard_RestartedRedisIsNoticedAndRebuilt(t *testing.T) {
	tests := []struct {
		name     string
		keepData bool
	}{
		{"restarted without its data", false},
		{"restarted from its append-only file", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r := startOwnRedis(t, dir, "")
			addr := r.Addr()
			cat := newTopicView("view:catalog")
			a := newProcess(t, r.URL())
			a.g.Register(views.View{Name: "catalog", Rebuild: cat.rebuild(a.rdb)})
			a.start(t)
			e1 := a.epoch(t)
			a.run(t)

			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if !tt.keepData {
				dir = t.TempDir()
			}
			startOwnRedis(t, dir, addr)
			testharness.Eventually(t, 15*time.Second, "a new epoch after the restart", func() bool {
				e, err := a.g.Epoch(t.Context())
				return err == nil && e != "" && e != e1 && a.g.Ready()
			})
			if n, _ := a.rdb.HLen(t.Context(), cat.key).Result(); n != int64(len(cat.records)) {
				t.Fatalf("view after the restart: %d records, want %d", n, len(cat.records))
			}
			cause := "missing"
			if tt.keepData {
				cause = "restarted"
			}
			if got := a.metric(t, "switchback_views_losses_total", "cause", cause); got < 1 {
				t.Errorf("losses{%s} = %v, want at least 1", cause, got)
			}
		})
	}
}

// Package views owns the one fact every process needs about the Redis
// views (registry, catalog, change notifications, cron reports, holds and
// bookings, the availability processor's diff state): are they complete?
//
// Redis is a rebuildable view and Kafka the log of record, so a Redis that
// was flushed, restarted without its data, or restarted from an older
// snapshot serves wrong answers until the views are rebuilt from the
// topics. A Guard per process keeps a marker key in Redis holding a random
// epoch, prefixed by the Redis server's run id; it is set only after a
// complete rebuild, and FLUSHALL (or a restarted, emptied server) removes
// it with everything else. A marker of another server run (a restart that
// reloaded an older snapshot or AOF) counts as missing. So:
//
//   - marker present and of this server run: every view is complete;
//   - marker missing: a rebuild is due (or running), nothing read is known
//     to be complete;
//   - marker changed: the views were lost and rebuilt since it was read.
//
// The Guard detects a loss by polling the marker (every 250 ms), on every
// new Redis connection (go-redis's OnConnect hook, before that connection
// serves anything: a restarted Redis is seen on the first reconnect), and
// whenever a caller's Confirm or Epoch reads it. It then rebuilds every
// registered view, with retries and backoff, and publishes a new epoch
// only if Redis did not lose its data again meanwhile (a sentinel key per
// rebuild proves it). Several processes may rebuild at once: the rebuilds
// are idempotent (versioned upserts), the first to finish sets the epoch
// and the others adopt it. Every process registers every view, so an
// epoch set by any process means every view is complete.
//
// What callers do with it: the API answers 503 while !Ready and confirms
// the marker before serving a 4xx (Current, Confirm); consumers fence each
// message or batch between two Epoch reads (internal/platform/stream); writers that
// read a view before publishing compare the epoch before and after.
//
// It must not know what a view holds (views register a Rebuild function),
// serve HTTP, or consume topics itself. It writes no key but its marker
// and its rebuild sentinels.
package views

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/redislock"
)

// DefaultKey is the marker's key.
const DefaultKey = "sb:views:epoch"

// ErrRebuilding is what reads and writes get while the views are being
// rebuilt, or when they changed under the caller: a 503 UNAVAILABLE
// through the API's error mapping. Retry shortly.
var ErrRebuilding = domainerr.New("UNAVAILABLE", "the Redis views are being rebuilt from Kafka; retry shortly")

// errLostAgain: Redis lost its data (or restarted) during a rebuild; the
// rebuild starts over.
var errLostAgain = errors.New("redis lost its data during the rebuild")

// errSuperseded: another process finished a rebuild after the loss; this
// one's is not needed.
var errSuperseded = errors.New("another process finished the rebuild")

// View is one Redis view and how to rebuild it from its topics.
type View struct {
	// Name says which view it is in logs and metrics (a fixed, short
	// word: registry, catalog, ...).
	Name string
	// Rebuild applies the view's topics to Redis. It must be idempotent
	// (run at every start and by several processes at once) and honour
	// ctx: the Guard cancels it when Redis loses its data again or
	// another process finished first.
	Rebuild func(ctx context.Context) error
	// OnlyWhenLost: rebuild it only when the marker is gone, not at a
	// start that finds the views complete. For state that a rebuild while
	// live writers run would set back (the availability processor's diff
	// state, folded up to its consumer group's offsets).
	OnlyWhenLost bool
}

// Options configures New.
type Options struct {
	// Key of the marker. Default DefaultKey.
	Key string
	// PollInterval is how often Run reads the marker. Default 250 ms.
	PollInterval time.Duration
	// MaxBackoff bounds the wait between failed rebuild attempts.
	// Default 10 s.
	MaxBackoff time.Duration
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Guard watches the marker and rebuilds the views; see the package
// comment. Bind a Redis client, Register the views, then Start and Run.
type Guard struct {
	o   Options
	log *slog.Logger
	m   *metrics

	rdb redis.UniversalClient
	// cs is set when rdb is a cluster client: one marker per shard
	// (cluster.go).
	cs atomic.Pointer[clusterState]

	mu      sync.Mutex
	views   []View
	changes []func()

	// cur is the guard's state; a new value (never modified) for every
	// change, so that a caller holding the generation can tell.
	cur atomic.Pointer[state]
	// run is the Redis server's run id as last seen on a new connection
	// ("" when the server does not say: miniredis).
	run     atomic.Pointer[string]
	started atomic.Bool
	poke    chan struct{}
}

type state struct {
	gen   uint64
	ready bool
	epoch string // the marker value the views are complete under (ready only)
}

// New returns a guard, not ready. OnConnect can be installed on the Redis
// options before the client exists; Bind the client before Start.
func New(o Options) *Guard {
	if o.Key == "" {
		o.Key = DefaultKey
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Guard{o: o, log: o.Logger, m: newMetrics(o.Registerer), poke: make(chan struct{}, 1)}
	g.cur.Store(&state{})
	empty := ""
	g.run.Store(&empty)
	return g
}

// Bind sets the Redis client the guard reads and writes through (the one
// whose options carry OnConnect; on a *redis.ClusterClient every node's
// options carry OnConnectNode).
func (g *Guard) Bind(rdb redis.UniversalClient) {
	g.rdb = rdb
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		g.cs.Store(&clusterState{cc: cc, runs: map[string]string{}})
	}
}

// Key is the marker's key on one Redis server. A view that must not be
// written once the views are complete again (see View.OnlyWhenLost) checks
// it in its writes. "" on a cluster, where the markers are one per shard
// and no write can check one atomically with keys of other slots: use
// Epoch there.
func (g *Guard) Key() string {
	if g.cluster() != nil {
		return ""
	}
	return g.o.Key
}

// PipeEpoch queues the read of the marker (every shard's on a cluster) in
// the caller's pipeline and returns what interprets the answer once the
// pipeline ran: as Epoch, without the round trip (a stale marker is not
// deleted here; the next Epoch does it).
func (g *Guard) PipeEpoch(ctx context.Context, pipe redis.Pipeliner) func() (string, error) {
	cs := g.cluster()
	if cs == nil {
		c := pipe.Get(ctx, g.o.Key)
		return func() (string, error) { return g.EpochOf(c.Result()) }
	}
	keys, err := cs.keys(ctx, g.o.Key)
	if err != nil {
		return func() (string, error) { return "", fmt.Errorf("read the views markers: %w", err) }
	}
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, k)
	}
	return func() (string, error) { return g.clusterEpochOf(ctx, cs, keys, cmds) }
}

// Register adds a view. Register every view before Start.
func (g *Guard) Register(v View) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.views = append(g.views, v)
}

// OnChange adds fn, called whenever the views are lost or become complete
// under a new epoch: in-process copies of view data (caches) drop what
// they hold, and derived schedules rediscover. fn must not block.
func (g *Guard) OnChange(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.changes = append(g.changes, fn)
}

// Names are the registered views' names.
func (g *Guard) Names() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, len(g.views))
	for i, v := range g.views {
		out[i] = v.Name
	}
	return out
}

// Ready reports whether the views are complete as far as this process
// knows: an atomic load.
func (g *Guard) Ready() bool { return g.cur.Load().ready }

// Current returns the generation of the guard's state and whether the
// views are complete in it: one atomic load, no allocation. A request
// takes it before reading the views and hands the generation to Confirm.
func (g *Guard) Current() (gen uint64, ready bool) {
	s := g.cur.Load()
	return s.gen, s.ready
}

// Confirm returns nil if the views are still complete under generation
// gen: the guard has not changed since, and the marker in Redis (one GET)
// is still the epoch of gen. Otherwise ErrRebuilding (or the Redis error,
// as unavailable). A missing marker found here starts the rebuild at once.
func (g *Guard) Confirm(ctx context.Context, gen uint64) error {
	s := g.cur.Load()
	if s.gen != gen || !s.ready {
		return ErrRebuilding
	}
	e, err := g.Epoch(ctx)
	if err != nil {
		return fmt.Errorf("confirm views: %w: %w", ErrRebuilding, err)
	}
	switch {
	case e == "":
		g.lost("missing", "the marker is gone (seen by a read)")
		return ErrRebuilding
	case e != s.epoch:
		g.wake() // rebuilt by another process: adopt its epoch now
		return ErrRebuilding
	case g.cur.Load() != s:
		return ErrRebuilding
	}
	return nil
}

// Epoch reads the marker (one GET): the epoch the views are complete
// under, or "" while they are not (missing, or left by an earlier run of
// the Redis server, which is then deleted). It is the fence of consumers
// and writers: equal non-empty epochs before and after a piece of work
// mean that Redis lost nothing in between.
func (g *Guard) Epoch(ctx context.Context) (string, error) {
	if cs := g.cluster(); cs != nil {
		return g.clusterEpoch(ctx, cs)
	}
	v, err := g.rdb.Get(ctx, g.o.Key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the views marker: %w", err)
	}
	if !g.valid(v) {
		g.dropStale(ctx, g.rdb, v)
		return "", nil
	}
	return v, nil
}

// EpochOf interprets the answer of a GET of Key() made in the caller's own
// pipeline (a write that reads the marker with its data): the epoch, ""
// when the marker is missing or left by an earlier run of the server, or
// the Redis error. It is Epoch without the round trip (a stale marker is
// not deleted here; the next Epoch does it).
func (g *Guard) EpochOf(raw string, err error) (string, error) {
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the views marker: %w", err)
	}
	if !g.valid(raw) {
		return "", nil
	}
	return raw, nil
}

// Check is the /readyz probe: nil when the views are complete.
func (g *Guard) Check(context.Context) error {
	if g.Ready() {
		return nil
	}
	return fmt.Errorf("views rebuilding from Kafka: %s", strings.Join(g.Names(), ", "))
}

// OnConnect is the go-redis OnConnect hook: it runs on every new
// connection before the connection serves a command. It learns the
// server's run id and reads the marker on the connection, so a Redis
// restarted empty (or from an older snapshot) is noticed before anything
// is read from it. It never fails the connection.
func (g *Guard) OnConnect(ctx context.Context, cn *redis.Conn) error {
	if info, err := cn.Info(ctx, "server").Result(); err == nil {
		if id := runID(info); id != "" {
			prev := g.run.Swap(&id)
			if *prev != "" && *prev != id {
				g.log.Warn("Redis restarted (new server run id)", "run_id", id)
			}
		}
	}
	if !g.started.Load() {
		return nil // Start has not read the marker yet: not ready anyway
	}
	v, err := cn.Get(ctx, g.o.Key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		g.lost("missing", "the marker is gone (seen on a new connection: Redis restarted without its data?)")
	case err != nil:
		// The command that dialled will fail or succeed on its own; the
		// poll reads the marker again.
	case !g.valid(v):
		g.dropStale(ctx, cn, v)
		g.lost("restarted", "Redis restarted: its data may be older than the topics")
	case v != g.cur.Load().epoch:
		g.wake()
	}
	return nil
}

// runID extracts run_id from INFO server.
func runID(info string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}

// prefix is what a marker of the current server run starts with.
func (g *Guard) prefix() string {
	run := *g.run.Load()
	if run == "" {
		run = "-"
	}
	return run + "/"
}

func (g *Guard) valid(v string) bool {
	run := *g.run.Load()
	return run == "" || strings.HasPrefix(v, run+"/")
}

// dropStale deletes a marker of an earlier server run, so that "marker
// present" alone means "complete" to the views' own checks (View writes
// that test for the key). Best effort: the next read tries again.
func (g *Guard) dropStale(ctx context.Context, c redis.Scripter, v string) {
	// The marker is deleted only if it still holds v: redislock's
	// compare-and-delete, as a lock of a holder that is gone.
	if _, err := redislock.Release(ctx, c, g.o.Key, v); err != nil {
		g.log.Debug("deleting a stale views marker failed", "err", err)
	}
}

// lost turns the guard not ready (once per loss) and wakes Run.
func (g *Guard) lost(cause, why string) {
	for {
		s := g.cur.Load()
		if !s.ready {
			break
		}
		if g.cur.CompareAndSwap(s, &state{gen: s.gen + 1}) {
			g.m.losses.WithLabelValues(cause).Inc()
			g.m.ready.Set(0)
			g.log.Warn("Redis views lost: answering 503 and rebuilding them from Kafka", "why", why, "views", strings.Join(g.Names(), ","))
			g.notify()
			break
		}
	}
	g.wake()
}

// ready makes epoch the guard's state, ready.
func (g *Guard) setReady(epoch string) {
	for {
		s := g.cur.Load()
		if s.ready && s.epoch == epoch {
			return
		}
		if g.cur.CompareAndSwap(s, &state{gen: s.gen + 1, ready: true, epoch: epoch}) {
			break
		}
	}
	g.m.ready.Set(1)
	g.notify()
}

func (g *Guard) notify() {
	g.mu.Lock()
	fns := append([]func(){}, g.changes...)
	g.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func (g *Guard) wake() {
	select {
	case g.poke <- struct{}{}:
	default:
	}
}

// Start rebuilds the views at process start, before anything reads them:
// every view, but those OnlyWhenLost only if the marker is missing. The
// marker is then adopted if it was there, else set to a new epoch. Failed
// attempts are retried with backoff until ctx ends.
func (g *Guard) Start(ctx context.Context) error {
	if g.rdb == nil {
		return errors.New("views: Start before Bind")
	}
	g.started.Store(true)
	return g.rebuild(ctx, false)
}

// Run watches the marker until ctx ends (it returns nil then): every
// PollInterval, and at once when OnConnect, Confirm or Epoch saw a change.
// A missing marker makes it rebuild every view; a marker another process
// set after a loss this one did not see is adopted.
func (g *Guard) Run(ctx context.Context) error {
	t := time.NewTicker(g.o.PollInterval)
	defer t.Stop()
	down := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-g.poke:
		}
		var err error
		if cs := g.cluster(); cs != nil {
			// The slot map can change (a resharding): the markers follow it.
			_, err = cs.refreshMarkers(ctx, g.o.Key)
		}
		e := ""
		if err == nil {
			e, err = g.Epoch(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Redis is down: every read fails on its own (503). Once it
			// answers again the marker says what it kept. On a cluster the
			// node may be gone for good (its replica promoted): re-read
			// the slot map now.
			if cs := g.cluster(); cs != nil {
				cs.cc.ReloadState(ctx)
			}
			if !down {
				g.log.Warn("views marker unreadable; Redis down?", "err", err)
				down = true
			}
			continue
		}
		down = false
		s := g.cur.Load()
		switch {
		case e == "":
			g.lost("missing", "the marker is gone (FLUSHALL, eviction, or a Redis restarted without its data)")
			if err := g.rebuild(ctx, true); err != nil {
				return nil // ctx ended
			}
		case !s.ready || e != s.epoch:
			// Another process rebuilt after a loss (this one may not have
			// seen it): its epoch proves every view complete.
			if s.ready {
				g.m.losses.WithLabelValues("replaced").Inc()
				g.log.Warn("Redis views were rebuilt by another process (a loss this process did not see); adopting its epoch")
			} else {
				g.log.Info("Redis views rebuilt by another process; adopting its epoch")
			}
			g.m.rebuilds.WithLabelValues("adopted").Inc()
			g.setReady(e)
		}
	}
}

// rebuild runs rebuild attempts until one succeeds or ctx ends.
func (g *Guard) rebuild(ctx context.Context, lost bool) error {
	start := time.Now()
	// MaxBackoff bounds every wait, the first one too.
	retry := backoff.New(min(250*time.Millisecond, g.o.MaxBackoff), g.o.MaxBackoff)
	for {
		epoch, outcome, err := g.rebuildOnce(ctx, lost)
		if err == nil {
			g.m.rebuilds.WithLabelValues(outcome).Inc()
			g.m.seconds.Observe(time.Since(start).Seconds())
			g.setReady(epoch)
			g.log.Info("Redis views complete", "outcome", outcome, "took", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errLostAgain) {
			g.m.rebuilds.WithLabelValues("interrupted").Inc()
			g.log.Warn("Redis lost its data again during the rebuild: starting over")
			lost = true
			continue
		}
		g.m.rebuilds.WithLabelValues("failed").Inc()
		delay := retry.Next()
		g.log.Warn("rebuilding the Redis views failed; retrying", "err", err, "retry_in", delay)
		if err := backoff.Sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// sentinelTTL bounds how long a dead rebuilder's sentinel stays; a live
// one renews it every PollInterval.
const sentinelTTL = time.Minute

// publishScript ends a rebuild. KEYS: marker, the rebuild's sentinel.
// ARGV: new marker value, prefix of a marker of this server run, "1" if
// the rebuild followed a loss. Replies:
//
//	{"lost"}         the sentinel is gone: Redis lost its data during the rebuild
//	{"adopt", v}     a marker of this run is there (another process finished first, or a start that found it)
//	{"redo"}         a start found the marker but it is gone now: rebuild as after a loss
//	{"set", v}       the marker is set to the new value
var publishScript = redis.NewScript(`
local ok = redis.call('DEL', KEYS[2]) == 1
if not ok then return {'lost'} end
local cur = redis.call('GET', KEYS[1])
if cur and string.sub(cur, 1, string.len(ARGV[2])) == ARGV[2] then return {'adopt', cur} end
if ARGV[3] ~= '1' then return {'redo'} end
redis.call('SET', KEYS[1], ARGV[1])
return {'set', ARGV[1]}
`)

// rebuildOnce is one attempt. It puts a sentinel key first, then reads the
// marker (so that a loss after the read removes the sentinel), rebuilds
// the views while renewing the sentinel, and publishes the epoch only if
// the sentinel survived. outcome is "rebuilt" or "adopted".
func (g *Guard) rebuildOnce(ctx context.Context, lost bool) (epoch, outcome string, err error) {
	if cs := g.cluster(); cs != nil {
		return g.rebuildOnceCluster(ctx, cs, lost)
	}
	sentinel := g.o.Key + ":rebuilding:" + randomHex(8)
	if err := g.rdb.Set(ctx, sentinel, "1", sentinelTTL).Err(); err != nil {
		return "", "", fmt.Errorf("views: put the rebuild sentinel: %w", err)
	}
	// After a command: a first connection has told OnConnect the run id.
	run := *g.run.Load()
	published := false // the publish script deletes the sentinel itself
	defer func() {
		if !published {
			g.dropSentinels(ctx, sentinel)
		}
	}()
	return g.rebuildViews(ctx, lost, []string{sentinel}, func(lost bool) (string, string, error) {
		if *g.run.Load() != run {
			return "", "", errLostAgain // the server restarted during the rebuild
		}
		lostArg := "0"
		if lost {
			lostArg = "1"
		}
		res, err := publishScript.Run(ctx, g.rdb, []string{g.o.Key, sentinel}, g.prefix()+randomHex(16), g.prefix(), lostArg).StringSlice()
		if err != nil {
			return "", "", fmt.Errorf("views: publish the epoch: %w", err)
		}
		published = true
		switch res[0] {
		case "set":
			return res[1], "rebuilt", nil
		case "adopt":
			return res[1], "adopted", nil
		}
		return "", "", errLostAgain // lost, or redo
	})
}

// dropSentinels deletes a failed attempt's sentinels, even after ctx
// ended (bounded to 2 s; a sentinel left behind expires with its TTL).
func (g *Guard) dropSentinels(ctx context.Context, sentinels ...string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	p := g.rdb.Pipeline()
	for _, s := range sentinels {
		p.Del(dctx, s)
	}
	_, _ = p.Exec(dctx)
}

// rebuildViews is the rest of rebuildOnce, on one server or a cluster,
// once the sentinels are put: it reads the marker (none: Redis lost its
// data, so this is a rebuild after a loss), then rebuilds the views while
// watch renews the sentinels, and ends the attempt with publish (told
// whether the rebuild follows a loss). It adopts the epoch instead when
// another process finished a rebuild after the loss, and returns the error
// that ends the attempt otherwise (publish is not called then).
func (g *Guard) rebuildViews(ctx context.Context, lost bool, sentinels []string,
	publish func(lost bool) (epoch, outcome string, err error)) (epoch, outcome string, err error) {
	cur, err := g.Epoch(ctx)
	if err != nil {
		return "", "", err
	}
	switch {
	case cur == "":
		lost = true
	case lost:
		// Another process finished a rebuild after the loss (a marker can
		// only be set by one whose sentinel outlived it): nothing to do.
		return cur, "adopted", nil
	}

	wctx, cancel := context.WithCancelCause(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		g.watch(wctx, cancel, sentinels, lost)
	}()
	err = g.runViews(wctx, lost)
	cancel(nil)
	<-watchDone
	if cause := context.Cause(wctx); err != nil && ctx.Err() == nil {
		switch {
		case errors.Is(cause, errSuperseded):
			e, eerr := g.Epoch(ctx)
			if eerr == nil && e != "" {
				return e, "adopted", nil
			}
			return "", "", errLostAgain
		case errors.Is(cause, errLostAgain):
			return "", "", errLostAgain
		}
	}
	if err != nil {
		return "", "", err
	}
	return publish(lost)
}

// runViews rebuilds the views in registration order.
func (g *Guard) runViews(ctx context.Context, lost bool) error {
	g.mu.Lock()
	views := append([]View(nil), g.views...)
	g.mu.Unlock()
	for _, v := range views {
		if v.OnlyWhenLost && !lost {
			continue
		}
		start := time.Now()
		if err := v.Rebuild(ctx); err != nil {
			return fmt.Errorf("rebuild the %s view: %w", v.Name, err)
		}
		took := time.Since(start)
		g.m.viewSeconds.WithLabelValues(v.Name).Observe(took.Seconds())
		g.log.Info("view rebuilt from Kafka", "view", v.Name, "took", took.Round(time.Millisecond))
	}
	return nil
}

// watch renews the sentinels (one, or one per shard of a cluster) every
// PollInterval while the views are rebuilt, and cancels the rebuild when
// one is gone (Redis lost its data again) or, after a loss, when another
// process's marker appears (its rebuild began after the loss and
// finished: every view is complete).
func (g *Guard) watch(ctx context.Context, cancel context.CancelCauseFunc, sentinels []string, lost bool) {
	t := time.NewTicker(g.o.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pipe := g.rdb.Pipeline()
		cmds := make([]*redis.BoolCmd, len(sentinels))
		for i, s := range sentinels {
			cmds[i] = pipe.Expire(ctx, s, sentinelTTL)
		}
		_, _ = pipe.Exec(ctx)
		for _, c := range cmds {
			if ok, err := c.Result(); err == nil && !ok {
				cancel(errLostAgain)
				return
			}
		}
		if lost {
			if e, err := g.Epoch(ctx); err == nil && e != "" {
				cancel(errSuperseded)
				return
			}
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

type metrics struct {
	ready       prometheus.Gauge
	rebuilds    *prometheus.CounterVec
	losses      *prometheus.CounterVec
	seconds     prometheus.Histogram
	viewSeconds *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchback_views_ready",
			Help: "1 when this process knows the Redis views complete (the marker is there), 0 while they are rebuilt."}),
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_views_rebuilds_total",
			Help: "Rebuilds of the Redis views by outcome: rebuilt (this process set the epoch), adopted (another process's or the start's), failed (an attempt failed and is retried), interrupted (Redis lost its data again meanwhile)."},
			[]string{"outcome"}),
		losses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_views_losses_total",
			Help: "Times this process saw the Redis views lost, by cause: missing (marker gone), restarted (new server run), replaced (rebuilt by another process first)."},
			[]string{"cause"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchback_views_rebuild_seconds",
			Help: "From a loss (or the start) to complete views.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 9)}),
		viewSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchback_views_view_rebuild_seconds",
			Help: "Duration of one view's rebuild from its topics.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)},
			[]string{"view"}),
	}
	m.ready = instrument.Register(reg, m.ready)
	m.rebuilds = instrument.Register(reg, m.rebuilds)
	m.losses = instrument.Register(reg, m.losses)
	m.seconds = instrument.Register(reg, m.seconds)
	m.viewSeconds = instrument.Register(reg, m.viewSeconds)
	return m
}

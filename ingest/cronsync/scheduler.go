package cronsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/redislock"
	"github.com/switchbackhq/switchback/internal/platform/stream"
)

// SchedulerOptions configures NewScheduler.
type SchedulerOptions struct {
	Redis     redis.UniversalClient
	Publisher stream.Publisher
	Suppliers Suppliers
	// Interval is the period of the runs (SWITCHBACK_SYNC_INTERVAL); 0
	// turns the schedule off (RunNow still works). Slots are aligned on
	// the Unix epoch: with 6h, runs start at 00:00, 06:00, 12:00 and
	// 18:00 UTC, whichever instance is up.
	Interval time.Duration
	// HorizonDays is how many days of availability a run reads, from today
	// (SWITCHBACK_SYNC_HORIZON_DAYS). Default 90.
	HorizonDays int
	// CheckEvery is how often the current slot is looked at. Default
	// min(Interval, 15s): a slot whose claimer died before enqueuing is
	// taken over that soon after its claim expires.
	CheckEvery time.Duration
	// ConnectedEvery is how often newly connected suppliers are looked
	// for (Connected). Default 5 s: an operator who connects a supplier
	// sees its products within seconds.
	ConnectedEvery time.Duration
	// ClaimTTL bounds how long a claim holds a slot before its run is
	// enqueued. Default 1 min.
	ClaimTTL  time.Duration
	KeyPrefix string // default "sb:cronsync:"
	Clock     func() time.Time
	Logger    *slog.Logger
	// Registerer receives the scheduler's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Scheduler enqueues the runs: at each slot of the interval, exactly one
// instance (of however many ingest processes run) enqueues one request per
// booking-system supplier.
type Scheduler struct {
	o        SchedulerOptions
	log      *slog.Logger
	runs     *prometheus.CounterVec
	enqueued prometheus.Counter
}

// Run is an enqueued run.
type Run struct {
	ID        string
	Trigger   string
	Suppliers int // requests enqueued, one per supplier
	Enqueued  time.Time
}

// NewScheduler returns a scheduler; Run starts its schedule.
func NewScheduler(o SchedulerOptions) *Scheduler {
	if o.HorizonDays <= 0 {
		o.HorizonDays = 90
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = 15 * time.Second
		if o.Interval > 0 && o.Interval < o.CheckEvery {
			o.CheckEvery = o.Interval
		}
	}
	if o.ConnectedEvery <= 0 {
		o.ConnectedEvery = 5 * time.Second
	}
	if o.ClaimTTL <= 0 {
		o.ClaimTTL = time.Minute
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "sb:cronsync:"
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{o: o, log: o.Logger.With("part", "cronsync"),
		runs: instrument.Register(o.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_cronsync_runs_total",
			Help: "Full synchronization runs this instance enqueued or failed to enqueue, by trigger (schedule, manual) and outcome (enqueued, failed)."},
			[]string{"trigger", "outcome"})),
		enqueued: instrument.Register(o.Registerer, prometheus.NewCounter(prometheus.CounterOpts{Name: "switchback_cronsync_requests_enqueued_total",
			Help: "Per-supplier synchronization requests enqueued."})),
	}
}

// Run checks the current slot every CheckEvery until ctx ends; it returns
// at once when the schedule is off.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.o.Interval <= 0 {
		s.log.Info("scheduled full synchronization is off (SWITCHBACK_SYNC_INTERVAL=0)")
		return nil
	}
	s.log.Info("scheduled full synchronization on", "interval", s.o.Interval, "horizonDays", s.o.HorizonDays)
	slots, conns := time.NewTicker(s.o.CheckEvery), time.NewTicker(s.o.ConnectedEvery)
	defer slots.Stop()
	defer conns.Stop()
	check, connected := true, true
	for {
		if check {
			if _, err := s.Check(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("scheduled full synchronization not enqueued; retrying at the next check", "err", err)
			}
		}
		if connected {
			if _, err := s.Connected(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("first synchronization of connected suppliers not enqueued; retrying at the next check", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-slots.C:
			check, connected = true, false
		case <-conns.C:
			check, connected = false, true
		}
	}
}

// slot is the current schedule slot: its number and its start.
func (s *Scheduler) slot() (int64, time.Time) {
	n := s.o.Clock().UnixNano() / int64(s.o.Interval)
	return n, time.Unix(0, n*int64(s.o.Interval)).UTC()
}

func (s *Scheduler) slotKey(n int64) string {
	return s.o.KeyPrefix + "slot:" + strconv.FormatInt(int64(s.o.Interval), 10) + ":" + strconv.FormatInt(n, 10)
}

// Check enqueues the current slot's run unless an instance has claimed or
// done it. The claim (SET NX with ClaimTTL) is turned into "done" once the
// requests are on the topic, kept until the slot is over; a claim whose
// holder died expires, and the next check of any instance enqueues the
// run again with the same request keys (the worker reports each key once).
// It returns the run it enqueued, or a zero Run.
func (s *Scheduler) Check(ctx context.Context) (Run, error) {
	if s.o.Interval <= 0 {
		return Run{}, nil
	}
	n, start := s.slot()
	key := s.slotKey(n)
	token := "claim:" + redislock.Token()
	ok, err := redislock.TryAcquire(ctx, s.o.Redis, key, token, s.o.ClaimTTL)
	if err != nil {
		return Run{}, fmt.Errorf("claim sync slot %d: %w", n, err)
	}
	if !ok {
		return Run{}, nil // another instance's (or ours, done)
	}
	run, err := s.enqueue(ctx, "cron-"+start.Format("20060102T150405Z"), TriggerSchedule)
	if err != nil {
		if _, rerr := redislock.Release(context.WithoutCancel(ctx), s.o.Redis, key, token); rerr != nil {
			s.log.Warn("sync slot claim not released; it expires", "slot", n, "err", rerr)
		}
		return Run{}, err
	}
	// Kept past the slot's end so a late check never enqueues it again.
	keep := start.Add(2 * s.o.Interval).Sub(s.o.Clock())
	if err := s.o.Redis.Set(context.WithoutCancel(ctx), key, "done:"+run.ID, max(keep, s.o.ClaimTTL)).Err(); err != nil {
		// The claim expires and the run may be enqueued again: harmless.
		s.log.Warn("sync slot not marked done", "slot", n, "err", err)
	}
	return run, nil
}

// RunNow enqueues a run of every booking-system supplier at once (admin
// and tests), whether or not the schedule is on.
func (s *Scheduler) RunNow(ctx context.Context) (Run, error) {
	now := s.o.Clock().UTC()
	return s.enqueue(ctx, "manual-"+now.Format("20060102T150405.000Z")+"-"+redislock.Token()[:8], TriggerManual) // 32 random bits tell two manual runs of one millisecond apart
}

// enqueue puts one request per booking-system supplier on the topic, in
// one publish, and remembers their connections as synchronized (see
// Connected).
func (s *Scheduler) enqueue(ctx context.Context, runID, trigger string) (Run, error) {
	sups, err := s.synced(ctx)
	if err != nil {
		s.runs.WithLabelValues(trigger, "failed").Inc()
		return Run{}, fmt.Errorf("run %s: list suppliers: %w", runID, err)
	}
	now := s.o.Clock().UTC().Truncate(time.Millisecond)
	from, to := s.window(now)
	msgs := make([]stream.Message, 0, len(sups))
	for i, sup := range sups {
		m, err := Request{Key: runID + "/" + sup.ID, RunID: runID, Trigger: trigger, SupplierID: sup.ID,
			From: from, To: to, Enqueued: now, Index: i + 1, Of: len(sups)}.message()
		if err != nil {
			return Run{}, fmt.Errorf("run %s: encode request: %w", runID, err)
		}
		msgs = append(msgs, m)
	}
	if err := s.o.Publisher.Publish(ctx, msgs...); err != nil {
		s.runs.WithLabelValues(trigger, "failed").Inc()
		return Run{}, fmt.Errorf("run %s: enqueue %d requests: %w", runID, len(msgs), err)
	}
	s.runs.WithLabelValues(trigger, "enqueued").Inc()
	s.enqueued.Add(float64(len(msgs)))
	s.remember(ctx, sups)
	if len(sups) == 0 {
		s.log.Info("full synchronization run: no booking-system supplier to synchronize", "run", runID, "trigger", trigger)
		return Run{ID: runID, Trigger: trigger, Enqueued: now}, nil
	}
	s.log.Info("full synchronization run started", "run", runID, "trigger", trigger, "suppliers", len(sups), "from", from, "until", to)
	return Run{ID: runID, Trigger: trigger, Suppliers: len(sups), Enqueued: now}, nil
}

// synced lists the suppliers a full synchronization covers.
func (s *Scheduler) synced(ctx context.Context) ([]catalog.Supplier, error) {
	sups, err := s.o.Suppliers.Suppliers(ctx, catalog.SystemScope())
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(sups, func(sup catalog.Supplier) bool { return !Synced(sup) }), nil
}

// window is a run's availability window: today (UTC) and HorizonDays on.
func (s *Scheduler) window(now time.Time) (string, string) {
	from := now.Truncate(24 * time.Hour)
	return from.Format(time.DateOnly), from.AddDate(0, 0, s.o.HorizonDays).Format(time.DateOnly)
}

// connectionMark names a supplier's connection as synchronized: its id,
// kind and endpoint (never its credentials), hashed to a short member of
// the "connected" set.
func connectionMark(sup catalog.Supplier) string {
	h := sha256.Sum256([]byte(sup.ID + "\x00" + sup.Connection.Kind + "\x00" + sup.Connection.BaseURL))
	return hex.EncodeToString(h[:12])
}

func (s *Scheduler) connectedKey() string { return s.o.KeyPrefix + "connected" }

// remember records the suppliers' connections as synchronized (or
// queued to be), so that Connected leaves them to the schedule. Best
// effort: a connection not remembered is synchronized once more.
func (s *Scheduler) remember(ctx context.Context, sups []catalog.Supplier) {
	if len(sups) == 0 {
		return
	}
	marks := make([]any, len(sups))
	for i, sup := range sups {
		marks[i] = connectionMark(sup)
	}
	if err := s.o.Redis.SAdd(context.WithoutCancel(ctx), s.connectedKey(), marks...).Err(); err != nil {
		s.log.Warn("synchronized connections not remembered; they are synchronized again at the next check", "err", err)
	}
}

// Connected enqueues a first synchronization of every booking-system
// supplier whose connection (id, kind, endpoint) was never synchronized:
// a supplier an operator just connected, or pointed at another endpoint,
// gets its products and availability within ConnectedEvery, not at the
// next slot hours later, and its cron report. Each is a run of its own
// whose id derives from the connection, so two instances that both see it
// enqueue the same request key and the worker reports it once. Off with
// the schedule. It returns how many it enqueued.
func (s *Scheduler) Connected(ctx context.Context) (int, error) {
	if s.o.Interval <= 0 {
		return 0, nil
	}
	sups, err := s.synced(ctx)
	if err != nil || len(sups) == 0 {
		return 0, err
	}
	marks := make([]any, len(sups))
	for i, sup := range sups {
		marks[i] = connectionMark(sup)
	}
	known, err := s.o.Redis.SMIsMember(ctx, s.connectedKey(), marks...).Result()
	if err != nil {
		return 0, fmt.Errorf("read synchronized connections: %w", err)
	}
	now := s.o.Clock().UTC().Truncate(time.Millisecond)
	from, to := s.window(now)
	var fresh []catalog.Supplier
	var msgs []stream.Message
	for i, sup := range sups {
		if known[i] {
			continue
		}
		runID := TriggerConnected + "-" + marks[i].(string)
		m, err := Request{Key: runID + "/" + sup.ID, RunID: runID, Trigger: TriggerConnected, SupplierID: sup.ID,
			From: from, To: to, Enqueued: now, Index: 1, Of: 1}.message()
		if err != nil {
			return 0, fmt.Errorf("connected supplier %s: encode request: %w", sup.ID, err)
		}
		fresh, msgs = append(fresh, sup), append(msgs, m)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if err := s.o.Publisher.Publish(ctx, msgs...); err != nil {
		s.runs.WithLabelValues(TriggerConnected, "failed").Add(float64(len(msgs)))
		return 0, fmt.Errorf("enqueue %d first synchronizations: %w", len(msgs), err)
	}
	s.runs.WithLabelValues(TriggerConnected, "enqueued").Add(float64(len(msgs)))
	s.enqueued.Add(float64(len(msgs)))
	s.remember(ctx, fresh)
	for _, sup := range fresh {
		s.log.Info("first synchronization of a connected supplier enqueued", "supplier", sup.ID, "kind", sup.Connection.Kind,
			"from", from, "until", to)
	}
	return len(msgs), nil
}

package cronsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/stream"
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
		runs: register(o.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_cronsync_runs_total",
			Help: "Full synchronization runs this instance enqueued or failed to enqueue, by trigger (schedule, manual) and outcome (enqueued, failed)."},
			[]string{"trigger", "outcome"})),
		enqueued: register(o.Registerer, prometheus.NewCounter(prometheus.CounterOpts{Name: "switchback_cronsync_requests_enqueued_total",
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
	t := time.NewTicker(s.o.CheckEvery)
	defer t.Stop()
	for {
		if _, err := s.Check(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("scheduled full synchronization not enqueued; retrying at the next check", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
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

// releaseScript deletes a claim that is still ours.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

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
	token := "claim:" + randomHex()
	ok, err := s.o.Redis.SetNX(ctx, key, token, s.o.ClaimTTL).Result()
	if err != nil {
		return Run{}, fmt.Errorf("claim sync slot %d: %w", n, err)
	}
	if !ok {
		return Run{}, nil // another instance's (or ours, done)
	}
	run, err := s.enqueue(ctx, "cron-"+start.Format("20060102T150405Z"), TriggerSchedule)
	if err != nil {
		if rerr := releaseScript.Run(context.WithoutCancel(ctx), s.o.Redis, []string{key}, token).Err(); rerr != nil {
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
	return s.enqueue(ctx, "manual-"+now.Format("20060102T150405.000Z")+"-"+randomHex()[:8], TriggerManual)
}

// enqueue puts one request per booking-system supplier on the topic, in
// one publish.
func (s *Scheduler) enqueue(ctx context.Context, runID, trigger string) (Run, error) {
	sups, err := s.o.Suppliers.Suppliers(ctx, admin)
	if err != nil {
		s.runs.WithLabelValues(trigger, "failed").Inc()
		return Run{}, fmt.Errorf("run %s: list suppliers: %w", runID, err)
	}
	var ids []string
	for _, sup := range sups {
		if Synced(sup) {
			ids = append(ids, sup.ID)
		}
	}
	now := s.o.Clock().UTC().Truncate(time.Millisecond)
	// The window starts today (UTC) and covers HorizonDays.
	from := now.Truncate(24 * time.Hour)
	to := from.AddDate(0, 0, s.o.HorizonDays)
	msgs := make([]stream.Message, 0, len(ids))
	for i, sid := range ids {
		m, err := Request{Key: runID + "/" + sid, RunID: runID, Trigger: trigger, SupplierID: sid,
			From: from.Format(time.DateOnly), To: to.Format(time.DateOnly), Enqueued: now, Index: i + 1, Of: len(ids)}.message()
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
	if len(ids) == 0 {
		s.log.Info("full synchronization run: no booking-system supplier to synchronize", "run", runID, "trigger", trigger)
		return Run{ID: runID, Trigger: trigger, Enqueued: now}, nil
	}
	s.log.Info("full synchronization run started", "run", runID, "trigger", trigger, "suppliers", len(ids),
		"from", from.Format(time.DateOnly), "until", to.Format(time.DateOnly))
	return Run{ID: runID, Trigger: trigger, Suppliers: len(ids), Enqueued: now}, nil
}

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

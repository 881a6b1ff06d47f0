package bookingsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

// SchedulerOptions configures NewScheduler.
type SchedulerOptions struct {
	// Syncer refreshes the claimed options; it must have been built with
	// the same Schedule (required).
	Syncer *Syncer
	// Every is the pause between rounds when nothing more is due.
	// Default 30 s (well inside LimitedInterval's ten spare minutes).
	Every time.Duration
	// Batch is how many options one round claims. Default, and at most,
	// as many as Concurrency workers surely finish within one Lease
	// (Concurrency × Lease / (OptionTimeout + LockWait)): a claim whose
	// lease ran out before its refresh began would be claimed again by
	// another process, and the option read twice.
	Batch int
	// Concurrency bounds the options refreshed at once. Default the
	// Syncer's Concurrency.
	Concurrency int
	// Lease is how long a claim keeps other processes off an option; a
	// process that dies mid-refresh gives it back when it ends. It must
	// exceed the Syncer's OptionTimeout plus its LockWait. Default 3 min.
	Lease time.Duration
	// DiscoverEvery is how often the catalog is walked for options not
	// on the schedule (new ones, or all after Redis was flushed). Default
	// 10 min; the first round discovers.
	DiscoverEvery time.Duration
	Logger        *slog.Logger
	// Registerer receives the switchback_bookingsync_schedule_* metrics.
	Registerer prometheus.Registerer
}

// Scheduler refreshes booking-system options when their days are due
// (spec doc 3, booking system rule 8). Run it in every ingest process:
// each option is claimed by one process at a time (Schedule.Claim).
type Scheduler struct {
	o        SchedulerOptions
	sch      *Schedule
	syncer   *Syncer
	log      *slog.Logger
	m        *schedulerMetrics
	lastDisc time.Time
	// rediscover asks the next round to discover whatever the time.
	rediscover atomic.Bool
}

// Rediscover makes the next round walk the catalog again, whenever the
// last discovery was: the schedule lives in Redis only and is derivable,
// so after Redis lost it (internal/platform/views calls this once the views are
// rebuilt) it is rebuilt at once rather than within DiscoverEvery.
func (s *Scheduler) Rediscover() { s.rediscover.Store(true) }

// NewScheduler returns a scheduler; Run starts it. It panics when the
// Syncer has no Schedule (a wiring error).
func NewScheduler(o SchedulerOptions) *Scheduler {
	if o.Syncer == nil || o.Syncer.o.Schedule == nil {
		panic("bookingsync.NewScheduler: a Syncer built with a Schedule is required")
	}
	if o.Every <= 0 {
		o.Every = 30 * time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = o.Syncer.o.Concurrency
	}
	if o.Lease <= 0 {
		o.Lease = 3 * time.Minute
	}
	perWorker := max(1, int(o.Lease/(o.Syncer.o.OptionTimeout+o.Syncer.o.LockWait)))
	if limit := o.Concurrency * perWorker; o.Batch <= 0 || o.Batch > limit {
		o.Batch = limit
	}
	if o.DiscoverEvery <= 0 {
		o.DiscoverEvery = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = o.Syncer.o.Logger
	}
	return &Scheduler{o: o, sch: o.Syncer.o.Schedule, syncer: o.Syncer, log: o.Logger.With("part", "bookingsync-scheduler"),
		m: newSchedulerMetrics(o.Registerer)}
}

// Run runs rounds until ctx ends: a round right away when the last one
// claimed a full batch (a backlog), else after Every. Errors of a round
// (Redis, the catalog) are logged and the next round tries again; Run
// returns only ctx's error.
func (s *Scheduler) Run(ctx context.Context) error {
	s.log.Info("booking-system refresh scheduler started", "every", s.o.Every, "batch", s.o.Batch, "lease", s.o.Lease,
		"horizonDays", s.sch.HorizonDays())
	for {
		r, err := s.Round(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := s.o.Every
		switch {
		case err != nil:
			s.log.Warn("booking-system refresh round failed; retrying", "err", err, "in", wait)
		case r.Claimed == s.o.Batch:
			wait = 0
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

// RoundResult is what a round did.
type RoundResult struct {
	Discovered int // options put on the schedule by discovery
	Claimed    int // options claimed
	Refreshed  int // options whose due days were read and written
	Failed     int // options whose refresh failed (due again after RetryInterval)
	Forgotten  int // options taken off the schedule
}

// Round discovers when due, claims up to Batch due options and refreshes
// them, Concurrency at a time. Rounds of one Scheduler run one after the
// other (Run does so); other processes' Schedulers run beside it.
func (s *Scheduler) Round(ctx context.Context) (RoundResult, error) {
	var rr RoundResult
	now := s.syncer.o.Clock()
	if again := s.rediscover.Swap(false); again || s.lastDisc.IsZero() || now.Sub(s.lastDisc) >= s.o.DiscoverEvery {
		n, err := s.Discover(ctx)
		if err != nil {
			if again {
				s.rediscover.Store(true) // the next round tries again
			}
			s.m.rounds.WithLabelValues("error").Inc()
			return rr, err
		}
		rr.Discovered, s.lastDisc = n, now
	}
	if n, err := s.sch.DueCount(ctx, now); err == nil {
		s.m.due.Set(float64(n))
	}
	claims, err := s.sch.Claim(ctx, now, s.o.Lease, s.o.Batch)
	if err != nil {
		s.m.rounds.WithLabelValues("error").Inc()
		return rr, err
	}
	rr.Claimed = len(claims)
	s.m.claimed.Add(float64(len(claims)))
	var mu sync.Mutex
	sem := make(chan struct{}, s.o.Concurrency)
	var wg sync.WaitGroup
	for _, c := range claims {
		if !c.Due.IsZero() {
			s.m.lag.Observe(max(0, now.Sub(c.Due)).Seconds())
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			refreshed, forgot, err := s.refresh(ctx, c, now)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case forgot:
				rr.Forgotten++
			case err != nil:
				rr.Failed++
			case refreshed:
				rr.Refreshed++
			}
		})
	}
	wg.Wait()
	s.m.rounds.WithLabelValues("ok").Inc()
	s.m.lastDone.Set(float64(s.syncer.o.Clock().UnixMilli()) / 1000)
	if rr.Claimed > 0 {
		s.log.Info("booking-system refresh round", "claimed", rr.Claimed, "refreshed", rr.Refreshed, "failed", rr.Failed,
			"forgotten", rr.Forgotten, "discovered", rr.Discovered)
	}
	return rr, nil
}

// refresh reads a claimed option's due days. An option whose supplier,
// product or rate is gone (or whose supplier is no longer a booking
// system's) is forgotten.
func (s *Scheduler) refresh(ctx context.Context, c Claim, now time.Time) (refreshed, forgot bool, err error) {
	it := c.Item
	forget := func(why string) (bool, bool, error) {
		if err := s.sch.Forget(ctx, it); err != nil {
			return false, false, err
		}
		s.m.forgot.Inc()
		s.log.Info("option taken off the refresh schedule", "supplier", it.SupplierID, "product", it.ProductID, "option", it.OptionID, "why", why)
		return false, true, nil
	}
	sup, conn, err := s.syncer.resolve(ctx, it.SupplierID)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return forget("supplier gone")
	case errors.Is(err, bookingsystem.ErrNotBookingSystem):
		return forget("supplier no longer reached through a booking system")
	case err != nil:
		return false, false, err
	}
	prod, err := s.syncer.o.Catalog.Product(ctx, catalog.SystemScope(), it.SupplierID, it.ProductID)
	if errors.Is(err, catalog.ErrNotFound) {
		return forget("product gone")
	}
	if err != nil {
		return false, false, err
	}
	if _, err := s.syncer.o.Catalog.Rate(ctx, catalog.SystemScope(), it.SupplierID, it.ProductID, it.OptionID); errors.Is(err, catalog.ErrNotFound) {
		return forget("rate gone")
	} else if err != nil {
		return false, false, err
	}
	t := target{conn: conn, sup: sup, prod: prod, loc: s.syncer.location(prod.TimeZone), optionID: it.OptionID}
	today := t.today(now)
	runs, err := s.sch.DueRuns(ctx, it, today, now)
	if err != nil {
		return false, false, err
	}
	if len(runs) == 0 {
		// Refreshed by another path since it was due: put the score back.
		_, err := s.sch.Record(ctx, it, today, nil)
		return false, false, err
	}
	r := s.syncer.refreshOption(ctx, t, runs, TriggerSchedule, false)
	switch {
	case r.busy:
		return false, false, nil // the other refresh records it; the lease brings it back otherwise
	case r.err != nil:
		s.log.Warn("scheduled refresh of an option failed", "supplier", it.SupplierID, "product", it.ProductID, "option", it.OptionID,
			"runs", len(runs), "err", r.err)
		return false, false, r.err
	case len(r.failures) > 0:
		s.log.Info("scheduled refresh: items rejected by doc 3's data rules", "supplier", it.SupplierID, "product", it.ProductID,
			"option", it.OptionID, "rejected", r.problems)
	}
	return true, false, nil
}

// Discover walks the catalog's booking-system suppliers and puts every
// rate (option) not yet on the schedule on it, due now. After a Redis
// flush this is what rebuilds the schedule: everything is due, one round
// over it reads each option's horizon once and records its days.
func (s *Scheduler) Discover(ctx context.Context) (int, error) {
	sups, err := s.syncer.o.Catalog.Suppliers(ctx, catalog.SystemScope())
	if err != nil {
		return 0, fmt.Errorf("discover: suppliers: %w", err)
	}
	added, total := 0, 0
	for _, sup := range sups {
		if sup.Connection.Kind != catalog.ConnectionBookingSystem && sup.Connection.Kind != catalog.ConnectionOCTO {
			continue
		}
		prods, err := s.syncer.o.Catalog.Products(ctx, catalog.SystemScope(), sup.ID)
		if err != nil {
			return added, fmt.Errorf("discover: products of %s: %w", sup.ID, err)
		}
		for _, p := range prods {
			rates, err := s.syncer.o.Catalog.Rates(ctx, catalog.SystemScope(), sup.ID, p.ID)
			if errors.Is(err, catalog.ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return added, fmt.Errorf("discover: rates of %s/%s: %w", sup.ID, p.ID, err)
			}
			for _, r := range rates {
				total++
				ok, err := s.sch.Add(ctx, Item{sup.ID, p.ID, r.ID})
				if err != nil {
					return added, err
				}
				if ok {
					added++
				}
			}
		}
	}
	s.m.size.Set(float64(total))
	if added > 0 {
		s.log.Info("options added to the refresh schedule", "added", added, "options", total)
	}
	return added, nil
}

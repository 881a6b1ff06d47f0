// Package dispatcher delivers notification events to subscribers' webhooks:
// it consumes TopicNotifications, honours disableAll, rule disabled/deleted
// and throttleDelay at send time, signs and POSTs through internal/webhook,
// retries on a documented schedule, keeps one entity's notifications in
// order, bounds each subscriber's backlog (setting disableAll when it is
// full), and records every attempt in history.
//
// Durability: a notification's offset is committed once it is delivered,
// recorded as not sent, or durably scheduled, i.e. published to
// TopicDeliveries (the log of record of the schedule, keyed by subscriber).
// Redis holds the working schedule as a view of that topic and is rebuilt
// from it when lost. Delivery is at least once: after a crash a POST may be
// repeated, always with the same X-Switchback-Delivery-Id.
//
// It must not import another stage: the registry is reached through the
// Subscriptions interface, and the registry reaches this package's Replay
// through the wiring in cmd/.
package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// ErrNoRule is what Subscriptions.Target returns when the subscriber has no
// rule of the type (never created, or deleted: spec doc 1, Behaviour rule 3,
// "Deleting a rule stops further notifications of that type").
var ErrNoRule = errors.New("no notification rule of this type")

// Subscriptions is what the dispatcher needs from the registry, read at
// send time so that a change applies to notifications already queued.
type Subscriptions interface {
	// Target returns the rule's url and securityKey and whether the rule
	// is enabled; ErrNoRule when there is no rule of the type.
	Target(ctx context.Context, subscriber, typ string) (target webhook.Target, enabled bool, err error)
	// Settings returns the subscriber's metadata: throttleDelay and
	// disableAll. A subscriber without metadata has zero values.
	Settings(ctx context.Context, subscriber string) (throttle time.Duration, disableAll bool, err error)
	// DisableAll sets the subscriber's disableAll=true on behalf of the
	// service (spec doc 1: the backlog reached its maximum size).
	DisableAll(ctx context.Context, subscriber, reason string) error
}

// Sender posts one signed notification; *webhook.Sender is the
// implementation.
type Sender interface {
	Send(ctx context.Context, t webhook.Target, n schemas.Notification) webhook.Result
}

// Defaults of Options.
const (
	DefaultGroupID         = "switchback-dispatcher"
	DefaultBacklogLimit    = 10_000
	DefaultLaneConcurrency = 64
	DefaultMaxLanes        = 1024
	DefaultLease           = 2 * time.Minute
	DefaultPollInterval    = 100 * time.Millisecond
	DefaultDoneTTL         = 24 * time.Hour
	DefaultKeyPrefix       = "switchback:dispatch:"
	DefaultShutdownTimeout = 15 * time.Second
	DefaultBatchSize       = 500
)

// Options configure New. Zero values take the defaults.
type Options struct {
	Brokers       []string
	Dial          stream.Dial // connects to the brokers (nil: TCP)
	Redis         redis.UniversalClient
	Publisher     stream.Publisher
	Subscriptions Subscriptions
	Sender        Sender

	// GroupID is the consumer group on TopicNotifications.
	GroupID string
	// Schedule is the wait before each retry (DefaultSchedule). The number
	// of attempts is len(Schedule)+1.
	Schedule []time.Duration
	// Jitter is the random fraction taken off each wait: the wait is
	// uniform in [step×(1−Jitter), step]. 0 means DefaultJitter (0.5); a
	// negative value means none; 1 is full jitter.
	Jitter float64
	// MaxRetryAfter bounds a subscriber's Retry-After. Default 1h.
	MaxRetryAfter time.Duration
	// BacklogLimit is the per-subscriber bound on pending deliveries;
	// reaching it sets disableAll. Default 10,000.
	BacklogLimit int
	// LaneConcurrency is how many of one subscriber's deliveries (of
	// different entities) are sent at once when it has no throttleDelay.
	// With a throttleDelay, sends are one at a time. Default 64.
	LaneConcurrency int
	// MaxLanes bounds the subscribers sent to at once by this instance.
	MaxLanes int
	// Lease is how long a claimed delivery is reserved for the instance
	// sending it; after a crash it is sent again once the lease ends. It
	// must exceed the sender's timeout. Default 2m.
	Lease time.Duration
	// LaneLease is how long a subscriber's lane stays with this instance
	// without renewal; it is renewed every LaneLease/3 while the lane runs
	// (sends in flight included), so after a crash another instance, or
	// this one restarted, takes the lane over within it. Default 15s.
	LaneLease time.Duration
	// PollInterval is how often due deliveries are looked for. Default 100ms.
	PollInterval time.Duration
	// DoneTTL is how long a finished delivery id is remembered to filter
	// duplicates read again from TopicNotifications. Default 24h.
	DoneTTL time.Duration
	// KeyPrefix of the Redis keys. Default "switchback:dispatch:".
	KeyPrefix string
	// ShutdownTimeout bounds how long Run waits for sends in flight after
	// ctx ended. Default 15s.
	ShutdownTimeout time.Duration
	// BatchSize is how many notifications are taken in per round. Default 500.
	BatchSize int
	// MetricsInterval is how often the backlog gauges are refreshed. Default 5s.
	MetricsInterval time.Duration

	// Views, when set, ties the schedule's marker to the Redis views'
	// epoch (internal/platform/views.Guard): see ensureSchedule.
	Views interface {
		Epoch(ctx context.Context) (string, error)
	}

	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Clock gives the times written in events and schedules (default
	// time.Now). Waits use real time, so a Clock must advance with it.
	Clock func() time.Time
}

// Dispatcher is the delivery stage. Run it once.
type Dispatcher struct {
	o      Options
	v      *view
	policy retryPolicy
	m      *metrics
	log    *slog.Logger
	now    func() time.Time
	owner  string

	// viewMu lets a rebuild of the Redis schedule run alone: every change
	// of the schedule holds it for reading.
	viewMu sync.RWMutex
	// rebuilding tells the lanes that a rebuild waits for viewMu.
	rebuilding atomic.Bool

	mu            sync.Mutex
	lanes         map[string]struct{}
	lastSend      map[string]time.Time // end of the last POST per subscriber
	lastSendSweep time.Time
	autoDisabled  map[string]bool
	toDrain       map[string]bool // auto-disabled, backlog not yet suppressed

	wake    chan struct{}
	laneWG  sync.WaitGroup
	running atomic.Bool
}

// New checks opts and returns a Dispatcher.
func New(opts Options) (*Dispatcher, error) {
	switch {
	case len(opts.Brokers) == 0:
		return nil, errors.New("dispatcher: no brokers")
	case opts.Redis == nil:
		return nil, errors.New("dispatcher: no redis")
	case opts.Publisher == nil:
		return nil, errors.New("dispatcher: no publisher")
	case opts.Subscriptions == nil:
		return nil, errors.New("dispatcher: no subscriptions")
	case opts.Sender == nil:
		return nil, errors.New("dispatcher: no sender")
	}
	if opts.GroupID == "" {
		opts.GroupID = DefaultGroupID
	}
	if len(opts.Schedule) == 0 {
		opts.Schedule = DefaultSchedule
	}
	for i, s := range opts.Schedule {
		if s <= 0 {
			return nil, fmt.Errorf("dispatcher: schedule step %d is %v, must be positive", i+1, s)
		}
	}
	switch {
	case opts.Jitter == 0:
		opts.Jitter = DefaultJitter
	case opts.Jitter < 0:
		opts.Jitter = 0
	case opts.Jitter > 1:
		opts.Jitter = 1
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if opts.BacklogLimit <= 0 {
		opts.BacklogLimit = DefaultBacklogLimit
	}
	if opts.LaneConcurrency <= 0 {
		opts.LaneConcurrency = DefaultLaneConcurrency
	}
	if opts.MaxLanes <= 0 {
		opts.MaxLanes = DefaultMaxLanes
	}
	if opts.LaneLease <= 0 {
		opts.LaneLease = 15 * time.Second
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.DoneTTL <= 0 {
		opts.DoneTTL = DefaultDoneTTL
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.MetricsInterval <= 0 {
		opts.MetricsInterval = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	d := &Dispatcher{
		o:            opts,
		v:            &view{rdb: opts.Redis, prefix: opts.KeyPrefix, doneTTL: opts.DoneTTL},
		policy:       retryPolicy{schedule: opts.Schedule, jitter: opts.Jitter, maxRetryAfter: opts.MaxRetryAfter},
		m:            newMetrics(opts.Registerer),
		log:          opts.Logger.With("stage", "dispatcher"),
		now:          opts.Clock,
		owner:        uuid.NewString(),
		lanes:        map[string]struct{}{},
		lastSend:     map[string]time.Time{},
		autoDisabled: map[string]bool{},
		toDrain:      map[string]bool{},
		wake:         make(chan struct{}, 1),
	}
	d.m.backlogLimit.Set(float64(opts.BacklogLimit))
	return d, nil
}

// Run consumes and delivers until ctx ends, then stops taking in
// notifications, lets the sends in flight finish (bounded by
// ShutdownTimeout; a send cut short is given back to the schedule), commits
// and returns nil. It returns an error if the schedule cannot be loaded at
// start or the consumer fails for good.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("dispatcher: already running")
	}
	defer d.running.Store(false)

	// hard outlives ctx by the shutdown grace period: the work in flight
	// (a POST, its history and schedule updates) finishes under it.
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()

	if err := d.ensureSchedule(ctx); err != nil {
		return err
	}
	d.log.Info("dispatcher started", "group", d.o.GroupID, "backlogLimit", d.o.BacklogLimit, "attempts", d.policy.maxAttempts())

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var (
		wg        sync.WaitGroup
		intakeErr error
	)
	wg.Go(func() {
		if err := d.intake(runCtx, hard); err != nil {
			intakeErr = err
			stop(err)
		}
	})
	wg.Go(func() { d.poll(runCtx, hard) })
	<-runCtx.Done()
	wg.Wait()

	lanesDone := make(chan struct{})
	go func() { d.laneWG.Wait(); close(lanesDone) }()
	select {
	case <-lanesDone:
	case <-time.After(d.o.ShutdownTimeout):
		d.log.Warn("sends still in flight after the shutdown timeout: giving them back to the schedule", "timeout", d.o.ShutdownTimeout)
		cancelHard()
		<-lanesDone
	}
	d.log.Info("dispatcher stopped")
	return intakeErr
}

// ensureSchedule rebuilds the Redis schedule from TopicDeliveries when its
// marker is missing (new Redis, flushed, evicted).
//
// With Options.Views, the marker also records the views' epoch it was
// rebuilt under, and a marker of another epoch is missing too: a Redis
// restarted from its append-only file keeps the marker but may have lost
// the last second of schedule writes (deliveries whose notifications were
// committed), and the views guard gives such a Redis a new epoch once it
// rebuilt the other views. While the views are being rebuilt (no epoch)
// the schedule waits: nothing is sent meanwhile anyway (the registry is
// not readable), and the rebuild then happens once, under the new epoch.
func (d *Dispatcher) ensureSchedule(ctx context.Context) error {
	epoch := ""
	if d.o.Views != nil {
		e, err := d.o.Views.Epoch(ctx)
		if err != nil {
			return fmt.Errorf("dispatcher: %w", err)
		}
		if e == "" {
			return nil
		}
		epoch = e
	}
	ok, err := d.v.hasMarker(ctx, epoch)
	if err != nil {
		return fmt.Errorf("dispatcher: %w", err)
	}
	if ok {
		return nil
	}
	d.rebuilding.Store(true)
	defer d.rebuilding.Store(false)
	d.viewMu.Lock()
	defer d.viewMu.Unlock()
	d.log.Info("delivery schedule not in Redis for these views (a start, or Redis lost its data): rebuilding it from the deliveries topic", "topic", schemas.TopicDeliveries)
	st, err := d.v.rebuild(ctx, d.o.Brokers, d.now(), epoch)
	if err != nil {
		return fmt.Errorf("dispatcher: %w", err)
	}
	d.m.rebuilds.Inc()
	d.log.Info("delivery schedule rebuilt", "pending", st.Pending, "recentlyDone", st.Done, "chains", st.Chains, "took", st.Took.Round(time.Millisecond))
	d.signal()
	return nil
}

// signal wakes the poller.
func (d *Dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// retryDo runs fn until it succeeds, backing off, or until ctx ends (then
// it returns fn's last error).
func (d *Dispatcher) retryDo(ctx context.Context, what string, fn func() error) error {
	b := backoff.New(50*time.Millisecond, 5*time.Second)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		delay := b.Next()
		d.log.Warn(what+" failed, retrying", "error", err, "in", delay)
		if backoff.Sleep(ctx, delay) != nil {
			return err
		}
	}
}

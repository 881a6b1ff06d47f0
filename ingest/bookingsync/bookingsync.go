// Package bookingsync is the one owner of "booking-system data → catalog"
// (spec doc 3, "Booking system"): it maps what the booking-system client
// (ingest/bookingsystem) reads of a supplier reached through a booking
// system (kind "bookingsystem" or "octo") into the catalog
// (internal/catalog), in four ways:
//
//   - RefreshProduct: a change notification in standard mode (doc 3,
//     rule 3 of change notifications: "polls the operator's booking system
//     at once for the Supplier and Product, including availabilities"): the
//     product and its options merged into the catalog, then every option's
//     availability over the request's window (refresh.go).
//   - RefreshPriceSchedule: price-schedule mode (rule 4, "re-caches the
//     price schedule"): each option's schedule over the window (prices.go).
//   - SyncSupplier: the scheduled full synchronization (cronsync.Syncer):
//     every product and option merged, every option's availability over
//     [from, to) (fullsync.go).
//   - The Scheduler: status-based refreshes (doc 3, booking system rule 8:
//     FREESALE at most weekly, AVAILABLE every 12 h, LIMITED at least
//     hourly, SOLD_OUT at most hourly, CLOSED at most every 12 h), day by
//     day, from a schedule kept in Redis (schedule.go, scheduler.go).
//
// Every availability write goes through one function (refreshOption), so
// the status → capacity mapping, the window replacement and the schedule
// bookkeeping are the same whoever asked. What the catalog publishes
// (unchanged items are not republished) is what the processors diff.
//
// It must not: call a booking system for a reseller's read (reads are
// served from the catalog; docs/decisions.md, "Booking-system
// synchronization"), delete catalog products or rates (an item gone from
// the booking system is reported and its availability emptied, never
// deleted while it may be bound), overwrite what only the operator sets
// (names, descriptions, codes of products and rates, a rate's prices when
// the booking system states none: MergeProduct, MergeRate), or log, count
// or return a
// credential (connections are built by bookingsystem.ConnectionFor and
// only ever printed through Connection.String).
package bookingsync

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

// Catalog is what the package needs of the catalog; *catalogredis.Store
// implements it.
type Catalog interface {
	Suppliers(ctx context.Context, sc catalog.Scope) ([]catalog.Supplier, error)
	Supplier(ctx context.Context, sc catalog.Scope, sid string) (catalog.Supplier, error)
	Products(ctx context.Context, sc catalog.Scope, sid string) ([]catalog.Product, error)
	Product(ctx context.Context, sc catalog.Scope, sid, pid string) (catalog.Product, error)
	Rates(ctx context.Context, sc catalog.Scope, sid, pid string) ([]catalog.Rate, error)
	Rate(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.Rate, error)
	UpsertProducts(ctx context.Context, sc catalog.Scope, sid string, ins []catalog.ProductInput) ([]catalog.Product, error)
	UpsertRates(ctx context.Context, sc catalog.Scope, sid, pid string, ins []catalog.RateInput) ([]catalog.Rate, error)
	UpsertSupplierRates(ctx context.Context, sc catalog.Scope, sid string, ins []catalog.ProductRates) ([][]catalog.Rate, error)
	Availabilities(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.AvailabilitySet, error)
	PutAvailabilities(ctx context.Context, sc catalog.Scope, sid, pid, rid string, as []catalog.Availability) (catalog.AvailabilitySet, error)
	PriceSchedule(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.PriceSchedule, error)
	PutPriceScheduleIn(ctx context.Context, sc catalog.Scope, batch, sid, pid, rid string, es []catalog.PriceScheduleEntry) (catalog.PriceSchedule, error)
}

// Client is what the package reads of a booking system;
// *bookingsystem.Client implements it.
type Client interface {
	Products(ctx context.Context, conn bookingsystem.Connection, supplierID string, capabilities []string) ([]bookingsystem.Product, []bookingsystem.Problem, error)
	Product(ctx context.Context, conn bookingsystem.Connection, supplierID, productID string, capabilities []string) (bookingsystem.Product, []bookingsystem.Problem, error)
	Availability(ctx context.Context, conn bookingsystem.Connection, in bookingsystem.AvailabilityRequest) ([]bookingsystem.Availability, []bookingsystem.Problem, error)
	PriceSchedule(ctx context.Context, conn bookingsystem.Connection, in bookingsystem.PriceScheduleRequest) ([]bookingsystem.PriceEntry, []bookingsystem.Problem, error)
}

// Triggers of a refresh: the label of the refresh metrics and the
// "trigger" of the log lines.
const (
	TriggerChangeRequest = "changerequest"
	TriggerFullSync      = "fullsync"
	TriggerSchedule      = "schedule"
)

// Options configures New.
type Options struct {
	Catalog Catalog // required
	Client  Client  // required
	// Schedule, when set, records after every option refresh when each of
	// its days is next due (spec doc 3, booking system rule 8) and holds
	// the per-option lock that keeps two processes from rewriting one
	// option's availabilities at once. Nil: no schedule, no lock (one
	// process only).
	Schedule *Schedule
	// Concurrency bounds a full synchronization's booking-system reads in
	// flight (doc 3 shows no rate limit, so it stays small); up to
	// writesPerRead times as many options may be refreshing, waiting for
	// the catalog's write. Default 4.
	Concurrency int
	// OptionTimeout bounds one option's refresh (its reads and its write).
	// Default 1 min.
	OptionTimeout time.Duration
	// LockWait is how long a refresh waits for another process's refresh
	// of the same option to finish before it reports the option as busy.
	// Default 15 s.
	LockWait time.Duration
	Clock    func() time.Time
	Logger   *slog.Logger
	// Registerer receives the switchback_bookingsync_* metrics; nil
	// registers none.
	Registerer prometheus.Registerer
}

// Syncer maps booking-system data into the catalog. Safe for concurrent
// use.
type Syncer struct {
	o       Options
	log     *slog.Logger
	metrics *metrics
	zones   sync.Map // time zone name → *time.Location
}

// New returns a Syncer. It panics when Catalog or Client is nil (a wiring
// error).
func New(o Options) *Syncer {
	if o.Catalog == nil || o.Client == nil {
		panic("bookingsync.New: Catalog and Client are required")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.OptionTimeout <= 0 {
		o.OptionTimeout = time.Minute
	}
	if o.LockWait <= 0 {
		o.LockWait = 15 * time.Second
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Syncer{o: o, log: o.Logger.With("part", "bookingsync"), metrics: newMetrics(o.Registerer)}
}

// Outcome is what a change-notification refresh did: the items it
// refreshed (availabilities read, or rates whose price schedule was
// written) and the ones that failed, each as one readable reason that
// starts with the entity and its ids ("option S1/P1/O1: ...").
type Outcome struct {
	Items    int
	Failures []string
}

// ErrNotBookingSystem: the supplier is not reached through a booking
// system, so there is nothing of it to synchronize here.
var ErrNotBookingSystem = bookingsystem.ErrNotBookingSystem

// location is the product's time zone (doc 3: "any UTC offset calculation
// MUST use its offset"); UTC when it has none or an unknown one.
func (s *Syncer) location(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	if l, ok := s.zones.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		return time.UTC
	}
	s.zones.Store(name, l)
	return l
}

// fatal reports whether err ends a whole run rather than one item: the
// run's context ended, or the catalog's storage is unavailable (going on
// would wait out every remaining item's lock and publish timeouts).
func fatal(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, catalog.ErrUnavailable)
}

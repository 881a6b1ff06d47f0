// Package supplierbooking routes the reseller's holds and bookings
// (internal/booking's Partner and OrderPartner) to the supplier's system:
// partner suppliers (spec doc 2) to ingest/partner.Suppliers, suppliers
// connected through a booking system (spec doc 3, kinds "bookingsystem"
// and "octo") to the flow of this package, where a hold is one order of
// createBooking calls and a booking is that order confirmed. A v2 booking
// system keeps the order (orderId); core OCTO has no orders, so for an
// OCTO one the order is the hold's bookings, made, confirmed and
// cancelled one by one and kept all or nothing here (orders.go: one flow
// over both, behind the order seam).
//
// It owns the mapping between the two (hold ↔ order, booking ↔ confirmed
// order, statuses), the derived ids (OrderID, BookingUUID), the state
// machine of doc 3 as tables (BookingTransition, OrderTransition,
// BookingsAgree, OrderStatusOf) enforced on every answer, and the
// all-or-nothing compensations (an order is cancelled rather than left
// half held or half sold), each operation on a deadline well inside
// internal/booking's lock (OperationTimeout). It looks the supplier up in
// the catalog at every call, so a changed connection applies at once; the
// only thing it keeps is the booking systems' option units, for a few
// minutes (units.go).
//
// It must not record anything (internal/booking records holds and
// bookings), speak HTTP to booking systems itself (ingest/bookingsystem
// does), or let credentials into errors, logs or metrics.
package supplierbooking

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/schemas"
)

// Catalog is what the Router reads of the catalog; *catalogredis.Store
// implements it.
type Catalog interface {
	Supplier(ctx context.Context, sc catalog.Scope, sid string) (catalog.Supplier, error)
	Product(ctx context.Context, sc catalog.Scope, sid, pid string) (catalog.Product, error)
	Rate(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.Rate, error)
	Availabilities(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.AvailabilitySet, error)
	Channel(ctx context.Context, cid string) (catalog.Channel, error)
}

// BookingSystem is what the flow calls: orders of a v2 booking system,
// bookings one by one of an OCTO one (orders.go); *bookingsystem.Client
// implements it.
type BookingSystem interface {
	Products(ctx context.Context, conn bookingsystem.Connection, supplierID string, capabilities []string) ([]bookingsystem.Product, []bookingsystem.Problem, error)
	Product(ctx context.Context, conn bookingsystem.Connection, supplierID, productID string, capabilities []string) (bookingsystem.Product, []bookingsystem.Problem, error)
	CreateBooking(ctx context.Context, conn bookingsystem.Connection, in bookingsystem.BookingRequest) (bookingsystem.Booking, error)
	GetOrder(ctx context.Context, conn bookingsystem.Connection, supplierID, orderID string) (bookingsystem.Order, error)
	ConfirmOrder(ctx context.Context, conn bookingsystem.Connection, supplierID, orderID string, in bookingsystem.ConfirmRequest) (bookingsystem.Order, error)
	CancelOrder(ctx context.Context, conn bookingsystem.Connection, supplierID, orderID string, in bookingsystem.CancelRequest) (bookingsystem.Order, error)
	GetBooking(ctx context.Context, conn bookingsystem.Connection, supplierID, bookingUUID string) (bookingsystem.Booking, error)
	ConfirmBooking(ctx context.Context, conn bookingsystem.Connection, supplierID, bookingUUID string, in bookingsystem.ConfirmRequest) (bookingsystem.Booking, error)
	CancelBooking(ctx context.Context, conn bookingsystem.Connection, supplierID, bookingUUID string, in bookingsystem.CancelRequest) (bookingsystem.Booking, error)
	ExtendOrder(ctx context.Context, conn bookingsystem.Connection, supplierID, orderID string, in bookingsystem.ExtendRequest) (bookingsystem.Order, error)
	ExtendBooking(ctx context.Context, conn bookingsystem.Connection, bookingUUID string, minutes int) (bookingsystem.Booking, error)
}

// Deadlines of one hold or booking operation at a booking system. It
// runs under internal/booking's write lock of the hold or booking
// (booking.LockTTL, 30 s): past the lock, a reseller's retry takes it and
// runs the same operation beside this one, on the same order and booking
// uuids, and each may compensate (cancel) what the other made. So the
// calls of an operation get a third of the lock (OperationTimeout, 10 s:
// two rounds of a call's 5 s timeout), what settles a failure after them
// (reading a confirmation again, a compensation) a sixth (SettleTimeout,
// 5 s, one call's timeout), which leaves half the lock for
// internal/booking to record the answer (booking.PublishTimeout, 10 s)
// with room to spare.
const (
	OperationTimeout = booking.LockTTL / 3
	SettleTimeout    = booking.LockTTL / 6
)

// holdParallelism is how many calls of one operation (a hold's
// createBooking calls, reads and cancellations of an OCTO hold's
// bookings) run at once: a hold of 100 items (booking.MaxItems) fits in
// OperationTimeout at the latency of a slow booking system, which one
// after another would not, without flooding it.
const holdParallelism = 4

// DefaultHoldMinutes is holdExpirationMinutes when no rate of the hold
// states a holdablePeriod: internal/booking's default hold life.
const DefaultHoldMinutes = 15

// Options configures NewRouter.
type Options struct {
	// Catalog: required.
	Catalog Catalog
	// Partner calls partner suppliers; required to serve them (nil: they
	// are refused as unavailable).
	Partner *partner.Client
	// BookingSystem calls booking-system suppliers; required to serve
	// them (nil: they are refused as unavailable).
	BookingSystem BookingSystem
	// DefaultHoldMinutes: see the constant. 0 takes it.
	DefaultHoldMinutes int
	// OperationTimeout bounds each hold and booking operation: see the
	// constant. 0 takes it.
	OperationTimeout time.Duration
	// Clock of the option units kept (units.go). Default time.Now.
	Clock      func() time.Time
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Router is internal/booking's Partner (and OrderPartner) for every kind
// of supplier. Safe for concurrent use.
type Router struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	units   unitCache
}

var (
	_ booking.Partner      = (*Router)(nil)
	_ booking.OrderPartner = (*Router)(nil)
)

// NewRouter returns a router.
func NewRouter(opts Options) *Router {
	if opts.Catalog == nil {
		panic("supplierbooking.NewRouter: Options.Catalog is required")
	}
	if opts.DefaultHoldMinutes <= 0 {
		opts.DefaultHoldMinutes = DefaultHoldMinutes
	}
	if opts.OperationTimeout <= 0 {
		opts.OperationTimeout = OperationTimeout
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Router{opts: opts, log: opts.Logger.With("part", "supplierbooking"), metrics: newMetrics(opts.Registerer)}
}

// Errors. Their codes map to statuses in query/apierror; the messages are
// safe to show to resellers.
var (
	// ErrRefused: the booking system answered a state doc 3 does not
	// allow there; nothing was recorded.
	ErrRefused = domainerr.New("UNAVAILABLE", "the supplier's booking system answered a booking state that spec doc 3 does not allow; nothing was recorded")
	// ErrNoSystem: no client for the supplier's kind of connection.
	ErrNoSystem = domainerr.New("UNAVAILABLE", "holds and bookings of this supplier are not available")
	// ErrNeedsRecord: a booking-system booking is reached through its
	// hold (GetBookingOf, CancelBookingOf), a hold needs the channel
	// (CreateHoldFor).
	ErrNeedsRecord = domainerr.New("INTERNAL", "a booking-system hold or booking is reached with its channel and hold")
)

// coded is an error whose first *domainerr.Coded (what internal/booking
// shows the reseller) carries msg, that matches sentinel with errors.Is
// and keeps cause for the log.
func coded(code, msg string, sentinel, cause error) error {
	errs := []error{domainerr.New(code, msg)}
	for _, e := range []error{sentinel, cause} {
		if e != nil {
			errs = append(errs, e)
		}
	}
	return &codedError{errs: errs}
}

type codedError struct{ errs []error }

func (e *codedError) Error() string {
	s := e.errs[0].Error()
	if len(e.errs) > 1 {
		s += ": " + e.errs[len(e.errs)-1].Error()
	}
	return s
}
func (e *codedError) Unwrap() []error { return e.errs }
func (e *codedError) ErrorCode() string {
	var c *domainerr.Coded
	errors.As(e.errs[0], &c)
	return c.ErrorCode()
}

// supplier is a looked-up supplier: a partner one (suppliers set) or a
// booking-system one (conn set).
type supplier struct {
	sup       catalog.Supplier
	suppliers partner.Suppliers
	conn      bookingsystem.Connection
	system    bool
}

func (r *Router) supplier(ctx context.Context, sid string) (supplier, error) {
	sup, err := r.opts.Catalog.Supplier(ctx, catalog.SystemScope(), sid)
	if err != nil {
		return supplier{}, fmt.Errorf("supplier %s: %w", sid, err)
	}
	switch sup.Connection.Kind {
	case catalog.ConnectionBookingSystem, catalog.ConnectionOCTO:
		if r.opts.BookingSystem == nil {
			return supplier{}, fmt.Errorf("supplier %s: no booking-system client: %w", sid, ErrNoSystem)
		}
		conn, err := bookingsystem.ConnectionFor(sup)
		if err != nil {
			return supplier{}, err
		}
		return supplier{sup: sup, conn: conn, system: true}, nil
	}
	if r.opts.Partner == nil {
		return supplier{}, fmt.Errorf("supplier %s: no partner client: %w", sid, ErrNoSystem)
	}
	// The supplier just read is handed on, so partner.Suppliers does not
	// read it again; it refuses kinds other than partner (ErrNotPartner).
	return supplier{sup: sup, suppliers: partner.Suppliers{Client: r.opts.Partner, Catalog: fixed{sup}}}, nil
}

// fixed is a partner.SupplierCatalog of one supplier already read.
type fixed struct{ sup catalog.Supplier }

func (f fixed) Supplier(context.Context, catalog.Scope, string) (catalog.Supplier, error) {
	return f.sup, nil
}

// CreateHold is booking.Partner's: partner suppliers only (a booking
// system's hold needs the channel: CreateHoldFor).
func (r *Router) CreateHold(ctx context.Context, sid string, h schemas.Hold, reqID string) (schemas.Hold, error) {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return schemas.Hold{}, err
	}
	if s.system {
		return schemas.Hold{}, fmt.Errorf("create hold at %s without a channel: %w", sid, ErrNeedsRecord)
	}
	return s.suppliers.CreateHold(ctx, sid, h, reqID)
}

// CreateHoldFor creates a hold: at the partner, or as an order of the
// booking system (createHold in holds.go).
func (r *Router) CreateHoldFor(ctx context.Context, sid, channelID string, h schemas.Hold, reqID string) (schemas.Hold, error) {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return schemas.Hold{}, err
	}
	if !s.system {
		return s.suppliers.CreateHold(ctx, sid, h, reqID)
	}
	var out schemas.Hold
	err = r.observe(ctx, "create_hold", func(ctx context.Context) (err error) {
		out, err = r.createHold(ctx, s, channelID, h)
		return err
	})
	return out, err
}

// GetHold reads a hold: at the partner, or its order.
func (r *Router) GetHold(ctx context.Context, sid, id, reqID string) (schemas.Hold, error) {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return schemas.Hold{}, err
	}
	if !s.system {
		return s.suppliers.GetHold(ctx, sid, id, reqID)
	}
	var out schemas.Hold
	err = r.observe(ctx, "get_hold", func(ctx context.Context) (err error) {
		out, err = r.getHold(ctx, s, id)
		return err
	})
	return out, err
}

// ReleaseHold releases a hold: at the partner, or by cancelling its order.
func (r *Router) ReleaseHold(ctx context.Context, sid, id, reqID string) error {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return err
	}
	if !s.system {
		return s.suppliers.ReleaseHold(ctx, sid, id, reqID)
	}
	return r.observe(ctx, "release_hold", func(ctx context.Context) error { return r.releaseHold(ctx, s, id) })
}

// CreateBooking books: at the partner, or by confirming the hold's order.
// accepted is true for a booking whose confirmation is PENDING at the
// supplier (the partner's 202): internal/booking's poller reads it until
// it resolves.
func (r *Router) CreateBooking(ctx context.Context, sid string, b schemas.Booking, reqID string) (schemas.Booking, bool, error) {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return schemas.Booking{}, false, err
	}
	if !s.system {
		return s.suppliers.CreateBooking(ctx, sid, b, reqID)
	}
	var out schemas.Booking
	var accepted bool
	err = r.observe(ctx, "create_booking", func(ctx context.Context) (err error) {
		out, accepted, err = r.createBooking(ctx, s, b)
		return err
	})
	return out, accepted, err
}

// GetBooking is booking.Partner's: partner suppliers only.
func (r *Router) GetBooking(ctx context.Context, sid, id, reqID string) (schemas.Booking, error) {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return schemas.Booking{}, err
	}
	if s.system {
		return schemas.Booking{}, fmt.Errorf("get booking %s at %s by id: %w", id, sid, ErrNeedsRecord)
	}
	return s.suppliers.GetBooking(ctx, sid, id, reqID)
}

// CancelBooking is booking.Partner's: partner suppliers only.
func (r *Router) CancelBooking(ctx context.Context, sid, id, reqID string) error {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return err
	}
	if s.system {
		return fmt.Errorf("cancel booking %s at %s by id: %w", id, sid, ErrNeedsRecord)
	}
	return s.suppliers.CancelBooking(ctx, sid, id, reqID)
}

// GetBookingOf reads a recorded booking: at the partner by its id, or the
// order of its hold.
func (r *Router) GetBookingOf(ctx context.Context, sid string, b schemas.Booking, reqID string) (schemas.Booking, error) {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return schemas.Booking{}, err
	}
	if !s.system {
		return s.suppliers.GetBooking(ctx, sid, b.ID, reqID)
	}
	var out schemas.Booking
	err = r.observe(ctx, "get_booking", func(ctx context.Context) (err error) {
		out, err = r.getBooking(ctx, s, b)
		return err
	})
	return out, err
}

// CancelBookingOf cancels a recorded booking: at the partner by its id, or
// by cancelling the order of its hold.
func (r *Router) CancelBookingOf(ctx context.Context, sid string, b schemas.Booking, reqID string) error {
	s, err := r.supplier(ctx, sid)
	if err != nil {
		return err
	}
	if !s.system {
		return s.suppliers.CancelBooking(ctx, sid, b.ID, reqID)
	}
	return r.observe(ctx, "cancel_booking", func(ctx context.Context) error { return r.cancelBooking(ctx, s, b) })
}

// observe runs one booking-system operation on its deadline
// (Options.OperationTimeout: see the constant), times it and counts its
// result.
func (r *Router) observe(ctx context.Context, op string, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.OperationTimeout)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	r.metrics.seconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
	result := "ok"
	switch {
	case errors.Is(err, ErrRefused):
		result = "refused"
	case err != nil:
		result = "error"
	}
	r.metrics.calls.WithLabelValues(op, result).Inc()
	return err
}

// refuse turns a refusal into ErrRefused: logged and counted, never
// recorded. Ids and statuses only: no credentials reach here.
func (r *Router) refuse(op string, s supplier, err error) error {
	var rf *refusal
	if !errors.As(err, &rf) {
		return err
	}
	r.metrics.refused.WithLabelValues(rf.rule).Inc()
	r.log.Error("supplierbooking: refused a booking-system answer (spec doc 3, States and transitions)",
		"op", op, "supplier", s.sup.ID, "dialect", s.conn.Dialect, "rule", rf.rule, "item", rf.item, "id", rf.id, "from", orNew(rf.from), "to", rf.to)
	return fmt.Errorf("%s at %s: %w: %w", op, s.sup.ID, ErrRefused, err)
}

type metrics struct {
	calls         *prometheus.CounterVec
	seconds       *prometheus.HistogramVec
	refused       *prometheus.CounterVec
	compensations *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_ingest_supplierbooking_operations_total",
			Help: "Hold and booking operations on booking-system suppliers, by operation and result (ok, error, refused).",
		}, []string{"op", "result"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchback_ingest_supplierbooking_seconds",
			Help:    "Latency of hold and booking operations on booking-system suppliers (all their calls), by operation.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"op"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_ingest_supplierbooking_refused_answers_total",
			Help: "Booking-system answers refused by the state machine of spec doc 3, by rule (transition, postcondition, order_disagree, stray_booking, instant_confirmation).",
		}, []string{"rule"}),
		compensations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_ingest_supplierbooking_compensations_total",
			Help: "Orders cancelled to keep a hold or booking all-or-nothing, by reason (partial_hold, rejected_booking, refused_confirm, failed_confirm) and result (ok, failed).",
		}, []string{"reason", "result"}),
	}
	m.calls = instrument.Register(reg, m.calls)
	m.seconds = instrument.Register(reg, m.seconds)
	m.refused = instrument.Register(reg, m.refused)
	m.compensations = instrument.Register(reg, m.compensations)
	return m
}

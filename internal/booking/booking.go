// Package booking owns the reseller's holds and bookings (spec doc 2,
// "Reseller flow": POST /holds is required before a booking, then POST
// /bookings, GET /bookings/{id}, PUT /bookings/cancel/{id}): their
// validation, the hold-before-booking rule, idempotent creation by booking
// id, the channel scope (a reseller sees its own channel's holds and
// bookings only), the calls to the supplier's partner (through the Partner
// interface) and the Redis view.
//
// Kafka is the log of record (ARCHITECTURE.md): every change of a hold or
// a booking is its full state as a schemas.Envelope on schemas.TopicHolds
// or schemas.TopicBookings (compacted, keyed by id), published (acks=all)
// before the versioned upsert into Redis (Apply) that processors/bookingchange
// also runs for every record, so the writer reads its own write and a
// replay rebuilds the same view. Writes of one hold or booking are
// serialised by a lock in Redis.
//
// It must not know about HTTP (query/bookingapi maps requests and errors),
// nor produce notifications or history (processors/bookingchange does, from the
// events). It never sees partner credentials (ingest/partner.Suppliers
// and ingest/supplierbooking.Router resolve them).
package booking

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Partner calls the partner of a supplier, by supplier id;
// ingest/partner.Suppliers implements it for partner suppliers and
// ingest/supplierbooking.Router for every kind of supplier (it is also an
// OrderPartner). Its errors carry API codes
// (NOT_FOUND, BAD_REQUEST, CONFLICT, UNAVAILABLE...) with messages safe to
// show.
type Partner interface {
	CreateHold(ctx context.Context, sid string, h schemas.Hold, reqID string) (schemas.Hold, error)
	GetHold(ctx context.Context, sid, id, reqID string) (schemas.Hold, error)
	ReleaseHold(ctx context.Context, sid, id, reqID string) error
	CreateBooking(ctx context.Context, sid string, b schemas.Booking, reqID string) (schemas.Booking, bool, error)
	GetBooking(ctx context.Context, sid, id, reqID string) (schemas.Booking, error)
	CancelBooking(ctx context.Context, sid, id, reqID string) error
}

// OrderPartner is what a Partner adds for suppliers reached through a
// booking system (spec doc 3; ingest/supplierbooking.Router implements
// it): a hold is an order whose createBooking must name the originating
// channel, and the reseller's booking is that order, found again through
// its hold and checked against the booking as recorded (its status is
// where the state machine of doc 3 starts). When the Partner implements
// it, the Service calls these instead of CreateHold, GetBooking and
// CancelBooking; b.HoldID is then the partner's id of the hold.
type OrderPartner interface {
	CreateHoldFor(ctx context.Context, sid, channelID string, h schemas.Hold, reqID string) (schemas.Hold, error)
	GetBookingOf(ctx context.Context, sid string, b schemas.Booking, reqID string) (schemas.Booking, error)
	CancelBookingOf(ctx context.Context, sid string, b schemas.Booking, reqID string) error
}

// Catalog tells which rates of a product a channel sees (bound, inside the
// binding window): a JSON array of rates with their id; a product not
// bound is an error with code NOT_FOUND. *catalog.Store implements it.
type Catalog interface {
	AppendRates(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error)
}

// Connections tells which system a supplier's connection reaches (its
// kind and baseUrl, not its credentials) as an opaque ref. When the
// Catalog implements it (*catalog.Store does), holds and bookings record
// the ref they were made through and are never sent to another: a
// supplier whose connection changed since gets their reads served from
// the record and their cancels and releases refused
// (ErrConnectionChanged), rather than silently re-routed.
type Connections interface {
	ConnectionRef(ctx context.Context, sid string) (string, error)
}

// Errors. Their codes map to statuses in query/apierror.
var (
	// ErrConnectionChanged: the supplier's connection is not the one the
	// hold or booking was made through.
	ErrConnectionChanged = domainerr.New("CONFLICT", "the supplier's connection changed after this was made; "+
		"it is not sent to the new system (the supplier's operator can restore the connection)")
	ErrNotFound    = domainerr.New("NOT_FOUND", "not found")
	ErrConflict    = domainerr.New("CONFLICT", "conflict")
	ErrUnavailable = domainerr.New("UNAVAILABLE", "holds and bookings are temporarily unavailable")
	// ErrIDReused: a hold or booking id given again with other data (a
	// retry must repeat the first request).
	ErrIDReused = domainerr.New("BAD_REQUEST", "a hold or booking id can be used again only with the same data")
	// ErrNotExtendable: the supplier's system cannot extend a hold (doc
	// 2's partner interface has no such call), or refused to.
	ErrNotExtendable = domainerr.New("CONFLICT", "the supplier's system cannot extend this hold")
	// ErrInvalidEvent is a record of the topics that cannot be applied.
	ErrInvalidEvent = errors.New("invalid hold or booking event")
)

func conflictf(format string, args ...any) error {
	return domainerr.New("CONFLICT", fmt.Sprintf(format, args...))
}

func invalid(field, reason string) error { return domainerr.Field(field, reason) }

// partnerError keeps the safe message and code of a partner failure for
// the reseller and the cause (status, kind) for the log.
type partnerError struct {
	code, msg string
	cause     error
}

func (e *partnerError) Error() string     { return e.msg }
func (e *partnerError) ErrorCode() string { return e.code }
func (e *partnerError) Unwrap() error     { return e.cause }

// fromPartner maps a partner error to what the reseller may see: the code
// of the domain error and its message, never the partner's answer.
func fromPartner(err error) error {
	var coded *domainerr.Coded
	if errors.As(err, &coded) {
		return &partnerError{code: coded.ErrorCode(), msg: coded.Error(), cause: err}
	}
	var fe *domainerr.FieldError
	if errors.As(err, &fe) {
		return err
	}
	return &partnerError{code: "UNAVAILABLE", msg: "the supplier's system is temporarily unavailable", cause: err}
}

// Options configures New.
type Options struct {
	// Redis holds the view. Required.
	Redis redis.UniversalClient
	// Publisher writes TopicHolds and TopicBookings; nil makes writes fail
	// with ErrUnavailable.
	Publisher stream.Publisher
	// Partner and Catalog: required for the API calls (not for Apply).
	Partner Partner
	Catalog Catalog
	// HoldTTL is the life of a hold whose partner gave no expires.
	// Default 15 min.
	HoldTTL time.Duration
	// PollLease is how long a claimed pending booking waits before it is
	// polled again (processors/bookingchange's poller). Default 2 s.
	PollLease time.Duration
	// KeyPrefix of the Redis keys. Default "switchback:{booking}:" (one
	// Redis Cluster slot: store.go).
	KeyPrefix string
	// Source is Envelope.Source of published events. Default "booking".
	Source string
	Clock  func() time.Time
	Logger *slog.Logger
}

// Service is the holds and bookings domain. Safe for concurrent use,
// across processes too.
type Service struct {
	opts Options
	rdb  redis.UniversalClient
	log  *slog.Logger
	now  func() time.Time
}

// New returns a service.
func New(opts Options) *Service {
	if opts.Redis == nil {
		panic("booking.New: Options.Redis is required")
	}
	if opts.HoldTTL <= 0 {
		opts.HoldTTL = 15 * time.Minute
	}
	if opts.PollLease <= 0 {
		opts.PollLease = 2 * time.Second
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "switchback:{booking}:"
	}
	if opts.Source == "" {
		opts.Source = "booking"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, rdb: opts.Redis, log: opts.Logger.With("part", "booking"), now: opts.Clock}
}

// connectionRef is the ref of supplier sid's connection now, "" when the
// Catalog cannot tell.
func (s *Service) connectionRef(ctx context.Context, sid string) (string, error) {
	c, ok := s.opts.Catalog.(Connections)
	if !ok {
		return "", nil
	}
	ref, err := c.ConnectionRef(ctx, sid)
	if err != nil && !isNotFound(err) {
		return "", fmt.Errorf("read supplier %s's connection: %w", sid, err)
	}
	return ref, nil
}

// sameConnection is nil when a record made through connection ref
// recorded may be sent to supplier sid's system now. Older records
// (without a ref) are not checked.
func (s *Service) sameConnection(ctx context.Context, sid, recorded string) error {
	if recorded == "" {
		return nil
	}
	if _, ok := s.opts.Catalog.(Connections); !ok {
		return nil
	}
	cur, err := s.connectionRef(ctx, sid)
	if err != nil {
		return err
	}
	if cur != recorded { // changed, or the supplier is gone
		return ErrConnectionChanged
	}
	return nil
}

// PartnerID is the id a hold or booking is known by at the supplier's
// system: derived from the channel and the reseller's id, because ids
// are unique within a channel only, and a system that saw the same id
// from two channels would refuse the second or, worse, answer it with
// the first's hold. It is the same for a retry, so the system's own
// idempotency holds.
func PartnerID(kind, channelID, id string) string {
	ns := uuid.NewSHA1(uuid.NameSpaceURL, []byte("urn:switchback:reseller-ids"))
	return uuid.NewSHA1(ns, []byte(kind+"/"+channelID+"/"+id)).String()
}

// HoldView is the hold as the reseller sees it: its id, EXPIRED for an
// ACTIVE hold past its expires, and retrieved (spec doc 2: the response
// adds it) the time of the answer.
func HoldView(rec schemas.HoldRecord, now time.Time) schemas.Hold {
	h := rec.Hold
	if h.Status == schemas.HoldActive && !h.Expires.IsZero() && !now.Before(h.Expires) {
		h.Status = schemas.HoldExpired
	}
	h.Retrieved = now.UTC().Truncate(time.Second)
	return h
}

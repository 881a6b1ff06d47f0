package bookingchange

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/schemas"
)

// Refresher is what the poller needs of the bookings;
// *internal/booking.Service implements it.
type Refresher interface {
	// ClaimDue returns bookings awaiting tickets whose poll is due, and
	// pushes their next poll later (so pollers of several processes share
	// the work).
	ClaimDue(ctx context.Context, n int) ([]string, error)
	// Refresh asks the partner and records a cancellation or the tickets.
	Refresh(ctx context.Context, reqID, id string) (schemas.BookingRecord, bool, error)
}

// PollerOptions configures NewPoller.
type PollerOptions struct {
	Bookings Refresher // required
	// Interval between two looks at the due bookings. Default 1 s.
	Interval time.Duration
	// Batch is how many bookings one look claims. Default 50.
	Batch      int
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Poller asks the partner, until they are attached, for the tickets of
// bookings it accepted with 202 (spec doc 1, "booking tickets-added"). A
// booking leaves the pending set when its tickets are recorded or it is
// cancelled.
type Poller struct {
	opts  PollerOptions
	log   *slog.Logger
	polls *prometheus.CounterVec
}

// NewPoller returns a poller; Run starts it.
func NewPoller(opts PollerOptions) *Poller {
	if opts.Bookings == nil {
		panic("processors/bookingchange.NewPoller: Bookings is required")
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Batch <= 0 {
		opts.Batch = 50
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Poller{opts: opts, log: opts.Logger.With("part", "booking-poller"),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_booking_polls_total",
			Help: "Partner polls of bookings awaiting tickets, by result (changed, unchanged, error)."}, []string{"result"})}
	p.polls = instrument.Register(opts.Registerer, p.polls)
	return p
}

// Run polls until ctx ends; it returns nil then. Errors are logged and
// retried at the next tick (the booking stays pending).
func (p *Poller) Run(ctx context.Context) error {
	t := time.NewTicker(p.opts.Interval)
	defer t.Stop()
	for {
		p.Poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll looks once at the due bookings.
func (p *Poller) Poll(ctx context.Context) {
	ids, err := p.opts.Bookings.ClaimDue(ctx, p.opts.Batch)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("claiming pending bookings failed", "err", err)
		}
		return
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		reqID := uuid.NewString()
		_, changed, err := p.opts.Bookings.Refresh(ctx, reqID, id)
		switch {
		case err != nil && ctx.Err() != nil:
			return // stopping: the poll was cut short, not failed
		case err != nil:
			p.polls.WithLabelValues("error").Inc()
			p.log.Warn("polling a booking failed; retrying later", "booking", id, "reqId", reqID, "err", err)
		case changed:
			p.polls.WithLabelValues("changed").Inc()
		default:
			p.polls.WithLabelValues("unchanged").Inc()
		}
	}
}

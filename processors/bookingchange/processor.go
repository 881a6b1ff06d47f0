// Package bookingchange is the holds and bookings processor: it consumes
// schemas.TopicHolds and schemas.TopicBookings (the states that
// internal/booking publishes), applies each to the Redis view
// (idempotent, versioned) and publishes
//
//   - booking notifications (spec doc 1): canceled when a booking was
//     cancelled (by the reseller or found cancelled at the partner),
//     tickets-added when the tickets of an accepted (202) booking were
//     attached; to the reseller principals of the booking's channel whose
//     booking rule is enabled, subscribes to the operation and whose
//     supplierIDs/productIDs/rateIDs filters match one of its items;
//   - hold.status and booking.status history events when a status
//     changed.
//
// Its Poller asks the partner for the bookings awaiting tickets
// (internal/booking.Service.Refresh), which publishes the tickets-added
// state this processor then notifies.
//
// Ids are deterministic (UUIDv5 of the event id), so a redelivered event
// produces the same notifications and history rows. It must not send
// webhooks (the dispatcher does).
package bookingchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// Subscribers finds the reseller principals of a channel
// (processors/catalogchange.Resellers implements it).
type Subscribers interface {
	OnChannel(ctx context.Context, channelID string) ([]string, error)
}

// Rules reads a subscriber's rule of a type; *registry.Registry
// implements it. No rule is registry.ErrNotFound.
type Rules interface {
	Rule(ctx context.Context, subscriber, typ string) (registry.Rule, error)
}

// Store applies events to the view; *internal/booking.Service implements
// it.
type Store interface {
	Apply(ctx context.Context, env schemas.Envelope) (bool, error)
	Rebuild(ctx context.Context, brokers []string) error
}

// Options configures New.
type Options struct {
	Brokers []string    // required for Run
	Dial    stream.Dial // connects to the brokers (nil: TCP)
	GroupID string      // default "switchback-processors-booking"
	// Fence, when set, makes Run handle a record again when the Redis
	// views (rules, the booking view) were lost while it ran
	// (stream.ConsumerConfig.Fence).
	Fence       stream.Fence
	Store       Store
	Subscribers Subscribers
	Rules       Rules
	Publisher   stream.Publisher
	// MaxNotifyAge: an older event is applied but notifies nobody (a
	// replay of the compacted topic must not resend old news). Default 7
	// days.
	MaxNotifyAge time.Duration
	Clock        func() time.Time
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
}

// Processor applies hold and booking events and notifies.
type Processor struct {
	opts   Options
	log    *slog.Logger
	notes  *prometheus.CounterVec
	stream *stream.Metrics
}

// New returns a processor; Run starts it.
func New(opts Options) *Processor {
	if opts.Store == nil || opts.Subscribers == nil || opts.Rules == nil || opts.Publisher == nil {
		panic("processors/bookingchange.New: Store, Subscribers, Rules and Publisher are required")
	}
	if opts.GroupID == "" {
		opts.GroupID = "switchback-processors-booking"
	}
	if opts.MaxNotifyAge <= 0 {
		opts.MaxNotifyAge = 7 * 24 * time.Hour
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Processor{opts: opts, log: opts.Logger.With("processor", "booking"),
		notes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_booking_notifications_total",
			Help: "booking notifications produced, by operation (canceled, tickets-added)."}, []string{"operation"}),
		stream: stream.NewMetrics(opts.Registerer)}
	p.notes = instrument.Register(opts.Registerer, p.notes)
	return p
}

// Run rebuilds the view from the topics (a flushed Redis), then consumes
// them in the consumer group until ctx ends, at least once.
func (p *Processor) Run(ctx context.Context) error {
	if err := p.opts.Store.Rebuild(ctx, p.opts.Brokers); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return stream.NewConsumer(stream.ConsumerConfig{
		Brokers: p.opts.Brokers, Dial: p.opts.Dial, GroupID: p.opts.GroupID, Topics: booking.Topics(),
		Handler: p.Handle, MaxRetryDelay: 5 * time.Second, Logger: p.opts.Logger, Metrics: p.stream, Fence: p.opts.Fence,
	}).Run(ctx)
}

// Source is Notification.Source of what this processor produces: the
// package's path before issue 20 renamed it, kept because it is on the
// wire (envelopes, history rows, analysts' filters).
const Source = "processors/booking"

// Handle applies one record and publishes its notifications and history;
// it is the consumer's stream.Handler. Unusable records are logged and
// skipped; Redis, registry and broker errors are returned (retried).
func (p *Processor) Handle(ctx context.Context, m stream.Message) error {
	env, ok, err := booking.DecodeMessage(m)
	if err == nil && !ok {
		return nil
	}
	if err == nil {
		_, err = p.opts.Store.Apply(ctx, env)
	}
	if errors.Is(err, booking.ErrInvalidEvent) {
		p.log.Error("skipping an unusable hold or booking record", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	msgs, err := p.Messages(ctx, env)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := p.opts.Publisher.Publish(ctx, msgs...); err != nil {
		return fmt.Errorf("publish %d booking notifications and history events: %w", len(msgs), err)
	}
	return nil
}

var namespace = uuid.MustParse("8e2f4b6a-1c3d-4e5f-8a9b-0c1d2e3f4a5b")

// NotificationID is the id of the booking notification of an event to a
// subscriber: the same for every delivery of the event.
func NotificationID(eventID, subscriber, operation string) string {
	return uuid.NewSHA1(namespace, []byte(eventID+"\x00"+subscriber+"\x00booking\x00"+operation)).String()
}

// Messages are the notifications and history events of one hold or
// booking event, deterministic for a given event and registry state.
func (p *Processor) Messages(ctx context.Context, env schemas.Envelope) ([]stream.Message, error) {
	var msgs []stream.Message
	switch env.Type {
	case schemas.EventHold:
		var rec schemas.HoldRecord
		if err := json.Unmarshal(env.Data, &rec); err != nil {
			return nil, nil
		}
		if env.Version > 1 && rec.PreviousStatus == rec.Hold.Status {
			return nil, nil // the hold was used by a booking: no status change
		}
		h := schemas.HoldStatusChanged{HoldID: rec.Hold.ID, ChannelID: rec.ChannelID, SupplierID: rec.SupplierID,
			Status: rec.Hold.Status, PreviousStatus: rec.PreviousStatus, ExpiresAt: rec.Hold.Expires}
		if len(rec.Hold.Items) > 0 {
			h.ProductID, h.RateID = rec.Hold.Items[0].ProductID, rec.Hold.Items[0].RateID
		}
		for _, it := range rec.Hold.Items {
			h.Quantity += it.Quantity
		}
		m, err := historyMessage(env, schemas.HistoryHoldStatus, h)
		if err != nil {
			return nil, err
		}
		return []stream.Message{m}, nil
	case schemas.EventBooking:
	default:
		return nil, nil
	}
	var rec schemas.BookingRecord
	if err := json.Unmarshal(env.Data, &rec); err != nil {
		return nil, nil
	}
	b := rec.Booking
	if rec.Change == schemas.ChangeCreated || rec.PreviousStatus != b.Status {
		h := schemas.BookingStatusChanged{BookingID: b.ID, HoldID: b.HoldID, ChannelID: rec.ChannelID, SupplierID: rec.SupplierID,
			Status: b.Status, PreviousStatus: rec.PreviousStatus, ResellerReference: b.ResellerBookingRef, StartTime: b.StartTime()}
		if len(b.Items) > 0 {
			h.ProductID, h.RateID = b.Items[0].ProductID, b.Items[0].RateID
		}
		for _, it := range b.Items {
			h.Quantity += it.Quantity
		}
		m, err := historyMessage(env, schemas.HistoryBookingStatus, h)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	var op string
	switch rec.Change {
	case schemas.ChangeCanceled:
		op = schemas.OperationCanceled
	case schemas.ChangeTicketsAdded:
		op = schemas.OperationTicketsAdded
	default:
		return msgs, nil
	}
	if p.opts.Clock().Sub(env.Time) > p.opts.MaxNotifyAge {
		return msgs, nil
	}
	notes, err := p.notifications(ctx, env, rec, op)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		// The topic's envelope, its id the notification's: a redelivered
		// event writes the same record.
		ne, err := schemas.NewNotificationEvent(n)
		if err != nil {
			return nil, err
		}
		nb, err := json.Marshal(ne)
		if err != nil {
			return nil, fmt.Errorf("encode notification %s: %w", n.ID, err)
		}
		msgs = append(msgs, stream.Message{Topic: schemas.TopicNotifications, Key: []byte(ne.Key), Value: nb, Time: n.CreatedAt})
		h, err := schemas.ProducedEvent(n)
		if err != nil {
			return nil, err
		}
		hb, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, stream.Message{Topic: schemas.TopicHistory, Key: []byte(h.Key), Value: hb, Time: h.Time})
		p.notes.WithLabelValues(op).Inc()
	}
	return msgs, nil
}

// notifications: one per reseller principal of the booking's channel
// whose booking rule matches (sorted by subscriber).
func (p *Processor) notifications(ctx context.Context, env schemas.Envelope, rec schemas.BookingRecord, op string) ([]schemas.Notification, error) {
	subs, err := p.opts.Subscribers.OnChannel(ctx, rec.ChannelID)
	if err != nil {
		return nil, fmt.Errorf("subscribers of channel %s: %w", rec.ChannelID, err)
	}
	sort.Strings(subs)
	b := rec.Booking
	payload := schemas.BookingPayload{BookingID: b.ID, ResellerBookingReference: b.ResellerBookingRef, Operation: op}
	if st := b.StartTime(); !st.IsZero() {
		payload.StartTime = st.UTC().Format(time.RFC3339)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	var out []schemas.Notification
	its := items(b)
	for _, sub := range slices.Compact(subs) {
		rule, err := p.opts.Rules.Rule(ctx, sub, schemas.TypeBooking)
		if errors.Is(err, registry.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("booking rule of %s: %w", sub, err)
		}
		if !rule.Matches(op, its...) {
			continue
		}
		out = append(out, schemas.Notification{ID: NotificationID(env.ID, sub, op), Subscriber: sub, Type: schemas.TypeBooking,
			EntityKey: "booking/" + b.ID, Payload: raw, CreatedAt: env.Time, Source: Source})
	}
	return out, nil
}

// items: the booking's items as the rule's id filters see them (one of
// them must pass every filter, registry.Rule.Matches).
func items(b schemas.Booking) []registry.Item {
	out := make([]registry.Item, len(b.Items))
	for i, it := range b.Items {
		out[i] = registry.Item{SupplierID: it.SupplierID, ProductID: it.ProductID, RateID: it.RateID}
	}
	return out
}

func historyMessage(env schemas.Envelope, typ string, data any) (stream.Message, error) {
	h, err := schemas.NewHistoryEvent(typ, env.Key, data, env.Time)
	if err != nil {
		return stream.Message{}, err
	}
	h.ID = uuid.NewSHA1(namespace, []byte(env.ID+"\x00history")).String()
	h.Source = Source
	b, err := json.Marshal(h)
	if err != nil {
		return stream.Message{}, err
	}
	return stream.Message{Topic: schemas.TopicHistory, Key: []byte(h.Key), Value: b, Time: h.Time}, nil
}

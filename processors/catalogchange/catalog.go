// Package catalogchange is the catalog processor: it consumes the catalog's
// compacted topics (channels, suppliers, products, rates, bindings and the
// operators' availability snapshots) in a consumer group, applies every
// event to the Redis view (idempotent versioned upserts, the same code the
// writers run), and turns the changes into notification events on
// schemas.TopicNotifications for the dispatcher (schemas.NewNotificationEvent's
// envelope):
//
//   - channelbinding created / updated / removed (spec doc 1, "Channel
//     binding lifecycle"), one per affected channel;
//   - supplier, product and rate updated, only for items bound to the
//     subscriber's channel, filtered by the rule's supplierIDs /
//     productIDs / rateIDs.
//
// Change detection compares an event with the state it replaced, which the
// writer recorded in the event (catalog.Event.Prior, PriorBinding): the
// writer applies to Redis before this processor sees the event, so Redis
// cannot serve as "before". A notification's id is derived from (event id,
// subscriber, type), so a redelivered event produces the same ids and the
// dispatcher deduplicates.
//
// It must not send webhooks (the dispatcher does, and re-checks disabled
// and deleted rules at send time) nor write the catalog (only apply).
package catalogchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// Subscribers finds who sells on a channel: the reseller principals whose
// ChannelID is channelID (their ids are the subscribers of the registry).
type Subscribers interface {
	OnChannel(ctx context.Context, channelID string) ([]string, error)
}

// PrincipalLister lists API principals; *principals.Store implements it.
type PrincipalLister interface {
	List() []principals.Principal
}

// Resellers is Subscribers over the principals table: the reseller
// principals of the channel that are not revoked. It scans the table on
// each call (the table is in memory, and events are far rarer than
// reads); a channel index can replace it when principals grow.
type Resellers struct{ Principals PrincipalLister }

// OnChannel implements Subscribers.
func (r Resellers) OnChannel(_ context.Context, channelID string) ([]string, error) {
	var out []string
	for _, p := range r.Principals.List() {
		if p.Role == principals.RoleReseller && p.ChannelID == channelID && !p.Revoked() {
			out = append(out, p.ID)
		}
	}
	return out, nil
}

// Rules reads a subscriber's rule of a type; *registry.Registry
// implements it. A subscriber without one answers registry.ErrNotFound.
type Rules interface {
	Rule(ctx context.Context, subscriber, typ string) (registry.Rule, error)
}

// Options configures New.
type Options struct {
	// Brokers of the consumer group. Required for Run and Rebuild.
	Brokers []string
	// Dial connects to the brokers (nil: TCP; stream.Dial).
	Dial stream.Dial
	// GroupID of the consumer group. Default "switchback-processors-catalog".
	GroupID string
	// Fence, when set, makes Run handle a record again when the Redis
	// views (the catalog it reads "who sees it now" from, the rules) were
	// lost while it ran (stream.ConsumerConfig.Fence).
	Fence stream.Fence
	// Store is the catalog view the events are applied to. Required.
	Store *catalogredis.Store
	// Subscribers and Rules decide who is notified. Required.
	Subscribers Subscribers
	Rules       Rules
	// Publisher writes notifications. Required.
	Publisher stream.Publisher
	// Logger: default discard. Never given a record's value.
	Logger *slog.Logger
	// Registerer gets the switchback_catalog_* and stream metrics; nil:
	// not registered.
	Registerer prometheus.Registerer
	// MaxNotifyAge: an event older than this is applied but notifies
	// nobody (a consumer group started afresh over years of compacted
	// history must not replay old news). Default 7 days, the retention of
	// the notifications topic.
	MaxNotifyAge time.Duration
	// Clock for binding windows and MaxNotifyAge. Default time.Now.
	Clock func() time.Time
}

// Processor applies catalog events and produces notifications.
type Processor struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	stream  *stream.Metrics
}

// New returns a processor; Run starts it.
func New(opts Options) *Processor {
	if opts.Store == nil || opts.Subscribers == nil || opts.Rules == nil || opts.Publisher == nil {
		panic("processors/catalogchange.New: Store, Subscribers, Rules and Publisher are required")
	}
	if opts.GroupID == "" {
		opts.GroupID = "switchback-processors-catalog"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxNotifyAge <= 0 {
		opts.MaxNotifyAge = 7 * 24 * time.Hour
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Processor{opts: opts, log: opts.Logger.With("processor", "catalog"), metrics: newMetrics(opts.Registerer),
		stream: stream.NewMetrics(opts.Registerer)}
}

// Run consumes schemas.CatalogTopics() in the consumer group until ctx ends (then
// it returns nil), at least once: an offset is committed after the event
// was applied and its notifications were published.
//
// There is no dead-letter topic: Handle skips unusable records itself, so
// its only errors are Redis, registry or broker outages, and dead-lettering
// a valid event then would leave the view without it. The partition waits
// (with the consumer's backoff) until the dependency is back.
func (p *Processor) Run(ctx context.Context) error {
	c := stream.NewConsumer(stream.ConsumerConfig{
		Brokers:       p.opts.Brokers,
		Dial:          p.opts.Dial,
		GroupID:       p.opts.GroupID,
		Topics:        schemas.CatalogTopics(),
		Handler:       p.Handle,
		BatchHandler:  p.HandleBatch,
		MaxRetryDelay: 5 * time.Second,
		Logger:        p.opts.Logger,
		Metrics:       p.stream,
		Fence:         p.opts.Fence,
	})
	return c.Run(ctx)
}

// Rebuild applies every record of the catalog topics to Redis without
// notifying anyone: what a process runs at start on a fresh or flushed
// Redis, before serving reads.
func (p *Processor) Rebuild(ctx context.Context) error {
	return p.opts.Store.Rebuild(ctx, p.opts.Brokers)
}

// Handle applies one record and publishes its notifications; it is the
// consumer's stream.Handler. An unusable record is logged and skipped.
func (p *Processor) Handle(ctx context.Context, m stream.Message) error {
	env, ok, err := catalogredis.DecodeMessage(m)
	if err == nil && !ok {
		return nil
	}
	var ev catalog.Event
	if err == nil {
		ev, err = catalog.DecodeEvent(env)
	}
	if err != nil {
		p.log.Error("skipping an unusable catalog record", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
		p.metrics.events.WithLabelValues("unknown", "invalid").Inc()
		return nil
	}
	applied, err := p.opts.Store.Apply(ctx, env)
	if err != nil {
		return err
	}
	notes, err := p.Notifications(ctx, env, ev)
	if err != nil {
		return err
	}
	msgs, err := priceHistory(env, ev)
	if err != nil {
		return err
	}
	for _, n := range notes {
		// The topic's envelope, its id the notification's: a redelivered
		// event writes the same record.
		env, err := schemas.NewNotificationEvent(n)
		if err != nil {
			return err
		}
		b, err := json.Marshal(env)
		if err != nil {
			return fmt.Errorf("encode notification %s: %w", n.ID, err)
		}
		msgs = append(msgs, stream.Message{Topic: schemas.TopicNotifications, Key: []byte(env.Key), Value: b, Time: n.CreatedAt})
		h, err := producedMessage(n)
		if err != nil {
			return err
		}
		msgs = append(msgs, h)
	}
	if len(msgs) > 0 {
		// Notifications and history in one publish: redelivery of the
		// event redoes both with the same ids.
		if err := p.opts.Publisher.Publish(ctx, msgs...); err != nil {
			return fmt.Errorf("publish %d notifications and history events: %w", len(msgs), err)
		}
		for _, n := range notes {
			p.metrics.notifications.WithLabelValues(n.Type).Inc()
		}
	}
	result := "applied"
	if !applied {
		result = "already_applied"
	}
	p.metrics.events.WithLabelValues(string(ev.Kind), result).Inc()
	return nil
}

// HandleBatch handles a consumer's batch in order: runs of availability
// events (the operators' pushes, thousands a second, which notify nobody
// here: processors/availchange diffs them) are applied with one Redis
// pipeline, read without decoding their slots (Store.ApplyRecords); every
// other record goes through Handle. It is the consumer's
// stream.BatchHandler; a failure redoes the batch, which is idempotent.
func (p *Processor) HandleBatch(ctx context.Context, msgs []stream.Message) error {
	availType := schemas.CatalogEventType(schemas.CatalogKindAvailability, false)
	var run []stream.Message
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		applied, err := p.opts.Store.ApplyRecords(ctx, run)
		if errors.Is(err, catalog.ErrInvalidEvent) {
			// One of them is unusable: Handle skips it and applies the rest.
			for _, m := range run {
				if err := p.Handle(ctx, m); err != nil {
					return err
				}
			}
			run = run[:0]
			return nil
		}
		if err != nil {
			return err
		}
		for _, a := range applied {
			result := "applied"
			if !a {
				result = "already_applied"
			}
			p.metrics.events.WithLabelValues(string(schemas.CatalogKindAvailability), result).Inc()
		}
		run = run[:0]
		return nil
	}
	for _, m := range msgs {
		if len(m.Value) > 0 && catalogredis.RecordType(m.Value) == availType {
			run = append(run, m)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if err := p.Handle(ctx, m); err != nil {
			return err
		}
	}
	return flush()
}

// Operations of the notifications (spec doc 1).
const (
	opCreated = "created"
	opUpdated = "updated"
	opRemoved = "removed"
)

// Source is Notification.Source of what this processor produces: the
// package's path before issue 20 renamed it, kept because it is on the
// wire (envelopes, history rows, analysts' filters).
const Source = "processors/catalog"

// Notifications computes the notifications of one event, from the event
// (what changed) and the view (who sees it now). It is deterministic for a
// given event and view, ids included.
func (p *Processor) Notifications(ctx context.Context, env schemas.Envelope, ev catalog.Event) ([]schemas.Notification, error) {
	now := p.opts.Clock()
	if now.Sub(env.Time) > p.opts.MaxNotifyAge {
		return nil, nil
	}
	st := p.opts.Store
	sid, pid, rid := ev.SupplierID, ev.ProductID, ev.RateID
	switch ev.Kind {
	case schemas.CatalogKindBinding:
		op := BindingOperation(ev.PriorBinding, ev.Binding)
		if op == "" {
			return nil, nil
		}
		return p.fanout(ctx, env, []string{ev.ChannelID}, target{typ: schemas.TypeChannelBinding, op: op, sid: sid, pid: pid})

	case schemas.CatalogKindSupplier:
		if env.Deleted || !changed(ev.Prior, ev.Supplier) {
			return nil, nil
		}
		chans, err := st.SupplierChannels(ctx, sid, now)
		if err != nil {
			return nil, err
		}
		return p.fanout(ctx, env, chans, target{typ: schemas.TypeSupplier, op: opUpdated, sid: sid})

	case schemas.CatalogKindProduct:
		if env.Deleted || !changed(ev.Prior, ev.Product) {
			return nil, nil
		}
		bs, err := st.Bindings(ctx, sid, pid)
		if err != nil {
			return nil, err
		}
		return p.fanout(ctx, env, channels(bs, func(b catalog.Binding) bool { return b.Valid.Contains(now) }),
			target{typ: schemas.TypeProduct, op: opUpdated, sid: sid, pid: pid})

	case schemas.CatalogKindRate:
		if env.Deleted || ev.Prior == nil {
			// A rate created or removed under an already bound product is
			// a rate-level change of the binding: channelbinding updated
			// (spec doc 1, "Channel binding lifecycle"). Which bindings
			// granted it is what the writer saw under the supplier's lock
			// (Event.BoundChannels), not the view now: the rate and
			// binding topics are consumed in no guaranteed relative
			// order, and a binding made after the rate must not report
			// the rate as added to it.
			chans := ev.BoundChannels
			if chans == nil {
				// An event written before BoundChannels existed: the
				// bindings of the view, as it was always done.
				bs, err := st.Bindings(ctx, sid, pid)
				if err != nil {
					return nil, err
				}
				chans = channels(bs, func(b catalog.Binding) bool { return b.Binds(rid) })
			}
			return p.fanout(ctx, env, chans, target{typ: schemas.TypeChannelBinding, op: opUpdated, sid: sid, pid: pid})
		}
		if !changed(ev.Prior, ev.Rate) {
			return nil, nil
		}
		bs, err := st.Bindings(ctx, sid, pid)
		if err != nil {
			return nil, err
		}
		return p.fanout(ctx, env, channels(bs, func(b catalog.Binding) bool { return b.Valid.Contains(now) && b.Binds(rid) }),
			target{typ: schemas.TypeRate, op: opUpdated, sid: sid, pid: pid, rid: rid})

	case schemas.CatalogKindPriceSchedule:
		return p.priceNotifications(ctx, env, ev, now)
	}
	// Channels and availability snapshots notify nobody here (availability
	// notifications belong to the availability processor).
	return nil, nil
}

// BindingOperation is the channelbinding operation of a binding change
// (spec doc 1, "Channel binding lifecycle"): created when the product
// becomes bound, removed when it and all its rates are unbound, updated
// for any other change of what is bound or on which terms; "" when
// nothing changed.
func BindingOperation(prior, next *catalog.Binding) string {
	switch {
	case prior == nil && next == nil:
		return ""
	case prior == nil:
		return opCreated
	case next == nil:
		return opRemoved
	case prior.SameTerms(*next):
		return ""
	}
	return opUpdated
}

// changed reports whether state differs, as resellers see it, from what
// the event replaced; a creation (no prior) is not an update.
func changed[T *catalog.Supplier | *catalog.Product | *catalog.Rate](prior *schemas.CatalogPrior, state T) bool {
	if prior == nil || state == nil {
		return false
	}
	return catalog.Fingerprint(state) != prior.Fingerprint
}

func channels(bs []catalog.Binding, keep func(catalog.Binding) bool) []string {
	var out []string
	for _, b := range bs {
		if keep(b) {
			out = append(out, b.ChannelID)
		}
	}
	return out
}

// target is what a notification is about.
type target struct {
	typ, op       string
	sid, pid, rid string
}

func (t target) entityKey() string {
	switch t.typ {
	case schemas.TypeSupplier:
		return t.sid
	case schemas.TypeRate:
		return t.sid + "/" + t.pid + "/" + t.rid
	}
	return t.sid + "/" + t.pid
}

func (t target) payload() any {
	switch t.typ {
	case schemas.TypeSupplier:
		return schemas.SupplierPayload{SupplierID: t.sid, Operation: t.op}
	case schemas.TypeProduct:
		return schemas.ProductPayload{SupplierID: t.sid, ProductID: t.pid, Operation: t.op}
	case schemas.TypeRate:
		return schemas.RatePayload{SupplierID: t.sid, ProductID: t.pid, RateID: t.rid, Operation: t.op}
	}
	return schemas.ChannelBindingPayload{SupplierID: t.sid, ProductID: t.pid, Operation: t.op}
}

// item is what the rule's id filters look at.
func (t target) item() registry.Item {
	return registry.Item{SupplierID: t.sid, ProductID: t.pid, RateID: t.rid}
}

// notificationNamespace is the UUIDv5 namespace of notification ids.
var notificationNamespace = uuid.MustParse("0b7c6c1e-93a4-4f0c-8a55-2f1d3c7e9b42")

// NotificationID is the id of the notification of an event to a
// subscriber: the same for every delivery of the event.
func NotificationID(eventID, subscriber, typ string) string {
	return uuid.NewSHA1(notificationNamespace, []byte(eventID+"\x00"+subscriber+"\x00"+typ)).String()
}

// fanout makes one notification per subscriber of the channels whose rule
// of the type matches.
func (p *Processor) fanout(ctx context.Context, env schemas.Envelope, chans []string, t target) ([]schemas.Notification, error) {
	if len(chans) == 0 {
		return nil, nil
	}
	payload, err := json.Marshal(t.payload())
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", t.typ, err)
	}
	var out []schemas.Notification
	seen := map[string]bool{}
	for _, cid := range chans {
		subs, err := p.opts.Subscribers.OnChannel(ctx, cid)
		if err != nil {
			return nil, fmt.Errorf("subscribers of channel %s: %w", cid, err)
		}
		for _, sub := range subs {
			if seen[sub] {
				continue
			}
			seen[sub] = true
			rule, err := p.opts.Rules.Rule(ctx, sub, t.typ)
			if errors.Is(err, registry.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s rule of %s: %w", t.typ, sub, err)
			}
			if !rule.Matches(t.op, t.item()) {
				continue
			}
			out = append(out, schemas.Notification{
				ID: NotificationID(env.ID, sub, t.typ), Subscriber: sub, Type: t.typ, EntityKey: t.entityKey(),
				Payload: payload, CreatedAt: env.Time, Source: Source,
			})
		}
	}
	return out, nil
}

type metrics struct {
	events        *prometheus.CounterVec
	notifications *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_catalog_events_total",
			Help: "Catalog events handled by the catalog processor, by kind and result (applied, already_applied, invalid).",
		}, []string{"kind", "result"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_catalog_notifications_total",
			Help: "Notification events produced by the catalog processor, by type.",
		}, []string{"type"}),
	}
	if reg != nil {
		m.events = instrument.Register(reg, m.events)
		m.notifications = instrument.Register(reg, m.notifications)
	}
	return m
}

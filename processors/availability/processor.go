// Package availability is the availability processor: it consumes
// schemas.TopicAvailability (the partner snapshots that query/availability
// publishes on stale reads, and the operators' pushes, catalog
// "catalog.availability.*" events), diffs each against what it last saw
// of the rate (state in Redis), and publishes
//
//   - availability notifications (spec doc 1) to TopicNotifications for
//     the subscribers whose channel has the rate bound and whose
//     availability rule matches: supplierIDs/productIDs/rateIDs filters,
//     changes starting inside maxLookAheadDays, new vacancies under
//     vacanciesUnder (any change when 0), coalesced into start/end ranges;
//   - one schemas.HistoryAvailabilityChanged event per changed window to
//     TopicHistory.
//
// Ids are deterministic (UUIDv5 of the event id and the range), so a
// redelivered event produces the same notifications and history rows. It
// must not send webhooks (the dispatcher does) nor write the catalog or
// the availability cache.
package availability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	catalogstore "github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// SnapshotEventType is the type of the partner snapshots (the producer is
// ingest/partner, SnapshotEventType; the wire form is mirrored here so
// that this stage does not import another).
const SnapshotEventType = "availability.snapshot"

// snapshot mirrors ingest/partner.Snapshot on the wire.
type snapshot struct {
	SupplierID     string    `json:"supplierId"`
	ProductID      string    `json:"productId"`
	RateID         string    `json:"rateId"`
	Start          time.Time `json:"start"`
	End            time.Time `json:"end"`
	Retrieved      time.Time `json:"retrieved"`
	Availabilities []struct {
		Start    time.Time `json:"start"`
		End      time.Time `json:"end"`
		Capacity int       `json:"capacity"`
	} `json:"availabilities"`
}

// Bindings lists the bindings of a product; *catalog.Store implements it.
type Bindings interface {
	Bindings(ctx context.Context, sid, pid string) ([]catalogstore.Binding, error)
}

// Subscribers finds the reseller principals of a channel
// (processors/catalog.Resellers implements it).
type Subscribers interface {
	OnChannel(ctx context.Context, channelID string) ([]string, error)
}

// Rules reads a subscriber's rule of a type; *registry.Registry
// implements it. No rule is registry.ErrNotFound.
type Rules interface {
	Rule(ctx context.Context, subscriber, typ string) (registry.Rule, error)
}

// Options configures New.
type Options struct {
	Brokers     []string // required for Run
	GroupID     string   // default "switchback-processors-availability"
	Redis       redis.UniversalClient
	Bindings    Bindings
	Subscribers Subscribers
	Rules       Rules
	Publisher   stream.Publisher
	// MergeGap: changes at most this far apart are one notification range.
	// Default 24 h.
	MergeGap time.Duration
	// MaxNotifyAge: older events update the state but notify nobody.
	// Default 7 days.
	MaxNotifyAge time.Duration
	// KeyPrefix of the state keys. Default "sb:".
	KeyPrefix  string
	Clock      func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Processor diffs availability snapshots into notifications.
type Processor struct {
	opts    Options
	log     *slog.Logger
	events  *prometheus.CounterVec
	notes   prometheus.Counter
	changes prometheus.Counter
	stream  *stream.Metrics
}

// New returns a processor; Run starts it.
func New(opts Options) *Processor {
	if opts.Redis == nil || opts.Bindings == nil || opts.Subscribers == nil || opts.Rules == nil || opts.Publisher == nil {
		panic("processors/availability.New: Redis, Bindings, Subscribers, Rules and Publisher are required")
	}
	if opts.GroupID == "" {
		opts.GroupID = "switchback-processors-availability"
	}
	if opts.MergeGap <= 0 {
		opts.MergeGap = 24 * time.Hour
	}
	if opts.MaxNotifyAge <= 0 {
		opts.MaxNotifyAge = 7 * 24 * time.Hour
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "sb:"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Processor{opts: opts, log: opts.Logger.With("processor", "availability"),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_availability_events_total",
			Help: "Availability events handled, by source (partner, push) and result (diffed, older, invalid, skipped)."}, []string{"source", "result"}),
		notes: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchback_availability_notifications_total",
			Help: "availability notifications produced."}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchback_availability_changes_total",
			Help: "Availability windows whose vacancies changed."}),
		stream: stream.NewMetrics(opts.Registerer),
	}
	if reg := opts.Registerer; reg != nil {
		for _, c := range []prometheus.Collector{p.events, p.notes, p.changes} {
			if err := reg.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					panic(err)
				}
			}
		}
	}
	return p
}

// Run consumes TopicAvailability in the consumer group until ctx ends.
func (p *Processor) Run(ctx context.Context) error {
	return stream.NewConsumer(stream.ConsumerConfig{
		Brokers: p.opts.Brokers, GroupID: p.opts.GroupID, Topics: []string{schemas.TopicAvailability},
		Handler: p.Handle, MaxRetryDelay: 5 * time.Second, Logger: p.opts.Logger, Metrics: p.stream,
	}).Run(ctx)
}

// Source is Notification.Source of what this processor produces.
const Source = "processors/availability"

// input is one event, made uniform.
type input struct {
	env           schemas.Envelope
	sid, pid, rid string
	scope         Span
	slots         []Slot
	source        string // history source: partner or push
	version       int64
	deleted       bool
}

// Handle processes one record; it is the consumer's stream.Handler.
// Unusable records are logged and skipped; Redis and broker errors are
// returned (retried).
func (p *Processor) Handle(ctx context.Context, m stream.Message) error {
	if len(m.Value) == 0 {
		return nil
	}
	in, ok, err := decode(m.Value)
	if err != nil {
		p.log.Error("skipping an unusable availability record", "partition", m.Partition, "offset", m.Offset, "err", err)
		p.events.WithLabelValues("unknown", "invalid").Inc()
		return nil
	}
	if !ok {
		return nil
	}
	return p.process(ctx, in)
}

func decode(value []byte) (input, bool, error) {
	var env schemas.Envelope
	if err := json.Unmarshal(value, &env); err != nil {
		return input{}, false, err
	}
	switch env.Type {
	case SnapshotEventType:
		var s snapshot
		if err := json.Unmarshal(env.Data, &s); err != nil {
			return input{}, false, err
		}
		if s.SupplierID == "" || s.ProductID == "" || s.RateID == "" || !s.Start.Before(s.End) {
			return input{}, false, fmt.Errorf("snapshot %s: missing ids or empty window", env.ID)
		}
		in := input{env: env, sid: s.SupplierID, pid: s.ProductID, rid: s.RateID, scope: Span{From: s.Start.UTC(), To: s.End.UTC()},
			source: "partner", version: s.Retrieved.UnixNano()}
		for _, a := range s.Availabilities {
			in.slots = append(in.slots, Slot{Start: a.Start.UTC(), End: a.End.UTC(), Vacancies: a.Capacity})
		}
		return in, true, nil
	case catalogstore.EventType(catalogstore.KindAvailability, false), catalogstore.EventType(catalogstore.KindAvailability, true):
		ev, err := catalogstore.DecodeEvent(env)
		if err != nil {
			return input{}, false, err
		}
		in := input{env: env, sid: ev.SupplierID, pid: ev.ProductID, rid: ev.RateID, scope: Everything, source: "push",
			version: env.Version, deleted: env.Deleted}
		if ev.Availability != nil {
			for _, a := range ev.Availability.Availabilities {
				in.slots = append(in.slots, Slot{Start: a.Start.UTC(), End: a.End.UTC(), Vacancies: a.Capacity})
			}
		}
		return in, true, nil
	}
	return input{}, false, nil // another stage's event on the topic
}

// stored is the Redis form of a rate's state: the diff state and the last
// version applied per source (an older event is skipped).
type stored struct {
	State
	Versions map[string]int64 `json:"ver"`
}

func (p *Processor) stateKey(sid, pid, rid string) string {
	return p.opts.KeyPrefix + "avstate:{" + sid + "}:" + pid + ":" + rid
}

// process diffs one event against the rate's state, publishes the
// notifications and history events, then saves the state (WATCHed, so two
// consumers of one rate cannot interleave). A crash between publish and
// save redoes the same diff with the same ids.
func (p *Processor) process(ctx context.Context, in input) error {
	key := p.stateKey(in.sid, in.pid, in.rid)
	var result string
	txf := func(tx *redis.Tx) error {
		raw, err := tx.Get(ctx, key).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		var st stored
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &st); err != nil {
				p.log.Warn("discarding an unreadable availability state", "key", key, "err", err)
				st = stored{}
			}
		}
		if st.Versions == nil {
			st.Versions = map[string]int64{}
		}
		if in.version < st.Versions[in.source] {
			result = "older"
			return nil
		}
		if in.deleted {
			result = "deleted"
			_, err := tx.TxPipelined(ctx, func(pp redis.Pipeliner) error { pp.Del(ctx, key); return nil })
			return err
		}
		now := p.opts.Clock()
		changes, next := Diff(st.State, in.scope, in.slots)
		msgs, err := p.messages(ctx, in, changes, now)
		if err != nil {
			return err
		}
		if len(msgs) > 0 {
			if err := p.opts.Publisher.Publish(ctx, msgs...); err != nil {
				return fmt.Errorf("publish %d availability events: %w", len(msgs), err)
			}
		}
		st.State = next.Prune(now.Add(-24 * time.Hour))
		st.Versions[in.source] = in.version
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(pp redis.Pipeliner) error { pp.Set(ctx, key, b, 0); return nil })
		result = "diffed"
		p.changes.Add(float64(len(changes)))
		return err
	}
	for range 5 {
		err := p.opts.Redis.Watch(ctx, txf, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return fmt.Errorf("availability state %s: %w", key, err)
		}
		p.events.WithLabelValues(in.source, result).Inc()
		return nil
	}
	return fmt.Errorf("availability state %s: too much contention", key)
}

var namespace = uuid.MustParse("3c1f6a0e-8d2b-4f7a-9c55-6e0d4b1a7f93")

// NotificationID is the id of an availability notification: the event,
// the subscriber and the range.
func NotificationID(eventID, subscriber string, s Span) string {
	return uuid.NewSHA1(namespace, fmt.Appendf(nil, "%s\x00%s\x00availability\x00%d\x00%d", eventID, subscriber, s.From.Unix(), s.To.Unix())).String()
}

// messages builds the history events of the changes and the
// notifications of the subscribers who should hear of them.
func (p *Processor) messages(ctx context.Context, in input, changes []Change, now time.Time) ([]stream.Message, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	var msgs []stream.Message
	at := in.env.Time
	if at.IsZero() {
		at = now
	}
	for _, c := range changes {
		env, err := schemas.NewHistoryEvent(schemas.HistoryAvailabilityChanged, in.sid+"/"+in.pid, schemas.AvailabilityChanged{
			SupplierID: in.sid, ProductID: in.pid, RateID: in.rid, Start: c.Start, End: c.End,
			OldVacancies: c.Old, NewVacancies: c.New, Source: in.source}, at)
		if err != nil {
			return nil, err
		}
		env.ID = uuid.NewSHA1(namespace, fmt.Appendf(nil, "%s\x00history\x00%d\x00%d", in.env.ID, c.Start.UnixNano(), c.End.UnixNano())).String()
		env.Source = Source
		b, err := json.Marshal(env)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, stream.Message{Topic: schemas.TopicHistory, Key: []byte(env.Key), Value: b, Time: env.Time})
	}
	if now.Sub(at) > p.opts.MaxNotifyAge {
		return msgs, nil
	}
	notes, err := p.notifications(ctx, in, changes, now)
	if err != nil {
		return nil, err
	}
	for _, n := range notes {
		b, err := json.Marshal(n)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, stream.Message{Topic: schemas.TopicNotifications, Key: []byte(n.Subscriber), Value: b, Time: n.CreatedAt})
		h, err := schemas.ProducedEvent(n)
		if err != nil {
			return nil, err
		}
		hb, err := json.Marshal(h)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, stream.Message{Topic: schemas.TopicHistory, Key: []byte(h.Key), Value: hb, Time: h.Time})
	}
	p.notes.Add(float64(len(notes)))
	return msgs, nil
}

// notifications returns the availability notifications of the changes of
// one rate: per subscriber of a channel that has the rate bound now, per
// coalesced range of the changes its rule keeps. Sorted by subscriber.
func (p *Processor) notifications(ctx context.Context, in input, changes []Change, now time.Time) ([]schemas.Notification, error) {
	bs, err := p.opts.Bindings.Bindings(ctx, in.sid, in.pid)
	if err != nil {
		return nil, fmt.Errorf("bindings of %s/%s: %w", in.sid, in.pid, err)
	}
	var out []schemas.Notification
	seen := map[string]bool{}
	for _, b := range bs {
		if !b.Valid.Contains(now) || !b.Binds(in.rid) {
			continue
		}
		subs, err := p.opts.Subscribers.OnChannel(ctx, b.ChannelID)
		if err != nil {
			return nil, fmt.Errorf("subscribers of channel %s: %w", b.ChannelID, err)
		}
		for _, sub := range subs {
			if seen[sub] {
				continue
			}
			seen[sub] = true
			rule, err := p.opts.Rules.Rule(ctx, sub, schemas.TypeAvailability)
			if errors.Is(err, registry.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("availability rule of %s: %w", sub, err)
			}
			if !matches(rule, in.sid, in.pid, in.rid) {
				continue
			}
			days := rule.Config.MaxLookAheadDays
			if days <= 0 {
				days = 7 // spec doc 1 default
			}
			for _, s := range Coalesce(Filter(changes, now, days, rule.Config.VacanciesUnder), p.opts.MergeGap) {
				payload, err := json.Marshal(schemas.AvailabilityPayload{SupplierID: in.sid, ProductID: in.pid, RateID: in.rid,
					Start: s.From.UTC().Format(time.RFC3339), End: s.To.UTC().Format(time.RFC3339)})
				if err != nil {
					return nil, err
				}
				out = append(out, schemas.Notification{ID: NotificationID(in.env.ID, sub, s), Subscriber: sub, Type: schemas.TypeAvailability,
					EntityKey: in.sid + "/" + in.pid + "/" + in.rid, Payload: payload, CreatedAt: in.env.Time, Source: Source})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b schemas.Notification) int {
		if a.Subscriber < b.Subscriber {
			return -1
		}
		if a.Subscriber > b.Subscriber {
			return 1
		}
		return 0
	})
	return out, nil
}

// matches: enabled, and every non-empty id filter contains the item.
func matches(r registry.Rule, sid, pid, rid string) bool {
	in := func(ids []string, id string) bool { return len(ids) == 0 || slices.Contains(ids, id) }
	return !r.Disabled && in(r.Config.SupplierIDs, sid) && in(r.Config.ProductIDs, pid) && in(r.Config.RateIDs, rid)
}

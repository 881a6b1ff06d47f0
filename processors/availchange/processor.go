// Package availchange is the availability processor: it consumes
// schemas.TopicAvailability (the partner snapshots, schemas.Snapshot, that
// the availability cache, internal/availcache, publishes on stale reads,
// and the operators' pushes, catalog "catalog.availability.*" events),
// diffs each against what it last saw
// of the rate (state in Redis), and publishes
//
//   - availability notifications (spec doc 1) to TopicNotifications (in
//     schemas.NewNotificationEvent's envelope) for
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
package availchange

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// Bindings lists the bindings of products, in their order, in one read
// for a whole batch; *catalogredis.Store implements it.
type Bindings interface {
	BindingsOf(ctx context.Context, products []catalog.ProductRef) ([][]catalog.Binding, error)
}

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

// defaultGroupID is the processor's consumer group.
const defaultGroupID = "switchback-processors-availability"

// Options configures New.
type Options struct {
	Brokers []string    // required for Run
	Dial    stream.Dial // connects to the brokers (nil: TCP)
	GroupID string      // default "switchback-processors-availability"
	// Fence, when set, makes Run handle a batch again when the Redis views
	// (the diff states, bindings, rules) were lost while it ran
	// (stream.ConsumerConfig.Fence).
	Fence       stream.Fence
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
	// BatchSize and BatchWait bound Run's batches (stream.ConsumerConfig).
	// Defaults 500 and 5ms.
	BatchSize int
	BatchWait time.Duration
	// Consumers is how many group members Run starts in this process.
	// Default 2.
	Consumers int
	// KeyPrefix of the state keys. Default "sb:".
	KeyPrefix  string
	Clock      func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Processor diffs availability snapshots into notifications.
type Processor struct {
	opts   Options
	log    *slog.Logger
	events *prometheus.CounterVec
	// decodedFast and decodedSlow count records by decode path.
	decodedFast, decodedSlow prometheus.Counter
	notes                    prometheus.Counter
	changes                  prometheus.Counter
	stream                   *stream.Metrics
}

// New returns a processor; Run starts it.
func New(opts Options) *Processor {
	if opts.Redis == nil || opts.Bindings == nil || opts.Subscribers == nil || opts.Rules == nil || opts.Publisher == nil {
		panic("processors/availchange.New: Redis, Bindings, Subscribers, Rules and Publisher are required")
	}
	if opts.GroupID == "" {
		opts.GroupID = defaultGroupID
	}
	if opts.Consumers <= 0 {
		opts.Consumers = 2
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
	decodesVec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_availability_decodes_total",
		Help: "Availability records decoded, by path: fast (the hand-written reader) or slow (encoding/json, for a shape the fast path does not take). A slow share that grows means a producer's records changed shape."}, []string{"path"})
	p := &Processor{opts: opts, log: opts.Logger.With("processor", "availability"),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_availability_events_total",
			Help: "Availability events handled, by source (partner, push) and result (diffed, older, invalid, skipped)."}, []string{"source", "result"}),
		notes: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchback_availability_notifications_total",
			Help: "availability notifications produced."}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{Name: "switchback_availability_changes_total",
			Help: "Availability windows whose vacancies changed."}),
		stream: stream.NewMetrics(opts.Registerer),
	}
	p.events = instrument.Register(opts.Registerer, p.events)
	decodes := instrument.Register(opts.Registerer, decodesVec)
	p.decodedFast, p.decodedSlow = decodes.WithLabelValues("fast"), decodes.WithLabelValues("slow")
	p.notes = instrument.Register(opts.Registerer, p.notes)
	p.changes = instrument.Register(opts.Registerer, p.changes)
	return p
}

// Run consumes TopicAvailability in the consumer group until ctx ends, in
// batches (HandleBatch: one state read, one publish and one state write
// per batch); a batch that keeps failing is handled one message at a time
// (Handle), so that a poison message is dead-lettered alone.
//
// It runs Consumers members of the group: each handles its partitions one
// batch at a time, so with two, one's decoding and diffing overlaps the
// other's Redis round trips (bench/RESULTS.md: one consumer ~45k
// snapshots/s, more ~55k on this 2-core machine).
func (p *Processor) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, p.opts.Consumers)
	for range p.opts.Consumers {
		go func() {
			errs <- stream.NewConsumer(stream.ConsumerConfig{
				Brokers: p.opts.Brokers, Dial: p.opts.Dial, GroupID: p.opts.GroupID, Topics: []string{schemas.TopicAvailability},
				Handler: p.Handle, BatchHandler: p.HandleBatch, BatchSize: p.opts.BatchSize, BatchWait: p.opts.BatchWait,
				MaxRetryDelay: 5 * time.Second, Logger: p.opts.Logger, Metrics: p.stream, Fence: p.opts.Fence,
				// Synchronous commits: the committed offsets are then
				// exactly what was handled, which RebuildState folds up
				// to after Redis lost the states (a batch of up to 500
				// records pays one commit round trip).
				CommitInterval: -1,
			}).Run(ctx)
		}()
	}
	var first error
	for range p.opts.Consumers {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // one member failed: stop the others, the process restarts
		}
	}
	return first
}

// Source is Notification.Source of what this processor produces: the
// package's path before issue 20 renamed it, kept because it is on the
// wire (envelopes, history rows, analysts' filters).
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

// Handle processes one record; it is the consumer's stream.Handler (and
// the fallback of HandleBatch when a batch keeps failing). It is a batch
// of one: see HandleBatch.
func (p *Processor) Handle(ctx context.Context, m stream.Message) error {
	return p.HandleBatch(ctx, []stream.Message{m})
}

func decode(value []byte) (in input, ok, fast bool, err error) {
	if in, ok := decodeFast(value); ok {
		return in, true, true, nil
	}
	in, ok, err = decodeJSON(value)
	return in, ok, false, err
}

// decodeJSON is decode with encoding/json: every event type, and the
// snapshots the fast path leaves to it.
func decodeJSON(value []byte) (input, bool, error) {
	var env schemas.Envelope
	if err := json.Unmarshal(value, &env); err != nil {
		return input{}, false, err
	}
	switch env.Type {
	case schemas.SnapshotEventType:
		var s schemas.Snapshot
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
	case schemas.CatalogEventType(schemas.CatalogKindAvailability, false), schemas.CatalogEventType(schemas.CatalogKindAvailability, true):
		ev, err := catalog.DecodeEvent(env)
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

func (p *Processor) stateKey(sid, pid, rid string) string {
	return p.opts.KeyPrefix + "avstate:{" + sid + "}:" + pid + ":" + rid
}

var namespace = uuid.MustParse("3c1f6a0e-8d2b-4f7a-9c55-6e0d4b1a7f93")

// NotificationID is the id of an availability notification: the event,
// the subscriber and the range.
func NotificationID(eventID, subscriber string, s Span) string {
	return uuid.NewSHA1(namespace, fmt.Appendf(nil, "%s\x00%s\x00availability\x00%d\x00%d", eventID, subscriber, s.From.Unix(), s.To.Unix())).String()
}

// messages appends to msgs the history events of the changes and the
// notifications of the subscribers who should hear of them, and returns
// how many notifications it added.
func (p *Processor) messages(ctx context.Context, lk *lookup, in input, changes []Change, now time.Time, msgs []stream.Message) ([]stream.Message, int, error) {
	if len(changes) == 0 {
		return msgs, 0, nil
	}
	at := in.env.Time
	if at.IsZero() {
		at = now
	}
	hkey := []byte(in.sid + "/" + in.pid)
	for _, c := range changes {
		b, err := historyValue(in, c, at)
		if err != nil {
			return nil, 0, err
		}
		msgs = append(msgs, stream.Message{Topic: schemas.TopicHistory, Key: hkey, Value: b, Time: at.UTC()})
	}
	if now.Sub(at) > p.opts.MaxNotifyAge {
		return msgs, 0, nil
	}
	notes, err := p.notifications(ctx, lk, in, changes, now)
	if err != nil {
		return nil, 0, err
	}
	for _, n := range notes {
		b, hb, err := notificationValues(n)
		if err != nil {
			return nil, 0, err
		}
		key := []byte(n.Subscriber)
		msgs = append(msgs, stream.Message{Topic: schemas.TopicNotifications, Key: key, Value: b, Time: n.CreatedAt},
			stream.Message{Topic: schemas.TopicHistory, Key: key, Value: hb, Time: n.CreatedAt.UTC()})
	}
	return msgs, len(notes), nil
}

// notifications returns the availability notifications of the changes of
// one rate: per subscriber of a channel that has the rate bound now, per
// coalesced range of the changes its rule keeps. Sorted by subscriber.
func (p *Processor) notifications(ctx context.Context, lk *lookup, in input, changes []Change, now time.Time) ([]schemas.Notification, error) {
	bs, err := lk.Bindings(ctx, in.sid, in.pid)
	if err != nil {
		return nil, err
	}
	var out []schemas.Notification
	seen := map[string]bool{}
	for _, b := range bs {
		if !b.Valid.Contains(now) || !b.Binds(in.rid) {
			continue
		}
		subs, err := lk.OnChannel(ctx, b.ChannelID)
		if err != nil {
			return nil, err
		}
		for _, sub := range subs {
			if seen[sub] {
				continue
			}
			seen[sub] = true
			rule, err := lk.Rule(ctx, sub)
			if err != nil {
				return nil, err
			}
			if rule == nil || !rule.Matches("", registry.Item{SupplierID: in.sid, ProductID: in.pid, RateID: in.rid}) {
				continue
			}
			days := rule.Config.MaxLookAheadDays
			if days <= 0 {
				days = 7 // spec doc 1 default
			}
			for _, s := range Coalesce(Filter(changes, now, days, rule.Config.VacanciesUnder), p.opts.MergeGap) {
				payload, err := availabilityPayload(in.sid, in.pid, in.rid, s)
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

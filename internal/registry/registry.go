// Package registry owns the notification registry of spec doc 1: each
// subscriber's notification rules (at most one per type) and its global
// delivery settings (metadata), their validation, and their storage.
//
// Storage follows ARCHITECTURE.md: Kafka is the log of record, Redis a
// rebuildable view. Every write is published (acks=all) to
// schemas.TopicRules or schemas.TopicMetadata before Redis changes, and
// Redis changes only through a versioned upsert (Lua) that a follower
// replaying the topics through Apply performs identically. A create first
// reserves its (subscriber, type) slot in Redis with an expiring marker, so
// that a second rule of a type is 409 without a window (spec doc 1,
// Behaviour rule 2), and a crash between the steps leaves only the marker.
//
// It must not know about HTTP: query/registryapi maps requests to these calls
// and this package's sentinel errors to statuses through their ErrorCode.
// It must not send webhooks either: the dispatcher reads rules and metadata
// through Rule, Rules, Metadata and RuleWithMetadata.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Rule is one notification rule (spec doc 1, "Notification rule"). Its JSON
// form is the wire form of the registry API: id, url, disabled,
// securityKey, createdOn, updatedOn and config with exactly the fields of
// its type. Type is not on the wire (the path says it).
type Rule struct {
	ID       string
	Type     string
	URL      string
	Disabled bool
	// SecurityKey is the HMAC-SHA256 key of the rule's signatures: 64
	// lowercase hex characters (32 random bytes); the key is the bytes of
	// this string as shown, not their hex decoding.
	SecurityKey string
	CreatedOn   time.Time
	UpdatedOn   time.Time
	Config      Config
}

// Config is the type-specific part of a rule (spec doc 1, "Config by rule
// type"). Fields that the type does not have are zero. Empty id filters
// mean everything visible to the subscriber.
type Config struct {
	// Operations the rule subscribes to; always filled (defaulting to every
	// operation of the type), nil for types without operations.
	Operations  []string
	SupplierIDs []string
	ProductIDs  []string
	RateIDs     []string
	// MaxLookAheadDays is the monitored window (availability,
	// priceschedule); 0 for other types.
	MaxLookAheadDays int
	// VacanciesUnder is the availability threshold; 0 means every change.
	VacanciesUnder int
}

// HasOperation reports whether the rule subscribes to op.
func (c Config) HasOperation(op string) bool { return slices.Contains(c.Operations, op) }

// Metadata is a subscriber's global delivery settings (spec doc 1,
// "Metadata"). A subscriber that never set it has DefaultMetadata, with
// zero timestamps (omitted on the wire).
type Metadata struct {
	ThrottleDelay string    `json:"throttleDelay"`
	DisableAll    bool      `json:"disableAll"`
	CreatedOn     time.Time `json:"createdOn,omitzero"`
	UpdatedOn     time.Time `json:"updatedOn,omitzero"`
}

// Throttle is ThrottleDelay parsed; a stored value always parses, so an
// error here means a corrupt record and the delay is 0.
func (m Metadata) Throttle() time.Duration {
	// Stored values were validated when written; a value written before
	// the grammar was enforced exactly ("0") still reads as what it says.
	d, err := time.ParseDuration(m.ThrottleDelay)
	if err != nil || d < 0 {
		return 0
	}
	return min(d, MaxThrottleDelay)
}

// DefaultMetadata is the metadata of a subscriber that never set it: no
// throttle, nothing disabled.
func DefaultMetadata() Metadata { return Metadata{ThrottleDelay: "0s"} }

// Options configures New.
type Options struct {
	// Redis holds the view. Required.
	Redis redis.UniversalClient
	// Publisher writes to schemas.TopicRules and schemas.TopicMetadata;
	// nil makes every write fail with ErrUnavailable (a read-only registry,
	// e.g. in the dispatcher).
	Publisher stream.Publisher
	// AllowHTTP admits http:// webhook urls (SWITCHBACK_OUTBOUND_ALLOW_HTTP).
	AllowHTTP bool
	// AllowPrivate admits loopback, private and link-local literal IP hosts
	// and localhost (SWITCHBACK_OUTBOUND_ALLOW_PRIVATE).
	AllowPrivate bool
	// Clock gives createdOn/updatedOn and version stamps. Default time.Now.
	Clock func() time.Time
	// Logger receives warnings (a commit to Redis that failed after the
	// publish succeeded). Default: discard.
	Logger *slog.Logger
	// Source is Envelope.Source of the published events. Default "registry".
	Source string
	// KeyPrefix prefixes every Redis key. Default "switchback:{registry}:"
	// (one Redis Cluster slot for the view: store.go).
	KeyPrefix string
	// Fence, when set, keeps writes from deciding on a lost view: the
	// epoch of the Redis views (internal/platform/views.Guard) is read before a
	// write reserves its slot, and again before it publishes; the write is
	// refused (ErrUnavailable) while the views are being rebuilt or if
	// they changed in between. Without it a create after a FLUSHALL would
	// find the slot empty and publish a second rule of a type over the
	// first (with a new securityKey), in the log of record.
	Fence Fence
	// Secrets seals securityKeys at rest (internal/platform/keyring): a rule's key
	// is sealed before its event is published or stored in Redis, and
	// opened when the rule is read (by its owner, by the dispatcher).
	// Nil or without a key: rule writes are refused (keyring.ErrNoKey).
	Secrets *keyring.Keyring
}

// Fence reads the epoch of the Redis views: "" while they are lost or
// being rebuilt. *views.Guard implements it.
type Fence interface {
	Epoch(ctx context.Context) (string, error)
}

// Registry is the registry of every subscriber. It is safe for concurrent
// use, across processes too (the atomicity lives in Redis).
type Registry struct {
	rdb     redis.UniversalClient
	pub     stream.Publisher
	policy  URLPolicy
	now     func() time.Time
	log     *slog.Logger
	source  string
	keys    keys
	fence   Fence
	secrets *keyring.Keyring
	// lockWait is how long a write waits for another write of its slot
	// (lockWait by default; shorter in tests).
	lockWait time.Duration
}

// New returns a registry over opts.Redis.
func New(opts Options) *Registry {
	if opts.Redis == nil {
		panic("registry.New: Options.Redis is required")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Source == "" {
		opts.Source = "registry"
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "switchback:{registry}:"
	}
	return &Registry{
		rdb:     opts.Redis,
		pub:     opts.Publisher,
		policy:  URLPolicy{AllowHTTP: opts.AllowHTTP, AllowPrivate: opts.AllowPrivate},
		now:     opts.Clock,
		log:     opts.Logger,
		source:  opts.Source,
		keys:    keys{prefix: opts.KeyPrefix},
		fence:   opts.Fence,
		secrets: opts.Secrets,

		lockWait: lockWait,
	}
}

// ValidType reports whether typ is one of the seven notification types.
func ValidType(typ string) bool { _, ok := typeSpecs[typ]; return ok }

// Rule returns the subscriber's rule of the type (one Redis round trip),
// or ErrNotFound.
func (r *Registry) Rule(ctx context.Context, subscriber, typ string) (Rule, error) {
	if !ValidType(typ) {
		return Rule{}, fmt.Errorf("rule type %q: %w", typ, ErrNotFound)
	}
	s, err := r.rdb.HGet(ctx, r.keys.rules(subscriber), typ).Result()
	if errors.Is(err, redis.Nil) {
		return Rule{}, fmt.Errorf("%s rule: %w", typ, ErrNotFound)
	}
	if err != nil {
		return Rule{}, fmt.Errorf("read %s rule: %w: %w", typ, ErrUnavailable, err)
	}
	return r.decodeStored(subscriber, typ, s)
}

// Rules returns every rule of the subscriber, in the spec's type order
// (one Redis round trip). None is an empty slice, not an error.
func (r *Registry) Rules(ctx context.Context, subscriber string) ([]Rule, error) {
	m, err := r.rdb.HGetAll(ctx, r.keys.rules(subscriber)).Result()
	if err != nil {
		return nil, fmt.Errorf("read rules: %w: %w", ErrUnavailable, err)
	}
	out := make([]Rule, 0, len(m))
	for _, typ := range schemas.NotificationTypes() {
		s, ok := m[typ]
		if !ok {
			continue
		}
		rule, err := r.decodeStored(subscriber, typ, s)
		if err != nil {
			return nil, err
		}
		out = append(out, rule)
	}
	return out, nil
}

// Metadata returns the subscriber's metadata, DefaultMetadata when it was
// never set (one Redis round trip).
func (r *Registry) Metadata(ctx context.Context, subscriber string) (Metadata, error) {
	s, err := r.rdb.Get(ctx, r.keys.metadata(subscriber)).Result()
	if errors.Is(err, redis.Nil) {
		return DefaultMetadata(), nil
	}
	if err != nil {
		return Metadata{}, fmt.Errorf("read metadata: %w: %w", ErrUnavailable, err)
	}
	return decodeMetadata(s)
}

// RuleWithMetadata returns the subscriber's rule of the type and its
// metadata in one pipelined round trip: what the dispatcher checks at send
// time (rule deleted: ErrNotFound; rule disabled; disableAll; throttle).
func (r *Registry) RuleWithMetadata(ctx context.Context, subscriber, typ string) (Rule, Metadata, error) {
	if !ValidType(typ) {
		return Rule{}, Metadata{}, fmt.Errorf("rule type %q: %w", typ, ErrNotFound)
	}
	pipe := r.rdb.Pipeline()
	ruleCmd := pipe.HGet(ctx, r.keys.rules(subscriber), typ)
	metaCmd := pipe.Get(ctx, r.keys.metadata(subscriber))
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return Rule{}, Metadata{}, fmt.Errorf("read %s rule and metadata: %w: %w", typ, ErrUnavailable, err)
	}
	md := DefaultMetadata()
	if s, err := metaCmd.Result(); err == nil {
		if md, err = decodeMetadata(s); err != nil {
			return Rule{}, Metadata{}, err
		}
	}
	s, err := ruleCmd.Result()
	if errors.Is(err, redis.Nil) {
		return Rule{}, md, fmt.Errorf("%s rule: %w", typ, ErrNotFound)
	}
	if err != nil {
		return Rule{}, md, fmt.Errorf("read %s rule: %w: %w", typ, ErrUnavailable, err)
	}
	rule, err := r.decodeStored(subscriber, typ, s)
	return rule, md, err
}

// Subscribers lists the subscribers that have at least one rule or have
// set their metadata, sorted.
func (r *Registry) Subscribers(ctx context.Context) ([]string, error) {
	subs, err := r.rdb.SMembers(ctx, r.keys.subscribers()).Result()
	if err != nil {
		return nil, fmt.Errorf("read subscribers: %w: %w", ErrUnavailable, err)
	}
	slices.Sort(subs)
	return subs, nil
}

// stored is the form of a rule in Redis and in events
// (schemas.RuleState): every field explicit, independent of the API's
// per-type rendering.
func (rule Rule) stored() schemas.RuleState {
	return schemas.RuleState{
		ID: rule.ID, Type: rule.Type, URL: rule.URL, Disabled: rule.Disabled, SecurityKey: rule.SecurityKey,
		CreatedOn: rule.CreatedOn, UpdatedOn: rule.UpdatedOn, Config: schemas.RuleConfig(rule.Config),
	}
}

// ruleOf is the rule of its stored form.
func ruleOf(s schemas.RuleState) Rule {
	return Rule{
		ID: s.ID, Type: s.Type, URL: s.URL, Disabled: s.Disabled, SecurityKey: s.SecurityKey,
		CreatedOn: s.CreatedOn, UpdatedOn: s.UpdatedOn, Config: Config(s.Config),
	}
}

// securityKeyAAD binds a sealed securityKey to its rule's slot.
func securityKeyAAD(subscriber, typ string) string {
	return "rule/" + subscriber + "/" + typ + "/securityKey"
}

// decodeStored reads a stored rule and opens its securityKey (a map
// lookup after the first time: the keyring caches what it opened, and the
// dispatcher reads a rule per delivery).
func (r *Registry) decodeStored(subscriber, typ, s string) (Rule, error) {
	var sr schemas.RuleState
	if err := json.Unmarshal([]byte(s), &sr); err != nil {
		return Rule{}, fmt.Errorf("decode stored %s rule: %w", typ, err)
	}
	if sr.Type != typ {
		return Rule{}, fmt.Errorf("stored %s rule has type %q", typ, sr.Type)
	}
	key, err := r.secrets.Open(sr.SecurityKey, securityKeyAAD(subscriber, typ))
	if err != nil {
		return Rule{}, fmt.Errorf("%s rule of %s: %w", typ, subscriber, err)
	}
	sr.SecurityKey = key
	return ruleOf(sr), nil
}

// sealed is the stored form of rule, its securityKey sealed.
func (r *Registry) sealed(subscriber string, rule Rule) (schemas.RuleState, error) {
	sr := rule.stored()
	key, err := r.secrets.Seal(sr.SecurityKey, securityKeyAAD(subscriber, rule.Type))
	if err != nil {
		return schemas.RuleState{}, fmt.Errorf("%s rule: %w", rule.Type, err)
	}
	sr.SecurityKey = key
	return sr, nil
}

func decodeMetadata(s string) (Metadata, error) {
	var md Metadata
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		return Metadata{}, fmt.Errorf("decode stored metadata: %w", err)
	}
	return md, nil
}

// MarshalJSON renders the rule as the registry API does: config carries
// exactly the fields of the rule's type, id filters as arrays (empty when
// there is no filter).
func (rule Rule) MarshalJSON() ([]byte, error) {
	type wire struct {
		ID          string         `json:"id"`
		URL         string         `json:"url"`
		Disabled    bool           `json:"disabled"`
		SecurityKey string         `json:"securityKey"`
		CreatedOn   time.Time      `json:"createdOn"`
		UpdatedOn   time.Time      `json:"updatedOn"`
		Config      map[string]any `json:"config"`
	}
	return json.Marshal(wire{ID: rule.ID, URL: rule.URL, Disabled: rule.Disabled, SecurityKey: rule.SecurityKey,
		CreatedOn: rule.CreatedOn, UpdatedOn: rule.UpdatedOn, Config: rule.Config.wire(rule.Type)})
}

// wire is the config object of the type (encoding/json sorts map keys, so
// the rendering is stable).
func (c Config) wire(typ string) map[string]any {
	spec := typeSpecs[typ]
	m := make(map[string]any, 6)
	orEmpty := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	if spec.operations != nil {
		m[fieldOperations] = orEmpty(c.Operations)
	}
	if spec.supplierIDs {
		m[fieldSupplierIDs] = orEmpty(c.SupplierIDs)
	}
	if spec.productIDs {
		m[fieldProductIDs] = orEmpty(c.ProductIDs)
	}
	if spec.rateIDs {
		m[fieldRateIDs] = orEmpty(c.RateIDs)
	}
	if spec.lookAhead {
		m[fieldMaxLookAheadDays] = c.MaxLookAheadDays
	}
	if spec.vacancies {
		m[fieldVacanciesUnder] = c.VacanciesUnder
	}
	return m
}

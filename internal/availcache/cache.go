// Package availcache is the availability cache (spec doc 2, "Limits"): an
// entry per (supplier, product, rate, window) in Redis, fresh for MaxAge
// (5 minutes) and never past the partner's expires. An older or missing
// entry sends the read to the supplier's partner (the Partner interface;
// ingest/partner's client) once per key across the process (singleflight)
// and across processes (a short Redis lock); the answer is written back and
// published as a snapshot (schemas.Snapshot, schemas.SnapshotEventType)
// for processors/availchange to diff. A read waits Deadline for the
// partner; past it, a stale entry that the partner has not expired is
// served (and the refresh finishes in the background), no usable entry is
// ErrUnavailable.
//
// Every partner availability call of a refresh is also one
// schemas.HistoryPartnerCall event on TopicHistory (history_partner_calls
// in ClickHouse): with the snapshots, in the same publish, when the call
// succeeded; from a background goroutine when it failed, so that a failure
// never holds a waiting read for a Kafka round trip. The event carries the
// supplier, operation, status, latency and outcome; never the connection's
// URL, credentials or the partner's response text.
//
// Its readers: query/availapi (the reseller's HTTP reads, Load),
// query/octo (Lookup) and ingest/changeworker (an operator's change
// notification, Refresh). It is a domain package below the stages: it
// imports none, and gets the partner's client through Partner, declared
// here, and its failures' kinds through internal/partnerapi.
//
// It must not serve HTTP (query/availapi does), diff or notify
// (processors/availchange does), nor write the catalog. Only rates bound
// to the reseller's channel are visible.
package availcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/partnerapi"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/flight"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/redislock"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Catalog is what the cache needs of the catalog; *catalogredis.Store
// implements it. AppendRates tells which rates the channel sees (bound,
// inside the binding window); Supplier (called in the system scope)
// gives the partner connection; Availabilities the operator-pushed
// availabilities of suppliers that are not partners.
type Catalog interface {
	AppendRates(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error)
	Supplier(ctx context.Context, sc catalog.Scope, sid string) (catalog.Supplier, error)
	Availabilities(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.AvailabilitySet, error)
}

// Partner calls a partner; *ingest/partner.Client implements it. A failed
// call's error tells its kind and status through failedCall.
type Partner interface {
	Availabilities(ctx context.Context, conn partnerapi.Connection, in partnerapi.AvailabilitiesRequest) (schemas.AvailabilityWrapper, error)
}

// Options configures New.
type Options struct {
	Redis     redis.UniversalClient // required
	Catalog   Catalog               // required
	Partner   Partner               // required
	Publisher stream.Publisher      // required: snapshots go to schemas.TopicAvailability
	// MaxAge of a fresh entry. Default 5 min (spec doc 2).
	MaxAge time.Duration
	// Deadline a read waits for the partner. Default 2 s.
	Deadline time.Duration
	// RefreshTimeout bounds a refresh (lock, partner call, write-back),
	// which outlives the read that started it. Default Deadline + 1 s.
	RefreshTimeout time.Duration
	// MaxWindow is the longest start..end a read may ask. Default 92 days.
	MaxWindow time.Duration
	// LocalTTL bounds the in-process copy of fresh entries and of the
	// channel's bound rates (a read then makes no Redis round trip). It
	// never extends an entry past MaxAge or expires; a binding change is
	// seen within it. Default 1 s; negative disables it.
	LocalTTL time.Duration
	// KeyPrefix of the cache keys. Default "sb:".
	KeyPrefix string
	// Clock. Default time.Now.
	Clock func() time.Time
	// Logger: default discard.
	Logger *slog.Logger
	// Registerer gets the switchback_availability_* metrics of the cache;
	// nil: none.
	Registerer prometheus.Registerer
}

// Source is Envelope.Source of the history events the cache publishes.
// The value predates the cache's move out of query/availability and is
// kept, so that every partner call row of history has one source.
const Source = "query/availability"

// maxHistoryInFlight bounds the goroutines publishing the history events
// of failed partner calls; past it an event is dropped (and counted).
const maxHistoryInFlight = 64

// Service is the availability cache and the reads built on it.
type Service struct {
	opts    Options
	log     *slog.Logger
	flights flight.Group[struct{}]
	local   local
	cache   *prometheus.CounterVec
	// hits is cache's "hit" child, resolved once: the warm read is the
	// hot path, and WithLabelValues hashes the label on every call.
	hits    prometheus.Counter
	publish *prometheus.CounterVec
	// historyDropped counts partner-call history events not published.
	historyDropped prometheus.Counter
	historySlots   chan struct{}
}

// New returns a service.
func New(opts Options) *Service {
	if opts.Redis == nil || opts.Catalog == nil || opts.Partner == nil || opts.Publisher == nil {
		panic("availcache.New: Redis, Catalog, Partner and Publisher are required")
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = 5 * time.Minute
	}
	if opts.Deadline <= 0 {
		opts.Deadline = 2 * time.Second
	}
	if opts.RefreshTimeout <= 0 {
		opts.RefreshTimeout = opts.Deadline + time.Second
	}
	if opts.MaxWindow <= 0 {
		opts.MaxWindow = 92 * 24 * time.Hour
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "sb:"
	}
	if opts.LocalTTL == 0 {
		opts.LocalTTL = time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: opts, log: opts.Logger.With("component", "availability"), local: local{m: map[localKey]localItem{}},
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_availability_cache_total",
			Help: "Availability reads by cache result: hit (fresh), miss (refreshed from the partner), stale (served stale), unavailable (503).",
		}, []string{"result"}),
		publish: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchback_availability_refresh_total",
			Help: "Availability refreshes, by result (ok, partner_error, publish_error, lock_busy).",
		}, []string{"result"}),
		historyDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchback_availability_history_dropped_total",
			Help: "Partner-call history events not published (publish failed, or too many failed calls waiting to be published).",
		}),
		historySlots: make(chan struct{}, maxHistoryInFlight),
	}
	s.cache = instrument.Register(opts.Registerer, s.cache)
	s.publish = instrument.Register(opts.Registerer, s.publish)
	s.historyDropped = instrument.Register(opts.Registerer, s.historyDropped)
	// Every result at 0 from the start: dashboards rate over the stale
	// and unavailable reads, which a healthy partner never causes.
	for _, r := range []string{"hit", "miss", "stale", "unavailable"} {
		s.cache.WithLabelValues(r)
	}
	s.hits = s.cache.WithLabelValues("hit")
	for _, r := range []string{"ok", "partner_error", "publish_error", "lock_busy"} {
		s.publish.WithLabelValues(r)
	}
	return s
}

// ErrUnavailable is a read that has no usable entry and no partner
// answer in time (503).
var ErrUnavailable = domainerr.New("UNAVAILABLE", "availability temporarily unavailable")

var errNotFound = domainerr.New("NOT_FOUND", "not found")

// entry is one cached answer for a rate and window.
type entry struct {
	fetched   time.Time              // our clock at write-back
	expires   time.Time              // the partner's expires
	retrieved time.Time              // the partner's retrieved
	raw       []byte                 // JSON array of schemas.Availability
	decoded   []schemas.Availability // raw decoded, in the local copy only
}

// Entry wire form: "1|<fetched ms>|<expires ms>|<retrieved ms>|<json array>".
func (e entry) encode() string {
	return "1|" + strconv.FormatInt(e.fetched.UnixMilli(), 10) + "|" + strconv.FormatInt(e.expires.UnixMilli(), 10) + "|" +
		strconv.FormatInt(e.retrieved.UnixMilli(), 10) + "|" + string(e.raw)
}

func decodeEntry(s string) (entry, bool) {
	parts := strings.SplitN(s, "|", 5)
	if len(parts) != 5 || parts[0] != "1" {
		return entry{}, false
	}
	var ms [3]int64
	for i := range ms {
		v, err := strconv.ParseInt(parts[i+1], 10, 64)
		if err != nil {
			return entry{}, false
		}
		ms[i] = v
	}
	return entry{fetched: time.UnixMilli(ms[0]).UTC(), expires: time.UnixMilli(ms[1]).UTC(),
		retrieved: time.UnixMilli(ms[2]).UTC(), raw: []byte(parts[4])}, true
}

// ResetLocal drops the in-process copy, and what reads begun before the
// call would put in it: the Redis views were lost (a copy of a bound-rate
// list read then may be empty and wrong) or rebuilt. internal/platform/views calls
// it on every change.
func (s *Service) ResetLocal() { s.local.reset() }

func (s *Service) fresh(e entry, now time.Time) bool {
	return now.Sub(e.fetched) < s.opts.MaxAge && now.Before(e.expires)
}

// window is a read's [start, end), to the second.
type window struct{ start, end time.Time }

func (w window) String() string {
	return strconv.FormatInt(w.start.Unix(), 10) + "-" + strconv.FormatInt(w.end.Unix(), 10)
}

// key: <prefix>avail:{S}:<P>:<R>:<start>-<end> (hash tag on the supplier).
func (s *Service) key(sid, pid, rid string, w window) string {
	return s.opts.KeyPrefix + "avail:{" + sid + "}:" + pid + ":" + rid + ":" + w.String()
}

func (s *Service) lockKey(sid, pid, set string, w window) string {
	return s.opts.KeyPrefix + "avail:{" + sid + "}:lock:" + pid + ":" + set + ":" + w.String()
}

// rateSet names the rates a refresh covers: the asked rate_id, else the
// sorted bound rates (hashed when long).
func rateSet(rid string, rates []string) string {
	if rid != "" {
		return rid
	}
	j := "*" + strings.Join(rates, ",")
	if len(j) <= 128 {
		return j
	}
	sum := sha256.Sum256([]byte(j))
	return "*" + hex.EncodeToString(sum[:12])
}

// Entries is what a read found for each rate it covers (Load), read
// through its methods.
type Entries struct {
	rates   []string
	entries []entry
	stale   bool // at least one entry was served stale
}

// boundRates lists the rates of the product the channel sees (sorted), or
// just rid when given and bound; nothing bound is 404.
func (s *Service) boundRates(ctx context.Context, channel, sid, pid, rid string, now time.Time) ([]string, error) {
	lkey := localKey{bound: true, channel: channel, sid: sid, pid: pid}
	all, ok := s.local.get(lkey, now)
	if !ok {
		gen := s.local.generation()
		raw, err := s.opts.Catalog.AppendRates(ctx, nil, channel, sid, pid, now)
		if err != nil {
			return nil, err
		}
		var rates []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &rates); err != nil {
			return nil, fmt.Errorf("decode bound rates: %w", err)
		}
		all.rates = make([]string, len(rates))
		for i, r := range rates {
			all.rates[i] = r.ID
		}
		if s.opts.LocalTTL > 0 {
			all.until = now.Add(s.opts.LocalTTL)
			s.local.put(lkey, all, now, gen)
		}
	}
	if rid == "" {
		if len(all.rates) == 0 {
			return nil, fmt.Errorf("no bound rate of product %s: %w", pid, errNotFound)
		}
		return all.rates, nil
	}
	ids := make([]string, 0, 1)
	for _, r := range all.rates {
		if r == rid {
			ids = append(ids, r)
		}
	}
	if len(ids) == 0 {
		if rid != "" {
			return nil, fmt.Errorf("rate %s: %w", rid, errNotFound)
		}
		return nil, fmt.Errorf("no bound rate of product %s: %w", pid, errNotFound)
	}
	return ids, nil
}

// load returns an entry for every rate the read covers: from the cache
// when fresh, else through a refresh (waiting at most Deadline), else a
// stale entry that has not expired, else ErrUnavailable.
func (s *Service) load(ctx context.Context, reqID, channel, sid, pid, rid string, w window) (Entries, error) {
	now := s.opts.Clock()
	rates, err := s.boundRates(ctx, channel, sid, pid, rid, now)
	if err != nil {
		return Entries{}, err
	}
	got, missing, err := s.read(ctx, sid, pid, rates, w, now)
	if err != nil {
		return Entries{}, err
	}
	if !missing {
		s.hits.Inc()
		return got, nil
	}
	// The flight and the lock are per rate set too: two channels binding
	// other rates of the product must not wait for each other's refresh.
	set := rateSet(rid, rates)
	fkey := sid + "/" + pid + "/" + set + "/" + w.String()
	fl, _ := s.flights.Do(fkey, func() (struct{}, error) {
		return struct{}{}, s.refreshForRead(reqID, sid, pid, rid, set, rates, w)
	})
	timer := time.NewTimer(s.opts.Deadline)
	defer timer.Stop()
	var ferr error
	select {
	case <-fl.Done():
		_, ferr = fl.Result()
	case <-timer.C:
		ferr = context.DeadlineExceeded
	case <-ctx.Done():
		ferr = ctx.Err()
	}
	now = s.opts.Clock()
	if ferr == nil {
		if got, missing, err = s.read(ctx, sid, pid, rates, w, now); err != nil {
			return Entries{}, err
		}
		if !missing {
			s.cache.WithLabelValues("miss").Inc()
			return got, nil
		}
	}
	// Partner failed, slow, or another process still holds the lock:
	// serve what has not expired.
	got, ok, err := s.readUsable(ctx, sid, pid, rates, w, now)
	if err != nil {
		return Entries{}, err
	}
	if ok {
		s.cache.WithLabelValues("stale").Inc()
		return got, nil
	}
	s.cache.WithLabelValues("unavailable").Inc()
	if ferr != nil && !errors.Is(ferr, context.DeadlineExceeded) {
		var coded interface{ ErrorCode() string }
		if errors.As(ferr, &coded) && coded.ErrorCode() != "UNAVAILABLE" {
			return Entries{}, ferr // the partner's 400/404, mapped
		}
	}
	return Entries{}, fmt.Errorf("availability %s/%s: %w", sid, pid, ErrUnavailable)
}

// read fetches the rates' entries; missing reports any absent or not fresh.
func (s *Service) read(ctx context.Context, sid, pid string, rates []string, w window, now time.Time) (Entries, bool, error) {
	if s.opts.LocalTTL > 0 {
		out := Entries{rates: rates, entries: make([]entry, len(rates))}
		hit := true
		for i, r := range rates {
			it, ok := s.local.get(entryKey(sid, pid, r, w), now)
			if !ok {
				hit = false
				break
			}
			out.entries[i] = it.e
		}
		if hit {
			return out, false, nil
		}
	}
	gen := s.local.generation()
	vals, err := s.mget(ctx, sid, pid, rates, w)
	if err != nil {
		return Entries{}, false, err
	}
	out := Entries{rates: rates, entries: make([]entry, len(rates))}
	missing := false
	for i, v := range vals {
		e, ok := decodeEntry(v)
		if !ok || !s.fresh(e, now) {
			missing = true
		} else if s.opts.LocalTTL > 0 {
			until := min(now.Add(s.opts.LocalTTL).UnixNano(), e.fetched.Add(s.opts.MaxAge).UnixNano(), e.expires.UnixNano())
			if err := json.Unmarshal(e.raw, &e.decoded); err != nil {
				e.decoded = nil
			}
			s.local.put(entryKey(sid, pid, rates[i], w), localItem{until: time.Unix(0, until), e: e}, now, gen)
		}
		out.entries[i] = e
	}
	return out, missing, nil
}

// readUsable is read for the fallback: every entry present and not past
// the partner's expires (spec doc 2: the caller discards the data after
// expires), fresh or not.
func (s *Service) readUsable(ctx context.Context, sid, pid string, rates []string, w window, now time.Time) (Entries, bool, error) {
	vals, err := s.mget(ctx, sid, pid, rates, w)
	if err != nil {
		return Entries{}, false, err
	}
	out := Entries{rates: rates, entries: make([]entry, len(rates)), stale: true}
	for i, v := range vals {
		e, ok := decodeEntry(v)
		if !ok || !now.Before(e.expires) {
			return out, false, nil
		}
		out.entries[i] = e
	}
	return out, true, nil
}

func (s *Service) mget(ctx context.Context, sid, pid string, rates []string, w window) ([]string, error) {
	out := make([]string, len(rates))
	if len(rates) == 1 {
		v, err := s.opts.Redis.Get(ctx, s.key(sid, pid, rates[0], w)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("read availability cache: %w: %w", ErrUnavailable, err)
		}
		out[0] = v
		return out, nil
	}
	pipe := s.opts.Redis.Pipeline()
	cmds := make([]*redis.StringCmd, len(rates))
	for i, r := range rates {
		cmds[i] = pipe.Get(ctx, s.key(sid, pid, r, w))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read availability cache: %w: %w", ErrUnavailable, err)
	}
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// refreshForRead is a reader's refresh: it fetches the window from the
// partner under the cross-process lock, writes the entries back and
// publishes the snapshots. When another process holds the lock it waits for
// the lock to go and returns nil: the holder writes the entries and the
// caller re-reads.
func (s *Service) refreshForRead(reqID, sid, pid, rid, set string, rates []string, w window) error {
	lock, token := s.lockKey(sid, pid, set, w), redislock.Token()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RefreshTimeout)
	defer cancel()
	taken, err := s.lockWindow(ctx, lock, token)
	if err != nil || !taken {
		return err
	}
	defer s.unlockWindow(lock, token)
	return s.fetchAndStore(reqID, sid, pid, rid, rates, w)
}

// refreshForced is an operator's change notification's refresh (Refresh):
// when another process holds the lock it waits for it and then reads the
// partner itself, because the holder may have read before the operator's
// change, or died holding the lock; taking its answer would report a change
// notification SUCCEEDED without the partner read it asks for (R5,
// docs/reliability.md).
func (s *Service) refreshForced(reqID, sid, pid, rid, set string, rates []string, w window) error {
	lock, token := s.lockKey(sid, pid, set, w), redislock.Token()
	// A holder keeps the lock at most RefreshTimeout (its TTL), so the
	// wait may last that long before the lock is taken.
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.opts.RefreshTimeout)
	defer cancel()
	for {
		taken, err := s.lockWindow(ctx, lock, token)
		if err != nil {
			return err
		}
		if taken {
			break
		}
	}
	defer s.unlockWindow(lock, token)
	return s.fetchAndStore(reqID, sid, pid, rid, rates, w)
}

// lockWindow tries to take a window's lock. Held by another refresh, it
// waits until the lock is gone and returns false; ctx bounds the wait.
func (s *Service) lockWindow(ctx context.Context, lock, token string) (bool, error) {
	ok, err := redislock.TryAcquire(ctx, s.opts.Redis, lock, token, s.opts.RefreshTimeout)
	if err != nil {
		return false, fmt.Errorf("availability lock: %w: %w", ErrUnavailable, err)
	}
	if ok {
		return true, nil
	}
	s.publish.WithLabelValues("lock_busy").Inc()
	// A steady 10 ms (a reader is waiting on the other refresh), until the
	// lock is gone; the lock expires after RefreshTimeout, so the wait ends
	// by then whatever happens. A lock that cannot be read ends the wait as
	// unavailable, not as gone: the wait's own deadline often expires
	// during the last EXISTS, and taking that error for "gone" answered a
	// read nobody had refreshed (a flake of
	// TestRefreshForRead_ALockHeldPastTheWaitIsUnavailable, mostly on the
	// cluster).
	err = redislock.Poll(ctx, s.opts.RefreshTimeout, 10*time.Millisecond, 10*time.Millisecond, func() (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		n, err := s.opts.Redis.Exists(ctx, lock).Result()
		if err != nil {
			return false, err
		}
		return n == 0, nil
	})
	if err != nil {
		return false, fmt.Errorf("availability lock held by another refresh: %w: %w", ErrUnavailable, err)
	}
	return false, nil
}

// unlockWindow releases a window's lock if it is still ours.
func (s *Service) unlockWindow(lock, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = redislock.Release(ctx, s.opts.Redis, lock, token)
}

// fetchAndStore reads the window (fetch), writes the entries back and
// publishes the snapshots and the partner call's history; the caller holds
// the window's lock.
func (s *Service) fetchAndStore(reqID, sid, pid, rid string, rates []string, w window) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RefreshTimeout)
	defer cancel()

	sup, err := s.opts.Catalog.Supplier(ctx, catalog.SystemScope(), sid)
	if err != nil {
		return err
	}
	byRate, expires, retrieved, call, err := s.fetch(ctx, reqID, &sup, pid, rid, rates, w)
	fromPartner := call != nil
	// The call's history event: batched with the snapshots below, else
	// (failed call, failed write-back) published in the background.
	var history *stream.Message
	if call != nil {
		m, herr := call.message()
		if herr != nil {
			s.log.Warn("partner call history not encoded", "supplier", sid, "err", herr)
			s.historyDropped.Inc()
		} else {
			history = &m
			defer func() {
				if history != nil {
					s.publishLater(*history)
				}
			}()
		}
	}
	if err != nil {
		s.publish.WithLabelValues("partner_error").Inc()
		s.log.Warn("availability refresh failed", "supplier", sid, "product", pid, "err", err)
		return err
	}
	now := s.opts.Clock()
	ttl := expires.Sub(now)
	if ttl < time.Second {
		ttl = time.Second
	}
	pipe := s.opts.Redis.Pipeline()
	var msgs []stream.Message
	for _, r := range rates {
		as := byRate[r]
		raw, err := json.Marshal(as)
		if err != nil {
			return fmt.Errorf("encode availabilities: %w", err)
		}
		pipe.Set(ctx, s.key(sid, pid, r, w), entry{fetched: now, expires: expires, retrieved: retrieved, raw: raw}.encode(), ttl)
		if fromPartner {
			m, err := SnapshotMessage(schemas.Snapshot{SupplierID: sid, ProductID: pid, RateID: r, Start: w.start, End: w.end,
				Retrieved: retrieved, Expires: expires, Availabilities: as}, now)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("write availability cache: %w: %w", ErrUnavailable, err)
	}
	if history != nil {
		msgs = append(msgs, *history)
		history = nil
	}
	if len(msgs) > 0 {
		// The cache is written first: a reader must not wait for Kafka.
		// A lost snapshot delays change detection to the next refresh.
		if err := s.opts.Publisher.Publish(ctx, msgs...); err != nil {
			s.publish.WithLabelValues("publish_error").Inc()
			if fromPartner {
				s.historyDropped.Inc()
			}
			s.log.Warn("availability snapshot not published", "supplier", sid, "product", pid, "err", err)
			return nil
		}
	}
	s.publish.WithLabelValues("ok").Inc()
	return nil
}

// fetch reads the window of the rates: from the partner for a partner
// supplier, else from what the operator pushed (the catalog). For a
// partner it returns the call's record (nil when no call was made), also
// when the call failed.
func (s *Service) fetch(ctx context.Context, reqID string, sup *catalog.Supplier, pid, rid string, rates []string, w window) (
	map[string][]schemas.Availability, time.Time, time.Time, *partnerCall, error) {
	now := s.opts.Clock()
	out := make(map[string][]schemas.Availability, len(rates))
	if sup.Connection.Kind != catalog.ConnectionPartner {
		for _, r := range rates {
			set, err := s.opts.Catalog.Availabilities(ctx, catalog.SystemScope(), sup.ID, pid, r)
			if err != nil && !errors.Is(err, catalog.ErrNotFound) {
				return nil, now, now, nil, err
			}
			as := []schemas.Availability{}
			for _, a := range set.Availabilities {
				if a.Start.Before(w.end) && a.End.After(w.start) {
					as = append(as, schemas.Availability{ID: a.ID, Start: a.Start, End: a.End, Capacity: a.Capacity, MaxCapacity: a.MaxCapacity})
				}
			}
			out[r] = as
		}
		return out, now.Add(s.opts.MaxAge), now, nil, nil
	}
	c := sup.Connection
	conn := partnerapi.Connection{BaseURL: c.BaseURL, APIKey: c.Credentials.APIKey, APISecret: c.Credentials.APISecret}
	started := time.Now()
	l, err := s.opts.Partner.Availabilities(ctx, conn, partnerapi.AvailabilitiesRequest{SupplierID: sup.ID, ProductID: pid,
		Start: w.start, End: w.end, RateID: rid, RequestID: reqID})
	call := newPartnerCall(sup.ID, opAvailabilities, now, time.Since(started), err)
	if err != nil {
		return nil, now, now, call, err
	}
	for _, r := range rates {
		as, ok := l.ForRate(r, rid != "")
		if !ok {
			call.rec.Outcome, call.rec.Error = schemas.CallError, partnerapi.KindMalformed+": byProduct without rate ids"
			return nil, now, now, call, fmt.Errorf("partner answered byProduct only, without rate ids: %w", partnerapi.ErrUnavailable)
		}
		kept := make([]schemas.Availability, 0, len(as))
		for _, a := range as {
			if a.Start.Before(w.end) && a.End.After(w.start) {
				kept = append(kept, a)
			}
		}
		slices.SortFunc(kept, func(a, b schemas.Availability) int { return a.Start.Compare(b.Start) })
		out[r] = kept
	}
	return out, l.Expires, l.Retrieved, call, nil
}

// opAvailabilities is PartnerCall.Operation of an availability read (spec
// doc 2, GET .../availabilities).
const opAvailabilities = "availabilities"

// partnerCall is one partner call to record in history.
type partnerCall struct {
	at  time.Time // when it started (the service's clock)
	rec schemas.PartnerCall
}

// newPartnerCall records a call's outcome from its error. The error text
// is the failure kind and status only: a transport error's text can name
// the partner's address, and a partner's body is not ours to store.
func newPartnerCall(sid, op string, at time.Time, took time.Duration, err error) *partnerCall {
	c := &partnerCall{at: at, rec: schemas.PartnerCall{System: schemas.SystemPartner, SupplierID: sid, Operation: op,
		LatencyMs: took.Milliseconds(), Outcome: schemas.CallOK, Status: 200}}
	if err == nil {
		return c
	}
	c.rec.Status = 0
	var fc failedCall
	switch {
	case errors.As(err, &fc):
		c.rec.Status = fc.CallStatus()
		c.rec.Error = fc.CallKind()
		switch fc.CallKind() {
		case partnerapi.KindTimeout:
			c.rec.Outcome = schemas.CallTimeout
		case partnerapi.KindBreaker:
			c.rec.Outcome = schemas.CallBreakerOpen
		default:
			c.rec.Outcome = schemas.CallError
		}
	case errors.Is(err, context.DeadlineExceeded):
		c.rec.Outcome, c.rec.Error = schemas.CallTimeout, partnerapi.KindTimeout
	case errors.Is(err, partnerapi.ErrRejected):
		c.rec.Outcome, c.rec.Status, c.rec.Error = schemas.CallError, 400, partnerapi.KindStatus
	case errors.Is(err, partnerapi.ErrNotFound):
		c.rec.Outcome, c.rec.Status, c.rec.Error = schemas.CallError, 404, partnerapi.KindStatus
	default:
		c.rec.Outcome, c.rec.Error = schemas.CallError, "other"
	}
	return c
}

// failedCall is what a Partner's error tells of the failed call
// (ingest/partner's *CallError): its kind, one of partnerapi.Kind*, and
// the partner's HTTP status, 0 when there was none.
type failedCall interface {
	CallKind() string
	CallStatus() int
}

// message is the call's history event (schemas.NewHistoryEvent, keyed by
// supplier), for TopicHistory.
func (c *partnerCall) message() (stream.Message, error) {
	env, err := schemas.NewHistoryEvent(schemas.HistoryPartnerCall, c.rec.SupplierID, c.rec, c.at)
	if err != nil {
		return stream.Message{}, err
	}
	env.Source = Source
	b, err := json.Marshal(env)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode partner call history: %w", err)
	}
	return stream.Message{Topic: schemas.TopicHistory, Key: []byte(env.Key), Value: b, Time: env.Time}, nil
}

// SnapshotMessage encodes a snapshot (schemas.NewSnapshotEvent) as a
// record of TopicAvailability, keyed by schemas.SnapshotKey.
func SnapshotMessage(snap schemas.Snapshot, now time.Time) (stream.Message, error) {
	env, err := schemas.NewSnapshotEvent(snap, now)
	if err != nil {
		return stream.Message{}, err
	}
	b, err := json.Marshal(env)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode snapshot envelope: %w", err)
	}
	return stream.Message{Topic: schemas.TopicAvailability, Key: []byte(env.Key), Value: b, Time: env.Time}, nil
}

// publishLater publishes a history event from its own goroutine, off the
// path of the reads waiting for the refresh; at most maxHistoryInFlight at
// once, past that it is dropped and counted.
func (s *Service) publishLater(m stream.Message) {
	select {
	case s.historySlots <- struct{}{}:
	default:
		s.historyDropped.Inc()
		return
	}
	go func() {
		defer func() { <-s.historySlots }()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.RefreshTimeout)
		defer cancel()
		if err := s.opts.Publisher.Publish(ctx, m); err != nil {
			s.historyDropped.Inc()
			s.log.Warn("partner call history not published", "key", string(m.Key), "err", err)
		}
	}()
}

// local is the in-process copy of fresh entries and bound rates, each
// kept until its own deadline (at most LocalTTL, 1 s). Expired items are
// swept out when the map has doubled since the last sweep (amortized O(1)
// per put), into a new map so that the memory is released (a Go map does
// not shrink); a sweep that finds more than maxLocal/2 live items empties
// it (a burst of distinct keys costs Redis round trips, not memory).
type local struct {
	mu sync.RWMutex
	m  map[localKey]localItem
	// sweepAt is the size at which the next put sweeps.
	sweepAt int
	// gen counts resets: a put of what was read before the last reset is
	// dropped (it may come from a Redis that lost its data).
	gen uint64
}

// generation is taken before reading Redis and handed to put.
func (l *local) generation() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.gen
}

// reset empties the copy and drops the puts of reads begun before it.
func (l *local) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	l.m, l.sweepAt = map[localKey]localItem{}, 0
}

// localKey names an item of the copy: a channel's bound rates of a product
// (bound), or one rate's entry for a window. A struct rather than the Redis
// key's string, so that a warm read builds no string to look it up.
type localKey struct {
	bound                  bool
	channel, sid, pid, rid string
	start, end             int64 // the window, Unix seconds (entries)
}

func entryKey(sid, pid, rid string, w window) localKey {
	return localKey{sid: sid, pid: pid, rid: rid, start: w.start.Unix(), end: w.end.Unix()}
}

type localItem struct {
	until time.Time
	rates []string
	e     entry
}

const (
	maxLocal      = 100_000
	minLocalSweep = 1024
)

func (l *local) get(key localKey, now time.Time) (localItem, bool) {
	l.mu.RLock()
	it, ok := l.m[key]
	l.mu.RUnlock()
	if !ok || !now.Before(it.until) {
		return localItem{}, false
	}
	return it, true
}

func (l *local) put(key localKey, it localItem, now time.Time, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	if len(l.m) >= min(max(l.sweepAt, minLocalSweep), maxLocal) {
		live := make(map[localKey]localItem, len(l.m)/2)
		for k, v := range l.m {
			if now.Before(v.until) {
				live[k] = v
			}
		}
		if len(live) > maxLocal/2 {
			// Mostly live: a burst of distinct keys. Emptied, so that the
			// next sweep is again a doubling away (amortized O(1)).
			live = make(map[localKey]localItem)
		}
		l.m, l.sweepAt = live, 2*len(live)
	}
	l.m[key] = it
}

// size is how many items the copy holds, expired or not (tests).
func (l *local) size() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.m)
}

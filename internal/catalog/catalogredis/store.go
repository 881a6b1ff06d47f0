// Package catalogredis is the catalog's Redis adapter (internal/catalog
// holds the model and its validation): the Store that writes and reads
// channels, suppliers, products, rates, availabilities, price schedules
// and bindings, its keys and Lua scripts, the event application (Apply,
// ApplyBatch, Rebuild) and the process's own copy of the view (View).
//
// Kafka is the log of record (ARCHITECTURE.md). A write validates, takes
// the supplier's lock in Redis (a pending marker with a TTL, released
// through internal/platform/redislock), checks conflicts and scope under it,
// publishes the full new state as a schemas.Envelope (acks=all) to the
// entity's compacted topic, then applies that same envelope to Redis
// through the versioned upsert that processors/catalogchange runs for every
// record (Apply), so the writer reads its own write and a replay of the
// topics rebuilds the same view. Every event also records what it
// replaced (Event.Prior, Event.PriorBinding): the writer applies before
// the processor sees the event, so the processor's change detection
// compares the event with the state it names, not with Redis. The
// reseller renderings (internal/catalog/catalogwire) are computed when an
// event is applied and stored next to the record.
//
// It must not know about HTTP (query/channel, query/operator and
// query/reseller map requests to these calls, and the sentinel errors of
// internal/catalog to statuses through their ErrorCode), and it must not
// produce notifications: that is processors/catalogchange. It never logs or
// renders supplier credentials.
package catalogredis

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/redislock"
	"github.com/switchbackhq/switchback/internal/platform/stream"
)

// Options configures NewStore.
type Options struct {
	// Redis holds the view. Required. One node (the scripts touch keys of
	// several suppliers and channels, as the registry's do).
	Redis redis.UniversalClient
	// Publisher writes the catalog topics; nil makes every write fail with
	// ErrUnavailable (a read-only store, e.g. in a query-only process that
	// should not write).
	Publisher stream.Publisher
	// Clock stamps events. Default time.Now.
	Clock func() time.Time
	// Logger gets warnings (a published change not yet in Redis). Never
	// credentials. Default: discard.
	Logger *slog.Logger
	// Source is Envelope.Source of published events. Default "catalog".
	Source string
	// KeyPrefix prefixes every Redis key. Default "switchback:{catalog}:"
	// (the hash tag keeps the whole view in one Redis Cluster slot: see
	// the layout below).
	KeyPrefix string
	// Fence, when set, keeps writes from deciding on a lost view: the
	// epoch of the Redis views (internal/platform/views.Guard) is read before a
	// write takes its lock and reads, and again before it publishes; a
	// write is refused (ErrUnavailable) while the views are being rebuilt
	// or if they changed in between. Without it a write after a FLUSHALL
	// would find its supplier's products "absent" and publish a create of
	// version 1 over them, in the log of record.
	Fence Fence
	// View, when set, answers reseller reads from the process's own copy
	// of the view while it is fresh (memview.go); Run it beside.
	View *View
	// Outbound is the policy a supplier's connection.baseUrl is judged by
	// when it is written (internal/platform/outbound: https, no literal non-public
	// address, not localhost); the clients judge it again at every call,
	// on the address they connect to. The zero value is the strict one.
	Outbound outbound.Policy
	// Bookings, when set, counts a supplier's holds and bookings that are
	// not final: a supplier with any cannot be deleted (ErrConflict), or
	// the reseller's cancels would follow its id to whoever created it
	// next. *internal/booking.Service implements it.
	Bookings OpenBookings
	// Secrets seals suppliers' credentials at rest (secrets.go). Nil or
	// without a key: credentials are refused (keyring.ErrNoKey).
	Secrets *keyring.Keyring
}

// OpenBookings counts the holds and bookings of a supplier that are not
// final (internal/booking: ACTIVE unexpired holds, bookings neither
// CANCELLED nor REDEEMED whose activity is not long over).
type OpenBookings interface {
	OpenBookings(ctx context.Context, supplierID string) (int, error)
}

// Fence reads the epoch of the Redis views: "" while they are lost or
// being rebuilt. *views.Guard implements it.
type Fence interface {
	Epoch(ctx context.Context) (string, error)
}

// Store is the catalog. Safe for concurrent use, across processes too
// (writes of one supplier are serialised by its lock in Redis).
type Store struct {
	rdb    redis.UniversalClient
	pub    stream.Publisher
	now    func() time.Time
	log    *slog.Logger
	source string
	k      keys
	local  keyedMutex
	fence  Fence
	availQ [availWriters]availQueue
	// availSeed spreads suppliers over availQ (per process: only the
	// queue of one process's pushes depends on it).
	availSeed maphash.Seed
	policy    outbound.Policy
	open      OpenBookings
	secrets   *keyring.Keyring
	view      *View

	lockWait time.Duration
}

// NewStore returns a store over opts.Redis.
func NewStore(opts Options) *Store {
	if opts.Redis == nil {
		panic("catalog.NewStore: Options.Redis is required")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Source == "" {
		opts.Source = "catalog"
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	return &Store{rdb: opts.Redis, pub: opts.Publisher, now: opts.Clock, log: opts.Logger, source: opts.Source,
		k: keys{p: opts.KeyPrefix}, lockWait: lockWait, local: keyedMutex{m: map[string]*keyedEntry{}}, fence: opts.Fence,
		policy: opts.Outbound, open: opts.Bookings, secrets: opts.Secrets, view: opts.View, availSeed: maphash.MakeSeed()}
}

// keyedMutex queues the writers of one key inside this process, so that
// they wait on a Go mutex rather than poll the Redis lock: measured, 64
// writers of one supplier polling Redis managed 31 writes/s, queued they
// run back to back. The Redis lock still serialises writers across
// processes.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

// lock takes key's mutex, giving up when ctx ends; the returned func
// unlocks it.
func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	drop := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	if e.mu.TryLock() {
		return func() { e.mu.Unlock(); drop() }, nil
	}
	locked := make(chan struct{})
	go func() { e.mu.Lock(); close(locked) }()
	select {
	case <-locked:
		return func() { e.mu.Unlock(); drop() }, nil
	case <-ctx.Done():
		// The goroutine still gets the mutex; hand it straight back.
		go func() { <-locked; e.mu.Unlock(); drop() }()
		return nil, ctx.Err()
	}
}

// DefaultKeyPrefix is the default Options.KeyPrefix.
const DefaultKeyPrefix = "switchback:{catalog}:"

// Redis layout. The default prefix carries the hash tag {catalog}, so that
// on a Redis Cluster every key of the view is in one slot: the apply
// scripts keep a supplier's records and the indexes across suppliers and
// channels (suppliers, owner:, c:<C>:*) in step atomically, which one slot
// alone allows (docs/decisions.md, "Redis Cluster"). The "{S}" below is
// then part of the name only (Redis hashes the first tag).
//
//	channels                 hash  channelId -> Channel JSON
//	channels:ver             hash  channelId -> "version:micros" of the last applied event
//	lock:channel:<c>         string write lock of a channel
//	suppliers                set   every supplier id
//	owner:<operatorId>       set   supplier ids of one owner ("owner:" for admin-created ones)
//	s:{S}                    hash  rec (Supplier JSON, with connection) | v12 | v13 | v13c
//	                               (reseller renderings) | code | partnerId (list filters) | owner
//	s:{S}:ver                hash  entity -> "version:micros"; kept after deletes so that
//	                               a replayed older event cannot resurrect an entity:
//	                               s | p/<P> | r/<P>/<R> | b/<P>/<C> | a/<P>/<R> | ps/<P>/<R>
//	s:{S}:lock               string the supplier's write lock / pending-create marker
//	s:{S}:products           hash  productId -> Product JSON
//	s:{S}:rates:<P>          hash  rateId -> rate JSON (reseller rendering)
//	s:{S}:avail:<P>          hash  rateId -> AvailabilitySet JSON
//	s:{S}:prices:<P>         hash  rateId -> PriceSchedule JSON
//	s:{S}:bindings:<P>       hash  channelId -> Binding JSON
//	s:{S}:channels           hash  channelId -> number of bound products
//	c:<C>:s:<S>              hash  productId -> "<fromMs>:<untilMs>:" + Binding JSON
//	c:<C>:suppliers          set   suppliers with at least one product bound to C
//
// Each key is one concatenation (one allocation): the reads of the query
// tier's copy build two or three per request.
type keys struct{ p string }

func (k keys) channels() string                 { return k.p + "channels" }
func (k keys) channelVersions() string          { return k.p + "channels:ver" }
func (k keys) channelLock(c string) string      { return k.p + "lock:channel:" + c }
func (k keys) all() string                      { return k.p + "suppliers" }
func (k keys) owned(o string) string            { return k.p + "owner:" + o }
func (k keys) supplier(s string) string         { return k.p + "s:{" + s + "}" }
func (k keys) versions(s string) string         { return k.p + "s:{" + s + "}:ver" }
func (k keys) lock(s string) string             { return k.p + "s:{" + s + "}:lock" }
func (k keys) tombstone(s string) string        { return k.p + "s:{" + s + "}:tomb" }
func (k keys) products(s string) string         { return k.p + "s:{" + s + "}:products" }
func (k keys) rates(s, p string) string         { return k.p + "s:{" + s + "}:rates:" + p }
func (k keys) avail(s, p string) string         { return k.p + "s:{" + s + "}:avail:" + p }
func (k keys) prices(s, p string) string        { return k.p + "s:{" + s + "}:prices:" + p }
func (k keys) bindings(s, p string) string      { return k.p + "s:{" + s + "}:bindings:" + p }
func (k keys) supplierChannels(s string) string { return k.p + "s:{" + s + "}:channels" }
func (k keys) chanSupplier(c, s string) string  { return k.p + "c:" + c + ":s:" + s }
func (k keys) chanSuppliers(c string) string    { return k.p + "c:" + c + ":suppliers" }

// Fields of the s:{S} hash.
const (
	fieldRec       = "rec"
	fieldV12       = "v12"
	fieldV13       = "v13"
	fieldV13C      = "v13c"
	fieldCode      = "code"
	fieldPartnerID = "partnerId"
	fieldOwner     = "owner"
)

// Version fields of s:{S}:ver.
func verSupplier() string           { return "s" }
func verProduct(p string) string    { return "p/" + p }
func verRate(p, r string) string    { return "r/" + p + "/" + r }
func verBinding(p, c string) string { return "b/" + p + "/" + c }
func verAvail(p, r string) string   { return "a/" + p + "/" + r }
func verPrices(p, r string) string  { return "ps/" + p + "/" + r }
func parseVersion(s string) int64 {
	v, _, _ := strings.Cut(s, ":")
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}
func versionArgs(v int64, t time.Time) (string, string) {
	return strconv.FormatInt(v, 10), strconv.FormatInt(t.UnixMicro(), 10)
}

const (
	// lockTTL is how long a marker holds a supplier whose writer died
	// between reserving and committing; above publishTimeout so that a
	// live writer's lock never expires under it.
	lockTTL = 30 * time.Second
	// publishTimeout bounds the wait for the broker's acknowledgement.
	publishTimeout = 10 * time.Second
	// lockWait is how long a write waits for another write of the same
	// supplier before answering 503.
	lockWait = 5 * time.Second
)

// newerLua is the version check every apply script starts with: apply only
// an event newer than the last applied one of the entity, ordering by
// (version, event time in microseconds). The time breaks a tie between two
// events of one version, which happens only when a writer read a view that
// missed a published event (a crash between publish and apply); the later
// event wins, as it does in the compacted topic, so the live view and a
// rebuild agree. Versions are compared as numbers (exact below 2^53) but
// stored from the argument strings, never formatted by Lua.
const newerLua = `
local function newer(key, field, v, t)
  local cur = redis.call('HGET', key, field)
  if cur then
    local cv, ct = string.match(cur, '^(%d+):(%d+)$')
    cv, ct = tonumber(cv), tonumber(ct)
    local nv, nt = tonumber(v), tonumber(t)
    if nv < cv or (nv == cv and nt <= ct) then return false end
  end
  redis.call('HSET', key, field, v .. ':' .. t)
  return true
end
`

// applySupplierScript. KEYS: versions, supplier, all, owned, tombstone.
// ARGV: v, t, deleted, id, rec, v12, v13, v13c, code, partnerId, owner.
// A deletion leaves the tombstone: "o:" and the owner of the deleted
// supplier, whose id stays that operator's (write.go, CreateSupplier).
var applySupplierScript = redis.NewScript(newerLua + `
if not newer(KEYS[1], 's', ARGV[1], ARGV[2]) then return 0 end
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[2])
  redis.call('SREM', KEYS[3], ARGV[4])
  redis.call('SREM', KEYS[4], ARGV[4])
  redis.call('SET', KEYS[5], 'o:' .. ARGV[11])
else
  redis.call('HSET', KEYS[2], 'rec', ARGV[5], 'v12', ARGV[6], 'v13', ARGV[7], 'v13c', ARGV[8], 'code', ARGV[9], 'partnerId', ARGV[10], 'owner', ARGV[11])
  redis.call('SADD', KEYS[3], ARGV[4])
  redis.call('SADD', KEYS[4], ARGV[4])
  redis.call('DEL', KEYS[5])
end
return 1
`)

// applyFieldScript sets or deletes one field of a hash (products, rates,
// availabilities, channels). KEYS: versions, hash. ARGV: version field, v,
// t, deleted, field, value.
var applyFieldScript = redis.NewScript(applyFieldLua + `
return applyField(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6])
`)

// applyFieldLua is the versioned upsert of one hash field, shared by
// applyFieldScript and applyFieldsScript: 1 when it changed the view.
const applyFieldLua = newerLua + `
local function applyField(versions, hash, verField, v, t, deleted, field, value)
  if not newer(versions, verField, v, t) then return 0 end
  if deleted == '1' then
    redis.call('HDEL', hash, field)
  else
    redis.call('HSET', hash, field, value)
  end
  return 1
end
`

// applyBindingScript keeps the binding and the channel's indexes in step.
// KEYS: versions, bindings(S,P), supplierChannels(S), chanSupplier(C,S),
// chanSuppliers(C). ARGV: version field, v, t, deleted, C, P, S, binding
// JSON, index value.
var applyBindingScript = redis.NewScript(newerLua + `
if not newer(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return 0 end
if ARGV[4] == '1' then
  if redis.call('HDEL', KEYS[2], ARGV[5]) == 1 then
    if redis.call('HINCRBY', KEYS[3], ARGV[5], -1) <= 0 then redis.call('HDEL', KEYS[3], ARGV[5]) end
  end
  redis.call('HDEL', KEYS[4], ARGV[6])
  if redis.call('HLEN', KEYS[4]) == 0 then redis.call('SREM', KEYS[5], ARGV[7]) end
else
  if redis.call('HSET', KEYS[2], ARGV[5], ARGV[8]) == 1 then redis.call('HINCRBY', KEYS[3], ARGV[5], 1) end
  redis.call('HSET', KEYS[4], ARGV[6], ARGV[9])
  redis.call('SADD', KEYS[5], ARGV[7])
end
return 1
`)

// lockScript takes a write lock and returns what is under it: the read
// is atomic with the take, which redislock.TryAcquire cannot do. The lock
// is released with redislock (Release, or ReleaseScript in a pipeline).
// KEYS: lock, hash. ARGV: token, ttl ms, field.
// Returns {"busy"} | {"ok", value of field or ""}.
var lockScript = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'busy'} end
return {'ok', redis.call('HGET', KEYS[2], ARGV[3]) or ''}
`)

// heldLock is a held write lock and the value it read under it.
type heldLock struct {
	key, token string
	current    string
	unlock     func() // the in-process mutex of key
	epoch      string // the views' epoch read before the lock (Fence)
}

// errViewsRebuilding is a write refused while the views are rebuilt.
var errViewsRebuilding = fmt.Errorf("the catalog view is being rebuilt from Kafka: %w", catalog.ErrUnavailable)

// viewsEpoch reads the fence's epoch ("" without a fence); a write may
// not start while the views are being rebuilt.
func (s *Store) viewsEpoch(ctx context.Context) (string, error) {
	if s.fence == nil {
		return "", nil
	}
	e, err := s.fence.Epoch(ctx)
	if err != nil {
		return "", catalog.Unavailable("read the views epoch", err)
	}
	if e == "" {
		return "", errViewsRebuilding
	}
	return e, nil
}

// checkFence returns nil if the views' epoch is still the one read when l
// was taken: everything the write read under l came from complete views.
func (s *Store) checkFence(ctx context.Context, l heldLock) error {
	if s.fence == nil {
		return nil
	}
	e, err := s.fence.Epoch(ctx)
	if err != nil {
		return catalog.Unavailable("read the views epoch", err)
	}
	if e == "" || e != l.epoch {
		return errViewsRebuilding
	}
	return nil
}

// acquire takes the lock key, waiting up to lockWait for the write
// holding it; it returns the field of hash read atomically with the lock.
// The lock of a supplier that does not exist yet is the pending-create
// marker: two creates of one id race on it, and the loser sees the winner's
// record (409). A writer that dies holding it leaves only the marker,
// which expires after lockTTL.
func (s *Store) acquire(ctx context.Context, lockKey, hash, field string) (heldLock, error) {
	busy := fmt.Errorf("another change of this supplier or channel is in progress: %w", catalog.ErrUnavailable)
	lctx, cancel := context.WithTimeout(ctx, s.lockWait)
	defer cancel()
	unlock, err := s.local.lock(lctx, lockKey)
	if err != nil {
		return heldLock{}, busy
	}
	epoch, err := s.viewsEpoch(ctx)
	if err != nil {
		unlock()
		return heldLock{}, err
	}
	token := uuid.NewString()
	var held heldLock
	err = redislock.Poll(ctx, s.lockWait, 2*time.Millisecond, 50*time.Millisecond, func() (bool, error) {
		res, err := lockScript.Run(ctx, s.rdb, []string{lockKey, hash}, token, lockTTL.Milliseconds(), field).StringSlice()
		if err != nil || len(res) != 2 || res[0] != "ok" {
			return false, err
		}
		held = heldLock{key: lockKey, token: token, current: res[1], unlock: unlock, epoch: epoch}
		return true, nil
	})
	switch {
	case err == nil:
		return held, nil
	case errors.Is(err, redislock.ErrBusy):
		err = busy
	default: // the script's error or ctx's
		err = catalog.Unavailable("lock", err)
	}
	unlock()
	return heldLock{}, err
}

// release drops l even if ctx is done; if that fails the lock expires.
func (s *Store) release(ctx context.Context, l heldLock) {
	if l.unlock != nil {
		defer l.unlock()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := redislock.Release(ctx, s.rdb, l.key, l.token); err != nil {
		s.log.Warn("catalog: releasing a write lock failed; it expires by itself", "err", err)
	}
}

package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/redislock"
)

// Redis layout, per subscriber:
//
//	<prefix>{sub}:rules        hash  type -> rule (schemas.RuleState JSON)
//	<prefix>{sub}:metadata     string     metadata JSON (absent: defaults)
//	<prefix>{sub}:versions     hash  type | "~metadata" -> version of the last applied event;
//	                           kept after a delete, so a replayed older event cannot resurrect
//	<prefix>{sub}:lock:<field> string     pending marker / write lock, expires after lockTTL
//	<prefix>subscribers        set        subscribers with a rule or metadata
//
// The scripts touch the subscribers set too, so on a Redis Cluster the whole
// view is in one slot: the default prefix carries the hash tag {registry}
// (Redis hashes the first tag; {sub} is then part of the name only).
type keys struct{ prefix string }

func (k keys) sub(s string) string         { return k.prefix + "{" + s + "}:" }
func (k keys) rules(s string) string       { return k.sub(s) + "rules" }
func (k keys) metadata(s string) string    { return k.sub(s) + "metadata" }
func (k keys) versions(s string) string    { return k.sub(s) + "versions" }
func (k keys) lock(s, field string) string { return k.sub(s) + "lock:" + field }
func (k keys) subscribers() string         { return k.prefix + "subscribers" }
func (k keys) all(s, field string) []string {
	return []string{k.rules(s), k.metadata(s), k.versions(s), k.lock(s, field), k.subscribers()}
}

// metadataField is the versions-hash field (and lock name) of the metadata;
// "~" keeps it apart from the type names.
const metadataField = "~metadata"

const (
	// lockTTL is how long a pending marker holds a slot when its writer
	// died between reserving and committing. It must exceed publishTimeout,
	// so that a live writer's marker never expires under it.
	lockTTL = 30 * time.Second
	// publishTimeout bounds the wait for the broker's acknowledgement.
	publishTimeout = 10 * time.Second
	// lockWait is how long a write waits for another write of the same
	// slot to finish before giving up.
	lockWait = 5 * time.Second
)

// lockScript reserves a slot for one write: the pending marker of a create
// and the write lock of an update, delete or metadata change are the same
// key, so writes of one slot are serialised across processes and never
// publish two events of one version.
//
// KEYS: rules, metadata, versions, lock, subscribers.
// ARGV: field, mode (create|existing|metadata), token, ttl ms.
// Returns {"exists"} | {"missing"} | {"busy"} | {"ok", version, current value or ""}.
var lockScript = redis.NewScript(`
local cur
if ARGV[2] == 'metadata' then
  cur = redis.call('GET', KEYS[2])
else
  cur = redis.call('HGET', KEYS[1], ARGV[1])
end
if ARGV[2] == 'create' and cur then return {'exists'} end
if ARGV[2] == 'existing' and not cur then return {'missing'} end
if not redis.call('SET', KEYS[4], ARGV[3], 'NX', 'PX', ARGV[4]) then return {'busy'} end
return {'ok', redis.call('HGET', KEYS[3], ARGV[1]) or '0', cur or ''}
`)

// commitScript is the versioned upsert every change goes through, the
// writer's own commit and a follower's Apply alike: the value is written
// only if version is newer than the slot's, so redelivered, replayed or
// reordered events converge on the newest state. It releases the writer's
// lock (if token still holds it) and keeps the subscribers set in step.
//
// KEYS: rules, metadata, versions, lock, subscribers.
// ARGV: field, version, value ("" deletes), token ("" none), subscriber,
// kind (rule|metadata), force ("1": a Kafka tombstone without version).
// Returns 1 if applied, 0 if the slot already had this version or newer.
var commitScript = redis.NewScript(`
local applied = 0
local cur = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if ARGV[7] == '1' or tonumber(ARGV[2]) > cur then
  if ARGV[7] ~= '1' then redis.call('HSET', KEYS[3], ARGV[1], ARGV[2]) end
  if ARGV[6] == 'metadata' then
    if ARGV[3] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[3]) end
  else
    if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) end
  end
  applied = 1
end
if ARGV[4] ~= '' and redis.call('GET', KEYS[4]) == ARGV[4] then redis.call('DEL', KEYS[4]) end
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('SADD', KEYS[5], ARGV[5])
else
  redis.call('SREM', KEYS[5], ARGV[5])
end
return applied
`)

type lockMode string

const (
	modeCreate   lockMode = "create"   // the slot must be empty: else ErrConflict
	modeExisting lockMode = "existing" // the rule must exist: else ErrNotFound
	modeMetadata lockMode = "metadata" // metadata, present or not
)

// slotLock is a held slot: the token that owns the lock, the version of
// the last applied event and the current value ("" if none).
type slotLock struct {
	field   string
	token   string
	version int64
	current string
	epoch   string // the views' epoch read before the reservation (Fence)
}

// errViewsRebuilding is a write refused while the views are rebuilt.
var errViewsRebuilding = fmt.Errorf("the registry view is being rebuilt from Kafka: %w", ErrUnavailable)

// viewsEpoch reads the fence's epoch ("" without a fence); a write may
// not start while the views are being rebuilt.
func (r *Registry) viewsEpoch(ctx context.Context) (string, error) {
	if r.fence == nil {
		return "", nil
	}
	e, err := r.fence.Epoch(ctx)
	if err != nil {
		return "", fmt.Errorf("read the views epoch: %w: %w", ErrUnavailable, err)
	}
	if e == "" {
		return "", errViewsRebuilding
	}
	return e, nil
}

// checkFence returns nil if the views' epoch is still the one read when l
// was reserved: what the write read under l came from complete views.
func (r *Registry) checkFence(ctx context.Context, l slotLock) error {
	if r.fence == nil {
		return nil
	}
	e, err := r.fence.Epoch(ctx)
	if err != nil {
		return fmt.Errorf("read the views epoch: %w: %w", ErrUnavailable, err)
	}
	if e == "" || e != l.epoch {
		return errViewsRebuilding
	}
	return nil
}

// lock takes the slot's lock, waiting up to lockWait for another write of
// the slot to finish.
func (r *Registry) lock(ctx context.Context, subscriber, field string, mode lockMode) (slotLock, error) {
	epoch, err := r.viewsEpoch(ctx)
	if err != nil {
		return slotLock{}, err
	}
	token := redislock.Token()
	var l slotLock
	err = redislock.Poll(ctx, r.lockWait, 5*time.Millisecond, 100*time.Millisecond, func() (bool, error) {
		var err error
		l, err = r.reserve(ctx, subscriber, field, mode, token)
		return l.token != "", err
	})
	switch {
	case err == nil:
		l.epoch = epoch
		return l, nil
	case errors.Is(err, redislock.ErrBusy):
		// Another write of this slot stayed between reserve and commit.
		if mode == modeCreate {
			// A create of this type is pending (or its writer died
			// and the marker has not expired yet).
			return slotLock{}, fmt.Errorf("%s rule: a create of this type is in progress: %w", field, ErrConflict)
		}
		return slotLock{}, fmt.Errorf("%s: another change is in progress: %w", field, ErrUnavailable)
	case err == ctx.Err(): // Poll's own: reserve's errors are wrapped
		return slotLock{}, fmt.Errorf("reserve %s: %w: %w", field, ErrUnavailable, err)
	default:
		return slotLock{}, err
	}
}

// reserve runs the lock script once: a held lock, a zero slotLock while
// another write holds the slot, or the error that ends the wait.
func (r *Registry) reserve(ctx context.Context, subscriber, field string, mode lockMode, token string) (slotLock, error) {
	res, err := lockScript.Run(ctx, r.rdb, r.keys.all(subscriber, field),
		field, string(mode), token, lockTTL.Milliseconds()).StringSlice()
	if err != nil {
		return slotLock{}, fmt.Errorf("reserve %s: %w: %w", field, ErrUnavailable, err)
	}
	switch res[0] {
	case "exists":
		return slotLock{}, fmt.Errorf("%s rule: %w", field, ErrConflict)
	case "missing":
		return slotLock{}, fmt.Errorf("%s rule: %w", field, ErrNotFound)
	case "ok":
		if len(res) != 3 {
			return slotLock{}, fmt.Errorf("reserve %s: unexpected reply %q", field, res)
		}
		v, err := strconv.ParseInt(res[1], 10, 64)
		if err != nil {
			return slotLock{}, fmt.Errorf("reserve %s: version %q: %w", field, res[1], err)
		}
		return slotLock{field: field, token: token, version: v, current: res[2]}, nil
	}
	return slotLock{}, nil // busy
}

// release drops a lock whose write did not happen. It runs even if ctx is
// done; if it fails the marker expires after lockTTL.
func (r *Registry) release(ctx context.Context, subscriber string, l slotLock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := redislock.Release(ctx, r.rdb, r.keys.lock(subscriber, l.field), l.token); err != nil {
		r.log.Warn("registry: release of a pending marker failed; it expires by itself",
			"subscriber", subscriber, "field", l.field, "err", err)
	}
}

// commit runs the versioned upsert; value "" deletes.
func (r *Registry) commit(ctx context.Context, subscriber, field string, kind string, version int64, value, token string, force bool) (bool, error) {
	forceArg := "0"
	if force {
		forceArg = "1"
	}
	n, err := commitScript.Run(ctx, r.rdb, r.keys.all(subscriber, field),
		field, strconv.FormatInt(version, 10), value, token, subscriber, kind, forceArg).Int()
	if err != nil {
		return false, fmt.Errorf("commit %s: %w: %w", field, ErrUnavailable, err)
	}
	return n == 1, nil
}

// commitOwn commits a write that is already durable in Kafka. A failure is
// logged, not returned: the change happened (the topic is the record), and
// the follower applying the topic brings Redis in step.
func (r *Registry) commitOwn(ctx context.Context, subscriber string, l slotLock, kind string, version int64, value string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := r.commit(ctx, subscriber, l.field, kind, version, value, l.token, false); err != nil {
		r.log.Warn("registry: published change not yet in Redis; the topic follower will apply it",
			"subscriber", subscriber, "field", l.field, "version", version, "err", err)
	}
}

// nextVersion orders successive states of a slot. It is at least the
// clock in microseconds, not just a counter, so that even two events of
// one version base (a publish that failed ambiguously, then a retry)
// order by time, and every reader converges on the same newest state.
func nextVersion(last int64, now time.Time) int64 { return max(last+1, now.UnixMicro()) }

// newSecurityKey is 32 bytes from crypto/rand, hex-encoded.
func newSecurityKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

package dispatcher

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// The schedule in Redis is a view of TopicDeliveries: every change is
// published there first, then applied here, and rebuild (below) recreates
// it from the topic alone. Keys, under the prefix:
//
//	rec:{id}            the pending delivery (scheduledDelivery JSON)
//	chain:{sub}\0{ent}  LIST of the pending ids of one entity, oldest first;
//	                    only its head may be sent (per-entity order)
//	due:{sub}           ZSET of chain heads by due time (µs); a claimed head
//	                    is pushed to the end of its lease
//	ready               ZSET of subscribers by their earliest due time
//	pending             HASH subscriber -> pending deliveries (the backlog)
//	replays             HASH subscriber -> pending deliveries that are replays
//	                    (counted in the backlog, not against its bound)
//	done:{id}           outcome of a finished delivery, for a while: filters
//	                    duplicates redelivered from TopicNotifications
//	lane:{sub}          lease of the instance sending for the subscriber
//	rebuilt             marker: the view is complete
//
// Multi-key scripts assume one Redis node (no cluster hash slots).

// luaRefresh recomputes a subscriber's ready score from its due ZSET.
const luaRefresh = `
local function refresh(due, ready, sub)
  local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
  if #first == 0 then redis.call('ZREM', ready, sub) else redis.call('ZADD', ready, first[2], sub) end
end
`

// enqueue: KEYS rec chain due ready pending done replays; ARGV id sub atMs rec checkDone isReplay.
var enqueueScript = redis.NewScript(luaRefresh + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[6]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[4])
if redis.call('RPUSH', KEYS[2], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
  refresh(KEYS[3], KEYS[4], ARGV[2])
end
redis.call('HINCRBY', KEYS[5], ARGV[2], 1)
if ARGV[6] == '1' then redis.call('HINCRBY', KEYS[7], ARGV[2], 1) end
return 1
`)

// claim: KEYS due ready; ARGV sub nowMs leaseUntilMs limit recPrefix.
// Returns id, rec pairs.
var claimScript = redis.NewScript(luaRefresh + `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for _, id in ipairs(ids) do
  local rec = redis.call('GET', ARGV[5] .. id)
  if rec then
    redis.call('ZADD', KEYS[1], ARGV[3], id)
    table.insert(out, id)
    table.insert(out, rec)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
refresh(KEYS[1], KEYS[2], ARGV[1])
return out
`)

// reschedule: KEYS rec due ready; ARGV id sub atMs rec.
var rescheduleScript = redis.NewScript(luaRefresh + `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
refresh(KEYS[2], KEYS[3], ARGV[2])
return 1
`)

// unclaim: KEYS rec due ready; ARGV id sub atMs. Gives a claimed head back.
var unclaimScript = redis.NewScript(luaRefresh + `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
refresh(KEYS[2], KEYS[3], ARGV[2])
return 1
`)

// complete: KEYS rec chain due ready pending done replays; ARGV id sub nowMs doneTTLms outcome isReplay.
// Removes the delivery and makes the next of its chain due now.
var completeScript = redis.NewScript(luaRefresh + `
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
if ARGV[6] == '1' and redis.call('HINCRBY', KEYS[7], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[7], ARGV[2]) end
redis.call('SET', KEYS[6], ARGV[5], 'PX', ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('LINDEX', KEYS[2], 0) == ARGV[1] then
  redis.call('LPOP', KEYS[2])
  local nxt = redis.call('LINDEX', KEYS[2], 0)
  if nxt then redis.call('ZADD', KEYS[3], ARGV[3], nxt) end
else
  redis.call('LREM', KEYS[2], 1, ARGV[1])
end
if redis.call('HINCRBY', KEYS[5], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[5], ARGV[2]) end
refresh(KEYS[3], KEYS[4], ARGV[2])
return 1
`)

var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// release: KEYS lane; ARGV owner holdMs. With holdMs > 0 the lease is
// kept (unrenewed) for that long instead of deleted: the rest of the
// subscriber's throttleDelay gap, so that no other instance sends sooner.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if tonumber(ARGV[2]) > 0 then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return redis.call('DEL', KEYS[1])
end
return 0
`)

type view struct {
	rdb     redis.UniversalClient
	prefix  string
	doneTTL time.Duration
}

func (v *view) recKey(id string) string   { return v.prefix + "rec:" + id }
func (v *view) doneKey(id string) string  { return v.prefix + "done:" + id }
func (v *view) dueKey(sub string) string  { return v.prefix + "due:" + sub }
func (v *view) laneKey(sub string) string { return v.prefix + "lane:" + sub }
func (v *view) readyKey() string          { return v.prefix + "ready" }
func (v *view) pendingKey() string        { return v.prefix + "pending" }
func (v *view) replaysKey() string        { return v.prefix + "replays" }
func (v *view) markerKey() string         { return v.prefix + "rebuilt" }
func (v *view) rebuildLockKey() string    { return v.prefix + "rebuild-lock" }

// chainKey is the entity's chain. A notification without an EntityKey has
// no ordering constraint: it is a chain of its own.
func (v *view) chainKey(n schemas.Notification) string {
	if n.EntityKey == "" {
		return v.prefix + "chain:" + n.Subscriber + "\x00\x01" + n.ID
	}
	return v.prefix + "chain:" + n.Subscriber + "\x00" + n.EntityKey
}

// score is a time as a ZSET score: microseconds, exact in a float64 until
// the year 2255. Finer than milliseconds so that deliveries taken in
// together keep their order (plan spaces them by a microsecond).
func score(t time.Time) int64 { return t.UnixMicro() }

// known reports, per id, whether it is pending or recently finished.
// Replays are only checked against pending ones.
func (v *view) known(ctx context.Context, ns []schemas.Notification) ([]bool, error) {
	pipe := v.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(ns))
	for i, n := range ns {
		if n.Source == sourceReplay {
			cmds[i] = pipe.Exists(ctx, v.recKey(n.ID))
		} else {
			cmds[i] = pipe.Exists(ctx, v.recKey(n.ID), v.doneKey(n.ID))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("check known deliveries: %w", err)
	}
	out := make([]bool, len(ns))
	for i, c := range cmds {
		out[i] = c.Val() > 0
	}
	return out, nil
}

// boundedBacklogs returns, per subscriber, the pending deliveries that
// count against the backlog bound: all but replays. A replay is the
// subscriber's own request for a bounded set (the registry caps it), made
// after it re-enabled delivery; were it checked against the bound, a replay
// of more than the bound would suppress its own tail again.
func (v *view) boundedBacklogs(ctx context.Context, subs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(subs))
	if len(subs) == 0 {
		return out, nil
	}
	pipe := v.rdb.Pipeline()
	pending := pipe.HMGet(ctx, v.pendingKey(), subs...)
	replays := pipe.HMGet(ctx, v.replaysKey(), subs...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read backlogs: %w", err)
	}
	count := func(val any) int64 {
		var n int64
		if str, ok := val.(string); ok {
			_, _ = fmt.Sscan(str, &n)
		}
		return n
	}
	pv, rv := pending.Val(), replays.Val()
	for i, s := range subs {
		out[s] = max(count(pv[i])-count(rv[i]), 0)
	}
	return out, nil
}

// enqueue adds fresh deliveries (attempt 1) in order; ones already known
// are skipped by the script, so a retried batch adds nothing twice.
func (v *view) enqueue(ctx context.Context, recs []scheduledDelivery) error {
	if len(recs) == 0 {
		return nil
	}
	err := v.enqueueOnce(ctx, recs)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Pipelined EVALSHA does not fall back to EVAL: load the script
		// (new or restarted Redis) and run again; the script skips what
		// the first run added.
		if lerr := enqueueScript.Load(ctx, v.rdb).Err(); lerr != nil {
			return fmt.Errorf("load enqueue script: %w", lerr)
		}
		err = v.enqueueOnce(ctx, recs)
	}
	return err
}

func (v *view) enqueueOnce(ctx context.Context, recs []scheduledDelivery) error {
	pipe := v.rdb.Pipeline()
	for _, r := range recs {
		raw, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode delivery %s: %w", r.Notification.ID, err)
		}
		n := r.Notification
		checkDone, replay := "1", "0"
		if n.Source == sourceReplay {
			checkDone, replay = "0", "1"
		}
		enqueueScript.Run(ctx, pipe,
			[]string{v.recKey(n.ID), v.chainKey(n), v.dueKey(n.Subscriber), v.readyKey(), v.pendingKey(), v.doneKey(n.ID), v.replaysKey()},
			n.ID, n.Subscriber, score(r.At), raw, checkDone, replay)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("enqueue %d deliveries: %w", len(recs), err)
	}
	return nil
}

// claim leases up to limit due chain heads of sub until leaseUntil.
func (v *view) claim(ctx context.Context, sub string, now, leaseUntil time.Time, limit int) ([]scheduledDelivery, error) {
	res, err := claimScript.Run(ctx, v.rdb, []string{v.dueKey(sub), v.readyKey()},
		sub, score(now), score(leaseUntil), limit, v.prefix+"rec:").StringSlice()
	if err != nil {
		return nil, fmt.Errorf("claim deliveries of %s: %w", sub, err)
	}
	out := make([]scheduledDelivery, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		var r scheduledDelivery
		if err := json.Unmarshal([]byte(res[i+1]), &r); err != nil {
			return out, fmt.Errorf("decode delivery %s: %w", res[i], err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (v *view) reschedule(ctx context.Context, r scheduledDelivery) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode delivery %s: %w", r.Notification.ID, err)
	}
	n := r.Notification
	err = rescheduleScript.Run(ctx, v.rdb, []string{v.recKey(n.ID), v.dueKey(n.Subscriber), v.readyKey()},
		n.ID, n.Subscriber, score(r.At), raw).Err()
	if err != nil {
		return fmt.Errorf("reschedule delivery %s: %w", n.ID, err)
	}
	return nil
}

func (v *view) unclaim(ctx context.Context, n schemas.Notification, at time.Time) error {
	err := unclaimScript.Run(ctx, v.rdb, []string{v.recKey(n.ID), v.dueKey(n.Subscriber), v.readyKey()},
		n.ID, n.Subscriber, score(at)).Err()
	if err != nil {
		return fmt.Errorf("unclaim delivery %s: %w", n.ID, err)
	}
	return nil
}

func (v *view) complete(ctx context.Context, n schemas.Notification, outcome string, now time.Time) error {
	replay := "0"
	if n.Source == sourceReplay {
		replay = "1"
	}
	err := completeScript.Run(ctx, v.rdb,
		[]string{v.recKey(n.ID), v.chainKey(n), v.dueKey(n.Subscriber), v.readyKey(), v.pendingKey(), v.doneKey(n.ID), v.replaysKey()},
		n.ID, n.Subscriber, score(now), v.doneTTL.Milliseconds(), outcome, replay).Err()
	if err != nil {
		return fmt.Errorf("complete delivery %s: %w", n.ID, err)
	}
	return nil
}

// readySubscribers returns subscribers with something due by now.
func (v *view) readySubscribers(ctx context.Context, now time.Time, limit int64) ([]string, error) {
	subs, err := v.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: v.readyKey(), Start: "-inf", Stop: fmt.Sprint(score(now)), ByScore: true, Count: limit,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("read ready subscribers: %w", err)
	}
	return subs, nil
}

// acquireLane takes the subscriber's lane lease for owner.
func (v *view) acquireLane(ctx context.Context, sub, owner string, ttl time.Duration) (bool, error) {
	ok, err := v.rdb.SetNX(ctx, v.laneKey(sub), owner, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("acquire lane of %s: %w", sub, err)
	}
	return ok, nil
}

func (v *view) renewLane(ctx context.Context, sub, owner string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, v.rdb, []string{v.laneKey(sub)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("renew lane of %s: %w", sub, err)
	}
	return n == 1, nil
}

// releaseLane gives the lease up, at once or after hold (the rest of the
// throttle gap: the last send time lives in this instance's memory, and
// the lease carries it to the others).
func (v *view) releaseLane(ctx context.Context, sub, owner string, hold time.Duration) error {
	ms := int64(0)
	if hold > 0 {
		ms = max(hold.Milliseconds(), 1)
	}
	return releaseScript.Run(ctx, v.rdb, []string{v.laneKey(sub)}, owner, ms).Err()
}

// allBacklogs returns every subscriber's pending count (metrics).
func (v *view) allBacklogs(ctx context.Context) (map[string]int64, error) {
	vals, err := v.rdb.HGetAll(ctx, v.pendingKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("read backlogs: %w", err)
	}
	out := make(map[string]int64, len(vals))
	for k, s := range vals {
		var n int64
		_, _ = fmt.Sscan(s, &n)
		out[k] = n
	}
	return out, nil
}

// hasMarker reports whether the schedule is complete: its marker is there
// and, when epoch is not "", was written under that epoch of the Redis
// views (markerValue).
func (v *view) hasMarker(ctx context.Context, epoch string) (bool, error) {
	val, err := v.rdb.Get(ctx, v.markerKey()).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check schedule marker: %w", err)
	}
	return epoch == "" || val == markerValue(epoch, time.Time{}), nil
}

// markerValue is what the marker holds: the views' epoch the schedule was
// rebuilt under, or (without a views guard) the rebuild's time.
func markerValue(epoch string, now time.Time) string {
	if epoch != "" {
		return "views:" + epoch
	}
	return now.UTC().Format(time.RFC3339Nano)
}

// rebuildState folds TopicDeliveries into the pending deliveries. It is
// pure, so that the rules are tested without a broker.
type rebuildState struct {
	seq     int64
	pending map[string]*rebuildEntry
	done    map[string]doneDelivery
	// doneAfter: older finished deliveries are not remembered (their
	// duplicate filter has expired anyway), which bounds the memory of a
	// rebuild by the recent traffic rather than the topic's retention.
	doneAfter time.Time
	skipped   int
}

type rebuildEntry struct {
	rec scheduledDelivery
	// seq is the position of the delivery's first schedule: its place in
	// its entity's chain. A retry keeps it; a replay after done gets a new
	// one, at the end.
	seq int64
}

func newRebuildState() *rebuildState {
	return &rebuildState{pending: map[string]*rebuildEntry{}, done: map[string]doneDelivery{}}
}

func (s *rebuildState) apply(env schemas.Envelope) error {
	switch env.Type {
	case EventDeliveryScheduled:
		var r scheduledDelivery
		if err := json.Unmarshal(env.Data, &r); err != nil {
			return fmt.Errorf("decode %s: %w", env.Type, err)
		}
		id := r.Notification.ID
		if e, ok := s.pending[id]; ok {
			e.rec = r
			return nil
		}
		s.seq++
		s.pending[id] = &rebuildEntry{rec: r, seq: s.seq}
		delete(s.done, id)
	case EventDeliveryDone:
		var d doneDelivery
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return fmt.Errorf("decode %s: %w", env.Type, err)
		}
		delete(s.pending, d.DeliveryID)
		if d.At.After(s.doneAfter) {
			s.done[d.DeliveryID] = d
		}
	default:
		s.skipped++
	}
	return nil
}

// chains groups the pending deliveries by chain, each in chain order.
func (s *rebuildState) chains(v *view) map[string][]*rebuildEntry {
	out := map[string][]*rebuildEntry{}
	for _, e := range s.pending {
		k := v.chainKey(e.rec.Notification)
		out[k] = append(out[k], e)
	}
	for _, c := range out {
		slices.SortFunc(c, func(a, b *rebuildEntry) int { return cmp.Compare(a.seq, b.seq) })
	}
	return out
}

// rebuildStats says what a rebuild found.
type rebuildStats struct {
	Pending, Done, Chains int
	Took                  time.Duration
}

// rebuild replaces the view with one folded from TopicDeliveries. Only one
// instance rebuilds at a time; the others wait for its marker.
func (v *view) rebuild(ctx context.Context, brokers []string, now time.Time, epoch string) (rebuildStats, error) {
	start := time.Now()
	done, err := v.lockRebuild(ctx, epoch)
	if err != nil || done {
		return rebuildStats{}, err
	}
	defer v.rdb.Del(context.WithoutCancel(ctx), v.rebuildLockKey())

	s := newRebuildState()
	s.doneAfter = now.Add(-v.doneTTL)
	err = stream.ReadAll(ctx, brokers, schemas.TopicDeliveries, func(m stream.Message) error {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			s.skipped++
			return nil
		}
		if err := s.apply(env); err != nil {
			s.skipped++
		}
		return nil
	})
	if err != nil {
		return rebuildStats{}, fmt.Errorf("rebuild schedule: %w", err)
	}
	if err := v.clear(ctx); err != nil {
		return rebuildStats{}, err
	}

	pipe := v.rdb.Pipeline()
	flushEvery := func(force bool) error {
		if pipe.Len() < 1000 && !force {
			return nil
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("rebuild schedule: write: %w", err)
		}
		return nil
	}
	chains := s.chains(v)
	counts, replays := map[string]int64{}, map[string]int64{}
	for key, chain := range chains {
		for _, e := range chain {
			raw, err := json.Marshal(e.rec)
			if err != nil {
				return rebuildStats{}, fmt.Errorf("rebuild schedule: encode: %w", err)
			}
			pipe.Set(ctx, v.recKey(e.rec.Notification.ID), raw, 0)
			pipe.RPush(ctx, key, e.rec.Notification.ID)
			counts[e.rec.Notification.Subscriber]++
			if e.rec.Notification.Source == sourceReplay {
				replays[e.rec.Notification.Subscriber]++
			}
		}
		head := chain[0].rec
		pipe.ZAdd(ctx, v.dueKey(head.Notification.Subscriber), redis.Z{Score: float64(score(head.At)), Member: head.Notification.ID})
		if err := flushEvery(false); err != nil {
			return rebuildStats{}, err
		}
	}
	for sub, n := range counts {
		pipe.HSet(ctx, v.pendingKey(), sub, n)
		if r := replays[sub]; r > 0 {
			pipe.HSet(ctx, v.replaysKey(), sub, r)
		}
		if err := flushEvery(false); err != nil {
			return rebuildStats{}, err
		}
	}
	for id, d := range s.done {
		if ttl := v.doneTTL - now.Sub(d.At); ttl > time.Millisecond {
			pipe.Set(ctx, v.doneKey(id), d.Outcome, ttl)
		}
		if err := flushEvery(false); err != nil {
			return rebuildStats{}, err
		}
	}
	if err := flushEvery(true); err != nil {
		return rebuildStats{}, err
	}
	for sub := range counts {
		first, err := v.rdb.ZRangeWithScores(ctx, v.dueKey(sub), 0, 0).Result()
		if err != nil {
			return rebuildStats{}, fmt.Errorf("rebuild schedule: %w", err)
		}
		if len(first) == 1 {
			pipe.ZAdd(ctx, v.readyKey(), redis.Z{Score: first[0].Score, Member: sub})
		}
		if err := flushEvery(false); err != nil {
			return rebuildStats{}, err
		}
	}
	pipe.Set(ctx, v.markerKey(), markerValue(epoch, now), 0)
	if err := flushEvery(true); err != nil {
		return rebuildStats{}, err
	}
	return rebuildStats{Pending: len(s.pending), Done: len(s.done), Chains: len(chains), Took: time.Since(start)}, nil
}

// clear deletes the view's keys (not the rebuild lock).
func (v *view) clear(ctx context.Context) error {
	pattern := globEscape(v.prefix) + "*"
	iter := v.rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if k := iter.Val(); k != v.rebuildLockKey() {
			batch = append(batch, k)
		}
		if len(batch) == 1000 {
			if err := v.rdb.Del(ctx, batch...).Err(); err != nil {
				return fmt.Errorf("clear schedule: %w", err)
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("clear schedule: %w", err)
	}
	if len(batch) > 0 {
		if err := v.rdb.Del(ctx, batch...).Err(); err != nil {
			return fmt.Errorf("clear schedule: %w", err)
		}
	}
	return nil
}

// rebuildLockTTL bounds how long a crashed instance's rebuild blocks the
// others.
const rebuildLockTTL = 5 * time.Minute

// lockRebuild takes the rebuild lock, or waits until another instance's
// rebuild finished (done is then true). A lock left by a crashed instance
// expires and is taken then.
func (v *view) lockRebuild(ctx context.Context, epoch string) (done bool, err error) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		got, err := v.rdb.SetNX(ctx, v.rebuildLockKey(), "1", rebuildLockTTL).Result()
		if err != nil {
			return false, fmt.Errorf("rebuild lock: %w", err)
		}
		if got {
			return false, nil
		}
		if ok, err := v.hasMarker(ctx, epoch); err == nil && ok {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("wait for another instance's schedule rebuild: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

package dispatcher

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/redisbatch"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// The schedule in Redis is a view of TopicDeliveries: every change is
// published there first, then applied here, and rebuild (below) recreates
// it from the topic alone. Every key of one subscriber carries the
// subscriber in a hash tag, so that each script touches one cluster slot;
// the one index across subscribers (ready) has its own tag and is updated
// by a script of its own. Keys, under the prefix P:
//
//	P{sub}:rec:<id>      the pending delivery (schemas.ScheduledDelivery JSON)
//	P{sub}:chain:<ent>   LIST of the pending ids of one entity, oldest
//	                     first; only its head may be sent (per-entity order)
//	P{sub}:due:<src>     ZSET of the chain heads of one source (the supplier
//	                     the notification is about) by due time (µs); a
//	                     claimed head is pushed to the end of its lease
//	P{sub}:srcs          ZSET of the subscriber's sources by their earliest
//	                     due head
//	P{sub}:served        HASH source -> when it was last claimed from (a
//	                     sequence): claims go to the least recently served
//	                     sources first (fairness within a subscriber)
//	P{sub}:pending       the subscriber's pending deliveries (the backlog)
//	P{sub}:replays       ... of which replays (counted in the backlog, not
//	                     against its bound)
//	P{sub}:done:<id>     outcome of a finished delivery, for a while: filters
//	                     duplicates redelivered from TopicNotifications
//	P{sub}:health        HASH of attempt outcomes per 10 s bucket (ok:<b>,
//	                     fail:<b>): whether the subscriber is failing
//	P{sub}:lane          lease of the instance sending for the subscriber
//	P{sub}:seq           change counter of the subscriber's earliest due
//	P{ready}             ZSET of subscribers by their earliest due time
//	P{ready}:seq         HASH subscriber -> seq of the last ready update
//	P{ready}:rebuilt     marker: the view is complete
//
// A script that changes what is due returns the subscriber's earliest due
// with a fresh seq; the ready index takes it only if the seq is newer than
// the one it holds, so concurrent updates of one subscriber cannot leave a
// stale entry (which could hide its due work from the poller).

// luaLib is shared by the per-subscriber scripts.
const luaLib = `
local function refreshSrc(due, srcs, served, src)
  local first = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
  if #first == 0 then
    redis.call('ZREM', srcs, src)
    redis.call('HDEL', served, src)
  else
    redis.call('ZADD', srcs, first[2], src)
  end
end
local function readyState(srcs, seq)
  local n = redis.call('INCR', seq)
  local first = redis.call('ZRANGE', srcs, 0, 0, 'WITHSCORES')
  if #first == 0 then return {n, ''} end
  return {n, first[2]}
end
local function decrBy(key, n)
  if redis.call('DECRBY', key, n) <= 0 then redis.call('DEL', key) end
end
`

// The scripts that write the schedule take a batch of one subscriber's
// deliveries each. Per delivery a script call costs far more than its few
// writes (the call itself, then re-reading the source's earliest due and
// the subscriber's, which only the batch's last state needs): at 3,000
// changes/s, one call per delivery made enqueue and complete 40 % of
// Redis's time. Each batch call does a delivery's own writes in order and
// then, once, refreshes every source it touched and returns the
// subscriber's ready state. A call holds at most redisbatch.MaxPerCall
// deliveries, so one call blocks Redis for a bounded time. The
// per-delivery keys are built in the script from the subscriber's prefix:
// they carry the subscriber's hash tag, as the declared keys do, so on a
// Redis Cluster they live in the declared keys' slot.

// enqueueBatch: KEYS srcs served pending replays seq; ARGV subPrefix, then
// per delivery: id chain src atµs rec isReplay. A delivery already known
// (pending, or recently done unless it is a replay) is skipped. Returns
// {seq, earliest}, or {-1} when nothing was added.
var enqueueBatchScript = redis.NewScript(luaLib + `
local prefix = ARGV[1]
local touched, list = {}, {}
local added, replays = 0, 0
for i = 2, #ARGV, 6 do
  local id, chain, src, at, rec, replay = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local recKey = prefix .. 'rec:' .. id
  if redis.call('EXISTS', recKey) == 0 and (replay == '1' or redis.call('EXISTS', prefix .. 'done:' .. id) == 0) then
    redis.call('SET', recKey, rec)
    if redis.call('RPUSH', prefix .. 'chain:' .. chain, id) == 1 then
      redis.call('ZADD', prefix .. 'due:' .. src, at, id)
      if not touched[src] then touched[src] = true; list[#list + 1] = src end
    end
    added = added + 1
    if replay == '1' then replays = replays + 1 end
  end
end
if added == 0 then return {-1} end
for _, src in ipairs(list) do refreshSrc(prefix .. 'due:' .. src, KEYS[1], KEYS[2], src) end
redis.call('INCRBY', KEYS[3], added)
if replays > 0 then redis.call('INCRBY', KEYS[4], replays) end
return readyState(KEYS[1], KEYS[5])
`)

// claim: KEYS srcs served seq servedseq; ARGV subPrefix nowµs leaseUntilµs
// limit. Takes up to limit due heads, the least recently served sources
// first, each source a fair share of what is left per round. Returns
// {seq, earliest, id1, rec1, id2, rec2, ...}.
//
// It is the dispatcher's most frequent script (every lane claims after each
// batch of outcomes) and each redis.call in it costs a few microseconds, so
// a source costs two: a ZRANGE by rank of one more head than it may take
// (the first not taken is the source's next earliest due, so no second read
// refreshes srcs) and one ZADD of the leases. The records are read in one
// MGET, srcs is updated in one ZADD, and the served stamps are written in
// one HSET from one INCRBY, each source with the turn of its last take: the
// order among sources is what one INCR per take would give. Scores stay
// strings: a Lua number would be formatted with 14 digits, and the
// microsecond scores have 16.
var claimScript = redis.NewScript(luaLib + `
local srcs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, 512)
if #srcs > 1 then
  local order = redis.call('HMGET', KEYS[2], unpack(srcs))
  local idx = {}
  for i, s in ipairs(srcs) do idx[i] = {s, tonumber(order[i]) or 0, i} end
  table.sort(idx, function(a, b)
    if a[2] == b[2] then return a[3] < b[3] end
    return a[2] < b[2]
  end)
  for i, e in ipairs(idx) do srcs[i] = e[1] end
end
local prefix, now, lease = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local leaseN = tonumber(lease)
local ids, srcOf = {}, {}
local left = tonumber(ARGV[4])
local active = srcs
-- earliest[src]: the source's earliest due after the claim (a score
-- string), or false when its due set is empty.
local visited, earliest = {}, {}
local turnOf, stamped, turn = {}, {}, 0
while left > 0 and #active > 0 do
  local share = math.max(1, math.floor(left / #active))
  local more = {}
  for _, src in ipairs(active) do
    if left <= 0 then break end
    local due = prefix .. 'due:' .. src
    if earliest[src] == nil then visited[#visited + 1] = src end
    local want = math.min(share, left)
    local heads = redis.call('ZRANGE', due, 0, want, 'WITHSCORES')
    local leased, n, nxt = {}, 0, false
    for i = 1, #heads, 2 do
      if n < want and tonumber(heads[i + 1]) <= now then
        n = n + 1
        leased[#leased + 1] = lease
        leased[#leased + 1] = heads[i]
        ids[#ids + 1] = heads[i]
        srcOf[heads[i]] = src
      else
        nxt = heads[i + 1]
        break
      end
    end
    if n > 0 then
      redis.call('ZADD', due, unpack(leased))
      left = left - n
      if not turnOf[src] then stamped[#stamped + 1] = src end
      turn = turn + 1
      turnOf[src] = turn
      if nxt and tonumber(nxt) < leaseN then earliest[src] = nxt else earliest[src] = lease end
    else
      earliest[src] = nxt
    end
    if n == want then more[#more + 1] = src end
  end
  active = more
end
local out = {}
local refresh = {}
if #ids > 0 then
  local keys = {}
  for i, id in ipairs(ids) do keys[i] = prefix .. 'rec:' .. id end
  local recs = redis.call('MGET', unpack(keys))
  for i, id in ipairs(ids) do
    if recs[i] then
      out[#out + 1] = id
      out[#out + 1] = recs[i]
    else
      -- Its record is gone (completed meanwhile by an instance that lost
      -- the lane): the head is dropped, and its source read again below.
      redis.call('ZREM', prefix .. 'due:' .. srcOf[id], id)
      refresh[srcOf[id]] = true
    end
  end
end
local zadd = {}
for _, src in ipairs(visited) do
  if refresh[src] then
    refreshSrc(prefix .. 'due:' .. src, KEYS[1], KEYS[2], src)
    if redis.call('EXISTS', prefix .. 'due:' .. src) == 0 then turnOf[src] = nil end
  elseif earliest[src] then
    zadd[#zadd + 1] = earliest[src]
    zadd[#zadd + 1] = src
  else
    redis.call('ZREM', KEYS[1], src)
    redis.call('HDEL', KEYS[2], src)
  end
end
if #zadd > 0 then redis.call('ZADD', KEYS[1], unpack(zadd)) end
if turn > 0 then
  -- A source that took something keeps its leased heads in due, so it
  -- is still in srcs: stamping it cannot revive a source.
  local base = redis.call('INCRBY', KEYS[4], turn) - turn
  local fields = {}
  for _, src in ipairs(stamped) do
    if turnOf[src] then
      fields[#fields + 1] = src
      fields[#fields + 1] = base + turnOf[src]
    end
  end
  if #fields > 0 then redis.call('HSET', KEYS[2], unpack(fields)) end
end
local st = readyState(KEYS[1], KEYS[3])
local res = {st[1], st[2]}
for _, v in ipairs(out) do res[#res + 1] = v end
return res
`)

// applyBatch: KEYS srcs served pending replays seq; ARGV subPrefix nowµs
// doneTTLms, then per change: kind id chain src a b, where kind is
//
//	c  complete: a outcome, b isReplay. Removes the delivery, keeps its
//	   outcome for doneTTL and makes the next of its chain (same entity,
//	   so same source) due now.
//	r  reschedule: a atµs, b the record with its next attempt.
//	u  unclaim: a atµs. Gives a claimed head back, due at a.
//
// A change whose delivery is gone (or, for unclaim, no longer a head) is
// skipped, so applying a batch twice changes nothing more. Returns {seq,
// earliest}, or {-1} when nothing changed.
var applyBatchScript = redis.NewScript(luaLib + `
local prefix, now, ttl = ARGV[1], ARGV[2], ARGV[3]
local touched, list = {}, {}
local done, replays = 0, 0
for i = 4, #ARGV, 6 do
  local kind, id, chain, src, a, b = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local rec, due = prefix .. 'rec:' .. id, prefix .. 'due:' .. src
  local hit = false
  if kind == 'c' then
    if redis.call('DEL', rec) == 1 then
      hit = true
      done = done + 1
      if b == '1' then replays = replays + 1 end
      redis.call('SET', prefix .. 'done:' .. id, a, 'PX', ttl)
      redis.call('ZREM', due, id)
      local ck = prefix .. 'chain:' .. chain
      if redis.call('LINDEX', ck, 0) == id then
        redis.call('LPOP', ck)
        local nxt = redis.call('LINDEX', ck, 0)
        if nxt then redis.call('ZADD', due, now, nxt) end
      else
        redis.call('LREM', ck, 1, id)
      end
    end
  elseif redis.call('EXISTS', rec) == 1 then
    if kind == 'r' then
      hit = true
      redis.call('SET', rec, b)
      redis.call('ZADD', due, a, id)
    elseif redis.call('ZSCORE', due, id) then
      hit = true
      redis.call('ZADD', due, a, id)
    end
  end
  if hit and not touched[src] then touched[src] = true; list[#list + 1] = src end
end
if done > 0 then decrBy(KEYS[3], done) end
if replays > 0 then decrBy(KEYS[4], replays) end
if #list == 0 then return {-1} end
for _, src in ipairs(list) do refreshSrc(prefix .. 'due:' .. src, KEYS[1], KEYS[2], src) end
return readyState(KEYS[1], KEYS[5])
`)

// touch: KEYS srcs seq. The subscriber's earliest due, with a fresh seq.
var touchScript = redis.NewScript(luaLib + `
return readyState(KEYS[1], KEYS[2])
`)

// readyUpdate: KEYS ready readyseq; ARGV sub seq earliest (empty: remove).
// Applies only an update newer than the last one applied.
var readyUpdateScript = redis.NewScript(`
local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[2]) <= last then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if ARGV[3] == '' then redis.call('ZREM', KEYS[1], ARGV[1]) else redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
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

// Health of a subscriber: attempt outcomes in 10 s buckets, kept for the
// window and read over it.
const (
	healthBucket = 10 * time.Second
	// HealthWindow is how far back a subscriber's attempts count when
	// deciding whether it is failing.
	HealthWindow = time.Minute
)

type view struct {
	rdb     redis.UniversalClient
	prefix  string
	doneTTL time.Duration
}

func (v *view) sub(sub string) string          { return v.prefix + "{" + sub + "}:" }
func (v *view) recKey(sub, id string) string   { return v.sub(sub) + "rec:" + id }
func (v *view) doneKey(sub, id string) string  { return v.sub(sub) + "done:" + id }
func (v *view) dueKey(sub, src string) string  { return v.sub(sub) + "due:" + src }
func (v *view) srcsKey(sub string) string      { return v.sub(sub) + "srcs" }
func (v *view) servedKey(sub string) string    { return v.sub(sub) + "served" }
func (v *view) servedSeqKey(sub string) string { return v.sub(sub) + "servedseq" }
func (v *view) pendingKey(sub string) string   { return v.sub(sub) + "pending" }
func (v *view) replaysKey(sub string) string   { return v.sub(sub) + "replays" }
func (v *view) healthKey(sub string) string    { return v.sub(sub) + "health" }
func (v *view) laneKey(sub string) string      { return v.sub(sub) + "lane" }
func (v *view) seqKey(sub string) string       { return v.sub(sub) + "seq" }
func (v *view) readyKey() string               { return v.prefix + "{ready}" }
func (v *view) readySeqKey() string            { return v.prefix + "{ready}:seq" }
func (v *view) markerKey() string              { return v.prefix + "{ready}:rebuilt" }
func (v *view) rebuildLockKey() string         { return v.prefix + "{ready}:rebuild-lock" }

// chainKey is the entity's chain.
func (v *view) chainKey(n schemas.Notification) string {
	return v.sub(n.Subscriber) + "chain:" + chainOf(n)
}

// chainOf names the entity's chain within its subscriber. A notification
// without an EntityKey has no ordering constraint: it is a chain of its own.
func chainOf(n schemas.Notification) string {
	if n.EntityKey == "" {
		return "\x01" + n.ID
	}
	return n.EntityKey
}

// subBatch is one script call's share of a batch: indexes of one
// subscriber's entries, in the batch's order, at most
// redisbatch.MaxPerCall of them.
type subBatch struct {
	sub string
	idx []int
}

// bySubscriber splits a batch of n entries into per-subscriber calls,
// keeping each subscriber's entries in order (its calls are queued in
// order on one pipeline).
func bySubscriber(n int, subOf func(int) string) []subBatch {
	groups := redisbatch.Split(n, subOf, redisbatch.MaxPerCall)
	out := make([]subBatch, len(groups))
	for g, idx := range groups {
		out[g] = subBatch{sub: subOf(idx[0]), idx: idx}
	}
	return out
}

// batchKeys are a batch script's declared keys.
func (v *view) batchKeys(sub string) []string {
	return []string{v.srcsKey(sub), v.servedKey(sub), v.pendingKey(sub), v.replaysKey(sub), v.seqKey(sub)}
}

// sourceOf is the fairness share a notification belongs to within its
// subscriber: the supplier it is about (every notification of one entity
// has the same one). A flood from one supplier then delays only that
// supplier's notifications: claims go to the least recently served source
// first. Notifications without a supplier share one source.
func sourceOf(n schemas.Notification) string {
	if n.Supplier != "" {
		return n.Supplier
	}
	// Entity keys start with the supplier id (sid, sid/pid, sid/pid/rid).
	if i := strings.IndexAny(n.EntityKey, "/:"); i > 0 {
		return n.EntityKey[:i]
	}
	return n.EntityKey
}

// score is a time as a ZSET score: microseconds, exact in a float64 until
// the year 2255. Finer than milliseconds so that deliveries taken in
// together keep their order (plan spaces them by a microsecond).
func score(t time.Time) int64 { return t.UnixMicro() }

// readyState is what a script said of its subscriber's earliest due.
type readyState struct {
	seq      int64
	earliest string // "" none
}

func parseReady(vals []any) (readyState, bool) {
	if len(vals) < 2 {
		return readyState{}, false
	}
	seq, ok := vals[0].(int64)
	if !ok || seq < 0 {
		return readyState{}, false
	}
	earliest, _ := vals[1].(string)
	return readyState{seq: seq, earliest: earliest}, true
}

// updateReady applies the newest ready state of each subscriber to the
// ready index.
func (v *view) updateReady(ctx context.Context, states map[string]readyState) error {
	if len(states) == 0 {
		return nil
	}
	return v.runPipeline(ctx, "update the ready index", func(pipe redis.Pipeliner) {
		for sub, st := range states {
			readyUpdateScript.EvalSha(ctx, pipe, []string{v.readyKey(), v.readySeqKey()}, sub, st.seq, st.earliest)
		}
	}, nil)
}

// runPipeline runs the calls fill queues, loading the scripts first when
// Redis does not know them (pipelined EVALSHA does not fall back to EVAL;
// every script here is idempotent, so running the batch again is safe).
// after, when set, reads the results.
func (v *view) runPipeline(ctx context.Context, what string, fill func(redis.Pipeliner), after func([]redis.Cmder) error) error {
	for try := 0; ; try++ {
		pipe := v.rdb.Pipeline()
		fill(pipe)
		cmds, err := pipe.Exec(ctx)
		if err != nil && try == 0 && hasNoScript(cmds) {
			if lerr := v.loadScripts(ctx); lerr != nil {
				return fmt.Errorf("%s: load scripts: %w", what, lerr)
			}
			continue
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if after != nil {
			return after(cmds)
		}
		return nil
	}
}

func hasNoScript(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			return true
		}
	}
	return false
}

var allScripts = []*redis.Script{enqueueBatchScript, claimScript, applyBatchScript, readyUpdateScript, touchScript}

func (v *view) loadScripts(ctx context.Context) error {
	for _, s := range allScripts {
		if err := s.Load(ctx, v.rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// known reports, per notification, whether it is pending or recently
// finished. Replays are only checked against pending ones.
func (v *view) known(ctx context.Context, ns []schemas.Notification) ([]bool, error) {
	out := make([]bool, len(ns))
	if len(ns) == 0 {
		return out, nil
	}
	cmds := make([]*redis.IntCmd, len(ns))
	err := v.runPipeline(ctx, "check known deliveries", func(pipe redis.Pipeliner) {
		for i, n := range ns {
			if n.Source == sourceReplay {
				cmds[i] = pipe.Exists(ctx, v.recKey(n.Subscriber, n.ID))
			} else {
				cmds[i] = pipe.Exists(ctx, v.recKey(n.Subscriber, n.ID), v.doneKey(n.Subscriber, n.ID))
			}
		}
	}, nil)
	if err != nil {
		return nil, err
	}
	for i, c := range cmds {
		out[i] = c.Val() > 0
	}
	return out, nil
}

func intOf(c *redis.StringCmd) int64 {
	n, _ := strconv.ParseInt(c.Val(), 10, 64)
	return n
}

// enqueue adds fresh deliveries (attempt 1) in order; ones already known
// are skipped by the script, so a retried batch adds nothing twice.
func (v *view) enqueue(ctx context.Context, recs []schemas.ScheduledDelivery) error {
	if len(recs) == 0 {
		return nil
	}
	raws := make([][]byte, len(recs))
	for i, r := range recs {
		raw, err := encodeScheduled(r)
		if err != nil {
			return fmt.Errorf("encode delivery %s: %w", r.Notification.ID, err)
		}
		raws[i] = raw
	}
	batches := bySubscriber(len(recs), func(i int) string { return recs[i].Notification.Subscriber })
	states := map[string]readyState{}
	err := v.runPipeline(ctx, fmt.Sprintf("enqueue %d deliveries", len(recs)), func(pipe redis.Pipeliner) {
		for _, b := range batches {
			args := make([]any, 1, 1+6*len(b.idx))
			args[0] = v.sub(b.sub)
			for _, i := range b.idx {
				n := recs[i].Notification
				args = append(args, n.ID, chainOf(n), sourceOf(n), score(recs[i].At), raws[i], replayArg(n))
			}
			enqueueBatchScript.EvalSha(ctx, pipe, v.batchKeys(b.sub), args...)
		}
	}, func(cmds []redis.Cmder) error { return collectReady(cmds, batches, states) })
	if err != nil {
		return err
	}
	return v.updateReady(ctx, states)
}

// collectReady keeps, per subscriber, the newest ready state the batch
// scripts returned (cmds[i] is batches[i]'s call; later commands are not
// the scripts').
func collectReady(cmds []redis.Cmder, batches []subBatch, states map[string]readyState) error {
	for i, c := range cmds {
		if i >= len(batches) {
			break
		}
		cmd, ok := c.(*redis.Cmd)
		if !ok {
			continue
		}
		if err := cmd.Err(); err != nil {
			return err
		}
		vals, _ := cmd.Val().([]any)
		st, ok := parseReady(vals)
		if !ok {
			continue
		}
		sub := batches[i].sub
		if st.seq > states[sub].seq {
			states[sub] = st
		}
	}
	return nil
}

// claim leases up to limit due chain heads of sub until leaseUntil, the
// least recently served sources first.
func (v *view) claim(ctx context.Context, sub string, now, leaseUntil time.Time, limit int) ([]schemas.ScheduledDelivery, error) {
	var res []any
	err := v.runPipeline(ctx, "claim deliveries of "+sub, func(pipe redis.Pipeliner) {
		claimScript.EvalSha(ctx, pipe, []string{v.srcsKey(sub), v.servedKey(sub), v.seqKey(sub), v.servedSeqKey(sub)},
			v.sub(sub), score(now), score(leaseUntil), limit)
	}, func(cmds []redis.Cmder) error {
		cmd := cmds[0].(*redis.Cmd)
		if err := cmd.Err(); err != nil {
			return err
		}
		res, _ = cmd.Val().([]any)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries of %s: %w", sub, err)
	}
	if len(res) < 2 {
		return nil, fmt.Errorf("claim deliveries of %s: unexpected answer", sub)
	}
	out := make([]schemas.ScheduledDelivery, 0, (len(res)-2)/2)
	var decodeErr error
	for i := 2; i+1 < len(res); i += 2 {
		id, _ := res[i].(string)
		raw, _ := res[i+1].(string)
		r, err := decodeScheduled([]byte(raw))
		if err != nil {
			decodeErr = fmt.Errorf("decode delivery %s: %w", id, err)
			continue
		}
		out = append(out, r)
	}
	// The ready index is not updated here: the lane that claims is
	// running, and touches the index when it stops.
	return out, decodeErr
}

// wake makes sub due at once in the ready index, so that a lane starts for
// it (a subscriber just disabled: its backlog is drained as suppressed).
func (v *view) wake(ctx context.Context, sub string, now time.Time) error {
	seq, err := v.rdb.Incr(ctx, v.seqKey(sub)).Result()
	if err != nil {
		return fmt.Errorf("wake %s: %w", sub, err)
	}
	return v.updateReady(ctx, map[string]readyState{sub: {seq: seq, earliest: strconv.FormatInt(score(now), 10)}})
}

// touch puts sub in the ready index where its earliest due now is.
func (v *view) touch(ctx context.Context, sub string) error {
	var st readyState
	var ok bool
	err := v.runPipeline(ctx, "read the earliest due of "+sub, func(pipe redis.Pipeliner) {
		touchScript.EvalSha(ctx, pipe, []string{v.srcsKey(sub), v.seqKey(sub)})
	}, func(cmds []redis.Cmder) error {
		cmd := cmds[0].(*redis.Cmd)
		if err := cmd.Err(); err != nil {
			return err
		}
		vals, _ := cmd.Val().([]any)
		st, ok = parseReady(vals)
		return nil
	})
	if err != nil || !ok {
		return err
	}
	return v.updateReady(ctx, map[string]readyState{sub: st})
}

// change is one update of the schedule after an attempt: the delivery is
// complete (an outcome), rescheduled (a retry) or given back unattempted.
type change struct {
	rec     schemas.ScheduledDelivery
	kind    changeKind
	outcome string    // complete
	next    time.Time // reschedule, unclaim
}

type changeKind int

const (
	changeComplete changeKind = iota
	changeReschedule
	changeUnclaim
)

// healthCount is one subscriber's attempt outcomes of a batch.
type healthCount struct{ ok, fail int64 }

// apply writes a batch of changes and the subscribers' attempt outcomes in
// one pipeline, then updates the ready index. Every script checks that the
// delivery is still there, so applying a batch twice changes nothing more.
func (v *view) apply(ctx context.Context, changes []change, health map[string]healthCount, now time.Time) error {
	raws := make([][]byte, len(changes))
	for i, c := range changes {
		if c.kind == changeReschedule {
			raw, err := encodeScheduled(c.rec)
			if err != nil {
				return fmt.Errorf("encode delivery %s: %w", c.rec.Notification.ID, err)
			}
			raws[i] = raw
		}
	}
	batches := bySubscriber(len(changes), func(i int) string { return changes[i].rec.Notification.Subscriber })
	bucket := now.Truncate(healthBucket).Unix()
	states := map[string]readyState{}
	err := v.runPipeline(ctx, fmt.Sprintf("apply %d schedule changes", len(changes)), func(pipe redis.Pipeliner) {
		for _, b := range batches {
			args := make([]any, 3, 3+6*len(b.idx))
			args[0], args[1], args[2] = v.sub(b.sub), score(now), v.doneTTL.Milliseconds()
			for _, i := range b.idx {
				a := changeArgs(changes[i], raws[i])
				args = append(args, a[:]...)
			}
			applyBatchScript.EvalSha(ctx, pipe, v.batchKeys(b.sub), args...)
		}
		for sub, h := range health {
			k := v.healthKey(sub)
			if h.ok > 0 {
				pipe.HIncrBy(ctx, k, "ok:"+strconv.FormatInt(bucket, 10), h.ok)
			}
			if h.fail > 0 {
				pipe.HIncrBy(ctx, k, "fail:"+strconv.FormatInt(bucket, 10), h.fail)
			}
			pipe.PExpire(ctx, k, 2*HealthWindow)
		}
	}, func(cmds []redis.Cmder) error { return collectReady(cmds, batches, states) })
	if err != nil {
		return err
	}
	return v.updateReady(ctx, states)
}

// replayArg is the batch scripts' isReplay argument: replays count in
// the replays counter, and are not held back by a recent outcome.
func replayArg(n schemas.Notification) string {
	if n.Source == sourceReplay {
		return "1"
	}
	return "0"
}

// changeArgs are one change's six arguments of applyBatch: kind id chain
// src a b.
func changeArgs(c change, raw []byte) [6]any {
	n := c.rec.Notification
	switch c.kind {
	case changeComplete:
		return [6]any{"c", n.ID, chainOf(n), sourceOf(n), c.outcome, replayArg(n)}
	case changeReschedule:
		return [6]any{"r", n.ID, chainOf(n), sourceOf(n), score(c.rec.At), raw}
	default:
		return [6]any{"u", n.ID, chainOf(n), sourceOf(n), score(c.next), ""}
	}
}

// subscriberState is what the auto-disable decision reads.
type subscriberState struct {
	// backlog counts against the bound: all pending but replays. A
	// replay is the subscriber's own request for a bounded set (the
	// registry caps it), made after it re-enabled delivery; were it held
	// to the bound, a replay of more than the bound would suppress its own
	// tail again.
	backlog  int64
	ok, fail int64 // attempts in the health window
}

// failing: in the window, at least minAttempts attempts and at least half
// of them failed (timeouts, connection errors, non-2xx). A subscriber that
// answers 2xx is never failing, however far behind it is.
func (s subscriberState) failing(minAttempts int64) bool {
	n := s.ok + s.fail
	return n >= minAttempts && s.fail*2 >= n
}

// states reads the backlog and the health of subscribers.
func (v *view) states(ctx context.Context, subs []string, now time.Time) (map[string]subscriberState, error) {
	out := make(map[string]subscriberState, len(subs))
	if len(subs) == 0 {
		return out, nil
	}
	pending := make([]*redis.StringCmd, len(subs))
	replays := make([]*redis.StringCmd, len(subs))
	health := make([]*redis.MapStringStringCmd, len(subs))
	err := v.runPipeline(ctx, "read subscriber states", func(pipe redis.Pipeliner) {
		for i, s := range subs {
			pending[i] = pipe.Get(ctx, v.pendingKey(s))
			replays[i] = pipe.Get(ctx, v.replaysKey(s))
			health[i] = pipe.HGetAll(ctx, v.healthKey(s))
		}
	}, nil)
	if err != nil {
		return nil, err
	}
	from := now.Add(-HealthWindow).Truncate(healthBucket).Unix()
	for i, s := range subs {
		st := subscriberState{backlog: max(intOf(pending[i])-intOf(replays[i]), 0)}
		for k, val := range health[i].Val() {
			kind, b, ok := strings.Cut(k, ":")
			if !ok {
				continue
			}
			bucket, err1 := strconv.ParseInt(b, 10, 64)
			n, err2 := strconv.ParseInt(val, 10, 64)
			if err1 != nil || err2 != nil || bucket < from {
				continue
			}
			switch kind {
			case "ok":
				st.ok += n
			case "fail":
				st.fail += n
			}
		}
		out[s] = st
	}
	return out, nil
}

// readySubscribers returns subscribers with something due by now.
func (v *view) readySubscribers(ctx context.Context, now time.Time, limit int64) ([]string, error) {
	subs, err := v.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: v.readyKey(), Start: "-inf", Stop: strconv.FormatInt(score(now), 10), ByScore: true, Count: limit,
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

// subscriberLag is one subscriber's pending deliveries and how late its
// oldest due one is (0 when nothing is overdue).
type subscriberLag struct {
	sub     string
	pending int64
	late    time.Duration
}

// lags reads every subscriber with pending deliveries (metrics): the
// ready index holds each of them with its earliest due (a claimed head's
// due is its lease end).
func (v *view) lags(ctx context.Context, now time.Time) ([]subscriberLag, error) {
	zs, err := v.rdb.ZRangeWithScores(ctx, v.readyKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read ready index: %w", err)
	}
	if len(zs) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.StringCmd, len(zs))
	err = v.runPipeline(ctx, "read backlogs", func(pipe redis.Pipeliner) {
		for i, z := range zs {
			cmds[i] = pipe.Get(ctx, v.pendingKey(z.Member.(string)))
		}
	}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]subscriberLag, 0, len(zs))
	nowµs := float64(score(now))
	for i, z := range zs {
		l := subscriberLag{sub: z.Member.(string), pending: intOf(cmds[i])}
		if z.Score < nowµs {
			l.late = time.Duration(nowµs-z.Score) * time.Microsecond
		}
		out = append(out, l)
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
	done    map[string]schemas.DoneDelivery
	// doneAfter: older finished deliveries are not remembered (their
	// duplicate filter has expired anyway), which bounds the memory of a
	// rebuild by the recent traffic rather than the topic's retention.
	doneAfter time.Time
	skipped   int
}

type rebuildEntry struct {
	rec schemas.ScheduledDelivery
	// seq is the position of the delivery's first schedule: its place in
	// its entity's chain. A retry keeps it; a replay after done gets a new
	// one, at the end.
	seq int64
}

func newRebuildState() *rebuildState {
	return &rebuildState{pending: map[string]*rebuildEntry{}, done: map[string]schemas.DoneDelivery{}}
}

func (s *rebuildState) apply(env schemas.Envelope) error {
	switch env.Type {
	case schemas.EventDeliveryScheduled:
		var r schemas.ScheduledDelivery
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
	case schemas.EventDeliveryDone:
		var d schemas.DoneDelivery
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return fmt.Errorf("decode %s: %w", env.Type, err)
		}
		if d.Subscriber == "" {
			d.Subscriber = env.Key // the topic is keyed by subscriber
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
	earliest := map[string]map[string]int64{} // sub -> src -> earliest head
	for key, chain := range chains {
		for _, e := range chain {
			n := e.rec.Notification
			raw, err := json.Marshal(e.rec)
			if err != nil {
				return rebuildStats{}, fmt.Errorf("rebuild schedule: encode: %w", err)
			}
			pipe.Set(ctx, v.recKey(n.Subscriber, n.ID), raw, 0)
			pipe.RPush(ctx, key, n.ID)
			counts[n.Subscriber]++
			if n.Source == sourceReplay {
				replays[n.Subscriber]++
			}
		}
		head := chain[0].rec
		sub, src := head.Notification.Subscriber, sourceOf(head.Notification)
		at := score(head.At)
		pipe.ZAdd(ctx, v.dueKey(sub, src), redis.Z{Score: float64(at), Member: head.Notification.ID})
		if earliest[sub] == nil {
			earliest[sub] = map[string]int64{}
		}
		if cur, ok := earliest[sub][src]; !ok || at < cur {
			earliest[sub][src] = at
		}
		if err := flushEvery(false); err != nil {
			return rebuildStats{}, err
		}
	}
	for sub, n := range counts {
		pipe.Set(ctx, v.pendingKey(sub), n, 0)
		if r := replays[sub]; r > 0 {
			pipe.Set(ctx, v.replaysKey(sub), r, 0)
		}
		first := int64(-1)
		for src, at := range earliest[sub] {
			pipe.ZAdd(ctx, v.srcsKey(sub), redis.Z{Score: float64(at), Member: src})
			if first < 0 || at < first {
				first = at
			}
		}
		if first >= 0 {
			pipe.ZAdd(ctx, v.readyKey(), redis.Z{Score: float64(first), Member: sub})
		}
		if err := flushEvery(false); err != nil {
			return rebuildStats{}, err
		}
	}
	for id, d := range s.done {
		if ttl := v.doneTTL - now.Sub(d.At); ttl > time.Millisecond && d.Subscriber != "" {
			pipe.Set(ctx, v.doneKey(d.Subscriber, id), d.Outcome, ttl)
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

// clear deletes the view's keys (not the rebuild lock). SCAN walks one
// server: on a Redis Cluster every master is scanned.
func (v *view) clear(ctx context.Context) error {
	if cc, ok := v.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return v.clearNode(ctx, node) })
	}
	return v.clearNode(ctx, v.rdb)
}

// clearNode deletes the view's keys that SCAN finds on node (deleting
// through the view's client, which routes each key to its slot).
func (v *view) clearNode(ctx context.Context, node redis.Cmdable) error {
	pattern := globEscape(v.prefix) + "*"
	iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		if k := iter.Val(); k != v.rebuildLockKey() {
			batch = append(batch, k)
		}
		if len(batch) == 1000 {
			if err := v.del(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("clear schedule: %w", err)
	}
	return v.del(ctx, batch)
}

// del deletes keys one command each in a pipeline: keys of several
// subscribers are in several cluster slots.
func (v *view) del(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	pipe := v.rdb.Pipeline()
	for _, k := range keys {
		pipe.Del(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("clear schedule: %w", err)
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

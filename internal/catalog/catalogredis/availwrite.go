package catalogredis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/redislock"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Availability pushes are the operators' hot write: a booking system's
// busy morning is thousands a second, across suppliers and many for one.
// Each is still decided under its supplier's lock, as every catalog write
// is, so that existence, scope and versions come from one consistent view;
// but the pushes that arrive while a batch is being written are written
// together as the next batch (group commit): one pipeline takes the locks
// of every supplier in it (with the views' epoch), one reads every rate it
// names (with the epoch again: the fence), one Publish (acks=all) carries
// every change, and one pipeline applies them and releases the locks. A
// lone push is written at once; under load the cost of the round trips is
// shared by the whole batch. Suppliers are spread over availWriters queues
// whose batches are written at once, so one batch's round trips do not
// hold up the others'. Pushes keep their arrival order within a supplier
// (one queue; so do their versions and their events on the topic); a
// supplier whose lock another write holds waits for the next batch, the
// others go on.

// errBusy answers a push whose supplier another write kept locked for the
// whole lock wait.
var errBusy = fmt.Errorf("another change of this supplier or channel is in progress: %w", catalog.ErrUnavailable)

// maxAvailBatch bounds one batch (one Publish, one pipeline).
const maxAvailBatch = 512

// availWriters is how many batches are written at once, each from its own
// queue: a supplier's pushes all go to one queue (by a hash of its id), so
// they keep their order, while another queue's batch takes its locks,
// reads, publishes and applies meanwhile. With one queue the write side's
// throughput was one batch per four round trips (bench/RESULTS.md,
// issue 17).
const availWriters = 4

// availWrite is one PutAvailabilities waiting for its batch.
type availWrite struct {
	sc            catalog.Scope
	sid, pid, rid string
	as            []catalog.Availability
	deadline      time.Time        // busy (503) when its supplier stays locked until then
	done          chan availResult // buffered: the batch never blocks on a caller
}

type availResult struct {
	set catalog.AvailabilitySet
	err error
}

// availQueue holds the pushes waiting for the batch being written.
type availQueue struct {
	mu      sync.Mutex
	pending []*availWrite
	running bool
}

// submit queues w; if no batch is running, the caller becomes the one
// that writes batches until the queue is empty.
func (q *availQueue) submit(w *availWrite) (leader bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, w)
	if q.running {
		return false
	}
	q.running = true
	return true
}

// take returns up to maxAvailBatch waiting pushes; none means the leader
// is done.
func (q *availQueue) take() []*availWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		q.running = false
		return nil
	}
	n := min(len(q.pending), maxAvailBatch)
	batch := q.pending[:n:n]
	q.pending = q.pending[n:]
	return batch
}

// putBack returns pushes of busy suppliers to the front of the queue, in
// their order, ahead of those that arrived since.
func (q *availQueue) putBack(ws []*availWrite) {
	if len(ws) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(ws[:len(ws):len(ws)], q.pending...)
}

// availQueueOf is the queue of sid's pushes (maphash: no allocation on
// the push path).
func (s *Store) availQueueOf(sid string) *availQueue {
	return &s.availQ[maphash.String(s.availSeed, sid)%availWriters]
}

// PutAvailabilities replaces the availabilities of a rate (the operator
// setup path PUT .../rates/{rate_id}/availabilities). They go to the
// availability topic as a snapshot of the rate.
func (s *Store) PutAvailabilities(ctx context.Context, sc catalog.Scope, sid, pid, rid string, as []catalog.Availability) (catalog.AvailabilitySet, error) {
	if as == nil {
		return catalog.AvailabilitySet{}, catalog.Invalid("availabilities", "is required (an array, possibly empty)")
	}
	if err := catalog.ValidateAvailabilities(as, s.now()); err != nil {
		return catalog.AvailabilitySet{}, err
	}
	if !catalog.ValidID(sid) {
		return catalog.AvailabilitySet{}, catalog.NotFound("supplier", sid)
	}
	for i := range as {
		as[i].Start, as[i].End = as[i].Start.UTC(), as[i].End.UTC()
	}
	w := &availWrite{sc: sc, sid: sid, pid: pid, rid: rid, as: as, deadline: time.Now().Add(s.lockWait), done: make(chan availResult, 1)}
	q := s.availQueueOf(sid)
	if q.submit(w) {
		// The batches run detached from any one caller: a caller that
		// goes away must not fail the others' writes. Each batch is
		// bounded by the publish timeout.
		go s.writeAvailBatches(context.WithoutCancel(ctx), q)
	}
	select {
	case r := <-w.done:
		return r.set, r.err
	case <-ctx.Done():
		// The push may still be written by its batch.
		return catalog.AvailabilitySet{}, catalog.Unavailable("write availabilities", ctx.Err())
	}
}

// writeAvailBatches writes the queued pushes, batch after batch, until
// none is left. When every supplier of a batch was locked by other
// writes, it backs off before trying again.
func (s *Store) writeAvailBatches(ctx context.Context, q *availQueue) {
	pause := backoff.New(time.Millisecond, 50*time.Millisecond)
	for {
		batch := q.take()
		if len(batch) == 0 {
			return
		}
		bctx, cancel := context.WithTimeout(ctx, publishTimeout+5*time.Second)
		retry, progressed := s.writeAvailBatch(bctx, batch)
		cancel()
		q.putBack(retry)
		if progressed || len(retry) == 0 {
			pause.Reset()
			continue
		}
		// ctx is detached from the callers (WithoutCancel): the pause
		// always runs its course, as the pushes waiting in the queue need.
		_ = pause.Wait(ctx)
	}
}

// ownerLockScript takes a supplier's write lock like lockScript and
// returns whether the supplier exists and its owner (what the scope check
// of a push needs), not its whole record. KEYS: lock, supplier hash.
// ARGV: token, ttl ms. Returns {"busy"} | {"ok", "1"|"0", owner}.
var ownerLockScript = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'busy'} end
local owner = redis.call('HGET', KEYS[2], 'owner')
if not owner then
  if redis.call('HEXISTS', KEYS[2], 'rec') == 1 then return {'ok', '1', ''} end
  return {'ok', '0', ''}
end
return {'ok', '1', owner}
`)

// PipelinedFence is a Fence whose marker a write reads in its own
// pipelines, saving the round trips (*views.Guard implements it).
type PipelinedFence interface {
	Fence
	// PipeEpoch queues the marker's read (every shard's on a Redis
	// Cluster) in pipe; the func interprets the answer after Exec.
	PipeEpoch(ctx context.Context, pipe redis.Pipeliner) func() (string, error)
}

// rateState is a rate's stored availabilities as the batch goes: the raw
// JSON and the last version.
type rateState struct {
	exists     bool
	bad        error // the stored value could not be read
	raw        []byte
	cur        catalog.AvailabilitySet // decoded from raw only when decoded
	decoded    bool
	curVersion int64
	hasCur     bool
	last       int64
}

// current is the stored set, decoded on demand.
func (st *rateState) current() (catalog.AvailabilitySet, error) {
	if !st.decoded {
		if err := json.Unmarshal(st.raw, &st.cur); err != nil {
			return catalog.AvailabilitySet{}, err
		}
		st.decoded = true
	}
	return st.cur, nil
}

// writeAvailBatch writes one batch and answers each of its pushes but those
// of suppliers another write holds locked (retry; answered busy past their
// deadline). progressed is false when no lock could be taken.
func (s *Store) writeAvailBatch(ctx context.Context, batch []*availWrite) (retry []*availWrite, progressed bool) {
	answer := func(w *availWrite, set catalog.AvailabilitySet, err error) { w.done <- availResult{set: set, err: err} }
	fail := func(ws []*availWrite, err error) {
		for _, w := range ws {
			answer(w, catalog.AvailabilitySet{}, err)
		}
	}
	if s.pub == nil {
		fail(batch, fmt.Errorf("catalog write: no publisher: %w", catalog.ErrUnavailable))
		return nil, true
	}
	fence, _ := s.fence.(PipelinedFence)
	var sids []string
	bySup := map[string][]*availWrite{}
	for _, w := range batch {
		if _, ok := bySup[w.sid]; !ok {
			sids = append(sids, w.sid)
		}
		bySup[w.sid] = append(bySup[w.sid], w)
	}

	// 1. Every supplier's lock (with what it guards), and the epoch.
	epoch, err := s.fenceEpochStart(ctx, fence)
	if err != nil {
		fail(batch, err)
		return nil, true
	}
	token := uuid.NewString()
	lockCmds := make([]*redis.Cmd, len(sids))
	var markerCmd func() (string, error)
	err = s.execScripts(ctx, func(pipe redis.Pipeliner) {
		for i, sid := range sids {
			lockCmds[i] = ownerLockScript.EvalSha(ctx, pipe, []string{s.k.lock(sid), s.k.supplier(sid)}, token, lockTTL.Milliseconds())
		}
		if fence != nil {
			markerCmd = fence.PipeEpoch(ctx, pipe)
		}
	})
	if err != nil {
		fail(batch, catalog.Unavailable("lock suppliers", err))
		return nil, true
	}
	locked := map[string]*catalog.Supplier{}
	var held []string
	now := time.Now()
	for i, sid := range sids {
		res, err := lockCmds[i].StringSlice()
		switch {
		case err != nil:
			fail(bySup[sid], catalog.Unavailable("lock", err))
		case len(res) == 3 && res[0] == "ok":
			held = append(held, sid)
			var sup *catalog.Supplier
			if res[1] == "1" {
				// Scope needs the owner only (canManage): the record
				// itself is not read.
				sup = &catalog.Supplier{Owner: res[2]}
			}
			locked[sid] = sup
		default:
			for _, w := range bySup[sid] {
				if now.After(w.deadline) {
					answer(w, catalog.AvailabilitySet{}, errBusy)
				} else {
					retry = append(retry, w)
				}
			}
		}
	}
	defer func() {
		if len(held) > 0 {
			s.releaseAll(ctx, held, token)
		}
	}()
	if len(held) == 0 {
		return retry, false
	}
	if fence != nil {
		if epoch, err = s.checkEpoch(fence, markerCmd, epoch); err != nil {
			for _, sid := range held {
				fail(bySup[sid], err)
			}
			return retry, true
		}
	}

	// 2. Scope, then one read of every rate the batch names (and the
	// epoch again: nothing was lost while the locks were taken).
	type rk struct{ sid, pid, rid string }
	var live []*availWrite
	for _, sid := range held {
		sup, ok := locked[sid]
		for _, w := range bySup[sid] {
			if !ok {
				continue // answered: undecodable
			}
			// A push by a principal that may not manage the supplier
			// is "not found", as for every write.
			if sup == nil || !w.sc.CanManage(sup) {
				answer(w, catalog.AvailabilitySet{}, catalog.NotFound("supplier", sid))
				continue
			}
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return retry, true
	}
	type reads struct {
		rate *redis.BoolCmd
		cur  *redis.StringCmd
		ver  *redis.StringCmd
	}
	cmds := map[rk]reads{}
	pipe := s.rdb.Pipeline()
	for _, w := range live {
		k := rk{w.sid, w.pid, w.rid}
		if _, ok := cmds[k]; ok {
			continue
		}
		cmds[k] = reads{
			rate: pipe.HExists(ctx, s.k.rates(w.sid, w.pid), w.rid),
			cur:  pipe.HGet(ctx, s.k.avail(w.sid, w.pid), w.rid),
			ver:  pipe.HGet(ctx, s.k.versions(w.sid), verAvail(w.pid, w.rid)),
		}
	}
	if fence != nil {
		markerCmd = fence.PipeEpoch(ctx, pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		fail(live, catalog.Unavailable("read availabilities", err))
		return retry, true
	}
	if fence != nil {
		if _, err := s.checkEpoch(fence, markerCmd, epoch); err != nil {
			fail(live, err)
			return retry, true
		}
	} else if err := s.checkFence(ctx, heldLock{epoch: epoch}); err != nil {
		fail(live, err)
		return retry, true
	}
	states := make(map[rk]*rateState, len(cmds))
	for k, c := range cmds {
		st := &rateState{exists: c.rate.Val()}
		if v, err := c.ver.Result(); err == nil {
			st.last = parseVersion(v)
		}
		if raw, err := c.cur.Result(); err == nil {
			// The stored set's version is all the write needs of it (the
			// bytes are compared as they are): its slots are decoded only
			// to answer a push that changes nothing.
			if _, _, _, v, ok := setHeadFast([]byte(raw)); ok {
				st.raw, st.hasCur, st.curVersion = []byte(raw), true, v
				st.last = max(st.last, v)
			} else if err := json.Unmarshal([]byte(raw), &st.cur); err != nil {
				st.bad = err
			} else {
				st.raw, st.hasCur, st.curVersion, st.decoded = []byte(raw), true, st.cur.Version, true
				st.last = max(st.last, st.cur.Version)
			}
		}
		states[k] = st
	}

	// 3. Each push against the state its batch's earlier pushes left. A
	// set is encoded once; its bytes are compared with the stored ones,
	// and go into the event, the envelope and Redis as they are.
	type pending struct {
		w   *availWrite
		set catalog.AvailabilitySet
	}
	var (
		calls   []scriptCall
		msgs    []stream.Message
		written []pending
	)
	ts := s.timestamp()
	for _, w := range live {
		st := states[rk{w.sid, w.pid, w.rid}]
		switch {
		case !st.exists:
			answer(w, catalog.AvailabilitySet{}, catalog.NotFound("rate", w.rid))
			continue
		case st.bad != nil:
			answer(w, catalog.AvailabilitySet{}, fmt.Errorf("decode stored availabilities: %w", st.bad))
			continue
		}
		next := catalog.AvailabilitySet{SupplierID: w.sid, ProductID: w.pid, RateID: w.rid, Availabilities: w.as}
		if st.hasCur {
			next.Version = st.curVersion
			if bytes.Equal(availSetJSON(next), st.raw) {
				cur, err := st.current()
				if err != nil {
					answer(w, catalog.AvailabilitySet{}, fmt.Errorf("decode stored availabilities: %w", err))
				} else {
					answer(w, cur, nil) // nothing changed: no event
				}
				continue
			}
		}
		next.Version = st.last + 1
		raw := availSetJSON(next)
		st.last, st.cur, st.decoded, st.curVersion, st.hasCur, st.raw = next.Version, next, true, next.Version, true, raw
		ev := catalog.Event{Kind: schemas.CatalogKindAvailability, SupplierID: w.sid, ProductID: w.pid, RateID: w.rid, Availability: &next}
		env := schemas.Envelope{ID: uuid.NewString(), Type: schemas.CatalogEventType(ev.Kind, false), Key: ev.EntityKey(),
			Version: next.Version, Time: ts, Source: s.source, Data: availEventJSON(next, raw)}
		value, ok := envelopeJSON(env)
		if !ok {
			value = catalogwire.MustJSON(env)
		}
		msgs = append(msgs, stream.Message{Topic: ev.Kind.Topic(), Key: []byte(env.Key), Value: value, Time: ts})
		v, t := versionArgs(env.Version, env.Time)
		calls = append(calls, scriptCall{applyFieldScript, []string{s.k.versions(w.sid), s.k.avail(w.sid, w.pid)},
			[]any{verAvail(w.pid, w.rid), v, t, "0", w.rid, raw}})
		written = append(written, pending{w: w, set: next})
	}
	if len(written) == 0 {
		return retry, true
	}

	// 4. One publish: the changes are durable once it returned.
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	err = s.pub.Publish(pctx, msgs...)
	cancel()
	if err != nil {
		for _, p := range written {
			answer(p.w, catalog.AvailabilitySet{}, catalog.Unavailable(fmt.Sprintf("publish %d catalog events", len(msgs)), err))
		}
		return retry, true
	}
	// 5. Applied with the locks' release (deferred above) in one go.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.applyAndRelease(actx, calls, held, token); err != nil {
		s.log.Warn("catalog: published availability changes not yet in Redis; processors/catalogchange will apply them",
			"changes", len(calls), "err", err)
	} else {
		held = nil // released with the apply
	}
	for _, p := range written {
		answer(p.w, p.set, nil)
	}
	return retry, true
}

// fenceEpochStart is the views' epoch before a write reads anything: read
// in the write's first pipeline when the fence allows it ("" then; the
// pipeline's answer is checked by checkEpoch), else here.
func (s *Store) fenceEpochStart(ctx context.Context, fence PipelinedFence) (string, error) {
	if s.fence == nil || fence != nil {
		return "", nil
	}
	return s.viewsEpoch(ctx)
}

// checkEpoch reads the marker's answer of a pipeline: it must be a
// complete epoch, and the one want names when want is not "".
func (s *Store) checkEpoch(_ PipelinedFence, read func() (string, error), want string) (string, error) {
	e, err := read()
	if err != nil {
		return "", catalog.Unavailable("read the views epoch", err)
	}
	if e == "" || (want != "" && e != want) {
		return "", errViewsRebuilding
	}
	return e, nil
}

// execScripts runs a pipeline of script calls, loading the scripts once
// when Redis does not know them (pipelined EVALSHA does not fall back to
// EVAL). Only idempotent or failed-as-a-whole calls may go through it: a
// lock taken by the first run makes the second run's "busy", which the
// caller's retry then resolves after the lock's TTL at worst; in practice
// NOSCRIPT fails every call of a script alike.
func (s *Store) execScripts(ctx context.Context, fill func(redis.Pipeliner)) error {
	for try := 0; ; try++ {
		pipe := s.rdb.Pipeline()
		fill(pipe)
		cmds, err := pipe.Exec(ctx)
		if err != nil && try == 0 && hasNoScript(cmds) {
			for _, sc := range []*redis.Script{lockScript, ownerLockScript, redislock.ReleaseScript, applyFieldScript, applyFieldsScript} {
				if err := sc.Load(ctx, s.rdb).Err(); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
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

// applyAndRelease applies the changes and releases the locks in one
// pipeline; on failure it applies each on its own (the upserts are
// idempotent), loading the script if Redis lost it, then releases.
func (s *Store) applyAndRelease(ctx context.Context, calls []scriptCall, held []string, token string) error {
	releases := make(map[string]string, len(held))
	for _, sid := range held {
		releases[s.k.versions(sid)] = s.k.lock(sid)
	}
	pipe := s.rdb.Pipeline()
	queueFields(ctx, pipe, calls, releases, token)
	for _, lock := range releases { // those no applyFields call released
		redislock.ReleaseScript.EvalSha(ctx, pipe, []string{lock}, token)
	}
	cmds, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	if hasNoScript(cmds) {
		// Loaded for the next batch; this one takes the slow path below.
		_ = applyFieldsScript.Load(ctx, s.rdb).Err()
	}
	for _, c := range calls {
		if err := c.script.Run(ctx, s.rdb, c.keys, c.args...).Err(); err != nil {
			return catalog.Unavailable("apply availabilities", err)
		}
	}
	s.releaseAll(ctx, held, token)
	return nil
}

// releaseAll drops the batch's locks (best effort: they expire anyway).
func (s *Store) releaseAll(ctx context.Context, sids []string, token string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err := s.execScripts(rctx, func(pipe redis.Pipeliner) {
		for _, sid := range sids {
			redislock.ReleaseScript.EvalSha(rctx, pipe, []string{s.k.lock(sid)}, token)
		}
	})
	if err != nil {
		s.log.Warn("catalog: releasing write locks failed; they expire by themselves", "locks", len(sids), "err", err)
	}
}

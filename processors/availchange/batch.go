package availchange

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/redisbatch"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/views"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// maxCASRounds bounds how many times the rates of a batch whose state
// changed under us are redone before the batch fails (and is retried by
// the consumer).
const maxCASRounds = 5

// casStates sets (or deletes) each rate's state only if it is still what
// the batch read. KEYS: the states, all of one supplier (one slot); ARGV,
// per key: "1" if the key existed then, its value, "set" or "del", the new
// value. Returns per key 1 = written, 0 = another writer got there first.
// Comparing the whole value (a few hundred bytes in the compact form)
// needs no version field, and ABA is harmless: the diff is a function of
// the value's bytes. One call per supplier and batch rather than per rate:
// the call, not the GET and SET, was most of what a rate cost Redis.
var casStates = redis.NewScript(`
local out = {}
for i, key in ipairs(KEYS) do
  local a = (i - 1) * 4
  local cur = redis.call('GET', key)
  local ok = 1
  if ARGV[a + 1] == '1' then
    if cur ~= ARGV[a + 2] then ok = 0 end
  elseif cur then
    ok = 0
  end
  if ok == 1 then
    if ARGV[a + 3] == 'del' then
      redis.call('DEL', key)
    else
      redis.call('SET', key, ARGV[a + 4])
    end
  end
  out[i] = ok
end
return out
`)

// bySlot splits rates into casStates calls: rates of one cluster slot
// each (a supplier's states share its hash tag), at most
// redisbatch.MaxPerCall.
func bySlot(rates []*rate) [][]*rate {
	slot := func(i int) string { return strconv.Itoa(views.Slot(rates[i].key)) }
	groups := redisbatch.Split(len(rates), slot, redisbatch.MaxPerCall)
	out := make([][]*rate, len(groups))
	for g, idx := range groups {
		out[g] = make([]*rate, len(idx))
		for j, i := range idx {
			out[g][j] = rates[i]
		}
	}
	return out
}

// rate is one rate's events of a batch, in their order, and what one
// round made of them.
type rate struct {
	key string
	ins []input

	// read
	old    []byte
	exists bool
	// computed
	write    bool // the state must be saved (something was diffed or deleted)
	deleted  bool // ... by deleting the key
	conflict bool // another writer changed the state since the read: redo
	next     []byte
	results  []string
	changes  int
	notes    int
	out      []stream.Message
	err      error
}

// minPerWorker is the least work (records or rates) worth a goroutine.
const minPerWorker = 32

// parallel runs f(0) … f(n-1) in contiguous chunks on up to GOMAXPROCS
// goroutines; a small n runs inline (Handle's batch of one does).
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/minPerWorker)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				f(i)
			}
		})
	}
	wg.Wait()
}

// HandleBatch processes a consumer's batch: it decodes the messages and
// groups them by rate (keeping each rate's order), reads every rate's
// state in one Redis pipeline, diffs in memory (a rate's second event sees
// the first's new state), reads each product's bindings and each
// subscriber's rule once, publishes every notification and history event
// of the batch in one Publish, then saves every state in one pipeline of
// compare-and-set scripts. A rate whose state another writer changed since
// the read is redone alone (at most maxCASRounds times). As with Handle,
// a crash between the publish and the save redoes the same diffs with the
// same ids. Unusable records are logged and skipped; Redis and broker
// errors are returned (the consumer retries the batch).
func (p *Processor) HandleBatch(ctx context.Context, msgs []stream.Message) error {
	type decoded struct {
		in  input
		ok  bool
		err error
	}
	dec := make([]decoded, len(msgs))
	var fastN, slowN atomic.Int64
	parallel(len(msgs), func(i int) {
		if len(msgs[i].Value) > 0 {
			var fast bool
			dec[i].in, dec[i].ok, fast, dec[i].err = decode(msgs[i].Value)
			if fast {
				fastN.Add(1)
			} else {
				slowN.Add(1)
			}
		}
	})
	p.decodedFast.Add(float64(fastN.Load()))
	p.decodedSlow.Add(float64(slowN.Load()))
	var rates []*rate
	byKey := make(map[string]*rate)
	for i, d := range dec {
		if d.err != nil {
			p.log.Error("skipping an unusable availability record", "partition", msgs[i].Partition, "offset", msgs[i].Offset, "err", d.err)
			p.events.WithLabelValues("unknown", "invalid").Inc()
			continue
		}
		if !d.ok {
			continue
		}
		in := d.in
		key := p.stateKey(in.sid, in.pid, in.rid)
		r := byKey[key]
		if r == nil {
			r = &rate{key: key}
			byKey[key] = r
			rates = append(rates, r)
		}
		r.ins = append(r.ins, in)
	}
	lk := &lookup{p: p}
	pending := rates
	for range maxCASRounds {
		if len(pending) == 0 {
			return nil
		}
		if err := p.readStates(ctx, pending); err != nil {
			return err
		}
		if err := lk.prefetch(ctx, pending); err != nil {
			return err
		}
		now := p.opts.Clock()
		// Rates are independent: diff them on every core, then publish
		// their messages in the batch's rate order.
		parallel(len(pending), func(i int) {
			r := pending[i]
			r.out, r.err = p.apply(ctx, lk, r, now, nil)
		})
		n := 0
		for _, r := range pending {
			if r.err != nil {
				return r.err
			}
			n += len(r.out)
		}
		out := make([]stream.Message, 0, n)
		for _, r := range pending {
			out = append(out, r.out...)
			r.out = nil
		}
		if len(out) > 0 {
			if err := p.opts.Publisher.Publish(ctx, out...); err != nil {
				return fmt.Errorf("publish %d availability events: %w", len(out), err)
			}
		}
		conflicts, err := p.writeStates(ctx, pending)
		if err != nil {
			return err
		}
		for _, r := range pending {
			if !r.conflict {
				p.count(r)
			}
		}
		pending = conflicts
	}
	if len(pending) == 0 {
		return nil
	}
	return fmt.Errorf("availability state %s and %d more: too much contention", pending[0].key, len(pending)-1)
}

func (p *Processor) count(r *rate) {
	for i, res := range r.results {
		p.events.WithLabelValues(r.ins[i].source, res).Inc()
	}
	p.changes.Add(float64(r.changes))
	p.notes.Add(float64(r.notes))
}

// readStates GETs the states of the rates in one pipeline.
func (p *Processor) readStates(ctx context.Context, rates []*rate) error {
	cmds := make([]*redis.StringCmd, len(rates))
	_, err := p.opts.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, r := range rates {
			cmds[i] = pipe.Get(ctx, r.key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read %d availability states: %w", len(rates), err)
	}
	for i, r := range rates {
		b, err := cmds[i].Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			r.old, r.exists = nil, false
		case err != nil:
			return fmt.Errorf("availability state %s: %w", r.key, err)
		default:
			r.old, r.exists = b, true
		}
	}
	return nil
}

// apply runs the rate's events over its state read from Redis, appends
// their notifications and history events to out and keeps the state to
// save in r.
func (p *Processor) apply(ctx context.Context, lk *lookup, r *rate, now time.Time, out []stream.Message) ([]stream.Message, error) {
	st, err := decodeState(r.old)
	if err != nil {
		p.log.Warn("discarding an unreadable availability state", "key", r.key, "err", err)
		st = stored{Versions: map[string]int64{}}
	}
	r.write, r.deleted, r.next = false, false, nil
	r.results = r.results[:0]
	r.changes, r.notes = 0, 0
	for _, in := range r.ins {
		changes, result := step(&st, in, now)
		r.results = append(r.results, result)
		switch result {
		case "older":
			continue
		case "deleted":
			r.write, r.deleted = true, true
			continue
		}
		r.write, r.deleted = true, false
		var notes int
		if out, notes, err = p.messages(ctx, lk, in, changes, now, out); err != nil {
			return nil, err
		}
		r.changes += len(changes)
		r.notes += notes
	}
	if r.write && !r.deleted {
		r.next = encodeState(make([]byte, 0, 16+16*len(st.Slots)+8*len(st.Coverage)), st)
	}
	return out, nil
}

// step applies one event to a rate's state in place and returns the
// changes it found and the result: "older" (an older version of its
// source than the last applied: skipped), "deleted" (the rate's
// availabilities were deleted: the state is emptied), or "diffed". It is
// the whole state transition, shared by the processor and RebuildState.
func step(st *stored, in input, now time.Time) ([]Change, string) {
	if in.version < st.Versions[in.source] {
		return nil, "older"
	}
	if in.deleted {
		*st = stored{Versions: map[string]int64{}}
		return nil, "deleted"
	}
	changes, next := Diff(st.State, in.scope, in.slots)
	st.State = next.Prune(now.Add(-24 * time.Hour))
	if st.Versions == nil {
		st.Versions = map[string]int64{}
	}
	st.Versions[in.source] = in.version
	return changes, "diffed"
}

// writeStates saves the states of the rates that changed in one pipeline
// of compare-and-set scripts and returns the rates whose state another
// writer changed since readStates (to redo).
func (p *Processor) writeStates(ctx context.Context, rates []*rate) ([]*rate, error) {
	var todo []*rate
	for _, r := range rates {
		if r.write {
			todo = append(todo, r)
		}
	}
	var conflicts []*rate
	for _, r := range rates {
		r.conflict = false
	}
	for attempt := 0; len(todo) > 0; attempt++ {
		groups := bySlot(todo)
		cmds := make([]*redis.Cmd, len(groups))
		_, _ = p.opts.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for g, rs := range groups {
				keys := make([]string, len(rs))
				args := make([]any, 0, 4*len(rs))
				for i, r := range rs {
					existed, op := "0", "set"
					if r.exists {
						existed = "1"
					}
					if r.deleted {
						op = "del"
					}
					keys[i] = r.key
					args = append(args, existed, r.old, op, r.next)
				}
				cmds[g] = casStates.EvalSha(ctx, pipe, keys, args...)
			}
			return nil
		})
		var noScript []*rate
		for g, rs := range groups {
			oks, err := cmds[g].Int64Slice()
			switch {
			case err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") && attempt == 0:
				noScript = append(noScript, rs...) // not run: load it, run again
				continue
			case err != nil:
				return nil, fmt.Errorf("save availability state %s: %w", rs[0].key, err)
			case len(oks) != len(rs):
				return nil, fmt.Errorf("save availability state %s: %d answers for %d rates", rs[0].key, len(oks), len(rs))
			}
			for i, r := range rs {
				if oks[i] == 0 {
					r.conflict = true
					conflicts = append(conflicts, r)
				}
			}
		}
		if len(noScript) > 0 {
			if err := casStates.Load(ctx, p.opts.Redis).Err(); err != nil {
				return nil, fmt.Errorf("load the availability state script: %w", err)
			}
		}
		todo = noScript
	}
	return conflicts, nil
}

// lookup answers who hears of a rate's changes, reading each product's
// bindings, each channel's subscribers and each subscriber's rule at most
// once per batch: the batch is decided as of one instant.
type lookup struct {
	mu       sync.Mutex // rates are diffed in parallel; a miss is read once
	p        *Processor
	bindings map[catalog.ProductRef][]catalog.Binding
	subs     map[string][]string
	rules    map[string]*registry.Rule // nil: no availability rule
}

// prefetch reads the bindings of every product of rates in one round trip
// before the rates are diffed in parallel: read one at a time under the
// lookup's lock, a batch over many products waited for as many round
// trips in a row (bench/RESULTS.md, issue 17).
func (l *lookup) prefetch(ctx context.Context, rates []*rate) error {
	var refs []catalog.ProductRef
	seen := make(map[catalog.ProductRef]bool)
	l.mu.Lock()
	for _, r := range rates {
		if len(r.ins) == 0 {
			continue
		}
		ref := catalog.ProductRef{SupplierID: r.ins[0].sid, ProductID: r.ins[0].pid}
		if _, ok := l.bindings[ref]; ok || seen[ref] {
			continue
		}
		seen[ref] = true
		refs = append(refs, ref)
	}
	l.mu.Unlock()
	if len(refs) == 0 {
		return nil
	}
	bss, err := l.p.opts.Bindings.BindingsOf(ctx, refs)
	if err != nil {
		return fmt.Errorf("bindings of %d products: %w", len(refs), err)
	}
	if len(bss) != len(refs) {
		return fmt.Errorf("bindings of %d products: %d answers", len(refs), len(bss))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bindings == nil {
		l.bindings = make(map[catalog.ProductRef][]catalog.Binding, len(refs))
	}
	for i, ref := range refs {
		l.bindings[ref] = bss[i]
	}
	return nil
}

func (l *lookup) Bindings(ctx context.Context, sid, pid string) ([]catalog.Binding, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := catalog.ProductRef{SupplierID: sid, ProductID: pid}
	if bs, ok := l.bindings[k]; ok {
		return bs, nil
	}
	bss, err := l.p.opts.Bindings.BindingsOf(ctx, []catalog.ProductRef{k})
	if err != nil {
		return nil, fmt.Errorf("bindings of %s/%s: %w", sid, pid, err)
	}
	if len(bss) != 1 {
		return nil, fmt.Errorf("bindings of %s/%s: %d answers", sid, pid, len(bss))
	}
	if l.bindings == nil {
		l.bindings = make(map[catalog.ProductRef][]catalog.Binding)
	}
	l.bindings[k] = bss[0]
	return bss[0], nil
}

func (l *lookup) OnChannel(ctx context.Context, channelID string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if subs, ok := l.subs[channelID]; ok {
		return subs, nil
	}
	subs, err := l.p.opts.Subscribers.OnChannel(ctx, channelID)
	if err != nil {
		return nil, fmt.Errorf("subscribers of channel %s: %w", channelID, err)
	}
	if l.subs == nil {
		l.subs = make(map[string][]string)
	}
	l.subs[channelID] = subs
	return subs, nil
}

// Rule returns the subscriber's availability rule, nil if it has none.
func (l *lookup) Rule(ctx context.Context, sub string) (*registry.Rule, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.rules[sub]; ok {
		return r, nil
	}
	rule, err := l.p.opts.Rules.Rule(ctx, sub, schemas.TypeAvailability)
	var r *registry.Rule
	switch {
	case errors.Is(err, registry.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("availability rule of %s: %w", sub, err)
	default:
		r = &rule
	}
	if l.rules == nil {
		l.rules = make(map[string]*registry.Rule)
	}
	l.rules[sub] = r
	return r, nil
}

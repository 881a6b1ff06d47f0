package catalogredis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// memKV is the catalog's view in memory: the same keys, hashes and sets as
// in Redis, written by the same versioned upserts (the apply scripts of
// store.go, run here in Go: apply). It holds what reseller reads need:
// every catalog topic but the availability sets.
type memKV struct {
	mu     sync.RWMutex
	hashes map[string]map[string]string
	sets   map[string]map[string]struct{}
	strs   map[string]string
	// gen counts the upserts that changed the view; answers memoized
	// from it (listcache.go) are good while it has not moved.
	gen atomic.Uint64
}

func newMemKV() *memKV {
	return &memKV{hashes: map[string]map[string]string{}, sets: map[string]map[string]struct{}{}, strs: map[string]string{}}
}

// apply runs one versioned upsert as its Lua script does in Redis; it
// reports whether the event changed the view.
func (m *memKV) apply(c scriptCall) (bool, error) {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		switch v := a.(type) {
		case string:
			args[i] = v
		case []byte:
			args[i] = string(v)
		default:
			args[i] = fmt.Sprint(v)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	changed, err := m.applyLocked(c.script, c.keys, args)
	if changed {
		m.gen.Add(1)
	}
	return changed, err
}

func (m *memKV) applyLocked(script *redis.Script, k, args []string) (bool, error) {
	switch script {
	case applySupplierScript:
		if len(k) < 5 || len(args) < 11 {
			return false, fmt.Errorf("supplier upsert: %d keys, %d args", len(k), len(args))
		}
		if !m.newer(k[0], "s", args[0], args[1]) {
			return false, nil
		}
		if args[2] == "1" {
			delete(m.hashes, k[1])
			m.srem(k[2], args[3])
			m.srem(k[3], args[3])
			m.strs[k[4]] = "o:" + args[10]
		} else {
			m.hset(k[1], "rec", args[4])
			m.hset(k[1], "v12", args[5])
			m.hset(k[1], "v13", args[6])
			m.hset(k[1], "v13c", args[7])
			m.hset(k[1], "code", args[8])
			m.hset(k[1], "partnerId", args[9])
			m.hset(k[1], "owner", args[10])
			m.sadd(k[2], args[3])
			m.sadd(k[3], args[3])
			delete(m.strs, k[4])
		}
		return true, nil
	case applyFieldScript:
		if len(k) < 2 || len(args) < 6 {
			return false, fmt.Errorf("field upsert: %d keys, %d args", len(k), len(args))
		}
		if !m.newer(k[0], args[0], args[1], args[2]) {
			return false, nil
		}
		if args[3] == "1" {
			m.hdel(k[1], args[4])
		} else {
			m.hset(k[1], args[4], args[5])
		}
		return true, nil
	case applyBindingScript:
		if len(k) < 5 || len(args) < 9 {
			return false, fmt.Errorf("binding upsert: %d keys, %d args", len(k), len(args))
		}
		if !m.newer(k[0], args[0], args[1], args[2]) {
			return false, nil
		}
		cid, pid, sid := args[4], args[5], args[6]
		if args[3] == "1" {
			if m.hdel(k[1], cid) {
				if m.hincr(k[2], cid, -1) <= 0 {
					m.hdel(k[2], cid)
				}
			}
			m.hdel(k[3], pid)
			if len(m.hashes[k[3]]) == 0 {
				m.srem(k[4], sid)
			}
		} else {
			if m.hset(k[1], cid, args[7]) {
				m.hincr(k[2], cid, 1)
			}
			m.hset(k[3], pid, args[8])
			m.sadd(k[4], sid)
		}
		return true, nil
	}
	return false, fmt.Errorf("no in-memory form of this upsert")
}

// newer is newerLua: true (and the version recorded) when (v, t) is after
// the entity's last applied event.
func (m *memKV) newer(key, field, v, t string) bool {
	if cur, ok := m.hashes[key][field]; ok {
		cv, ct, _ := strings.Cut(cur, ":")
		cvn, _ := strconv.ParseInt(cv, 10, 64)
		ctn, _ := strconv.ParseInt(ct, 10, 64)
		nv, _ := strconv.ParseInt(v, 10, 64)
		nt, _ := strconv.ParseInt(t, 10, 64)
		if nv < cvn || (nv == cvn && nt <= ctn) {
			return false
		}
	}
	m.hset(key, field, v+":"+t)
	return true
}

// hset reports whether the field is new (as HSET's reply does).
func (m *memKV) hset(key, field, val string) bool {
	h := m.hashes[key]
	if h == nil {
		h = map[string]string{}
		m.hashes[key] = h
	}
	_, had := h[field]
	h[field] = val
	return !had
}

func (m *memKV) hdel(key, field string) bool {
	h := m.hashes[key]
	if _, ok := h[field]; !ok {
		return false
	}
	delete(h, field)
	if len(h) == 0 {
		delete(m.hashes, key)
	}
	return true
}

func (m *memKV) hincr(key, field string, by int64) int64 {
	n, _ := strconv.ParseInt(m.hashes[key][field], 10, 64)
	n += by
	m.hset(key, field, strconv.FormatInt(n, 10))
	return n
}

func (m *memKV) sadd(key, member string) {
	s := m.sets[key]
	if s == nil {
		s = map[string]struct{}{}
		m.sets[key] = s
	}
	s[member] = struct{}{}
}

func (m *memKV) srem(key, member string) {
	s := m.sets[key]
	delete(s, member)
	if len(s) == 0 {
		delete(m.sets, key)
	}
}

// memBatch is a kvBatch answered from memory. It holds the read lock from
// its first read to exec, so a batch reads one state, as a pipeline of
// reads in Redis does.
type memBatch struct {
	m      *memKV
	locked bool
	// strs holds the first results of hget: a reseller's read makes two or
	// three, which then cost no allocation of their own.
	strs [4]kvStr
	n    int
}

func (m *memKV) batch() *memBatch { return &memBatch{m: m} }

// str is a result slot for hget.
func (b *memBatch) str(val string, ok bool) *kvStr {
	if b.n < len(b.strs) {
		r := &b.strs[b.n]
		b.n++
		r.val, r.ok = val, ok
		return r
	}
	return &kvStr{val: val, ok: ok}
}

func (b *memBatch) lock() {
	if !b.locked {
		b.m.mu.RLock()
		b.locked = true
	}
}

func (b *memBatch) hget(key, field string) *kvStr {
	b.lock()
	v, ok := b.m.hashes[key][field]
	return b.str(v, ok)
}

func (b *memBatch) hexists(key, field string) *kvBool {
	b.lock()
	_, ok := b.m.hashes[key][field]
	return &kvBool{val: ok}
}

func (b *memBatch) hmget(key string, fields ...string) []*kvStr {
	b.lock()
	h := b.m.hashes[key]
	out := make([]*kvStr, len(fields))
	for i, f := range fields {
		v, ok := h[f]
		out[i] = &kvStr{val: v, ok: ok}
	}
	return out
}

func (b *memBatch) hvals(key string) *kvStrs {
	b.lock()
	h := b.m.hashes[key]
	out := make([]string, 0, len(h))
	for _, v := range h {
		out = append(out, v)
	}
	return &kvStrs{val: out}
}

func (b *memBatch) hgetallSorted(key string) *kvPairs {
	b.lock()
	return &kvPairs{val: sortedPairs(b.m.hashes[key])}
}

func (b *memBatch) smembers(key string) *kvStrs {
	b.lock()
	s := b.m.sets[key]
	out := make([]string, 0, len(s))
	for v := range s {
		out = append(out, v)
	}
	return &kvStrs{val: out}
}

func (b *memBatch) exec(context.Context) error {
	if b.locked {
		b.m.mu.RUnlock()
		b.locked = false
	}
	return nil
}

package httpapi

import (
	"bytes"
	"hash/maphash"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/query/apierror"
)

// HeaderRetryAfter is set on 429 answers: whole seconds, at least 1
// (RFC 9110, section 10.2.3, delay-seconds form).
const HeaderRetryAfter = "Retry-After"

// Bounds of the limiter's memory (issue 9: a flood of random keys must not
// grow memory without bound).
const (
	// defaultRateLimitKeys is Options.RateLimitKeys' default: buckets held
	// at most, about 9 MiB of map at the high-water mark (measured by
	// TestLimiter_MemoryAtTheBound). Go maps do not shrink, so the
	// high-water mark stays; the bound is what caps it.
	defaultRateLimitKeys = 1 << 18
	// limiterShards is the number of independently locked shards: enough
	// that many cores rarely meet on one mutex (a hot key still meets
	// itself: its bucket is one number), few enough to cost nothing idle.
	limiterShards = 256
	// minShardKeys keeps shards useful when RateLimitKeys is small: fewer
	// shards rather than shards of one bucket.
	minShardKeys = 16
)

// limiter is the per-API-key token bucket of issue 9, in its one-number
// form (GCRA, the "generic cell rate algorithm" of ATM networks): instead
// of tokens and a refill time, a bucket is its theoretical arrival time
// (tat), the instant at which it would be full again. A request is
// admitted when, after charging it one interval, the bucket would run
// ahead of now by at most the burst window; that is exactly a token bucket
// of RateBurst tokens refilled at RateLimit per second, with integer
// arithmetic and one int64 of state per key.
//
// Keys are 64-bit seeded hashes (hash/maphash, a random seed per process)
// of the X-API-Key value, or of the client's address for requests without
// a key. The limiter never holds a key itself, and a new key allocates
// nothing but, now and then, map growth. Two keys share a bucket only on a
// 64-bit hash collision, which a client cannot aim for without the seed.
//
// It is written here rather than taken from golang.org/x/time/rate: that
// Limiter is one mutex-guarded object per key with no eviction, so the
// sharded, bounded map around it would be this file anyway, plus a
// pointer and a lock per key.
type limiter struct {
	interval int64 // ns of one token: 1 s / RateLimit
	window   int64 // ns a bucket may run ahead of now: RateBurst tokens
	epoch    time.Time

	keySeed, ipSeed maphash.Seed

	shift    uint // h >> shift is the shard of hash h
	shardCap int  // buckets per shard at most
	shards   []limiterShard
}

type limiterShard struct {
	mu  sync.Mutex
	tat map[uint64]int64 // hash -> theoretical arrival time, ns since epoch
	// Pad to a cache line so that two cores working on neighbouring
	// shards do not invalidate each other's line (false sharing).
	_ [64 - 16]byte
}

// newLimiter returns nil when rate is 0 (limiting off). burst <= 0 takes
// 2 x rate, the ratio of the config defaults (5000/s, 10000); maxKeys <= 0
// takes defaultRateLimitKeys.
func newLimiter(rate, burst, maxKeys int, now time.Time) *limiter {
	if rate <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = 2 * rate
	}
	if maxKeys <= 0 {
		maxKeys = defaultRateLimitKeys
	}
	interval := max(int64(time.Second)/int64(rate), 1)
	// A burst so large that the window overflows is unlimited in
	// practice; clamp instead of wrapping around.
	window := int64(math.MaxInt64 / 4)
	if int64(burst) < window/interval {
		window = int64(burst) * interval
	}
	n := limiterShards
	for n > 1 && maxKeys/n < minShardKeys {
		n /= 2
	}
	bits := uint(0)
	for 1<<bits < n {
		bits++
	}
	l := &limiter{
		interval: interval, window: window, epoch: now,
		keySeed: maphash.MakeSeed(), ipSeed: maphash.MakeSeed(),
		shift: 64 - bits, shardCap: max(maxKeys/n, 1),
		shards: make([]limiterShard, n),
	}
	for i := range l.shards {
		l.shards[i].tat = map[uint64]int64{}
	}
	return l
}

// bound is the most buckets the limiter holds.
func (l *limiter) bound() int { return l.shardCap * len(l.shards) }

// allowKey charges one request to the bucket of an authenticated key. It
// returns false and the time until the request would be admitted when it
// is over the limit. Only a request that proved the key is charged to it:
// keys are not secret, and charging the key of a failed attempt would let
// anyone who knows a reseller's key drain that reseller's bucket.
func (l *limiter) allowKey(key []byte, t time.Time) (bool, time.Duration) {
	return l.allow(maphash.Bytes(l.keySeed, key), int64(t.Sub(l.epoch)))
}

// failed charges a failed authentication (missing, unknown or wrong
// credentials) to the client address: false and the wait when the address
// is over its bucket. A flood of bad credentials from one address is
// refused, one secret hash each (BenchmarkRefused).
func (l *limiter) failed(ip net.IP, t time.Time) (bool, time.Duration) {
	return l.allow(l.ipHash(ip), int64(t.Sub(l.epoch)))
}

// ipHash hashes an IPv4 address whole and an IPv6 address by its /64: a
// single host usually holds a whole /64 and could otherwise rotate through
// it to get a fresh bucket per request.
func (l *limiter) ipHash(ip net.IP) uint64 {
	if ip4 := ip.To4(); ip4 != nil {
		return maphash.Bytes(l.ipSeed, ip4)
	}
	if len(ip) == net.IPv6len {
		return maphash.Bytes(l.ipSeed, ip[:8])
	}
	return maphash.Bytes(l.ipSeed, ip)
}

// allow is the GCRA step for hash h at now (ns since epoch). The critical
// section is a map lookup and store, so one hot key serialises only its own
// shard, and only for tens of nanoseconds.
func (l *limiter) allow(h uint64, now int64) (bool, time.Duration) {
	sh := &l.shards[h>>l.shift]
	sh.mu.Lock()
	tat, found := sh.tat[h]
	if !found || tat < now {
		tat = now // a bucket cannot be fuller than full
	}
	next := tat + l.interval
	if over := next - now - l.window; over > 0 {
		sh.mu.Unlock()
		return false, time.Duration(over)
	}
	if !found && len(sh.tat) >= l.shardCap {
		sh.evict(now)
	}
	sh.tat[h] = next
	sh.mu.Unlock()
	return true, 0
}

// evictSample is how many buckets evict looks at: enough that the bucket
// it drops is almost always one that has refilled or nearly so, few enough
// that a flood of new keys costs O(1) per key however full the shards are.
const evictSample = 8

// evict makes room for one bucket, looking at evictSample buckets from a
// random place in the shard (Go randomises where a map's iteration
// starts). It drops each of them that has refilled (tat <= now): a full
// bucket is the same as no bucket, so that loses nothing. Only if none
// has, it drops the sampled bucket closest to full, whose key gets back the
// fewest tokens it should not have; a drained key is dropped only if every
// bucket sampled is more drained than it.
func (sh *limiterShard) evict(now int64) {
	var victim uint64
	victimTat, freed, seen := int64(math.MaxInt64), false, 0
	for h, tat := range sh.tat {
		if tat <= now {
			delete(sh.tat, h)
			freed = true
		} else if tat < victimTat {
			victim, victimTat = h, tat
		}
		if seen++; seen == evictSample {
			break
		}
	}
	if !freed {
		delete(sh.tat, victim)
	}
}

// len is the number of buckets held (tests and the bound's report).
func (l *limiter) len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.tat)
		sh.mu.Unlock()
	}
	return n
}

// retryAfterSeconds is wait in whole seconds, rounded up, at least 1:
// Retry-After has no fractions, and 0 would invite an immediate retry that
// is still refused.
func retryAfterSeconds(wait time.Duration) int {
	secs := int((wait + time.Second - 1) / time.Second)
	return max(secs, 1)
}

// rateLimited answers 429 RATE_LIMITED with Retry-After, and counts it by
// route group. The answer names neither the key nor the address.
func (s *Server) rateLimited(r *Request, rt *route, wait time.Duration) {
	rt.limited.Inc()
	rf := refusalOneSecond
	if secs := retryAfterSeconds(wait); secs != 1 {
		rf = newRefusal(secs) // not with whole-number rates: a wait is at most one interval
	}
	if rt.dialect != nil {
		r.Ctx.Response.Header.Set(HeaderRetryAfter, rf.secs)
		rt.dialect.WriteError(r.Ctx, r.ID, rf.err, rf.err)
		return
	}
	rf.write(r.Ctx, r.ID)
}

// refusal is the 429 answer for one Retry-After value, encoded once: under
// a flood past the limit the refusal is what the server does most, and it
// must cost less than the secret hash it saves (BenchmarkRefused). The
// body is writeError's encoding of the error object, cut around the
// request id, so the two cannot differ (TestRefusal_IsTheErrorObject).
type refusal struct {
	secs           string
	err            *apierror.Error
	prefix, suffix []byte
}

// With whole-number rates a wait is at most one interval, at most a
// second, so Retry-After is always 1 and this is the only refusal built.
var refusalOneSecond = newRefusal(1)

func newRefusal(secs int) *refusal {
	v := strconv.Itoa(secs)
	rf := &refusal{secs: v, err: &apierror.Error{
		Code: apierror.RateLimited, Message: "too many requests; retry after " + v + " s",
		Data: map[string]string{"retryAfter": v},
	}}
	enc := acquireEncoder()
	defer releaseEncoder(enc)
	if err := enc.enc.Encode(rf.err.Body("")); err != nil {
		panic("httpapi: encode the 429 body: " + err.Error())
	}
	b := bytes.TrimSuffix(enc.buf.Bytes(), []byte{'\n'})
	const tail = `""}}` // the empty reqId, then the ends of meta and the body
	cut := bytes.LastIndex(b, []byte(tail))
	if cut < 0 || cut+len(tail) != len(b) {
		panic("httpapi: the error object does not end with meta.reqId: " + string(b))
	}
	rf.prefix = bytes.Clone(b[:cut])
	rf.suffix = []byte(tail[2:])
	return rf
}

// write is writeError for rf.err without encoding: the same bytes, no
// allocation.
func (rf *refusal) write(ctx *fasthttp.RequestCtx, reqID string) {
	resp := &ctx.Response
	resp.ResetBody()
	resp.SetStatusCode(rf.err.Status())
	resp.Header.SetContentType(contentTypeJSON)
	resp.Header.Set(HeaderRetryAfter, rf.secs)
	var id [2 + 6*maxRequestIDLen]byte // worst-case escaped id, on the stack
	resp.AppendBody(rf.prefix)
	resp.AppendBody(jsonwire.AppendASCII(id[:0], reqID))
	resp.AppendBody(rf.suffix)
}

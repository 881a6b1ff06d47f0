package httpapi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

var epoch = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func TestLimiter_IsATokenBucket(t *testing.T) {
	// 10 tokens a second (one per 100 ms), 5 in the bucket.
	l := newLimiter(10, 5, 0, epoch)
	type call struct {
		at       time.Duration // since epoch
		wantOK   bool
		wantWait time.Duration
	}
	tests := []struct {
		name  string
		calls []call
	}{
		{"the burst passes at one instant, the next waits one interval", []call{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {0, false, 100 * time.Millisecond}}},
		{"the wait shrinks as time passes", []call{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {30 * time.Millisecond, false, 70 * time.Millisecond}}},
		{"one interval refills one token", []call{
			{0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0}, {0, true, 0},
			{100 * time.Millisecond, true, 0}, {100 * time.Millisecond, false, 100 * time.Millisecond}}},
		{"a long pause refills the burst and no more", []call{
			{0, true, 0}, {time.Hour, true, 0}, {time.Hour, true, 0}, {time.Hour, true, 0}, {time.Hour, true, 0}, {time.Hour, true, 0},
			{time.Hour, false, 100 * time.Millisecond}}},
		{"the sustained rate passes forever", []call{
			{0, true, 0}, {100 * time.Millisecond, true, 0}, {200 * time.Millisecond, true, 0}, {300 * time.Millisecond, true, 0},
			{400 * time.Millisecond, true, 0}, {500 * time.Millisecond, true, 0}, {600 * time.Millisecond, true, 0},
			{700 * time.Millisecond, true, 0}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := []byte("key-" + strconv.Itoa(i)) // a bucket per case
			for j, c := range tt.calls {
				ok, wait := l.allowRequest(key, nil, epoch.Add(c.at))
				if ok != c.wantOK || wait != c.wantWait {
					t.Fatalf("call %d at %v: (%v, %v), want (%v, %v)", j, c.at, ok, wait, c.wantOK, c.wantWait)
				}
			}
		})
	}
}

func TestLimiter_Off(t *testing.T) {
	if l := newLimiter(0, 100, 0, epoch); l != nil {
		t.Error("RateLimit 0 made a limiter")
	}
	if l := newLimiter(7, 0, 0, epoch); l.window != 14*l.interval {
		t.Errorf("default burst = %d tokens, want 2 x rate = 14", l.window/l.interval)
	}
}

func TestLimiter_AddressesAndKeys(t *testing.T) {
	tests := []struct {
		name       string
		key1, key2 string
		ip1, ip2   string
		shared     bool
	}{
		{"two keys are two buckets", "k1", "k2", "10.0.0.1", "10.0.0.1", false},
		{"a key is one bucket from any address", "k1", "k1", "10.0.0.1", "10.0.0.2", true},
		{"two IPv4 addresses are two buckets", "", "", "10.0.0.1", "10.0.0.2", false},
		{"IPv4 and its IPv4-mapped IPv6 form are one bucket", "", "", "10.0.0.1", "::ffff:10.0.0.1", true},
		{"one IPv6 /64 is one bucket", "", "", "2001:db8:1:2::1", "2001:db8:1:2:ffff::9", true},
		{"two IPv6 /64s are two buckets", "", "", "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"a key is not the bucket of its address", "k1", "", "10.0.0.1", "10.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(1, 1, 0, epoch)
			if ok, _ := l.allowRequest([]byte(tt.key1), net.ParseIP(tt.ip1), epoch); !ok {
				t.Fatal("first request refused")
			}
			ok, _ := l.allowRequest([]byte(tt.key2), net.ParseIP(tt.ip2), epoch)
			if ok == tt.shared {
				t.Errorf("second request admitted = %v, want %v (shared bucket %v)", ok, !tt.shared, tt.shared)
			}
		})
	}
}

func TestLimiter_Bound(t *testing.T) {
	tests := []struct {
		maxKeys   int
		wantBound int
	}{
		{0, defaultRateLimitKeys},
		{1, 1},
		{16, 16},
		{100, 100}, // 4 shards of 25
		{1000, 992},
		{5000, 4864}, // 256 shards of 19
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.maxKeys), func(t *testing.T) {
			l := newLimiter(1, 1, tt.maxKeys, epoch)
			if got := l.bound(); got != tt.wantBound {
				t.Errorf("bound = %d, want %d", got, tt.wantBound)
			}
			// Fill with far more distinct keys than the bound, at one
			// instant (no bucket refilled) and spread over time (all
			// refilled), and check the bound after each.
			for _, step := range []time.Duration{0, time.Hour} {
				at := epoch
				for i := range 2*l.bound() + 100 {
					var k [8]byte
					binary.LittleEndian.PutUint64(k[:], uint64(i)+uint64(step))
					if ok, _ := l.allowRequest(k[:], nil, at); !ok {
						t.Fatalf("new key %d refused", i)
					}
					at = at.Add(step)
				}
				if n := l.len(); n > l.bound() {
					t.Fatalf("holds %d buckets, bound %d", n, l.bound())
				}
			}
		})
	}
}

func TestLimiter_EvictionSparesDrainedBuckets(t *testing.T) {
	// One shard of 16: a drained key must survive a flood of new keys at
	// the same instant, because eviction drops the bucket closest to full.
	l := newLimiter(1, 3, 16, epoch)
	drained := []byte("drained")
	for range 3 {
		l.allowRequest(drained, nil, epoch)
	}
	for i := range 1000 {
		l.allowRequest([]byte("flood-"+strconv.Itoa(i)), nil, epoch)
	}
	if ok, _ := l.allowRequest(drained, nil, epoch); ok {
		t.Error("the drained key got a fresh bucket from a flood of new keys")
	}
	if n := l.len(); n > l.bound() {
		t.Errorf("holds %d buckets, bound %d", n, l.bound())
	}
}

func TestLimiter_MemoryAtTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 262144 buckets")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := newLimiter(1, 1, 0, epoch)
	var k [8]byte
	for i := range 2 * l.bound() {
		binary.LittleEndian.PutUint64(k[:], uint64(i))
		l.allowRequest(k[:], nil, epoch)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d buckets held, heap %.1f MiB", l.len(), float64(grown)/(1<<20))
	// The package documents about 9 MiB; fail well above it.
	if grown > 16<<20 {
		t.Errorf("a full limiter holds %.1f MiB, want under 16 MiB", float64(grown)/(1<<20))
	}
	runtime.KeepAlive(l)
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		wait time.Duration
		want int
	}{
		{0, 1},
		{time.Nanosecond, 1},
		{200 * time.Microsecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{2500 * time.Millisecond, 3},
	}
	for _, tt := range tests {
		if got := retryAfterSeconds(tt.wait); got != tt.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", tt.wait, got, tt.want)
		}
	}
}

func TestRouteGroup(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"/v1.3/suppliers/{supplier_id}", "/v1.3"},
		{"/v1.2/holds", "/v1.2"},
		{"/channel/v1.2/channels", "/channel/v1.2"},
		{"/registry/v1.1/supplier", "/registry/v1.1"},
		{"/operator/v2/bookings", "/operator/v2"},
		{"/admin/v1/principals/{id}", "/admin/v1"},
		{"/admin/v1", "/admin/v1"},
		{"/v1.30/x", "other"},
		{"/elsewhere", "other"},
	}
	for _, tt := range tests {
		if got := routeGroup(tt.pattern); got != tt.want {
			t.Errorf("routeGroup(%q) = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

// BenchmarkLimiter measures the limiter alone, in parallel, with the
// production settings (5000/s, burst 10000, default bound):
//   - many-keys: each goroutine cycles through 10000 keys (a busy reseller
//     population), almost every call admitted;
//   - hot-key: every goroutine on one key, the worst case for the shard
//     lock; past the burst most calls are refused, as they would be;
//   - hot-key-admitted: one key under a limit it never reaches, so every
//     call takes the store path;
//   - new-keys: a random-key flood, every call a new bucket and, once the
//     shards are full, evictions.
//
// Run with: go test -run '^$' -bench Limiter -benchmem ./query/httpapi/
func BenchmarkLimiter(b *testing.B) {
	const nKeys = 10000
	keys := make([][]byte, nKeys)
	for i := range keys {
		keys[i] = []byte("sbk_" + strconv.Itoa(1_000_000+i) + "_reseller_key_padding")
	}
	ip := net.IPv4(10, 1, 2, 3)
	for _, bc := range []struct {
		name        string
		rate, burst int
		key         func(g, i uint64) []byte
	}{
		{"many-keys", 5000, 10000, func(g, i uint64) []byte { return keys[(g*7919+i)%nKeys] }},
		{"hot-key", 5000, 10000, func(_, _ uint64) []byte { return keys[0] }},
		{"hot-key-admitted", 1e9, 1e9, func(_, _ uint64) []byte { return keys[0] }},
		{"new-keys", 5000, 10000, nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := newLimiter(bc.rate, bc.burst, 0, time.Now())
			var goroutines atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				g := goroutines.Add(1)
				var fresh [16]byte
				binary.LittleEndian.PutUint64(fresh[:8], g)
				for i := uint64(0); pb.Next(); i++ {
					key := fresh[:]
					if bc.key != nil {
						key = bc.key(g, i)
					} else {
						binary.LittleEndian.PutUint64(fresh[8:], i)
					}
					l.allowRequest(key, ip, time.Now())
				}
			})
		})
	}
}

func TestRefusal_IsTheErrorObject(t *testing.T) {
	tests := []struct {
		name string
		rf   *refusal
		id   string
	}{
		{"generated id", refusalOneSecond, "0b6f8c1e-2d3a-4b5c-9d7e-8f9a0b1c2d3e"},
		{"client id with quotes and backslashes", refusalOneSecond, `a"b\c`},
		{"client id with HTML characters", refusalOneSecond, "<a&b>"},
		{"longest id", refusalOneSecond, strings.Repeat("x", maxRequestIDLen)},
		{"another Retry-After", newRefusal(3), "rid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fast, slow fasthttp.RequestCtx
			tt.rf.write(&fast, tt.id)
			writeError(&slow, tt.id, tt.rf.err)
			if !bytes.Equal(fast.Response.Body(), slow.Response.Body()) {
				t.Errorf("refusal body\n%s\nwriteError body\n%s", fast.Response.Body(), slow.Response.Body())
			}
			if fast.Response.StatusCode() != http.StatusTooManyRequests || slow.Response.StatusCode() != http.StatusTooManyRequests {
				t.Errorf("status %d / %d, want 429", fast.Response.StatusCode(), slow.Response.StatusCode())
			}
			if got := string(fast.Response.Header.Peek(HeaderRetryAfter)); got != tt.rf.secs || tt.rf.err.Data["retryAfter"] != got {
				t.Errorf("Retry-After %q, data.retryAfter %q, want %q", got, tt.rf.err.Data["retryAfter"], tt.rf.secs)
			}
			var body map[string]any
			if err := json.Unmarshal(fast.Response.Body(), &body); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if meta, _ := body["meta"].(map[string]any); meta["reqId"] != tt.id {
				t.Errorf("meta.reqId = %v, want %q", meta["reqId"], tt.id)
			}
		})
	}
}

// allowRequest is one request as run charges it: to its key when it has
// one (an authenticated request), else to its address as a failed
// authentication.
func (l *limiter) allowRequest(key []byte, ip net.IP, t time.Time) (bool, time.Duration) {
	if len(key) > 0 {
		return l.allowKey(key, t)
	}
	return l.failed(ip, t)
}

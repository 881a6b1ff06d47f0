package httpapi

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/switchbackhq/switchback/internal/principals"
)

// Costly routes (issue 18): a request that reads history from ClickHouse
// (the delivery log, its replay, the availability history) costs a scan,
// not a Redis lookup, and the per-key budget counts requests, not cost: 482
// requests/s on /registry/v1.1/deliveries by one key raised another
// reseller's p99 from ~4 ms to 198 ms without a single 429. Costly routes
// are therefore charged to a second, much smaller bucket of the key
// (CostlyRateLimit, CostlyRateBurst), on top of the key's general one,
// and run under a concurrency bound: at most CostlyPerKey requests of one
// key at once, and CostlyTotal of all keys, so that one key can hold only
// its share of the scans in flight. Past any of them the answer is the
// same 429 RATE_LIMITED with Retry-After.

// Defaults of the costly routes' budget.
const (
	DefaultCostlyRateLimit = 20
	DefaultCostlyRateBurst = 40
	DefaultCostlyPerKey    = 2
	DefaultCostlyTotal     = 8
)

// gate bounds the costly requests in flight, per key and in all.
type gate struct {
	perKey, total int
	seed          maphash.Seed

	mu       sync.Mutex
	inFlight map[uint64]int
	n        int
}

func newGate(perKey, total int) *gate {
	if perKey <= 0 {
		perKey = DefaultCostlyPerKey
	}
	if total <= 0 {
		total = DefaultCostlyTotal
	}
	return &gate{perKey: perKey, total: max(total, perKey), seed: maphash.MakeSeed(), inFlight: map[uint64]int{}}
}

// acquire takes a slot for key; false when its share or the whole is
// taken. The map holds only keys with requests in flight.
func (g *gate) acquire(key []byte) (uint64, bool) {
	h := maphash.Bytes(g.seed, key)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n >= g.total || g.inFlight[h] >= g.perKey {
		return h, false
	}
	g.inFlight[h]++
	g.n++
	return h, true
}

func (g *gate) release(h uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[h]--; g.inFlight[h] <= 0 {
		delete(g.inFlight, h)
	}
	g.n--
}

// HandleCostly registers a costly route (a history scan); see Handle and
// the comment above.
func (s *Server) HandleCostly(method, pattern string, roles []principals.Role, h HandlerFunc) {
	s.handle(method, pattern, roles, h, routeKind{costly: true})
}

// HandleCostly registers a costly route under the group's base.
func (g *Group) HandleCostly(method, path string, roles []principals.Role, h HandlerFunc) {
	g.s.HandleCostly(method, g.base+path, roles, h)
}

// admitCostly charges a costly request of key to its costly bucket and
// takes a slot of the gate: ok false with the wait when refused; release
// must be called when ok.
func (s *Server) admitCostly(key []byte, now time.Time) (release func(), wait time.Duration, ok bool) {
	if s.costly != nil {
		if ok, wait := s.costly.allowKey(key, now); !ok {
			return nil, wait, false
		}
	}
	h, ok := s.gate.acquire(key)
	if !ok {
		// A slot frees when a scan ends: a second is the honest guess.
		return nil, time.Second, false
	}
	return func() { s.gate.release(h) }, 0, true
}

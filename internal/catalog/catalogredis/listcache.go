package catalogredis

import (
	"math"
	"sync"

	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
)

// listCache memoizes a channel's unfiltered supplier list as the process's
// copy of the view answers it (issue 21). The list is the widest reseller
// read: for a channel of 20 suppliers, 41 reads of the copy, a sort and
// ~600 allocations per request, 0.34x of the fasthttp ceiling
// (bench/RESULTS.md). Its answer depends only on the copy's state and on
// which binding windows contain now, so an answer is good while the
// copy's generation has not moved (memKV.gen: any applied upsert moves
// it) and now stays between the window edges around the time it was
// built. It is kept only for answers from memory: Redis answers are never
// memoized, so the freshness bound of View holds for them unchanged.
type listCache struct {
	mu      sync.RWMutex
	entries map[listKey]*listEntry
}

type listKey struct {
	channel string
	v       SupplierVersion
}

// listEntry is immutable once stored.
type listEntry struct {
	gen uint64
	// from and until (ms) bound the nows with the same open windows:
	// from is the latest edge at or before the build's now, until the
	// earliest after it.
	from, until int64
	body        []byte
}

// maxListEntries bounds the cache: channels times three renderings. Past
// it the cache starts over (a process serving more channels than this
// rebuilds lists more often; it never grows without bound).
const maxListEntries = 4096

func newListCache() *listCache { return &listCache{entries: map[listKey]*listEntry{}} }

// get returns the memoized answer for k at generation gen and time nowMs.
func (c *listCache) get(k listKey, gen uint64, nowMs int64) ([]byte, bool) {
	c.mu.RLock()
	e := c.entries[k]
	c.mu.RUnlock()
	if e == nil || e.gen != gen || nowMs < e.from || nowMs >= e.until {
		return nil, false
	}
	return e.body, true
}

func (c *listCache) put(k listKey, e *listEntry) {
	c.mu.Lock()
	if len(c.entries) >= maxListEntries {
		clear(c.entries)
	}
	c.entries[k] = e
	c.mu.Unlock()
}

// windowEdges accumulates, over index values, the window edges nearest
// to now on either side: the answer built at now holds for every time in
// [from, until).
type windowEdges struct {
	now, from, until int64
}

func newWindowEdges(nowMs int64) *windowEdges {
	return &windowEdges{now: nowMs, from: math.MinInt64, until: math.MaxInt64}
}

func (w *windowEdges) add(vals []string) {
	for _, v := range vals {
		from, until, _, ok := catalogwire.IndexWindow(v)
		if !ok {
			continue // never open, whatever the time
		}
		for _, edge := range [2]int64{from, until} {
			if edge == 0 {
				continue // an open end
			}
			if edge <= w.now {
				w.from = max(w.from, edge)
			} else {
				w.until = min(w.until, edge)
			}
		}
	}
}

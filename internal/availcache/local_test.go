package availcache

import (
	"fmt"
	"testing"
	"time"
)

// TestLocal_ExpiredItemsAreSweptAndTheCopyStaysBounded: the in-process
// copy drops expired items once it has doubled since its last sweep, so a
// reseller reading many distinct windows does not grow the heap to
// maxLocal items of dead entries; live items survive a sweep, and more
// than maxLocal live ones empty it.
func TestLocal_ExpiredItemsAreSweptAndTheCopyStaysBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		puts     int           // distinct keys put, one per millisecond
		ttl      time.Duration // each item's life
		wantMax  int           // the copy never holds more
		wantLast bool          // the last key put is found
	}{
		{"items living 1 s, 20k distinct keys: swept as they expire", 20_000, time.Second, 2 * 1000 * 2, true},
		{"items living 1 min: nothing expires, all kept below the bound", 20_000, time.Minute, 20_000, true},
		{"more live items than the bound: emptied, never above it", maxLocal + 10, time.Hour, maxLocal, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l local
			l.m = map[localKey]localItem{}
			peak := 0
			now := t0
			for i := range tt.puts {
				now = t0.Add(time.Duration(i) * time.Millisecond)
				l.put(testKey(fmt.Sprint("k", i)), localItem{until: now.Add(tt.ttl)}, now, 0)
				peak = max(peak, l.size())
			}
			if peak > tt.wantMax {
				t.Fatalf("the copy held up to %d items, want at most %d", peak, tt.wantMax)
			}
			if _, ok := l.get(testKey(fmt.Sprint("k", tt.puts-1)), now); ok != tt.wantLast {
				t.Fatalf("last key found = %v, want %v", ok, tt.wantLast)
			}
			if _, ok := l.get(testKey("k0"), t0.Add(tt.ttl)); ok {
				t.Fatal("an expired item was served")
			}
		})
	}
}

// TestLocal_ResetDropsItemsAndThePutsOfReadsBegunBefore: after the Redis
// views were lost or rebuilt, nothing read before (an empty bound-rate
// list read from a flushed Redis, say) is served from the copy, not even
// when the read that fetched it finishes after the reset.
func TestLocal_ResetDropsItemsAndThePutsOfReadsBegunBefore(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	l := local{m: map[localKey]localItem{}}
	l.put(testKey("kept"), localItem{until: now.Add(time.Second)}, now, l.generation())
	inFlight := l.generation() // a read begins
	l.reset()
	l.put(testKey("late"), localItem{until: now.Add(time.Second)}, now, inFlight) // ... and ends after the reset
	l.put(testKey("fresh"), localItem{until: now.Add(time.Second)}, now, l.generation())
	tests := []struct {
		key  string
		want bool
	}{
		{"kept", false},
		{"late", false},
		{"fresh", true},
	}
	for _, tt := range tests {
		if _, ok := l.get(testKey(tt.key), now); ok != tt.want {
			t.Errorf("%s found = %v, want %v", tt.key, ok, tt.want)
		}
	}
}

// testKey is an entry key told apart by its rate alone.
func testKey(rid string) localKey { return localKey{rid: rid} }

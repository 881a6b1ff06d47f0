package supplierbooking

import (
	"strconv"
	"testing"
	"time"
)

// The units kept are bounded: past unitsMaxProducts the expired ones go
// first, else the oldest.
func TestUnitCache_Bounded(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	key := func(i int) unitKey { return unitKey{"sys", "S1", "P" + strconv.Itoa(i)} }
	tests := []struct {
		name     string
		expired  int // entries put UnitsTTL ago, first
		wantGone []int
		wantKept []int
	}{
		{"full of current ones: the oldest goes", 0, []int{0}, []int{1, unitsMaxProducts}},
		{"expired ones go first, all of them", 3, []int{0, 1, 2}, []int{3, unitsMaxProducts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c unitCache
			now := t0.Add(UnitsTTL)
			for i := range unitsMaxProducts {
				at := now.Add(time.Duration(i) * time.Millisecond) // 0 oldest
				if i < tt.expired {
					at = t0
				}
				c.put(key(i), unitEntry{at: at}, now)
			}
			later := now.Add(time.Second)
			c.put(key(unitsMaxProducts), unitEntry{at: later}, later)
			if n := len(c.entries); n > unitsMaxProducts {
				t.Fatalf("%d entries, want at most %d", n, unitsMaxProducts)
			}
			for _, i := range tt.wantGone {
				if _, ok := c.entries[key(i)]; ok {
					t.Fatalf("entry %d kept, want it gone", i)
				}
			}
			for _, i := range tt.wantKept {
				if _, ok := c.get(key(i), later); !ok {
					t.Fatalf("entry %d gone, want it kept", i)
				}
			}
		})
	}
}

package availchange

import (
	"fmt"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/redisbatch"
	"github.com/switchbackhq/switchback/internal/platform/views"
)

func TestBySlot_OneSlotsRatesPerCallAtMostMaxPerCall(t *testing.T) {
	var rates []*rate
	pos := map[*rate]int{}
	for i := range redisbatch.MaxPerCall + 3 {
		rates = append(rates, &rate{key: fmt.Sprintf("avstate:{A}:P:R%d", i)}, &rate{key: fmt.Sprintf("avstate:{B}:P:R%d", i)})
	}
	for i, r := range rates {
		pos[r] = i
	}
	groups := bySlot(rates)
	sizes := make([]int, len(groups))
	for g, rs := range groups {
		sizes[g] = len(rs)
		for i, r := range rs {
			if views.Slot(r.key) != views.Slot(rs[0].key) {
				t.Fatalf("call %d mixes %s and %s", g, rs[0].key, r.key)
			}
			if i > 0 && pos[r] < pos[rs[i-1]] {
				t.Fatalf("call %d: %s after %s, out of the batch's order", g, r.key, rs[i-1].key)
			}
		}
	}
	if want := []int{redisbatch.MaxPerCall, redisbatch.MaxPerCall, 3, 3}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Fatalf("call sizes %v, want %v", sizes, want)
	}
}

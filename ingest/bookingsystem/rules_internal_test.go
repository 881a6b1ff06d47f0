package bookingsystem

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestLocalDate_IsFormatsDateOnly: the hand-written date is what
// time.Format(time.DateOnly) writes, in and out of the years of four
// digits, in zones on either side of UTC and with none.
func TestLocalDate_IsFormatsDateOnly(t *testing.T) {
	var zones []*time.Location
	for _, name := range []string{"Pacific/Kiritimati", "America/St_Johns", "Asia/Kathmandu"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		zones = append(zones, loc)
	}
	zones = append(zones, nil)
	instants := []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 28, 23, 30, 0, 0, time.UTC)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		instants = append(instants, time.Unix(rng.Int64N(2*400_000_000_000)-400_000_000_000, 0))
	}
	for _, at := range instants {
		for _, loc := range zones {
			want := at
			if loc != nil {
				want = at.In(loc)
			}
			if got := localDate(at, loc); got != want.Format(time.DateOnly) {
				t.Fatalf("localDate(%v, %v) = %q, want %q", at, loc, got, want.Format(time.DateOnly))
			}
		}
	}
}

// TestMarkDuplicates_MarksEveryHolderOnce: every valid holder of a shared
// key is marked once however many share it; an item already rejected
// neither counts nor is marked.
func TestMarkDuplicates_MarksEveryHolderOnce(t *testing.T) {
	keys := []string{"a", "b", "a", "c", "a", "b", "d", "d"}
	idx := []int{10, 11, 12, 13, 14, 15, 16, 17}
	bad := map[int][]string{16: {RuleStatus}}
	markDuplicates(keys, idx, bad)
	want := map[int][]string{10: {RuleDuplicateID}, 12: {RuleDuplicateID}, 14: {RuleDuplicateID},
		11: {RuleDuplicateID}, 15: {RuleDuplicateID}, 16: {RuleStatus}}
	if !reflect.DeepEqual(bad, want) {
		t.Fatalf("marks %v, want %v", bad, want)
	}
}

package availchange

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func h(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }

func slot(s, e, v int) Slot { return Slot{Start: h(s), End: h(e), Vacancies: v} }

func ch(s, e, old, nw int) Change { return Change{Start: h(s), End: h(e), Old: old, New: nw} }

func TestDiff(t *testing.T) {
	day := Span{From: h(0), To: h(24)}
	known := State{Slots: []Slot{slot(9, 11, 5), slot(13, 15, 3), slot(30, 32, 4)}, Coverage: []Span{{h(0), h(48)}}}
	tests := []struct {
		name  string
		old   State
		scope Span
		snap  []Slot
		want  []Change
		slots int
	}{
		{"no prior state is a baseline", State{}, day, []Slot{slot(9, 11, 5)}, nil, 1},
		{"unchanged", known, day, []Slot{slot(9, 11, 5), slot(13, 15, 3)}, nil, 3},
		{"vacancies changed", known, day, []Slot{slot(9, 11, 2), slot(13, 15, 3)}, []Change{ch(9, 11, 5, 2)}, 3},
		{"window gone is 0", known, day, []Slot{slot(9, 11, 5)}, []Change{ch(13, 15, 3, 0)}, 2},
		{"window appears inside coverage", known, day, []Slot{slot(9, 11, 5), slot(13, 15, 3), slot(17, 19, 6)}, []Change{ch(17, 19, 0, 6)}, 4},
		{"window appears outside coverage is news", known, Span{h(48), h(72)}, []Slot{slot(57, 59, 6)}, nil, 4},
		{"appears with 0 is no change", known, day, []Slot{slot(9, 11, 5), slot(13, 15, 3), slot(17, 19, 0)}, nil, 4},
		{"slot outside scope untouched", known, day, []Slot{}, []Change{ch(9, 11, 5, 0), ch(13, 15, 3, 0)}, 1},
		{"scope edge: slot ending at scope start is outside", known, Span{h(15), h(30)}, []Slot{}, nil, 3},
		{"scope edge: slot starting at scope end is outside", known, Span{h(24), h(30)}, []Slot{}, nil, 3},
		{"scope edge: one second of overlap is inside", known, Span{h(15).Add(-time.Second), h(16)}, []Slot{}, []Change{ch(13, 15, 3, 0)}, 2},
		{"duplicate windows keep the first", known, day, []Slot{slot(9, 11, 1), slot(9, 11, 7), slot(13, 15, 3)}, []Change{ch(9, 11, 5, 1)}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next := Diff(tt.old, tt.scope, tt.snap)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("changes = %v, want %v", got, tt.want)
			}
			if len(next.Slots) != tt.slots {
				t.Fatalf("next has %d slots, want %d: %v", len(next.Slots), tt.slots, next.Slots)
			}
			// Diffing the same snapshot again changes nothing (idempotent).
			if again, _ := Diff(next, tt.scope, tt.snap); len(again) != 0 {
				t.Fatalf("second diff = %v", again)
			}
		})
	}
}

func TestDiff_CoverageMerges(t *testing.T) {
	_, st := Diff(State{}, Span{h(0), h(24)}, nil)
	_, st = Diff(st, Span{h(24), h(48)}, nil)
	_, st = Diff(st, Span{h(72), h(96)}, nil)
	want := []Span{{h(0), h(48)}, {h(72), h(96)}}
	if !reflect.DeepEqual(st.Coverage, want) {
		t.Fatalf("coverage = %v", st.Coverage)
	}
	pruned := st.Prune(h(30))
	if !reflect.DeepEqual(pruned.Coverage, []Span{{h(30), h(48)}, {h(72), h(96)}}) {
		t.Fatalf("pruned = %v", pruned.Coverage)
	}
}

func TestFilter(t *testing.T) {
	now := h(10)
	tests := []struct {
		name        string
		change      Change
		days, under int
		want        bool
	}{
		{"inside window, every change", ch(20, 22, 5, 4), 7, 0, true},
		{"starts now is inside", ch(10, 12, 5, 4), 7, 0, true},
		{"started before now is outside", ch(9, 12, 5, 4), 7, 0, false},
		{"starts one second before the horizon", Change{Start: h(10 + 7*24).Add(-time.Second), End: h(10 + 7*24 + 1), Old: 5, New: 4}, 7, 0, true},
		{"starts at the horizon is outside", ch(10+7*24, 10+7*24+2, 5, 4), 7, 0, false},
		{"one day look-ahead", ch(10+24, 10+25, 5, 4), 1, 0, false},
		{"new vacancies under threshold", ch(20, 22, 5, 2), 7, 3, true},
		{"new vacancies at threshold is not under", ch(20, 22, 5, 3), 7, 3, false},
		{"new vacancies above threshold", ch(20, 22, 1, 9), 7, 3, false},
		{"sold out is under any threshold", ch(20, 22, 5, 0), 7, 1, true},
		{"threshold 0 takes increases too", ch(20, 22, 1, 9), 7, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Filter([]Change{tt.change}, now, tt.days, tt.under)
			if (len(got) == 1) != tt.want {
				t.Fatalf("kept = %v, want %v", len(got) == 1, tt.want)
			}
		})
	}
}

func TestCoalesce(t *testing.T) {
	tests := []struct {
		name    string
		changes []Change
		gap     time.Duration
		want    []Span
	}{
		{"none", nil, 0, nil},
		{"one", []Change{ch(9, 11, 1, 0)}, 0, []Span{{h(9), h(11)}}},
		{"touching merge with gap 0", []Change{ch(9, 11, 1, 0), ch(11, 13, 1, 0)}, 0, []Span{{h(9), h(13)}}},
		{"overlapping merge", []Change{ch(9, 12, 1, 0), ch(10, 11, 1, 0), ch(11, 13, 1, 0)}, 0, []Span{{h(9), h(13)}}},
		{"gap apart with gap 0 split", []Change{ch(9, 11, 1, 0), ch(13, 15, 1, 0)}, 0, []Span{{h(9), h(11)}, {h(13), h(15)}}},
		{"gap equal to maxGap merges", []Change{ch(9, 11, 1, 0), ch(13, 15, 1, 0)}, 2 * time.Hour, []Span{{h(9), h(15)}}},
		{"gap one second over maxGap splits", []Change{ch(9, 11, 1, 0), {Start: h(13).Add(time.Second), End: h(15), New: 1}}, 2 * time.Hour,
			[]Span{{h(9), h(11)}, {h(13).Add(time.Second), h(15)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Coalesce(tt.changes, tt.gap); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// BenchmarkDiff is one snapshot of a rate (3 windows a day over 2 days)
// against its previous state, with one change: the processor's hot path.
func BenchmarkDiff(b *testing.B) {
	var prev, snap []Slot
	for d := range 2 {
		for _, hr := range []int{9, 13, 17} {
			s := slot(d*24+hr, d*24+hr+2, 10)
			prev = append(prev, s)
			snap = append(snap, s)
		}
	}
	snap[2].Vacancies = 3
	st := State{Slots: prev, Coverage: []Span{{h(0), h(48)}}}
	scope := Span{h(0), h(48)}
	b.ReportAllocs()
	for b.Loop() {
		changes, _ := Diff(st, scope, snap)
		if len(changes) != 1 {
			b.Fatal(fmt.Sprint(changes))
		}
	}
}

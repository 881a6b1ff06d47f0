package availchange

import (
	"slices"
	"time"
)

// Slot is one availability window of a rate and its vacancies (the
// partner's capacity: traveler slots remaining).
type Slot struct {
	Start     time.Time `json:"s"`
	End       time.Time `json:"e"`
	Vacancies int       `json:"v"`
}

// Span is a half-open time range [From, To).
type Span struct {
	From time.Time `json:"f"`
	To   time.Time `json:"t"`
}

func (s Span) overlaps(start, end time.Time) bool { return start.Before(s.To) && end.After(s.From) }

func (s Span) contains(start, end time.Time) bool { return !start.Before(s.From) && !end.After(s.To) }

// Everything is the scope of a full set (an operator push covers every
// window of the rate).
var Everything = Span{From: time.Unix(0, 0).UTC(), To: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}

// State is what the processor remembers of a rate: the slots it last saw
// and the spans its snapshots have covered. A slot is only known to be
// absent inside a covered span.
type State struct {
	Slots    []Slot `json:"slots"`
	Coverage []Span `json:"cov"`
}

// Change is one window whose vacancies changed: Old is 0 for a window
// that appeared, New is 0 for one that disappeared.
type Change struct {
	Start, End time.Time
	Old, New   int
}

// Diff compares a snapshot (the slots of the rate overlapping scope) with
// the state and returns the changes, sorted by start, and the next state.
//
//   - A slot whose (start, end) is in both with other vacancies changed.
//   - A slot of the state that overlaps scope and is not in the snapshot
//     went to 0 (sold out or closed), unless it already had 0.
//   - A slot of the snapshot not in the state appeared, if the state's
//     coverage contained it (the time was known empty); otherwise it is
//     news to us, not a change (the first snapshot of a window is a
//     baseline, so a cold cache does not flood subscribers).
//   - A slot that appears with 0 vacancies is not a change.
func Diff(old State, scope Span, snap []Slot) ([]Change, State) {
	type key struct{ s, e int64 }
	prev := make(map[key]int, len(old.Slots))
	for _, s := range old.Slots {
		prev[key{s.Start.UnixNano(), s.End.UnixNano()}] = s.Vacancies
	}
	var changes []Change
	seen := make(map[key]bool, len(snap))
	next := State{Slots: make([]Slot, 0, len(old.Slots)+len(snap))}
	for _, s := range snap {
		k := key{s.Start.UnixNano(), s.End.UnixNano()}
		if seen[k] {
			continue // a duplicate window in one answer: keep the first
		}
		seen[k] = true
		next.Slots = append(next.Slots, s)
		v, known := prev[k]
		switch {
		case known && v != s.Vacancies:
			changes = append(changes, Change{Start: s.Start, End: s.End, Old: v, New: s.Vacancies})
		case !known && s.Vacancies > 0 && covered(old.Coverage, s.Start, s.End):
			changes = append(changes, Change{Start: s.Start, End: s.End, Old: 0, New: s.Vacancies})
		}
	}
	for _, s := range old.Slots {
		k := key{s.Start.UnixNano(), s.End.UnixNano()}
		if seen[k] {
			continue
		}
		if scope.overlaps(s.Start, s.End) {
			if s.Vacancies > 0 {
				changes = append(changes, Change{Start: s.Start, End: s.End, Old: s.Vacancies, New: 0})
			}
			continue // gone
		}
		next.Slots = append(next.Slots, s)
	}
	slices.SortFunc(changes, func(a, b Change) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return a.End.Compare(b.End)
	})
	slices.SortFunc(next.Slots, func(a, b Slot) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return a.End.Compare(b.End)
	})
	next.Coverage = mergeSpans(append(slices.Clone(old.Coverage), scope))
	return changes, next
}

func covered(cov []Span, start, end time.Time) bool {
	for _, c := range cov {
		if c.contains(start, end) {
			return true
		}
	}
	return false
}

// mergeSpans sorts spans and merges the overlapping or touching ones.
func mergeSpans(spans []Span) []Span {
	slices.SortFunc(spans, func(a, b Span) int { return a.From.Compare(b.From) })
	out := spans[:0]
	for _, s := range spans {
		if !s.From.Before(s.To) {
			continue
		}
		if n := len(out); n > 0 && !s.From.After(out[n-1].To) {
			if s.To.After(out[n-1].To) {
				out[n-1].To = s.To
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// Prune drops what ended before cutoff (the past cannot change), so a
// rate's state stays bounded.
func (st State) Prune(cutoff time.Time) State {
	if !st.endsBefore(cutoff) {
		return st // the common case: nothing to drop, nothing to copy
	}
	out := State{Slots: st.Slots[:0:0], Coverage: st.Coverage[:0:0]}
	for _, s := range st.Slots {
		if s.End.After(cutoff) {
			out.Slots = append(out.Slots, s)
		}
	}
	for _, c := range st.Coverage {
		if c.To.After(cutoff) {
			if c.From.Before(cutoff) {
				c.From = cutoff
			}
			out.Coverage = append(out.Coverage, c)
		}
	}
	return out
}

// endsBefore reports whether Prune(cutoff) would drop or cut anything.
func (st State) endsBefore(cutoff time.Time) bool {
	for _, s := range st.Slots {
		if !s.End.After(cutoff) {
			return true
		}
	}
	for _, c := range st.Coverage {
		if !c.To.After(cutoff) || c.From.Before(cutoff) {
			return true
		}
	}
	return false
}

// Filter keeps the changes an availability rule asks for (spec doc 1,
// availability rule and trigger): the window starts inside the next
// maxLookAheadDays days, now ≤ start < now + maxLookAheadDays × 24 h (a
// window already started is not "ahead"), and the new vacancies are under
// vacanciesUnder (new < vacanciesUnder), or any change when vacanciesUnder
// is 0. changes must be sorted; the result is too.
func Filter(changes []Change, now time.Time, maxLookAheadDays, vacanciesUnder int) []Change {
	horizon := now.Add(time.Duration(maxLookAheadDays) * 24 * time.Hour)
	var out []Change
	for _, c := range changes {
		if c.Start.Before(now) || !c.Start.Before(horizon) {
			continue
		}
		if vacanciesUnder > 0 && c.New >= vacanciesUnder {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Coalesce merges sorted changes into ranges: a change whose start is at
// most maxGap after the end of the current range extends it (overlapping
// and touching windows always merge with maxGap 0).
func Coalesce(changes []Change, maxGap time.Duration) []Span {
	var out []Span
	for _, c := range changes {
		if n := len(out); n > 0 && !c.Start.After(out[n-1].To.Add(maxGap)) {
			if c.End.After(out[n-1].To) {
				out[n-1].To = c.End
			}
			continue
		}
		out = append(out, Span{From: c.Start, To: c.End})
	}
	return out
}

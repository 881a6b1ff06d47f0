package catalog

import (
	"slices"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/internal/bounds"
)

// Price schedules. The spec names a "price schedule" (reseller flow,
// priceschedule notifications, booking-system price-schedule mode) but
// never shows its shape; ours is in docs/decisions.md, "Price schedules":
// per rate, a list of date ranges, each with the rate's prices on those
// days. A day no entry covers has the rate's own prices.

// DateLayout is the layout of PriceScheduleEntry.From and Until.
const DateLayout = time.DateOnly

// MaxPriceScheduleEntries bounds the entries of one schedule.
const MaxPriceScheduleEntries = 1000

// maxScheduleSpan bounds the days one schedule covers (the booking
// system's price-schedule mode defaults to one year; three leave room).
const maxScheduleSpan = 3 * 366

// PriceScheduleEntry is the prices of a rate on the days From..Until
// (both inclusive, calendar dates in UTC).
type PriceScheduleEntry struct {
	From   string  `json:"from"`
	Until  string  `json:"until"`
	Prices []Price `json:"prices"`
}

// PriceSchedule is every entry of one rate, as last written, sorted by
// From and never overlapping.
type PriceSchedule struct {
	SupplierID string               `json:"supplierId"`
	ProductID  string               `json:"productId"`
	RateID     string               `json:"rateId"`
	Version    int64                `json:"version"`
	Entries    []PriceScheduleEntry `json:"entries"`
}

// DateRange is the days Start..End, End exclusive, at 00:00 UTC.
type DateRange struct{ Start, End time.Time }

func parseDay(field, s string) (time.Time, error) {
	d, err := time.Parse(DateLayout, s)
	if err != nil {
		return time.Time{}, Invalid(field, "must be a date YYYY-MM-DD")
	}
	return d, nil
}

// ValidatePriceSchedule checks the entries and sorts them by From; their
// days are within one year back and two years ahead of now
// (internal/bounds).
func ValidatePriceSchedule(es []PriceScheduleEntry, now time.Time) error {
	if es == nil {
		return Invalid("entries", "is required (an array, possibly empty)")
	}
	if len(es) > MaxPriceScheduleEntries {
		return Invalidf("entries", "must have at most %d items", MaxPriceScheduleEntries)
	}
	for i := range es {
		e := &es[i]
		f := idx("entries", i)
		from, err := parseDay(f+".from", e.From)
		if err != nil {
			return err
		}
		until, err := parseDay(f+".until", e.Until)
		if err != nil {
			return err
		}
		if err := bounds.Time(f+".from", from, now); err != nil {
			return err
		}
		if err := bounds.Time(f+".until", until, now); err != nil {
			return err
		}
		if until.Before(from) {
			return Invalid(f+".until", "must not be before from")
		}
		if until.Sub(from) > maxScheduleSpan*24*time.Hour {
			return Invalidf(f+".until", "must be at most %d days after from", maxScheduleSpan)
		}
		if e.Prices == nil {
			return Invalid(f+".prices", "is required (an array, possibly empty)")
		}
		if err := validatePrices(f+".prices", e.Prices, "in the entry"); err != nil {
			return err
		}
	}
	// Dates in DateLayout sort as strings.
	slices.SortStableFunc(es, func(a, b PriceScheduleEntry) int { return strings.Compare(a.From, b.From) })
	for i := 1; i < len(es); i++ {
		if es[i].From <= es[i-1].Until {
			return Invalidf("entries", "the entries from %s and from %s overlap", es[i-1].From, es[i].From)
		}
	}
	return nil
}

// VisiblePrices are the prices a channel with these priceTags sees.
func VisiblePrices(ps []Price, tags []string) []Price {
	if len(tags) == 0 {
		return ps
	}
	out := make([]Price, 0, len(ps))
	for _, p := range ps {
		if p.HasLabels(tags) {
			out = append(out, p)
		}
	}
	return out
}

// PriceChange is a run of days whose visible prices differ between two
// schedules: Prior and Next are the prices of the entries covering them
// (nil: no entry, the rate's own prices).
type PriceChange struct {
	DateRange
	Prior, Next []Price
}

// PriceChanges are the runs of days on which the prices visible with tags
// differ between two schedules, in order; a run ends where either
// schedule's entries change. A day covered by neither has the rate's own
// prices in both: unchanged. A day covered by one only counts as changed:
// an entry added or removed is a pricing change, whatever the rate's own
// prices are.
func PriceChanges(prior, next []PriceScheduleEntry, tags []string) []PriceChange {
	type seg struct {
		from, until time.Time // inclusive days
		prices      []Price
		fp          string
	}
	segs := func(es []PriceScheduleEntry) []seg {
		out := make([]seg, 0, len(es))
		for _, e := range es {
			from, err1 := time.Parse(DateLayout, e.From)
			until, err2 := time.Parse(DateLayout, e.Until)
			if err1 != nil || err2 != nil || until.Before(from) {
				continue // validated on write; a bad stored entry is no news
			}
			ps := VisiblePrices(e.Prices, tags)
			out = append(out, seg{from, until, ps, string(mustJSON(ps))})
		}
		slices.SortFunc(out, func(a, b seg) int { return a.from.Compare(b.from) })
		return out
	}
	a, b := segs(prior), segs(next)
	// Boundaries: every first day and every day after a last day.
	var cuts []time.Time
	for _, ss := range [][]seg{a, b} {
		for _, s := range ss {
			cuts = append(cuts, s.from, s.until.AddDate(0, 0, 1))
		}
	}
	slices.SortFunc(cuts, func(x, y time.Time) int { return x.Compare(y) })
	cuts = slices.CompactFunc(cuts, func(x, y time.Time) bool { return x.Equal(y) })
	at := func(ss []seg, d time.Time) *seg {
		i, _ := slices.BinarySearchFunc(ss, d, func(s seg, d time.Time) int {
			if s.until.Before(d) {
				return -1
			}
			if s.from.After(d) {
				return 1
			}
			return 0
		})
		if i < len(ss) && !ss[i].from.After(d) && !ss[i].until.Before(d) {
			return &ss[i]
		}
		return nil
	}
	var out []PriceChange
	for i := 0; i+1 < len(cuts); i++ {
		sa, sb := at(a, cuts[i]), at(b, cuts[i])
		if sa == nil && sb == nil || sa != nil && sb != nil && sa.fp == sb.fp {
			continue
		}
		c := PriceChange{DateRange: DateRange{Start: cuts[i], End: cuts[i+1]}}
		if sa != nil {
			c.Prior = sa.prices
		}
		if sb != nil {
			c.Next = sb.prices
		}
		out = append(out, c)
	}
	return out
}

// ChangedPriceDays are PriceChanges as day ranges, merged when adjacent.
func ChangedPriceDays(prior, next []PriceScheduleEntry, tags []string) []DateRange {
	var out []DateRange
	for _, c := range PriceChanges(prior, next, tags) {
		if n := len(out); n > 0 && out[n-1].End.Equal(c.Start) {
			out[n-1].End = c.End
			continue
		}
		out = append(out, c.DateRange)
	}
	return out
}

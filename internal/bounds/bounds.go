// Package bounds holds the limits of the dates and numbers the API accepts
// in request bodies (the spec gives none: "not shown"), in one place so
// that every body is judged alike and nothing accepted can overflow a
// column downstream: ClickHouse's DateTime holds 1970 to 2106, Int32 and
// UInt32 hold about two and four billion, Decimal(18, 4) under 10^14.
//
// It must not know the bodies: callers name the field, spelled as in the
// body, and get the API's INVALID_FIELD error (domainerr.Field).
package bounds

import (
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// The window of dates of things that happen: held, booked, available,
// priced. One year back (a correction of last season's availability or
// prices) to two years ahead (the longest sales horizon of tours and
// activities we know of).
const (
	Past   = 366 * 24 * time.Hour
	Future = 2 * 366 * 24 * time.Hour
)

// Numbers.
const (
	// MaxCapacity bounds an availability's capacity and maxCapacity, and a
	// rule's vacanciesUnder: no departure has a million places, and every
	// such count fits Int32 (history_availability_changes).
	MaxCapacity = 1_000_000
	// MaxTravelers bounds a rate's minTravelers and maxTravelers.
	MaxTravelers = 10_000
	// MaxAge bounds ages (traveler types, customers).
	MaxAge = 150
	// MaxPeriodSeconds bounds a rate's cutoff and holdablePeriod (in
	// seconds): a year.
	MaxPeriodSeconds = 366 * 24 * 60 * 60
	// MaxMoney bounds amounts to what Decimal(18, 4) holds.
	MaxMoney = 99_999_999_999_999
)

// The span of a validity (bindings, rates, opening hours): a contract may
// be signed long ahead, but not past 2099, and nothing before 2000 is
// meaningful; both ends are well inside DateTime.
var (
	ValidityFrom  = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	ValidityUntil = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Window is [now - Past, now + Future].
func Window(now time.Time) (from, until time.Time) {
	now = now.UTC()
	return now.Add(-Past), now.Add(Future)
}

// Time refuses t outside Window(now), naming field.
func Time(field string, t, now time.Time) error {
	from, until := Window(now)
	if t.Before(from) || t.After(until) {
		return domainerr.Field(field, fmt.Sprintf("must be from %s to %s (one year back to two years ahead)",
			from.Format(time.DateOnly), until.Format(time.DateOnly)))
	}
	return nil
}

// Validity refuses t outside [ValidityFrom, ValidityUntil), naming field.
func Validity(field string, t time.Time) error {
	if t.Before(ValidityFrom) || !t.Before(ValidityUntil) {
		return domainerr.Field(field, "must be in the years 2000 to 2099")
	}
	return nil
}

// Int refuses v outside [lo, hi], naming field.
func Int(field string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return domainerr.Field(field, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return nil
}

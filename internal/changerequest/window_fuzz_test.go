package changerequest

import (
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// FuzzNewInputWindow: an operator's startDate and endDate (spec doc 3,
// POST /notifications query string) are accepted only as a window of
// dates YYYY-MM-DD, end after start, at most MaxWindowDays long; both
// absent take the mode's default. A refusal is a field error naming
// startDate or endDate. Never a panic.
func FuzzNewInputWindow(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"2026-11-24", "2026-12-24"}, {"2026-11-24", ""}, {"", "2026-11-24"}, {"2026-12-24", "2026-11-24"},
		{"2026-01-01", "2027-01-03"}, {"2026-02-30", "2026-03-01"}, {"2026-11-24T00:00:00Z", "2026-11-25"}, {"0000-01-01", "9999-12-31"}} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	today := time.Date(2026, 11, 24, 15, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, start, end string, priceSchedule bool) {
		in := NewInput{StartDate: start, EndDate: end, Mode: ModeStandard}
		if priceSchedule {
			in.Mode = ModePriceSchedule
		}
		err := in.Window(today)
		if err != nil {
			var fe *domainerr.FieldError
			if !errors.As(err, &fe) || (fe.Field != "startDate" && fe.Field != "endDate") {
				t.Fatalf("(%q, %q): refusal %v names no date field", start, end, err)
			}
			return
		}
		s, err1 := time.Parse(DateLayout, in.StartDate)
		e, err2 := time.Parse(DateLayout, in.EndDate)
		if err1 != nil || err2 != nil {
			t.Fatalf("(%q, %q) accepted as (%q, %q): not dates", start, end, in.StartDate, in.EndDate)
		}
		if !e.After(s) || e.Sub(s) > MaxWindowDays*24*time.Hour {
			t.Fatalf("(%q, %q) accepted as (%q, %q): empty or longer than %d days", start, end, in.StartDate, in.EndDate, MaxWindowDays)
		}
		if (start == "") != (end == "") {
			t.Fatalf("(%q, %q): one date without the other accepted", start, end)
		}
	})
}

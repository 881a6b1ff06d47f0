package bookingsync

import (
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

// FuzzScheduleEntry: whatever a booking system's price entry holds (the
// client checked its dates and amounts, not its unit ids), the mapping
// never panics, and a mapped entry has inclusive dates in order and
// catalog ids unique within it.
func FuzzScheduleEntry(f *testing.F) {
	f.Add("2026-11-22", "2026-12-01", "adult", "EUR", 2, int64(2500), "child", "USD")
	f.Add("2026-11-22", "2026-11-23", "a", "JPY", 0, int64(0), "a", "EUR")
	f.Add("2026-11-22", "2026-11-23", "a/b", "EUR", 8, int64(1), "é", "EUR")
	f.Fuzz(func(t *testing.T, start, end, u1, c1 string, prec int, retail int64, u2, c2 string) {
		s, err1 := time.Parse(time.DateOnly, start)
		e, err2 := time.Parse(time.DateOnly, end)
		if err1 != nil || err2 != nil || !s.Before(e) || prec < 0 || prec > 8 || retail < 0 {
			return // the client rejects these (bookingsystem.RuleDate, RulePrice)
		}
		in := bookingsystem.PriceEntry{OptionID: "o", LocalDateStart: start, LocalDateEnd: end, UnitPricing: []bookingsystem.UnitPrice{
			{UnitID: u1, Currency: c1, CurrencyPrecision: prec, Retail: retail}, {UnitID: u2, Currency: c2, CurrencyPrecision: prec, Retail: retail}}}
		out, err := ScheduleEntry(in)
		if err != nil {
			return
		}
		if out.From != start || out.Until < out.From {
			t.Fatalf("dates %s..%s from %s..%s", out.From, out.Until, start, end)
		}
		seen := map[string]bool{}
		for _, p := range out.Prices {
			if !catalog.ValidID(p.ID) || seen[p.ID] {
				t.Fatalf("price id %q", p.ID)
			}
			seen[p.ID] = true
			if strings.HasPrefix(string(p.Retail.Amount), "-") {
				t.Fatalf("amount %s", p.Retail.Amount)
			}
		}
	})
}

// FuzzParseItem: a schedule member read back from Redis is an item only
// when it is three catalog ids, and then it is its own key.
func FuzzParseItem(f *testing.F) {
	f.Add("S1/P1/O1")
	f.Add("S1//O1")
	f.Add("a/b/c/d")
	f.Fuzz(func(t *testing.T, s string) {
		it, ok := parseItem(s)
		if ok && it.key() != s {
			t.Fatalf("%q parsed as %+v", s, it)
		}
	})
}

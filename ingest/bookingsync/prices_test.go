package bookingsync

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

func int64p(v int64) *int64 { return &v }

// TestScheduleEntry_Mapping: the booking system's price entries (dates end
// exclusive, integer minor units) as catalog price-schedule entries (dates
// inclusive, decimal amounts).
func TestScheduleEntry_Mapping(t *testing.T) {
	tests := []struct {
		name    string
		in      bookingsystem.PriceEntry
		want    string // JSON of the entry
		wantErr string
	}{
		{"two decimals, net",
			bookingsystem.PriceEntry{OptionID: "o", LocalDateStart: "2026-11-22", LocalDateEnd: "2026-12-01",
				UnitPricing: []bookingsystem.UnitPrice{{UnitID: "child", Currency: "EUR", CurrencyPrecision: 2, Retail: 1250, Net: int64p(1000)},
					{UnitID: "adult", Currency: "EUR", CurrencyPrecision: 2, Retail: 2500}}},
			`{"from":"2026-11-22","until":"2026-11-30","prices":[{"id":"adult","retail":{"amount":25.00,"currency":"EUR"}},{"id":"child","net":{"amount":10.00,"currency":"EUR"},"retail":{"amount":12.50,"currency":"EUR"}}]}`, ""},
		{"no decimals",
			bookingsystem.PriceEntry{LocalDateStart: "2026-11-22", LocalDateEnd: "2026-11-23",
				UnitPricing: []bookingsystem.UnitPrice{{UnitID: "adult", Currency: "JPY", Retail: 2500}}},
			`{"from":"2026-11-22","until":"2026-11-22","prices":[{"id":"adult","retail":{"amount":2500,"currency":"JPY"}}]}`, ""},
		{"three decimals",
			bookingsystem.PriceEntry{LocalDateStart: "2026-11-22", LocalDateEnd: "2026-11-23",
				UnitPricing: []bookingsystem.UnitPrice{{UnitID: "adult", Currency: "KWD", CurrencyPrecision: 3, Retail: 5}}},
			`{"from":"2026-11-22","until":"2026-11-22","prices":[{"id":"adult","retail":{"amount":0.005,"currency":"KWD"}}]}`, ""},
		{"a unit in two currencies: ids unique within the entry",
			bookingsystem.PriceEntry{LocalDateStart: "2026-11-22", LocalDateEnd: "2026-11-23",
				UnitPricing: []bookingsystem.UnitPrice{{UnitID: "adult", Currency: "USD", CurrencyPrecision: 2, Retail: 100},
					{UnitID: "adult", Currency: "EUR", CurrencyPrecision: 2, Retail: 90}}},
			`{"from":"2026-11-22","until":"2026-11-22","prices":[{"id":"adult~EUR","retail":{"amount":0.90,"currency":"EUR"}},{"id":"adult~USD","retail":{"amount":1.00,"currency":"USD"}}]}`, ""},
		{"no prices", bookingsystem.PriceEntry{LocalDateStart: "2026-11-22", LocalDateEnd: "2026-11-24"},
			`{"from":"2026-11-22","until":"2026-11-23","prices":[]}`, ""},
		{"a unit priced twice in one currency",
			bookingsystem.PriceEntry{LocalDateStart: "2026-11-22", LocalDateEnd: "2026-11-23",
				UnitPricing: []bookingsystem.UnitPrice{{UnitID: "adult", Currency: "EUR", Retail: 1}, {UnitID: "adult", Currency: "EUR", Retail: 2}}},
			"", "priced twice"},
		{"a unit id that cannot be a price id",
			bookingsystem.PriceEntry{LocalDateStart: "2026-11-22", LocalDateEnd: "2026-11-23",
				UnitPricing: []bookingsystem.UnitPrice{{UnitID: "adult/senior", Currency: "EUR", Retail: 1}}},
			"", "cannot be a price id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScheduleEntry(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			raw, _ := json.Marshal(got)
			if err != nil || string(raw) != tt.want {
				t.Fatalf("got %s (%v)\nwant %s", raw, err, tt.want)
			}
		})
	}
}

func entry(from, until string) catalog.PriceScheduleEntry {
	return catalog.PriceScheduleEntry{From: from, Until: until, Prices: []catalog.Price{}}
}

func spans(es []catalog.PriceScheduleEntry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "[%s %s]", e.From, e.Until)
	}
	return b.String()
}

// TestReplaceWindow: stored entries keep their days outside the window,
// fresh ones only their days inside.
func TestReplaceWindow(t *testing.T) {
	tests := []struct {
		name          string
		stored, fresh []catalog.PriceScheduleEntry
		want          string
	}{
		{"a stored entry spanning the window becomes two",
			[]catalog.PriceScheduleEntry{entry("2026-11-01", "2026-12-31")}, []catalog.PriceScheduleEntry{entry("2026-12-01", "2026-12-10")},
			"[2026-11-01 2026-11-30][2026-12-01 2026-12-10][2026-12-11 2026-12-31]"},
		{"stored inside the window: replaced",
			[]catalog.PriceScheduleEntry{entry("2026-12-02", "2026-12-03")}, nil, ""},
		{"fresh beyond the window: cut",
			nil, []catalog.PriceScheduleEntry{entry("2026-11-20", "2026-12-20")}, "[2026-12-01 2026-12-10]"},
		{"stored outside: kept",
			[]catalog.PriceScheduleEntry{entry("2027-01-01", "2027-01-05"), entry("2026-10-01", "2026-11-30")}, nil,
			"[2026-10-01 2026-11-30][2027-01-01 2027-01-05]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spans(replaceWindow(tt.stored, tt.fresh, "2026-12-01", "2026-12-10")); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func (e *env) schedule0(t *testing.T, pid, rid string) catalog.PriceSchedule {
	t.Helper()
	ps, err := e.Store.PriceSchedule(ctx, catalog.SystemScope(), sid, pid, rid)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestRefreshPriceSchedule_WritesEachOptionOverTheWindow: price-schedule
// mode (doc 3, change notification rule 4) gives each rate its option's
// entries over the window, keeps the days outside it, and an identical
// second request publishes nothing.
func TestRefreshPriceSchedule_WritesEachOptionOverTheWindow(t *testing.T) {
	e := start(t, envOptions{})
	sy := e.syncer(nil)
	if _, err := e.sync(t, sy, 1); err != nil {
		t.Fatal(err)
	}
	old := []catalog.Price{{ID: "old", Retail: &catalog.Money{Amount: "1", Currency: "EUR"}}}
	if _, err := e.Store.PutPriceSchedule(ctx, catalog.SystemScope(), sid, "S1-P1", "S1-P1-O1", []catalog.PriceScheduleEntry{
		{From: "2026-11-01", Until: "2026-11-25", Prices: old}, {From: "2027-02-01", Until: "2027-02-10", Prices: old}}); err != nil {
		t.Fatal(err)
	}
	e.published()
	out, err := sy.RefreshPriceSchedule(ctx, sid, "S1-P1", "2026-11-22", "2027-01-10")
	if err != nil || len(out.Failures) != 0 || out.Items != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	o1 := e.schedule0(t, "S1-P1", "S1-P1-O1")
	if got, want := spans(o1.Entries), "[2026-11-01 2026-11-21][2026-11-22 2026-11-30][2026-12-01 2026-12-31][2027-01-01 2027-01-09][2027-02-01 2027-02-10]"; got != want {
		t.Fatalf("O1 entries %s, want %s", got, want)
	}
	if o1.Entries[0].Prices[0].ID != "old" || o1.Entries[4].Prices[0].ID != "old" {
		t.Fatal("the days outside the window lost their prices")
	}
	ps := o1.Entries[1].Prices
	if len(ps) != 2 || ps[0].ID != "adult" || ps[1].ID != "child" || ps[0].Retail.Currency != "EUR" || !strings.Contains(string(ps[0].Retail.Amount), ".") || ps[0].Net == nil {
		t.Fatalf("prices %s", jsonString(ps))
	}
	if got := spans(e.schedule0(t, "S1-P1", "S1-P1-O2").Entries); got != "[2026-11-22 2026-11-30][2026-12-01 2026-12-31][2027-01-01 2027-01-09]" {
		t.Fatalf("O2 entries %s", got)
	}
	if n := e.published(); n != 2 {
		t.Fatalf("published %d records, want one schedule per rate", n)
	}
	if _, err := sy.RefreshPriceSchedule(ctx, sid, "S1-P1", "2026-11-22", "2027-01-10"); err != nil {
		t.Fatal(err)
	}
	if n := e.published(); n != 0 {
		t.Fatalf("an identical request published %d records", n)
	}
}

// TestRefreshPriceSchedule_RejectedEntriesAreNeverHalfApplied: an option
// with an entry the client rejects keeps its stored schedule; an entry
// that names no option blocks every option; an option the catalog lacks
// is reported.
func TestRefreshPriceSchedule_RejectedEntriesAreNeverHalfApplied(t *testing.T) {
	tests := []struct {
		name      string
		spoil     func(e map[string]any) bool // true: drop the entry
		add       []map[string]any
		written   int
		failsWith []string
	}{
		{"a negative price of O2: O2 not written, O1 written",
			func(e map[string]any) bool {
				if e["optionId"] == "S1-P1-O2" {
					e["unitPricing"].([]any)[0].(map[string]any)["retail"] = -1
				}
				return false
			}, nil, 1, []string{"option S1/S1-P1/S1-P1-O2: priceEntry"}},
		{"an entry without option id: nothing written",
			func(e map[string]any) bool {
				if e["optionId"] == "S1-P1-O1" && e["localDateStart"] == "2026-12-01" {
					delete(e, "optionId")
				}
				return false
			}, nil, 0, []string{"priceEntry", "option S1/S1-P1/S1-P1-O1: not written", "option S1/S1-P1/S1-P1-O2: not written"}},
		{"an option the catalog lacks: reported, the others written",
			nil, []map[string]any{{"optionId": "S1-P1-O9", "localDateStart": "2026-12-01", "localDateEnd": "2026-12-02", "unitPricing": []any{}}},
			2, []string{"option S1/S1-P1/S1-P1-O9: priced by the booking system but not a rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, envOptions{})
			sy := e.syncer(nil)
			if _, err := e.sync(t, sy, 1); err != nil {
				t.Fatal(err)
			}
			e.setRewrite(func(r *http.Request, body any) any {
				if !strings.HasSuffix(r.URL.Path, "/pricing") {
					return body
				}
				var out []any
				for _, x := range body.([]any) {
					if tt.spoil == nil || !tt.spoil(x.(map[string]any)) {
						out = append(out, x)
					}
				}
				for _, a := range tt.add {
					out = append(out, a)
				}
				return out
			})
			out, err := sy.RefreshPriceSchedule(ctx, sid, "S1-P1", "2026-11-22", "2027-01-10")
			if err != nil || out.Items != tt.written {
				t.Fatalf("%+v %v", out, err)
			}
			all := strings.Join(out.Failures, "\n")
			for _, w := range tt.failsWith {
				if !strings.Contains(all, w) {
					t.Errorf("no failure %q in:\n%s", w, all)
				}
			}
			if tt.written < 2 {
				if n := len(e.schedule0(t, "S1-P1", "S1-P1-O2").Entries); n != 0 {
					t.Errorf("O2 was half-applied: %d entries", n)
				}
			}
		})
	}
}

// TestRefreshPriceSchedule_OCTO: an OCTO booking system's schedule (read
// from availability with octo/pricing) lands the same way.
func TestRefreshPriceSchedule_OCTO(t *testing.T) {
	e := start(t, envOptions{dialect: catalog.ConnectionOCTO})
	sy := e.syncer(nil)
	if _, err := e.sync(t, sy, 1); err != nil {
		t.Fatal(err)
	}
	out, err := sy.RefreshPriceSchedule(ctx, sid, "S1-P1", e.clock.today(0), e.clock.today(10))
	if err != nil || out.Items != 2 || len(out.Failures) != 0 {
		t.Fatalf("%+v %v", out, err)
	}
	if es := e.schedule0(t, "S1-P1", "S1-P1-O1").Entries; len(es) == 0 || len(es[0].Prices) != 2 {
		t.Fatalf("entries %s", jsonString(es))
	}
}

// TestRefreshPriceSchedule_OCTORejectedPricesBlockTheirOptionOnly: an OCTO
// schedule is read option by option from availabilities; a problem found
// in one names its option (Problem.ID, as a v2 price entry's does), so
// only that option keeps its stored schedule and the others are written.
func TestRefreshPriceSchedule_OCTORejectedPricesBlockTheirOptionOnly(t *testing.T) {
	price := func(a any) map[string]any {
		return a.(map[string]any)["unitPricing"].([]any)[0].(map[string]any)
	}
	tests := []struct {
		name      string
		spoil     func(avs []any) // O2's pricing answer
		failsWith string
	}{
		{"a negative price on an O2 availability", func(avs []any) { price(avs[0])["retail"] = -1 },
			`option S1/S1-P1/S1-P1-O2: availability 0 ("S1-P1-O2", availability `},
		{"two O2 slots of one day with other prices", func(avs []any) { price(avs[1])["retail"] = price(avs[0])["retail"].(float64) + 1 },
			`option S1/S1-P1/S1-P1-O2: priceEntry 0 ("S1-P1-O2", date `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, envOptions{dialect: catalog.ConnectionOCTO})
			sy := e.syncer(nil)
			if _, err := e.sync(t, sy, 1); err != nil {
				t.Fatal(err)
			}
			reads := 0
			e.setRewrite(func(r *http.Request, body any) any {
				if !strings.HasSuffix(r.URL.Path, "/availability") || !strings.Contains(r.Header.Get("Octo-Capabilities"), "octo/pricing") {
					return body
				}
				if reads++; reads == 2 { // options are read in order: O1, then O2
					tt.spoil(body.([]any))
				}
				return body
			})
			out, err := sy.RefreshPriceSchedule(ctx, sid, "S1-P1", e.clock.today(0), e.clock.today(10))
			if err != nil || out.Items != 1 {
				t.Fatalf("%+v %v, want O1 written", out, err)
			}
			if all := strings.Join(out.Failures, "\n"); !strings.Contains(all, tt.failsWith) {
				t.Fatalf("failures:\n%s\nwant %q", all, tt.failsWith)
			}
			if es := e.schedule0(t, "S1-P1", "S1-P1-O1").Entries; len(es) == 0 {
				t.Fatal("O1 not written")
			}
			if es := e.schedule0(t, "S1-P1", "S1-P1-O2").Entries; len(es) != 0 {
				t.Fatalf("O2 half-applied: %s", jsonString(es))
			}
		})
	}
}

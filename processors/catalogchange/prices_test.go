package catalogchange

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

func TestLookAhead(t *testing.T) {
	today := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return today.AddDate(0, 0, n) }
	r := func(a, b int) catalog.DateRange { return catalog.DateRange{Start: day(a), End: day(b)} }
	tests := []struct {
		name string
		in   []catalog.DateRange
		days int
		want []catalog.DateRange
	}{
		{"inside", []catalog.DateRange{r(1, 3)}, 7, []catalog.DateRange{r(1, 3)}},
		{"in the past: dropped", []catalog.DateRange{r(-5, -1)}, 7, nil},
		{"started yesterday: clipped to today", []catalog.DateRange{r(-1, 2)}, 7, []catalog.DateRange{r(0, 2)}},
		{"ends past the window: clipped", []catalog.DateRange{r(5, 30)}, 7, []catalog.DateRange{r(5, 7)}},
		{"starts on the window's end: dropped", []catalog.DateRange{r(7, 9)}, 7, nil},
		{"0 days means the default 7", []catalog.DateRange{r(6, 9)}, 0, []catalog.DateRange{r(6, 7)}},
		{"one day window", []catalog.DateRange{r(0, 5)}, 1, []catalog.DateRange{r(0, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LookAhead(tt.in, today, tt.days); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// priceNotes reads the priceschedule notifications of the last drain as
// "subscriber start..end" (dates).
func priceNotes(t *testing.T, h *harness) []string {
	t.Helper()
	names := map[string]string{h.e.Reseller1.ID: "R1", h.e.Reseller1b.ID: "R1b", h.e.Reseller2.ID: "R2"}
	notes, _ := splitTopics(t, h.notes.Messages())
	var out []string
	for _, m := range notes {
		var p schemas.PriceSchedulePayload
		n, err := schemas.DecodeNotification(m.Value)
		if err != nil || json.Unmarshal(n.Payload, &p) != nil {
			t.Fatalf("bad notification %s", m.Value)
		}
		if n.Type != schemas.TypePriceSchedule || p.SupplierID != "s1" || p.ProductID != "p1" || n.EntityKey != "s1/p1" {
			t.Fatalf("unexpected notification %s / %s", m.Value, n.Payload)
		}
		out = append(out, names[n.Subscriber]+" "+p.Start[:10]+".."+p.End[:10])
	}
	slices.Sort(out)
	return out
}

// TestPriceSchedule_NotifiesBoundSubscribersInsideTheirLookAhead: an
// operator's price schedule change notifies the subscribers whose channel
// has the rate bound, for the changed days inside maxLookAheadDays, as
// their binding's priceTags let them see the prices; rule filters apply.
func TestPriceSchedule_NotifiesBoundSubscribersInsideTheirLookAhead(t *testing.T) {
	h := newHarness(t)
	e := h.e
	h.rules.set(e.Reseller1.ID, schemas.TypePriceSchedule, registry.Config{MaxLookAheadDays: 7})
	h.rules.set(e.Reseller1b.ID, schemas.TypePriceSchedule, registry.Config{RateIDs: []string{"r2"}})
	h.rules.set(e.Reseller2.ID, schemas.TypePriceSchedule, registry.Config{MaxLookAheadDays: 30})
	op := e.As(t, e.Operator)
	seedProduct(op, "r1", "r2")
	op.CreateBinding("s1", "p1", "chan-a", `{"rateIds":["r1"]}`)
	op.CreateBinding("s1", "p1", "chan-b", `{"priceTags":["b2b"]}`)
	h.drain(t)

	today := time.Now().UTC().Truncate(24 * time.Hour)
	day := func(n int) string { return today.AddDate(0, 0, n).Format(time.DateOnly) }
	schedule := func(publicRetail, b2bRetail string) string {
		return fmt.Sprintf(`{"entries":[
{"from":%q,"until":%q,"prices":[{"id":"a","labels":["public"],"retail":{"amount":%s,"currency":"EUR"}},{"id":"b","labels":["b2b"],"retail":{"amount":%s,"currency":"EUR"}}]},
{"from":%q,"until":%q,"prices":[{"id":"a","labels":["public"],"retail":{"amount":%s,"currency":"EUR"}}]}]}`,
			day(2), day(4), publicRetail, b2bRetail, day(20), day(22), publicRetail)
	}
	steps := []struct {
		name, rate, body string
		want             []string
	}{
		{"first schedule: R1 inside 7 days, R2 (b2b prices) inside 30 days", "r1", schedule("10", "5"),
			[]string{"R1 " + day(2) + ".." + day(5), "R2 " + day(2) + ".." + day(5), "R2 " + day(20) + ".." + day(23)}},
		{"the same schedule again: nothing", "r1", schedule("10", "5"), nil},
		{"public price changed: R1 only (R2's binding shows b2b prices)", "r1", schedule("11", "5"),
			[]string{"R1 " + day(2) + ".." + day(5)}},
		{"b2b price changed: R2, and R1 whose binding shows every price", "r1", schedule("11", "6"),
			[]string{"R1 " + day(2) + ".." + day(5), "R2 " + day(2) + ".." + day(5)}},
		// The second entry shows chan-b no price, where it saw the rate's
		// own: an entry added is a change even so.
		{"r2 is not bound to chan-a: R1b's filter on r2 hears nothing; chan-b has it", "r2", schedule("1", "2"),
			[]string{"R2 " + day(2) + ".." + day(5), "R2 " + day(20) + ".." + day(23)}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			e.As(t, e.Operator).PutPriceSchedule("s1", "p1", s.rate, s.body)
			h.drain(t)
			if got := priceNotes(t, h); !slices.Equal(got, s.want) {
				t.Errorf("notifications %q, want %q", got, s.want)
			}
		})
	}
}

// TestPriceSchedule_HistoryRowsPerChangedPrice: each changed price of each
// run of days is one price.changed history event with old and new amounts.
func TestPriceSchedule_HistoryRowsPerChangedPrice(t *testing.T) {
	h := newHarness(t)
	e := h.e
	op := e.As(t, e.Operator)
	seedProduct(op, "r1")
	body := func(a, b string) string {
		return `{"entries":[{"from":"2027-01-01","until":"2027-01-31","prices":[{"id":"a","retail":{"amount":` + a +
			`,"currency":"EUR"}},{"id":"b","retail":{"amount":` + b + `,"currency":"EUR"},"net":{"amount":1,"currency":"EUR"}}]}]}`
	}
	op.PutPriceSchedule("s1", "p1", "r1", body("10", "20"))
	h.drain(t)
	op.PutPriceSchedule("s1", "p1", "r1", body("10", "25"))
	h.drain(t)
	_, hist := splitTopics(t, h.notes.Messages())
	var rows []schemas.PriceChanged
	for _, m := range hist {
		var env schemas.Envelope
		var pc schemas.PriceChanged
		if json.Unmarshal(m.Value, &env) != nil || env.Type != schemas.HistoryPriceChanged {
			continue
		}
		if err := json.Unmarshal(env.Data, &pc); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, pc)
	}
	if len(rows) != 1 {
		t.Fatalf("price.changed rows = %+v, want one (price b; a did not change)", rows)
	}
	r := rows[0]
	if r.PriceID != "b" || r.OldRetail != 20 || r.NewRetail != 25 || r.OldNet != 1 || r.NewNet != 1 || r.Currency != "EUR" ||
		r.Start.Format(time.DateOnly) != "2027-01-01" || r.End.Format(time.DateOnly) != "2027-02-01" || r.RateID != "r1" {
		t.Errorf("row %+v", r)
	}
}

// TestPriceSchedule_OneNotificationPerProductAndWindowOfABatch: a write of
// several rates' schedules of one product in one batch (a booking
// system's price-schedule refresh) gives each subscriber one notification
// per window, whatever the number of rates (the payload names no rate):
// the notifications of the batch's events share their ids, which the
// dispatcher sends once. Writes outside a batch keep ids of their own.
func TestPriceSchedule_OneNotificationPerProductAndWindowOfABatch(t *testing.T) {
	h := newHarness(t)
	e := h.e
	h.rules.set(e.Reseller1.ID, schemas.TypePriceSchedule, registry.Config{MaxLookAheadDays: 7})
	op := e.As(t, e.Operator)
	seedProduct(op, "r1", "r2")
	op.CreateBinding("s1", "p1", "chan-a", `{}`)
	h.drain(t)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	entries := func(amount string) []catalog.PriceScheduleEntry {
		return []catalog.PriceScheduleEntry{{From: today.AddDate(0, 0, 1).Format(time.DateOnly), Until: today.AddDate(0, 0, 2).Format(time.DateOnly),
			Prices: []catalog.Price{{ID: "a", Retail: &catalog.Money{Amount: json.Number(amount), Currency: "EUR"}}}}}
	}
	ids := func(batch, amount string) []string {
		t.Helper()
		for _, rid := range []string{"r1", "r2"} {
			if _, err := e.Store.PutPriceScheduleIn(t.Context(), catalog.SystemScope(), batch, "s1", "p1", rid, entries(amount)); err != nil {
				t.Fatal(err)
			}
		}
		h.drain(t)
		notes, _ := splitTopics(t, h.notes.Messages())
		var out []string
		for _, m := range notes {
			n, err := schemas.DecodeNotification(m.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n.ID)
		}
		return out
	}
	if got := ids("batch-1", "10"); len(got) != 2 || got[0] != got[1] {
		t.Fatalf("one batch of two rates: notification ids %v, want two equal ids (sent once)", got)
	}
	if got := ids("", "11"); len(got) != 2 || got[0] == got[1] {
		t.Fatalf("two writes outside a batch: notification ids %v, want two of their own", got)
	}
}

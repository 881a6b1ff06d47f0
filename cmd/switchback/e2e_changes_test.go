package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
)

// TestE2E_AvailabilityAndPriceChangesNotifyWithTheRightWindow, over the
// binary: an operator pushes a rate's availabilities (a baseline, then a
// change of one window and a window beyond the look-ahead), and a price
// schedule; the subscriber's availability webhook names exactly the
// changed window inside maxLookAheadDays, and its priceschedule webhook the
// changed days inside its own look-ahead. Signatures are verified by code
// written from the spec text.
func TestE2E_AvailabilityAndPriceChangesNotifyWithTheRightWindow(t *testing.T) {
	d := startDemo(t)
	p, sk, operator, reseller := d.p, d.sk, d.operator, d.reseller

	keys := map[string]string{}
	for _, r := range []struct{ path, config string }{
		{"availability", `{"maxLookAheadDays":3,"vacanciesUnder":5}`},
		{"priceschedule", `{"maxLookAheadDays":5}`},
	} {
		rule := reseller.must("POST", "/registry/v1.1/"+r.path, fmt.Sprintf(`{"url":%q,"config":%s}`, sk.url+"/"+r.path, r.config), 201)
		keys[r.path] = rule["securityKey"].(string)
	}
	const sup, prod = "sup-chg", "prod-chg"
	base := createProduct(operator, sup, prod, catalogtest.SupplierBody(sup, "Change Tours", "CHG", "k", "s"), catalogtest.ProductBody(prod, "Lake cruise", "A cruise"),
		catalogtest.RateBody("rate-a", "Adult"))
	operator.must("POST", base+"/channels/"+app.DemoChannelID, `{"rateIds":["rate-a"]}`, 201)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	window := func(d, h int) (string, string) {
		s := day.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour)
		return s.Format(time.RFC3339), s.Add(2 * time.Hour).Format(time.RFC3339)
	}
	push := func(nearCap, farCap int) {
		t.Helper()
		s1, e1 := window(1, 9)
		s2, e2 := window(10, 9) // beyond maxLookAheadDays 3
		body := fmt.Sprintf(`{"availabilities":[{"id":"near","start":%q,"end":%q,"capacity":%d},{"id":"far","start":%q,"end":%q,"capacity":%d}]}`,
			s1, e1, nearCap, s2, e2, farCap)
		if status, got, _ := operator.do("PUT", base+"/rates/rate-a/availabilities", body); status != 200 {
			t.Fatalf("push availabilities: %d %v", status, got)
		}
	}
	push(10, 10) // baseline: no news
	push(2, 1)   // the near window goes under 5; the far one is beyond the look-ahead
	got := sk.waitFor(t, "/availability", 1, 30*time.Second)
	specVerify(t, keys["availability"], got[0])
	s1, e1 := window(1, 9)
	if b := got[0].body; b["supplierID"] != sup || b["productID"] != prod || b["rateID"] != "rate-a" || b["start"] != s1 || b["end"] != e1 {
		t.Fatalf("availability webhook = %s, want the near window %s..%s", got[0].raw, s1, e1)
	}

	sched := fmt.Sprintf(`{"entries":[{"from":%q,"until":%q,"prices":[{"id":"p","retail":{"amount":12,"currency":"EUR"}}]}]}`,
		day.AddDate(0, 0, 2).Format(time.DateOnly), day.AddDate(0, 0, 20).Format(time.DateOnly))
	if status, body, _ := operator.do("PUT", base+"/rates/rate-a/priceschedule", sched); status != 200 {
		t.Fatalf("put price schedule: %d %v", status, body)
	}
	got = sk.waitFor(t, "/priceschedule", 1, 30*time.Second)
	specVerify(t, keys["priceschedule"], got[0])
	wantStart, wantEnd := day.AddDate(0, 0, 2).Format(time.RFC3339), day.AddDate(0, 0, 5).Format(time.RFC3339)
	if b := got[0].body; b["supplierID"] != sup || b["productID"] != prod || b["start"] != wantStart || b["end"] != wantEnd {
		t.Fatalf("priceschedule webhook = %s, want %s..%s (clipped to 5 days)", got[0].raw, wantStart, wantEnd)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(sk.on("/availability")); n != 1 {
		t.Errorf("availability webhooks = %d, want exactly 1 (the far window is beyond the look-ahead)", n)
	}
	p.stop(t)
}

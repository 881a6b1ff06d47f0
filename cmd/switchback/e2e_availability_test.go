package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
)

// TestE2E_AvailabilityReadsGoThroughTheCache is issue 5's read path over
// the binary: an operator's supplier reached through a partner (the
// simulated one), two of three rates bound to the demo channel; the demo
// reseller's first read calls the partner once, the next reads inside the
// 5 minutes are served from the cache (no partner call), only bound rates
// are visible, and /metrics counts the misses and hits.
func TestE2E_AvailabilityReadsGoThroughTheCache(t *testing.T) {
	sim := partnersim.New(partnersim.Config{APIKey: "partner-key", APISecret: "partner-secret",
		Rates: map[string][]string{"prod-av": {"rate-a", "rate-b", "rate-c"}}})
	ps := serve(t, sim)

	d := startDemo(t)
	p, operator, reseller := d.p, d.operator, d.reseller

	const sup, prod = "sup-av", "prod-av"
	supplier := partnerSupplier(sup, "Avail Tours", "AV", "partner-key", "partner-secret", ps.URL)
	base := createProduct(operator, sup, prod, supplier, catalogtest.ProductBody(prod, "Canyon ride", "A ride"),
		catalogtest.RateBody("rate-a", "Adult"), catalogtest.RateBody("rate-b", "Child"), catalogtest.RateBody("rate-c", "Senior"))
	operator.must("POST", base+"/channels/"+app.DemoChannelID, `{"priceAt":"PRICE_AT_SALE","rateIds":["rate-a","rate-b"]}`, 201)

	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2)
	list := fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", sup, prod,
		day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))

	// The binding reaches the query tier's view through the catalog
	// processor: poll until the product is visible.
	body := reseller.awaitGet("list availabilities", list, 20*time.Second)
	byRate, _ := body["availabilities"].(map[string]any)["byRate"].(map[string]any)
	if len(byRate) != 2 || byRate["rate-a"] == nil || byRate["rate-b"] == nil {
		t.Fatalf("byRate = %v, want exactly the bound rate-a and rate-b", byRate)
	}
	calls := sim.Calls()
	if calls != 1 {
		t.Fatalf("partner calls after the first read = %d, want 1", calls)
	}

	for _, q := range []string{list, list + "&rate_id=rate-a",
		fmt.Sprintf("/v1.3/suppliers/%s/products/%s/availability?at=%s&qty=1", sup, prod, day.Add(9*time.Hour+30*time.Minute).Format(time.RFC3339))} {
		status, body, _ := reseller.do("GET", q, "")
		if status != 200 {
			t.Fatalf("GET %s: %d %v", q, status, body)
		}
		if strings.Contains(q, "/availability?") {
			if _, ok := body["bookable"].(bool); !ok {
				t.Fatalf("single availability without bookable: %v", body)
			}
		}
	}
	if got := sim.Calls(); got != calls {
		t.Errorf("partner calls after warm reads = %d, want still %d (served from the cache)", got, calls)
	}
	if status, _, _ := reseller.do("GET", list+"&rate_id=rate-c", ""); status != 404 {
		t.Errorf("unbound rate-c: status %d, want 404", status)
	}
	if status, _, _ := reseller.do("GET", fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=x&end=y", sup, prod), ""); status != 400 {
		t.Errorf("invalid start: status %d, want 400", status)
	}

	raw := p.metrics(t)
	for _, want := range []string{`switchback_availability_cache_total{result="hit"}`, `switchback_availability_cache_total{result="miss"}`,
		`switchback_ingest_partner_seconds_count`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	p.stop(t)
}

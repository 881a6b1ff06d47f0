package main

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
	"github.com/switchbackhq/switchback/schemas"
)

// TestE2E_BookingSystemSupplierSyncsAndBooks is issue 6 over the binary,
// for both dialects (spec doc 3's v2, and OCTO): an operator connects a
// supplier through its booking system and adds nothing else; the
// scheduled full synchronization pulls its products, options (our rates)
// and availabilities into the catalog and leaves a cron report without
// errors (GET /operator/v2/cron/reports and /{id}, with the id rules of
// doc 3 rule 6). The operator binds a product; the reseller reads its
// availability, holds (createBooking on hold), books (confirmation), a
// retry of the booking is the same booking (one at the booking system),
// and cancels: the booking system's booking ends CANCELLED and the
// reseller's booking rule receives a signed `booking canceled` webhook.
func TestE2E_BookingSystemSupplierSyncsAndBooks(t *testing.T) {
	// An OCTO system has one endpoint per supplier: the simulator serves
	// its supplier S1 under /S1.
	for _, dialect := range []struct{ name, kind, path string }{
		{bookingsim.DialectV2, "bookingsystem", ""},
		{bookingsim.DialectOCTO, "octo", "/S1"},
	} {
		t.Run(dialect.name, func(t *testing.T) {
			sim := bookingsim.New(bookingsim.Config{Dialect: dialect.name, APIKey: "bs-token", Suppliers: 1, ProductsPerSupplier: 2})
			bs := httptest.NewServer(sim)
			t.Cleanup(bs.Close)

			// A run every 2 s: the first slot after start syncs.
			p := startBinary(t, "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true",
				"SWITCHBACK_SYNC_INTERVAL=2s", "SWITCHBACK_SYNC_HORIZON_DAYS=14")
			sk := newSink(t)
			api := "http://" + p.api
			operator := client{t, api, "demo-operator", "demo-operator-secret"}
			reseller := client{t, api, "demo-reseller", "demo-reseller-secret"}

			// The simulator's names: supplier S1; product S1-P1 is
			// START_TIME with options S1-P1-O1 and -O2.
			const sup, prod, opt = "S1", "S1-P1", "S1-P1-O1"
			supplier := fmt.Sprintf(`{"id":%q,"name":"Fjord Lines","code":"FJ","connection":{"kind":%q,"baseUrl":%q,"credentials":{"bearerToken":"bs-token"}}}`,
				sup, dialect.kind, bs.URL+dialect.path)
			if status, body, _ := operator.do("POST", "/channel/v1.2/suppliers", supplier); status != 201 {
				t.Fatalf("create supplier: %d %v", status, body)
			}

			// The cron report of the supplier's first synchronization.
			var report map[string]any
			for deadline := time.Now().Add(60 * time.Second); report == nil; {
				_, _, list := operator.do("GET", "/operator/v2/cron/reports?externalSystemID="+sup, "")
				if len(list) > 0 {
					report = list[0].(map[string]any)
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no cron report of the supplier within 60 s")
				}
				time.Sleep(200 * time.Millisecond)
			}
			if report["errorCount"] != float64(0) || report["externalSystemID"] != sup || report["errorReport"] != nil {
				t.Fatalf("cron report summary = %v, want errorCount 0 for %s and no errorReport in the list", report, sup)
			}
			id := fmt.Sprint(int64(report["id"].(float64)))
			status, full, _ := operator.do("GET", "/operator/v2/cron/reports/"+id, "")
			if status != 200 || fmt.Sprint(full["id"]) != fmt.Sprint(report["id"]) || full["inserted"] == nil {
				t.Fatalf("GET cron report %s: %d %v", id, status, full)
			}
			if _, has := full["errorReport"]; has {
				t.Fatalf("a report without errors has no errorReport: %v", full)
			}
			for _, bad := range []string{"0", "-1", "1.5", "abc", "1e3"} {
				if status, body, _ := operator.do("GET", "/operator/v2/cron/reports/"+bad, ""); status != 400 || body["code"] != "INVALID_FIELD" {
					t.Fatalf("GET cron report %q: %d %v, want 400 INVALID_FIELD", bad, status, body)
				}
			}
			if status, body, _ := operator.do("GET", "/operator/v2/cron/reports/999999999", ""); status != 404 {
				t.Fatalf("GET an unknown cron report: %d %v, want 404", status, body)
			}

			// The synchronization put the products and options in the
			// catalog: bind the START_TIME product to the demo channel.
			base := "/channel/v1.2/suppliers/" + sup + "/products/" + prod
			if status, body, _ := operator.do("GET", base+"/rates/"+opt, ""); status != 200 {
				t.Fatalf("option %s after the sync: %d %v", opt, status, body)
			}
			if status, body, _ := operator.do("POST", base+"/channels/"+app.DemoChannelID, `{}`); status != 201 {
				t.Fatalf("bind: %d %v", status, body)
			}
			status, rule, _ := reseller.do("POST", "/registry/v1.1/booking", fmt.Sprintf(`{"url":%q}`, sk.url+"/booking"))
			if status != 201 {
				t.Fatalf("booking rule: %d %v", status, rule)
			}

			// An availability of the option with room for two.
			start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
			list := fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", sup, prod,
				start.Format(time.RFC3339), start.AddDate(0, 0, 7).Format(time.RFC3339))
			var avID, at string
			for deadline := time.Now().Add(20 * time.Second); avID == ""; {
				if status, body, _ := reseller.do("GET", list, ""); status == 200 {
					avID, at = roomFor(body, opt, 2)
				}
				if avID == "" && time.Now().After(deadline) {
					t.Fatalf("no availability of %s with room for 2 within 20 s", opt)
				}
				time.Sleep(100 * time.Millisecond)
			}

			status, got, _ := reseller.do("POST", "/v1.2/holds", fmt.Sprintf(
				`{"hold":{"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"availabilityId":%q,"quantity":2,"at":%q}]}}`, sup, prod, opt, avID, at))
			if status != 201 {
				t.Fatalf("POST /v1.2/holds: %d %v", status, got)
			}
			holdID := got["hold"].(map[string]any)["id"].(string)
			book := fmt.Sprintf(`{"booking":{"id":"bs-e2e-1","holdId":%q,"resellerBookingRef":"BS-REF-1","customer":{"firstName":"Ada","lastName":"Lovelace","email":"ada@example.com"},"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"availabilityId":%q,"quantity":2,"startTime":%q}]}}`,
				holdID, sup, prod, opt, avID, at)
			for i := range 2 { // the second is a retry: the same booking
				if status, got, _ := reseller.do("POST", "/v1.2/bookings", book); status != 201 {
					t.Fatalf("POST /v1.2/bookings (attempt %d): %d %v", i+1, status, got)
				}
			}
			// One hold item (2 units of one option) is one createBooking
			// of 2 unit items; the retry made none.
			if n := sim.Bookings(); n != 1 {
				t.Fatalf("bookings at the booking system = %d, want 1", n)
			}
			if status, got, _ = reseller.do("PUT", "/v1.2/bookings/cancel/bs-e2e-1", ""); status != 204 {
				t.Fatalf("cancel: %d %v", status, got)
			}
			if status, got, _ = reseller.do("GET", "/v1.2/bookings/bs-e2e-1", ""); status != 200 || got["booking"].(map[string]any)["status"] != schemas.BookingCancelled {
				t.Fatalf("cancelled booking: %d %v", status, got)
			}
			hooks := sk.waitFor(t, "/booking", 1, 30*time.Second)
			specVerify(t, rule["securityKey"].(string), hooks[0])
			if b := hooks[0].body; b["operation"] != schemas.OperationCanceled || b["bookingID"] != "bs-e2e-1" || b["resellerBookingReference"] != "BS-REF-1" {
				t.Fatalf("canceled webhook = %s", hooks[0].raw)
			}
			p.stop(t)
		})
	}
}

// roomFor finds an availability of rate rid with capacity for n in a
// reseller availabilities answer: its id and start.
func roomFor(body map[string]any, rid string, n int) (string, string) {
	avs, _ := body["availabilities"].(map[string]any)
	byRate, _ := avs["byRate"].(map[string]any)
	r, _ := byRate[rid].(map[string]any)
	list, _ := r["availability"].([]any)
	for _, a := range list {
		m, _ := a.(map[string]any)
		id, _ := m["id"].(string)
		start, _ := m["start"].(string)
		if c, _ := m["capacity"].(float64); int(c) >= n && id != "" && start != "" {
			return id, start
		}
	}
	return "", ""
}

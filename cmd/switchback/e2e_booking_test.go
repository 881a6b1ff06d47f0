package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/schemas"
)

// TestE2E_HoldBookCancelAndTicketsAddedWebhooks is issue 5's hold and
// booking flow over the binary: the demo reseller holds, books and cancels
// at a supplier reached through the simulated partner, and its booking
// rule's sink receives a signed `booking canceled` webhook; then a booking
// the partner accepts with 202 is polled until its tickets appear and the
// sink receives `booking tickets-added`.
func TestE2E_HoldBookCancelAndTicketsAddedWebhooks(t *testing.T) {
	sim := partnersim.New(partnersim.Config{APIKey: "partner-key", APISecret: "partner-secret",
		Rates: map[string][]string{"prod-bk": {"rate-a"}}})
	ps := serve(t, sim)

	d := startDemo(t)
	p, sk, operator, reseller := d.p, d.sk, d.operator, d.reseller

	const sup, prod = "sup-bk", "prod-bk"
	supplier := partnerSupplier(sup, "Booking Tours", "BK", "partner-key", "partner-secret", ps.URL)
	base := createProduct(operator, sup, prod, supplier, catalogtest.ProductBody(prod, "Canyon ride", "A ride"),
		catalogtest.RateBody("rate-a", "Adult"))
	operator.must("POST", base+"/channels/"+app.DemoChannelID, `{"priceAt":"PRICE_AT_SALE","rateIds":["rate-a"]}`, 201)
	rule := reseller.must("POST", "/registry/v1.1/booking", fmt.Sprintf(`{"url":%q}`, sk.url+"/booking"), 201)
	key, _ := rule["securityKey"].(string)

	at := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2).Add(9 * time.Hour).Format(time.RFC3339)
	hold := func() string {
		t.Helper()
		body := fmt.Sprintf(`{"hold":{"items":[{"supplierId":%q,"productId":%q,"rateId":"rate-a","quantity":2,"at":%q}]}}`, sup, prod, at)
		var status int
		var got map[string]any
		deadline := time.Now().Add(20 * time.Second)
		for { // the binding reaches the view through the catalog processor
			status, got, _ = reseller.do("POST", "/v1.2/holds", body)
			if status == 201 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if status != 201 {
			t.Fatalf("POST /v1.2/holds: %d %v", status, got)
		}
		return got["hold"].(map[string]any)["id"].(string)
	}
	book := func(id, holdID, ref string, want int) {
		t.Helper()
		body := fmt.Sprintf(`{"booking":{"id":%q,"holdId":%q,"resellerBookingRef":%q,"items":[{"supplierId":%q,"productId":%q,"rateId":"rate-a","quantity":2,"startTime":%q}]}}`,
			id, holdID, ref, sup, prod, at)
		if status, got, _ := reseller.do("POST", "/v1.2/bookings", body); status != want {
			t.Fatalf("POST /v1.2/bookings: %d %v, want %d", status, got, want)
		}
	}

	// Without a hold: refused with the error object.
	if status, got, _ := reseller.do("POST", "/v1.2/bookings", fmt.Sprintf(`{"booking":{"items":[{"supplierId":%q,"productId":%q,"rateId":"rate-a","quantity":1}]}}`, sup, prod)); status != 400 || got["code"] != "INVALID_FIELD" {
		t.Fatalf("booking without a hold: %d %v", status, got)
	}

	h := hold()
	book("e2e-booking-1", h, "E2E-REF-1", 201)
	book("e2e-booking-1", h, "E2E-REF-1", 201) // a retry: the same booking
	if n := sim.BookingsCreated(); n != 1 {
		t.Fatalf("partner bookings = %d, want 1", n)
	}
	if status, got, _ := reseller.do("PUT", "/v1.2/bookings/cancel/e2e-booking-1", ""); status != 204 || got != nil {
		t.Fatalf("cancel: %d %v, want 204 without a body", status, got)
	}
	if status, got, _ := reseller.do("GET", "/v1.2/bookings/e2e-booking-1", ""); status != 200 || got["booking"].(map[string]any)["status"] != schemas.BookingCancelled {
		t.Fatalf("cancelled booking: %d %v", status, got)
	}
	got := sk.waitFor(t, "/booking", 1, 30*time.Second)
	specVerify(t, key, got[0])
	if b := got[0].body; b["operation"] != schemas.OperationCanceled || b["bookingID"] != "e2e-booking-1" ||
		b["resellerBookingReference"] != "E2E-REF-1" || b["startTime"] != at {
		t.Fatalf("canceled webhook = %s", got[0].raw)
	}

	sim.Update(func(c *partnersim.Config) { c.AcceptBookings, c.TicketsAfter = true, 500*time.Millisecond })
	h2 := hold()
	book("e2e-booking-2", h2, "E2E-REF-2", 202)
	got = sk.waitFor(t, "/booking", 2, 30*time.Second)
	last := got[1]
	specVerify(t, key, last)
	if b := last.body; b["operation"] != schemas.OperationTicketsAdded || b["bookingID"] != "e2e-booking-2" || b["resellerBookingReference"] != "E2E-REF-2" {
		t.Fatalf("tickets-added webhook = %s", last.raw)
	}
	if status, got, _ := reseller.do("GET", "/v1.2/bookings/e2e-booking-2", ""); status != 200 || got["booking"].(map[string]any)["tickets"] == nil {
		t.Fatalf("booking after tickets: %d %v", status, got)
	}
	p.stop(t)
}

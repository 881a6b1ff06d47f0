package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/schemas"
)

// TestE2E_ResellerContract_EveryKindOfSupplier walks the reseller side of
// spec doc 2 over the binary for every kind of supplier, asserting every
// field of the supplier, product, rate, availability, hold, booking and
// ticket against the spec's tables (docs/decisions.md, "Holds and
// bookings: one contract for every supplier"), before and after a cancel:
//
//   - operator-pushed: the operator sets up the supplier, product and rates
//     (terms and prices) and pushes availabilities; holds and bookings go
//     to its partner (internal/simulators/partnersim), which answers bookings at once;
//   - partner: the same through a partner that accepts bookings (202) and
//     attaches their tickets later;
//   - bookingsystem (v2) and octo: the operator only connects the supplier;
//     the synchronization brings products, rates (their terms and prices
//     derived from the booking system) and availabilities; holds and
//     bookings are orders of the booking system. The OCTO one speaks
//     OCTO's own values (its example units and prices, QRCODE, DEFAULT
//     option ids, days split by opening hours, CLOSED opening-hours days).
//
// For the booking systems, a change notification refreshes the product
// between the availability read and the hold: the hold names the id read
// before (ids are stable across refreshes).
func TestE2E_ResellerContract_EveryKindOfSupplier(t *testing.T) {
	for _, k := range contractKinds() {
		t.Run(k.name, func(t *testing.T) { walkContract(t, k) })
	}
}

// contractKinds are the kinds of supplier every reseller-side walk (the
// contract's, OCTO's) goes through.
func contractKinds() []contractKind {
	return []contractKind{
		{name: "operator-pushed", setup: setupPushed},
		{name: "partner", setup: setupPartnerAccepting, accepted: true},
		{name: "bookingsystem", setup: setupBookingSystem(bookingsim.DialectV2), system: true, barcode: "TEXT"},
		{name: "octo", setup: setupBookingSystem(bookingsim.DialectOCTO), system: true, barcode: "QR_CODE"},
	}
}

type contractKind struct {
	name     string
	setup    func(t *testing.T, w *contractWorld) contractSupplier
	accepted bool   // the partner answers bookings 202, tickets later
	system   bool   // a booking system: synchronized, refreshed by change notification
	barcode  string // the tickets' barcode format, when fixed by the kind
}

// contractSupplier is what a setup made: ids, and how many tickets a
// booking of qty units has.
type contractSupplier struct {
	sup, prod, rate string
	priceID         string
	tickets         func(qty int) int
}

type contractWorld struct {
	p                  *proc
	operator, reseller client
}

// startContract starts the binary (startDemo) for a walk of the contract
// and returns it with the world the setups of the kinds of supplier use.
func startContract(t *testing.T, extra ...string) (*proc, *contractWorld) {
	t.Helper()
	d := startDemo(t, extra...)
	return d.p, &contractWorld{p: d.p, operator: d.operator, reseller: d.reseller}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func walkContract(t *testing.T, k contractKind) {
	p, w := startContract(t, "SWITCHBACK_SYNC_INTERVAL=2s", "SWITCHBACK_SYNC_HORIZON_DAYS=10")
	s := k.setup(t, w)
	r := w.reseller

	// Supplier, product and rates, as v1.2 and v1.3 show them.
	supV12 := eventually(t, "supplier visible", func() (map[string]any, bool) {
		status, body, _ := r.do("GET", "/v1.2/suppliers/"+s.sup, "")
		return body, status == 200
	})["supplier"].(map[string]any)
	checkFields(t, "supplier 1.2", supV12, supplierV12Fields, "id", "name", "code", "version")
	_, body, _ := r.do("GET", "/v1.3/suppliers/"+s.sup, "")
	checkFields(t, "supplier 1.3", body["supplier"].(map[string]any), supplierV13Fields, "id", "name", "code", "version")
	for _, v := range []string{"/v1.2", "/v1.3"} {
		base := v + "/suppliers/" + s.sup + "/products"
		status, body, _ := r.do("GET", base, "")
		if status != 200 || !hasID(body["products"], s.prod) {
			t.Fatalf("GET %s: %d %v", base, status, body)
		}
		status, body, _ = r.do("GET", base+"/"+s.prod, "")
		if status != 200 {
			t.Fatalf("GET %s/%s: %d %v", base, s.prod, status, body)
		}
		checkProduct(t, v, body["product"].(map[string]any))
		status, body, _ = r.do("GET", base+"/"+s.prod+"/rates", "")
		if status != 200 || !hasID(body["rates"], s.rate) {
			t.Fatalf("GET %s/%s/rates: %d %v", base, s.prod, status, body)
		}
		status, body, _ = r.do("GET", base+"/"+s.prod+"/rates/"+s.rate, "")
		if status != 200 {
			t.Fatalf("GET rate: %d %v", status, body)
		}
		checkRate(t, v+" rate", body["rate"].(map[string]any), s.prod)
	}

	// Availability: UUIDs, unique across the product's rates.
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	avPath := fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", s.sup, s.prod,
		start.Format(time.RFC3339), start.AddDate(0, 0, 5).Format(time.RFC3339))
	avs := eventually(t, "an availability with room for 2", func() (map[string]any, bool) {
		status, body, _ := r.do("GET", avPath, "")
		id, _ := roomFor(body, s.rate, 2)
		return body, status == 200 && id != ""
	})
	checkAvailabilities(t, avs, s.prod, s.rate)
	avID, at := roomFor(avs, s.rate, 2)

	if k.system {
		// A change notification refreshes the product; the availability
		// keeps its id (UUIDv5 of the booking system's), and the hold
		// below names the id read before it.
		q := fmt.Sprintf("/operator/v2/notifications?supplierId=%s&productId=%s", s.sup, s.prod)
		status, n, _ := w.operator.do("POST", q, "")
		if status != 201 {
			t.Fatalf("change notification: %d %v", status, n)
		}
		id := n["notification"].(map[string]any)["id"].(string)
		eventually(t, "the refresh to succeed", func() (map[string]any, bool) {
			_, got, _ := w.operator.do("GET", "/operator/v2/notifications/"+id, "")
			st := got["notification"].(map[string]any)["status"]
			if st == "FAILED" || st == "PARTIAL_FAILURE" {
				t.Fatalf("refresh: %v", got)
			}
			return got, st == "SUCCEEDED"
		})
		_, stored, _ := w.operator.do("GET", "/channel/v1.2/suppliers/"+s.sup+"/products/"+s.prod+"/rates/"+s.rate+"/availabilities", "")
		if !hasID(stored["availabilities"], avID) {
			t.Fatalf("after the refresh, the catalog no longer has availability %s: %v", avID, stored)
		}
	}

	// Hold: meta.reqId mirrored, expires accepted (and ignored), item id
	// generated, the embedded Rate, retrieved.
	holdBody := fmt.Sprintf(`{"meta":{"reqId":"hold-req-%s"},"hold":{"expires":"2099-01-01T00:00:00Z","items":[{"supplierId":%q,"productId":%q,"rateId":%q,"availabilityId":%q,"priceId":%q,"quantity":2,"at":%q}]}}`,
		k.name, s.sup, s.prod, s.rate, avID, s.priceID, at)
	got := r.must("POST", "/v1.2/holds", holdBody, 201)
	if got["meta"].(map[string]any)["reqId"] != "hold-req-"+k.name {
		t.Errorf("hold meta %v: want the body's reqId mirrored", got["meta"])
	}
	hold := got["hold"].(map[string]any)
	checkHold(t, hold, s)
	holdID := hold["id"].(string)
	_, got, _ = r.do("GET", "/v1.2/holds/"+holdID, "")
	checkHold(t, got["hold"].(map[string]any), s)

	// Booking: items with ids and Rate, tickets naming them, the lead
	// traveler copied.
	bookingID := "contract-" + k.name
	book := fmt.Sprintf(`{"meta":{"reqId":"book-req-%s"},"booking":{"id":%q,"holdId":%q,"resellerBookingRef":"REF-%s","customer":{"firstName":"Ada","lastName":"Lovelace","email":"ada@example.com"},
"items":[{"supplierId":%q,"productId":%q,"rateId":%q,"availabilityId":%q,"priceId":%q,"quantity":2,"startTime":%q,"traveler":{"firstName":"Grace","lastName":"Hopper","isLead":true}}]}}`,
		k.name, bookingID, holdID, k.name, s.sup, s.prod, s.rate, avID, s.priceID, at)
	want := 201
	if k.accepted {
		want = 202
	}
	status, got, _ := r.do("POST", "/v1.2/bookings", book)
	if status != want || got["meta"].(map[string]any)["reqId"] != "book-req-"+k.name {
		t.Fatalf("POST /v1.2/bookings: %d %v, want %d and the body's reqId", status, got, want)
	}
	b := got["booking"].(map[string]any)
	if k.accepted {
		if b["status"] != schemas.BookingPending || b["tickets"] != nil {
			t.Fatalf("accepted booking %v", b)
		}
		b = eventually(t, "the accepted booking's tickets", func() (map[string]any, bool) {
			_, got, _ := r.do("GET", "/v1.2/bookings/"+bookingID, "")
			bk, _ := got["booking"].(map[string]any)
			return bk, bk != nil && bk["status"] == schemas.BookingOpen
		})
	}
	checkBooking(t, b, k, s, false)
	for _, v := range []string{"/v1.2", "/v1.3"} {
		_, got, _ = r.do("GET", v+"/bookings/"+bookingID, "")
		checkBooking(t, got["booking"].(map[string]any), k, s, false)
	}

	// Cancel: 204 without a body; the booking is final.
	if status, raw := r.raw("PUT", "/v1.2/bookings/cancel/"+bookingID, ""); status != 204 || len(raw) != 0 {
		t.Fatalf("cancel: %d %s, want 204 without a body", status, raw)
	}
	_, got, _ = r.do("GET", "/v1.2/bookings/"+bookingID, "")
	checkBooking(t, got["booking"].(map[string]any), k, s, true)
	if status, raw := r.raw("PUT", "/v1.2/bookings/cancel/"+bookingID, ""); status != 204 || len(raw) != 0 {
		t.Fatalf("cancel again: %d %s, want 204 (done already)", status, raw)
	}

	// A bad value in a body is INVALID_FIELD naming the field.
	status, got, _ = w.operator.do("PUT", "/channel/v1.2/suppliers/"+s.sup+"/products/"+s.prod+"/channels/"+app.DemoChannelID, `{"valid":{"from":"next tuesday"}}`)
	if d, _ := got["data"].(map[string]any); status != 400 || got["code"] != "INVALID_FIELD" || d["field"] != "valid.from" {
		t.Errorf("binding with a bad time: %d %v, want 400 INVALID_FIELD valid.from", status, got)
	}
	p.stop(t)
}

// ---- the kinds of supplier

// contractRate is a rate of the operator with every term and a price per
// traveler type.
func contractRate(id string) string {
	return `{"id":"` + id + `","name":"Adult seat","title":"Seat","code":"AD","cancelable":true,"cutoff":120,"refundable":true,"holdable":true,"holdablePeriod":900,
"minTravelers":1,"maxTravelers":8,"type":"STANDARD","prices":[{"id":"p-adult","name":"Adult","labels":["public"],"retail":{"amount":30,"currency":"EUR"},"net":{"amount":24,"currency":"EUR"},
"travelerType":{"ageBand":"ADULT","minAge":18,"maxAge":99,"name":"Adult"}},{"id":"p-child","name":"Child","labels":["public"],"retail":{"amount":15,"currency":"EUR"},
"travelerType":{"ageBand":"CHILD","minAge":3,"maxAge":17,"name":"Child"}}]}`
}

// setupPartnerKind is a partner supplier set up by the operator: supplier,
// product, rate, binding, and (pushed) availabilities; its partner answers
// bookings as cfg says.
func setupPartnerKind(t *testing.T, w *contractWorld, cfg partnersim.TxConfig, push bool) contractSupplier {
	return setupPartnerKindWith(t, w, cfg, push, nil)
}

// setupPartnerKindWith is setupPartnerKind with the partner's handler
// wrapped by wrap (nil: as it is).
func setupPartnerKindWith(t *testing.T, w *contractWorld, cfg partnersim.TxConfig, push bool, wrap func(http.Handler) http.Handler) contractSupplier {
	const sup, prod, rate = "c0ffee00-1111-4222-8333-444444444444", "c0ffee00-2222-4333-8444-555555555555", "c0ffee00-3333-4444-8555-666666666666"
	var sim http.Handler = partnersim.New(partnersim.Config{APIKey: "pk", APISecret: "ps", Rates: map[string][]string{prod: {rate}}, TxConfig: cfg})
	if wrap != nil {
		sim = wrap(sim)
	}
	ps := serve(t, sim)
	base := createProduct(w.operator, sup, prod, partnerSupplier(sup, "Canyon Tours", "CT", "pk", "ps", ps.URL), catalogtest.ProductBody(prod, "Canyon ride", "A ride down the canyon"),
		contractRate(rate))
	w.operator.must("POST", base+"/channels/"+app.DemoChannelID, `{"priceAt":"PRICE_AT_SALE"}`, 201)
	if push {
		day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
		body := fmt.Sprintf(`{"availabilities":[{"id":"c0ffee00-4444-4555-8666-777777777777","start":%q,"end":%q,"capacity":6,"maxCapacity":10}]}`,
			day.Add(9*time.Hour).Format(time.RFC3339), day.Add(11*time.Hour).Format(time.RFC3339))
		status, got, _ := w.operator.do("PUT", base+"/rates/"+rate+"/availabilities", body)
		if status != 200 {
			t.Fatalf("push availabilities: %d %v", status, got)
		}
		for _, a := range got["availabilities"].([]any) {
			checkAvailability(t, "pushed", a.(map[string]any))
		}
	}
	return contractSupplier{sup: sup, prod: prod, rate: rate, priceID: "p-adult", tickets: func(int) int { return 1 }}
}

func setupPushed(t *testing.T, w *contractWorld) contractSupplier {
	return setupPartnerKind(t, w, partnersim.TxConfig{}, true)
}

func setupPartnerAccepting(t *testing.T, w *contractWorld) contractSupplier {
	return setupPartnerKind(t, w, partnersim.TxConfig{AcceptBookings: true, TicketsAfter: 300 * time.Millisecond}, false)
}

// setupBookingSystem connects supplier S1 of a simulated booking system
// of dialect and binds its product S1-P1 once synchronized.
func setupBookingSystem(dialect string) func(t *testing.T, w *contractWorld) contractSupplier {
	return func(t *testing.T, w *contractWorld) contractSupplier {
		cfg := bookingsim.Config{Dialect: dialect, APIKey: "bs-token", Suppliers: 1, ProductsPerSupplier: 2}
		kind, path, rate, price := "bookingsystem", "", "S1-P1-O1", "adult"
		tickets := func(int) int { return 1 } // v2: a ticket per booking of the order (one hold item)
		if dialect == bookingsim.DialectOCTO {
			// OCTO's own values: its example units (and prices), option
			// DEFAULT, days split by opening hours, CLOSED days.
			cfg.Units, cfg.OCTOOptionIDs, cfg.OCTOOpeningHoursByDay, cfg.OCTOClosedDays = bookingsim.OCTOExampleUnits, true, true, true
			kind, path, rate, price = "octo", "/S1", "DEFAULT", "adult_697e3ce8-1860-4cbf-80ad-95857df1f640~EUR"
			tickets = func(qty int) int { return qty } // OCTO delivery TICKET: one per unit
		}
		sim := bookingsim.New(cfg)
		bs := httptest.NewServer(sim)
		t.Cleanup(bs.Close)
		const sup, prod = "S1", "S1-P1"
		body := fmt.Sprintf(`{"id":%q,"name":"Fjord Lines","code":"FJ","contacts":[{"email":"ops@fjord.example","name":"Ops","title":"operations"}],
"travelerTypes":[{"ageBand":"ADULT","minAge":18,"maxAge":99,"name":"Adult"}],"connection":{"kind":%q,"baseUrl":%q,"credentials":{"bearerToken":"bs-token"}}}`,
			sup, kind, bs.URL+path)
		if status, got, _ := w.operator.do("POST", "/channel/v1.2/suppliers", body); status != 201 {
			t.Fatalf("create supplier: %d %v", status, got)
		}
		base := "/channel/v1.2/suppliers/" + sup + "/products/" + prod
		eventually(t, "the synchronization to bring the rate", func() (map[string]any, bool) {
			status, got, _ := w.operator.do("GET", base+"/rates/"+rate, "")
			rt, _ := got["rate"].(map[string]any)
			return got, status == 200 && len(asSlice(rt["prices"])) > 0
		})
		if status, got, _ := w.operator.do("POST", base+"/channels/"+app.DemoChannelID, `{}`); status != 201 {
			t.Fatalf("bind: %d %v", status, got)
		}
		// The synchronization read everything without an error: the OCTO
		// system's values (QRCODE, CLOSED opening-hours days, DEFAULT
		// options in every product) are all OCTO allows.
		// The run's report is written when the run ends, which may be
		// after the rate is in the catalog: polled.
		var reports []any
		eventually(t, "a cron report", func() (map[string]any, bool) {
			_, _, reports = w.operator.do("GET", "/operator/v2/cron/reports?externalSystemID="+sup, "")
			return nil, len(reports) > 0
		})
		for _, r := range asList(reports) {
			if num(r["errorCount"]) != 0 {
				id := fmt.Sprint(int64(num(r["id"])))
				_, full, _ := w.operator.do("GET", "/operator/v2/cron/reports/"+id, "")
				t.Fatalf("cron report %s has errors: %v", id, full)
			}
		}
		return contractSupplier{sup: sup, prod: prod, rate: rate, priceID: price, tickets: tickets}
	}
}

// ---- the spec's tables

var (
	supplierV12Fields = []string{"businessType", "code", "contacts", "ext", "hours", "id", "mainLocation", "name", "otherLocations", "partnerId", "travelerTypes", "version"}
	supplierV13Fields = []string{"id", "name", "title", "description", "code", "version", "extensions", "ext", "businessType", "contacts", "mainLocation",
		"otherLocations", "hours", "partnerId", "travelerTypes", "content"}
	productFields = []string{"supplierId", "id", "name", "title", "description", "code", "partnerId", "internalName", "reference", "locale", "timeZone",
		"instantConfirmation", "instantDelivery", "availabilityType", "deliveryFormats", "deliveryMethods", "redemptionMethod", "hours", "locations", "ext",
		"extensions", "version"}
	rateFields = []string{"cancelable", "code", "cutoff", "ext", "holdable", "holdablePeriod", "hours", "id", "maxTravelers", "minTravelers", "name",
		"optionId", "partnerId", "prices", "productId", "refundable", "title", "type", "valid", "version"}
	priceFields        = []string{"id", "includedTaxes", "labels", "name", "net", "original", "retail", "status", "travelerType"}
	travelerTypeFields = []string{"ageBand", "maxAge", "minAge", "modifier", "name"}
	availabilityFields = []string{"id", "start", "end", "capacity", "maxCapacity"}
	holdFields         = []string{"expires", "ext", "id", "items", "partnerId", "retrieved", "status", "timeline"}
	holdItemFields     = []string{"at", "availabilityId", "ext", "id", "priceId", "productId", "quantity", "rateId", "supplierId", "travelerType", "rate"}
	bookingFields      = []string{"barcode", "channelId", "customer", "ext", "holdExt", "holdId", "id", "items", "partnerId", "resellerBookingRef",
		"cancelable", "status", "tickets", "timeline"}
	bookingItemFields = []string{"availabilityId", "ext", "id", "priceId", "productId", "quantity", "rateId", "startTime", "supplierId", "traveler", "rate"}
	ticketFields      = []string{"barcode", "bookingItemIds", "extensions", "guests", "leadTraveler", "status"}
	guestFields       = []string{"count", "typeCode", "typeModifier", "typeName"}
	travelerFields    = []string{"age", "country", "email", "firstName", "gender", "isLead", "lang", "lastName", "phone", "type"}
	timelineFields    = []string{"timestamp", "typeOf"}
	deliveryFormats   = []string{"QR_CODE", "EAN13", "CODE128", "UPCA", "TEXT", "CODE39", "AZTECCODE", "PDF_URL", "PKPASS_URL"}
)

// checkFields fails for a key of m outside the spec's fields, or a
// required one missing.
func checkFields(t *testing.T, what string, m map[string]any, fields []string, required ...string) {
	t.Helper()
	if m == nil {
		t.Fatalf("%s: missing", what)
	}
	for k := range m {
		if !slices.Contains(fields, k) {
			t.Errorf("%s: field %q is not one of the spec's (%v)", what, k, fields)
		}
	}
	for _, k := range required {
		if v, ok := m[k]; !ok || v == nil || v == "" {
			t.Errorf("%s: %q missing: %v", what, k, m)
		}
	}
}

func checkProduct(t *testing.T, v string, p map[string]any) {
	t.Helper()
	checkFields(t, v+" product", p, productFields, "supplierId", "id", "name", "timeZone", "availabilityType", "deliveryFormats", "deliveryMethods",
		"redemptionMethod", "version")
	for _, f := range p["deliveryFormats"].([]any) {
		if !slices.Contains(deliveryFormats, f.(string)) {
			t.Errorf("%s product: delivery format %v", v, f)
		}
	}
	for _, l := range asList(p["locations"]) {
		for _, old := range []string{"city", "country", "state", "utcOffset"} {
			if _, has := l[old]; has && v == "/v1.3" {
				t.Errorf("v1.3 product location has the 1.2 field %s", old)
			}
		}
	}
}

// checkRate holds a rate to Rate 1.2 and to being sellable: holdable for
// a while, cancelable, travelers bounded from at least one, and prices of
// traveler types.
func checkRate(t *testing.T, what string, r map[string]any, prod string) {
	t.Helper()
	checkFields(t, what, r, rateFields, "id", "name", "optionId", "productId", "prices", "version")
	switch {
	case r["productId"] != prod || r["optionId"] != r["id"]:
		t.Errorf("%s: productId %v optionId %v", what, r["productId"], r["optionId"])
	case r["holdable"] != true || num(r["holdablePeriod"]) <= 0:
		t.Errorf("%s: not holdable: %v", what, r)
	case r["cancelable"] != true || num(r["cutoff"]) < 0:
		t.Errorf("%s: not cancelable: %v", what, r)
	case num(r["minTravelers"]) < 1 || (num(r["maxTravelers"]) != 0 && num(r["maxTravelers"]) < num(r["minTravelers"])):
		t.Errorf("%s: travelers %v..%v", what, r["minTravelers"], r["maxTravelers"])
	case len(asList(r["prices"])) == 0:
		t.Errorf("%s: no prices", what)
	}
	for _, p := range asList(r["prices"]) {
		checkFields(t, what+" price", p, priceFields, "id", "retail", "travelerType")
		retail, _ := p["retail"].(map[string]any)
		if _, ok := retail["amount"].(float64); !ok || retail["currency"] == "" {
			t.Errorf("%s price retail %v", what, p["retail"])
		}
		tt, _ := p["travelerType"].(map[string]any)
		checkFields(t, what+" price traveler type", tt, travelerTypeFields, "ageBand", "name")
	}
}

func checkAvailability(t *testing.T, what string, a map[string]any) {
	t.Helper()
	checkFields(t, what+" availability", a, availabilityFields, "id", "start", "end")
	id, _ := a["id"].(string)
	start, err1 := time.Parse(time.RFC3339, fmt.Sprint(a["start"]))
	end, err2 := time.Parse(time.RFC3339, fmt.Sprint(a["end"]))
	if !uuidRE.MatchString(id) || err1 != nil || err2 != nil || !end.After(start) || num(a["capacity"]) < 0 {
		t.Errorf("%s availability %v: want a UUID id, RFC 3339 start before end, a capacity", what, a)
	}
	if m, ok := a["maxCapacity"]; ok && num(m) < num(a["capacity"]) {
		t.Errorf("%s availability %v: maxCapacity below capacity", what, a)
	}
}

// checkAvailabilities: the list wrapper, every availability, ids unique
// across the product (byProduct holds every rate's).
func checkAvailabilities(t *testing.T, body map[string]any, prod, rate string) {
	t.Helper()
	w, _ := body["availabilities"].(map[string]any)
	checkFields(t, "availabilities", w, []string{"byProduct", "byRate", "expires", "productId", "retrieved"}, "byRate", "productId", "retrieved", "expires")
	if w["productId"] != prod {
		t.Errorf("availabilities productId %v", w["productId"])
	}
	for _, k := range []string{"retrieved", "expires"} {
		if _, err := time.Parse(time.RFC3339, fmt.Sprint(w[k])); err != nil {
			t.Errorf("availabilities %s %v", k, w[k])
		}
	}
	if _, ok := w["byRate"].(map[string]any)[rate]; !ok {
		t.Errorf("byRate lacks %s", rate)
	}
	seen := map[string]bool{}
	for _, a := range asList(w["byProduct"].(map[string]any)["availability"]) {
		checkAvailability(t, "byProduct", a)
		if seen[a["id"].(string)] {
			t.Errorf("availability id %v appears twice in byProduct", a["id"])
		}
		seen[a["id"].(string)] = true
	}
}

func checkTimeline(t *testing.T, what string, tl any, last string) {
	t.Helper()
	entries := asList(tl)
	if len(entries) == 0 {
		t.Errorf("%s: no timeline", what)
		return
	}
	for _, e := range entries {
		checkFields(t, what+" timeline", e, timelineFields, "timestamp", "typeOf")
	}
	if got := entries[len(entries)-1]["typeOf"]; got != last {
		t.Errorf("%s: timeline ends %v, want %s", what, got, last)
	}
}

func checkHold(t *testing.T, h map[string]any, s contractSupplier) {
	t.Helper()
	checkFields(t, "hold", h, holdFields, "id", "items", "expires", "retrieved", "status", "timeline")
	if h["status"] != schemas.HoldActive || h["expires"] == "2099-01-01T00:00:00Z" {
		t.Errorf("hold status %v expires %v", h["status"], h["expires"])
	}
	for _, k := range []string{"expires", "retrieved"} {
		if _, err := time.Parse(time.RFC3339, fmt.Sprint(h[k])); err != nil {
			t.Errorf("hold %s %v", k, h[k])
		}
	}
	checkTimeline(t, "hold", h["timeline"], schemas.HoldActive)
	for _, it := range asList(h["items"]) {
		checkFields(t, "hold item", it, holdItemFields, "id", "productId", "quantity", "rateId", "supplierId", "rate")
		checkRate(t, "hold item rate", it["rate"].(map[string]any), s.prod)
	}
}

// checkBooking holds a booking to the Booking table and its items and
// tickets to theirs; cancelled, to being final.
func checkBooking(t *testing.T, b map[string]any, k contractKind, s contractSupplier, cancelled bool) {
	t.Helper()
	checkFields(t, "booking", b, bookingFields, "id", "holdId", "items", "status", "tickets", "timeline", "channelId", "customer", "resellerBookingRef")
	wantStatus, cancelable, ticketStatus := schemas.BookingOpen, true, schemas.BookingOpen
	if cancelled {
		wantStatus, cancelable, ticketStatus = schemas.BookingCancelled, false, schemas.BookingCancelled
	}
	if b["status"] != wantStatus || b["cancelable"] != cancelable {
		t.Errorf("booking status %v cancelable %v, want %s %v", b["status"], b["cancelable"], wantStatus, cancelable)
	}
	checkTimeline(t, "booking", b["timeline"], wantStatus)
	var itemIDs []any
	for _, it := range asList(b["items"]) {
		checkFields(t, "booking item", it, bookingItemFields, "id", "productId", "quantity", "rateId", "supplierId", "rate")
		checkRate(t, "booking item rate", it["rate"].(map[string]any), s.prod)
		itemIDs = append(itemIDs, it["id"])
	}
	tickets := asList(b["tickets"])
	if len(tickets) != s.tickets(2) {
		t.Errorf("booking has %d tickets, want %d", len(tickets), s.tickets(2))
	}
	for i, tk := range tickets {
		checkFields(t, "ticket", tk, ticketFields, "barcode", "bookingItemIds", "guests", "leadTraveler", "status")
		var bc schemas.Barcode
		raw, _ := json.Marshal(tk["barcode"])
		if err := json.Unmarshal(raw, &bc); err != nil || bc.Value == "" || bc.Format == "" || (k.barcode != "" && bc.Format != k.barcode) {
			t.Errorf("ticket %d barcode %s, want a value of format %q", i, raw, k.barcode)
		}
		for _, id := range tk["bookingItemIds"].([]any) {
			if !slices.Contains(itemIDs, id) {
				t.Errorf("ticket %d names item %v; the booking's are %v", i, id, itemIDs)
			}
		}
		for _, g := range asList(tk["guests"]) {
			checkFields(t, "guest", g, guestFields, "count", "typeCode")
		}
		lead, _ := tk["leadTraveler"].(map[string]any)
		checkFields(t, "lead traveler", lead, travelerFields, "firstName")
		if lead["firstName"] != "Grace" || lead["isLead"] != true {
			t.Errorf("ticket %d lead traveler %v, want the booking's (Grace)", i, lead)
		}
		if tk["status"] != ticketStatus {
			t.Errorf("ticket %d status %v, want %s", i, tk["status"], ticketStatus)
		}
	}
}

// ---- helpers

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func asList(v any) []map[string]any {
	var out []map[string]any
	for _, x := range asSlice(v) {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asSlice(v any) []any {
	l, _ := v.([]any)
	return l
}

func hasID(list any, id string) bool {
	return slices.ContainsFunc(asList(list), func(m map[string]any) bool { return m["id"] == id })
}

// eventually polls f until it reports ready (what it read), failing after
// 60 s.
func eventually(t *testing.T, what string, f func() (map[string]any, bool)) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, ok := f()
		if ok {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 60 s for %s: last %v", what, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package bookingsystem_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// octoExampleProduct is the product of the OCTO OpenAPI document's
// examples (octotravel/octo-types src/openapi.yaml, "Product with
// octo/pricng (pricing per unit)"), the child unit given its own id (the
// example repeats the adult's).
const octoExampleProduct = `{"id":"6b903d44-dc24-4ca4-ae71-6bde6c4f4854","internalName":"London Eye General Admission","reference":"LEYE-GA",
"locale":"en-GB","timeZone":"Europe/London","allowFreesale":true,"instantConfirmation":true,"instantDelivery":true,"availabilityRequired":true,
"availabilityType":"START_TIME","deliveryFormats":["QRCODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL",
"options":[{"id":"DEFAULT","default":true,"internalName":"DEFAULT","reference":null,"availabilityLocalStartTimes":["00:00"],
"cancellationCutoff":"1 hour","cancellationCutoffAmount":1,"cancellationCutoffUnit":"hour","requiredContactFields":["firstName"],
"restrictions":{"minUnits":0,"maxUnits":9},"units":[
{"id":"adult_697e3ce8-1860-4cbf-80ad-95857df1f640","internalName":"Adult","reference":null,"type":"ADULT",
 "restrictions":{"minAge":18,"maxAge":99,"idRequired":false,"minQuantity":1,"maxQuantity":10,"paxCount":1,"accompaniedBy":[]},"requiredContactFields":["firstName"],
 "pricingFrom":[{"original":1000,"retail":1000,"net":8000,"currency":"EUR","currencyPrecision":2,"includedTaxes":[]},{"original":1000,"retail":1000,"net":8000,"currency":"USD","currencyPrecision":2,"includedTaxes":[]}]},
{"id":"child_797e3ce8-1860-4cbf-80ad-95857df1f640","internalName":"Child","reference":null,"type":"CHILD",
 "restrictions":{"minAge":3,"maxAge":12,"idRequired":false,"minQuantity":1,"maxQuantity":10,"paxCount":1,"accompaniedBy":[]},"requiredContactFields":["firstName"],
 "pricingFrom":[{"original":500,"retail":500,"net":400,"currency":"EUR","currencyPrecision":2,"includedTaxes":[]}]},
{"id":"infant_897e3ce8-1860-4cbf-80ad-95857df1f640","internalName":"Infant","reference":null,"type":"INFANT",
 "restrictions":{"minAge":0,"maxAge":3,"idRequired":false,"minQuantity":1,"maxQuantity":10,"paxCount":1,"accompaniedBy":["adult_697e3ce8-1860-4cbf-80ad-95857df1f640"]},"requiredContactFields":["firstName"],
 "pricingFrom":[{"original":0,"retail":0,"net":0,"currency":"EUR","currencyPrecision":2,"includedTaxes":[]}]}]}],
"defaultCurrency":"USD","availableCurrencies":["USD","EUR"],"pricingPer":"UNIT"}`

// TestParseOCTOProduct_StandardShapesAccepted: OCTO's own values and
// shapes (its delivery formats, an absent timeZone, option restrictions,
// cancellation cutoffs, unit types and pricing) are read and mapped; the
// v2 dialect keeps doc 3's rules.
func TestParseOCTOProduct_StandardShapesAccepted(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantRules []string
		check     func(bookingsystem.Product) bool
	}{
		{"the OCTO example product", octoExampleProduct, nil, func(p bookingsystem.Product) bool {
			o := p.Options[0]
			cut, ok := o.CutoffMinutes()
			return slices.Equal(p.DeliveryFormats, []string{"QR_CODE"}) && p.PricingPer == "UNIT" && ok && cut == 60 &&
				*o.Restrictions.MinUnits == 0 && *o.Restrictions.MaxUnits == 9 && len(o.Units) == 3 &&
				o.Units[1].Type == "CHILD" && *o.Units[1].Restrictions.MaxAge == 12 && o.Units[0].PricingFrom[1].Currency == "USD" &&
				*o.Units[0].PricingFrom[0].Net == 8000
		}},
		{"every OCTO delivery format", strings.Replace(octoExampleProduct, `"deliveryFormats":["QRCODE"]`,
			`"deliveryFormats":["PDF_URL","QRCODE","CODE128","PKPASS_URL","AZTECCODE"]`, 1), nil, func(p bookingsystem.Product) bool {
			return slices.Equal(p.DeliveryFormats, []string{"PDF_URL", "QR_CODE", "CODE128", "PKPASS_URL", "AZTECCODE"})
		}},
		{"no timeZone (OCTO does not require one)", strings.Replace(octoExampleProduct, `"timeZone":"Europe/London",`, ``, 1), nil,
			func(p bookingsystem.Product) bool { return p.TimeZone == "" }},
		{"a cutoff in days, null restrictions", strings.NewReplacer(`"cancellationCutoffAmount":1,"cancellationCutoffUnit":"hour"`,
			`"cancellationCutoffAmount":2,"cancellationCutoffUnit":"day"`, `"restrictions":{"minUnits":0,"maxUnits":9}`,
			`"restrictions":{"minUnits":null,"maxUnits":null}`).Replace(octoExampleProduct), nil, func(p bookingsystem.Product) bool {
			cut, _ := p.Options[0].CutoffMinutes()
			return cut == 2*24*60 && p.Options[0].Restrictions.MinUnits == nil && p.Options[0].Restrictions.MaxUnits == nil
		}},
		{"a timeZone that is not one is still refused", strings.Replace(octoExampleProduct, `"Europe/London"`, `"Mars/Olympus"`, 1),
			[]string{"time_zone"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ps, err := bookingsystem.ParseOCTOProduct([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, x := range ps {
				rules = append(rules, x.Rule)
			}
			if !slices.Equal(rules, tt.wantRules) {
				t.Fatalf("rules %v, want %v", rules, tt.wantRules)
			}
			if tt.check != nil && !tt.check(p) {
				t.Fatalf("product %+v", p)
			}
		})
	}
	// The v2 dialect is doc 3's: a product without a timeZone breaks a rule.
	_, ps, err := bookingsystem.ParseProducts([]byte("[" + strings.Replace(octoExampleProduct, `"timeZone":"Europe/London",`, ``, 1) + "]"))
	if err != nil || len(ps) != 1 || ps[0].Rule != "time_zone" {
		t.Fatalf("v2 product without timeZone: problems %v err %v, want time_zone", ps, err)
	}
}

// TestParseOCTOAvailability_AnyStatusOnEitherType: OCTO allows every
// status on opening-hours and start-time products (doc 3's "OPENING_HOURS
// products MUST have status FREESALE" and "START_TIME products MUST NOT
// have FREESALE" are v2 rules); v2 still refuses them.
func TestParseOCTOAvailability_AnyStatusOnEitherType(t *testing.T) {
	day := func(status string) string {
		return `{"id":"2026-11-23T00:00:00Z","localDateTimeStart":"2026-11-23T00:00:00Z","localDateTimeEnd":"2026-11-24T00:00:00Z",` +
			`"utcCutoffAt":"2026-11-22T22:00:00Z","allDay":true,"available":false,"status":"` + status + `","vacancies":0,"capacity":null,` +
			`"maxUnits":null,"openingHours":[{"from":"08:00","to":"16:00"}]}`
	}
	for _, typ := range []string{bookingsystem.OpeningHours, bookingsystem.StartTime} {
		for _, status := range []string{"AVAILABLE", "FREESALE", "SOLD_OUT", "LIMITED", "CLOSED"} {
			t.Run(typ+"/"+status, func(t *testing.T) {
				exp := bookingsystem.AvailabilityExpect{AvailabilityType: typ, OptionID: "DEFAULT", TimeZone: "UTC"}
				out, ps, err := bookingsystem.ParseOCTOAvailability([]byte("["+day(status)+"]"), exp)
				if err != nil || len(ps) != 0 || len(out) != 1 || out[0].Status != status {
					t.Fatalf("OCTO %s on %s: %v problems %v err %v, want accepted", status, typ, out, ps, err)
				}
				v2 := `[{"id":"a1","optionId":"DEFAULT","localDateTimeStart":"2026-11-23T08:00:00Z","localDateTimeEnd":"2026-11-23T16:00:00Z","status":"` + status + `"}]`
				_, ps, err = bookingsystem.ParseAvailability([]byte(v2), exp)
				doc3 := (typ == bookingsystem.OpeningHours) == (status == "FREESALE")
				if err != nil || (len(ps) == 0) != doc3 {
					t.Fatalf("v2 %s on %s: problems %v err %v, want rejected: %v", status, typ, ps, err, !doc3)
				}
			})
		}
	}
}

// TestOCTO_NotFoundIsCountedApartFromErrors: an unknown booking (OCTO's
// 400 INVALID_BOOKING_UUID, what reading a hold's bookings meets after the
// last) and an unknown product are ErrNotFound, counted in
// switchback_ingest_bookingsystem_not_found_total by operation, never as
// errors (an alert on the errors would fire on healthy reads).
func TestOCTO_NotFoundIsCountedApartFromErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newOCTOEnv(t, bookingsim.Config{}, bookingsystem.Options{Registerer: reg})
	if _, err := e.c.GetBooking(ctx, e.conn, "S1", "0b7e1c2a-3f4d-4e5f-8a9b-000000000001"); !errors.Is(err, bookingsystem.ErrNotFound) {
		t.Fatalf("unknown booking: %v, want ErrNotFound", err)
	}
	if _, _, err := e.c.Product(ctx, e.conn, "S1", "S1-P99", nil); !errors.Is(err, bookingsystem.ErrNotFound) {
		t.Fatalf("unknown product: %v, want ErrNotFound", err)
	}
	if n := testharness.MetricValue(t, reg, "switchback_ingest_bookingsystem_not_found_total", map[string]string{"op": "getBooking"}); n != 1 {
		t.Fatalf("not_found_total{op=getBooking} = %v, want 1", n)
	}
	if n := testharness.MetricValue(t, reg, "switchback_ingest_bookingsystem_not_found_total", map[string]string{"op": "product"}); n != 1 {
		t.Fatalf("not_found_total{op=product} = %v, want 1", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "switchback_ingest_bookingsystem_errors_total" {
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() != 0 {
					t.Fatalf("errors_total counted a not-found answer: %v", m)
				}
			}
		}
	}
}

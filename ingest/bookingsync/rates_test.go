package bookingsync

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// octoExample is the OCTO OpenAPI document's example product
// (octotravel/octo-types src/openapi.yaml, "Product with octo/pricng
// (pricing per unit)", the child unit given its own id), with repl
// applied ("old", "new" pairs).
func octoExample(t *testing.T, repl ...string) bookingsystem.Product {
	t.Helper()
	body := `{"id":"6b903d44-dc24-4ca4-ae71-6bde6c4f4854","internalName":"London Eye General Admission","reference":"LEYE-GA","locale":"en-GB",
"timeZone":"Europe/London","allowFreesale":true,"instantConfirmation":true,"instantDelivery":true,"availabilityRequired":true,"availabilityType":"START_TIME",
"deliveryFormats":["QRCODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","options":[{"id":"DEFAULT","default":true,"internalName":"DEFAULT",
"reference":null,"availabilityLocalStartTimes":["00:00"],"cancellationCutoff":"1 hour","cancellationCutoffAmount":1,"cancellationCutoffUnit":"hour",
"requiredContactFields":["firstName"],"restrictions":{"minUnits":0,"maxUnits":9},"units":[
{"id":"adult_697e3ce8-1860-4cbf-80ad-95857df1f640","internalName":"Adult","reference":null,"type":"ADULT","restrictions":{"minAge":18,"maxAge":99,"idRequired":false,"minQuantity":1,"maxQuantity":10,"paxCount":1,"accompaniedBy":[]},"requiredContactFields":["firstName"],
 "pricingFrom":[{"original":1000,"retail":1000,"net":8000,"currency":"EUR","currencyPrecision":2,"includedTaxes":[]},{"original":1000,"retail":1000,"net":8000,"currency":"USD","currencyPrecision":2,"includedTaxes":[]}]},
{"id":"child_797e3ce8-1860-4cbf-80ad-95857df1f640","internalName":"Child","reference":null,"type":"CHILD","restrictions":{"minAge":3,"maxAge":12,"idRequired":false,"minQuantity":1,"maxQuantity":10,"paxCount":1,"accompaniedBy":[]},"requiredContactFields":["firstName"],
 "pricingFrom":[{"original":500,"retail":500,"net":400,"currency":"EUR","currencyPrecision":2,"includedTaxes":[{"name":"VAT 10","retail":45,"original":45,"net":36}]}]}]}],
"defaultCurrency":"USD","availableCurrencies":["USD","EUR"],"pricingPer":"UNIT"}`
	p, ps, err := bookingsystem.ParseOCTOProduct([]byte(strings.NewReplacer(repl...).Replace(body)))
	if err != nil || len(ps) != 0 {
		t.Fatalf("example product: %v %v", ps, err)
	}
	return p
}

// TestMergeRate_TermsOfSaleFromTheBookingSystem: the rate of an option
// carries every field of the reseller contract, derived from what the
// booking system says (the field-by-field mapping of docs/decisions.md),
// and the operator's own fields stay.
func TestMergeRate_TermsOfSaleFromTheBookingSystem(t *testing.T) {
	operator := &catalog.Rate{SupplierID: "S1", ProductID: "P1", Version: 4, RateData: catalog.RateData{ID: "DEFAULT", Name: "Ride", Title: "The ride",
		Code: "R1", PartnerID: "pr-1", Refundable: true, HoldablePeriod: 1800, Type: "STANDARD", Ext: map[string]string{"k": "v"},
		Prices: []catalog.Price{{ID: "op", Retail: &catalog.Money{Amount: "5", Currency: "EUR"}}}}}
	tests := []struct {
		name  string
		bp    bookingsystem.Product
		cur   *catalog.Rate
		check func(catalog.RateData, int64) string
	}{
		{"OCTO example, new rate", octoExample(t), nil, func(d catalog.RateData, v int64) string {
			switch {
			case d.ID != "DEFAULT" || d.OptionID != "DEFAULT" || d.Name != PlaceholderName("Option", "DEFAULT", "DEFAULT") || v != 0:
				return "ids, placeholder name or version"
			case !d.Holdable || d.HoldablePeriod != DefaultHoldablePeriod:
				return "holds"
			case !d.Cancelable || d.Cutoff != 60:
				return "cancellation: 1 hour is 60 minutes"
			case d.MinTravelers != 1 || d.MaxTravelers != 9:
				return "minUnits 0 is at least one traveler, maxUnits 9"
			case len(d.Prices) != 3:
				return "a price per unit and currency"
			}
			adult, child := d.Prices[0], d.Prices[2]
			switch {
			case adult.ID != "adult_697e3ce8-1860-4cbf-80ad-95857df1f640~EUR" || d.Prices[1].ID != "adult_697e3ce8-1860-4cbf-80ad-95857df1f640~USD":
				return "a unit priced in two currencies: unitId~CUR"
			case adult.Name != "Adult" || adult.TravelerType.AgeBand != "ADULT" || *adult.TravelerType.MinAge != 18 || *adult.TravelerType.MaxAge != 99:
				return "adult traveler type"
			case adult.Retail.Amount != "10.00" || adult.Net.Amount != "80.00" || adult.Original.Amount != "10.00" || adult.Retail.Currency != "EUR":
				return "adult amounts (OCTO's example values, minor units / 10^2)"
			case child.ID != "child_797e3ce8-1860-4cbf-80ad-95857df1f640" || child.TravelerType.AgeBand != "CHILD" || *child.TravelerType.MaxAge != 12:
				return "child, one currency: the unit id"
			case len(child.IncludedTaxes) != 1 || child.IncludedTaxes[0].Name != "VAT 10" || child.IncludedTaxes[0].Retail != "0.45" || child.IncludedTaxes[0].Net != "0.36":
				return "child's included tax"
			}
			return ""
		}},
		{"the operator's fields stay", octoExample(t), operator, func(d catalog.RateData, v int64) string {
			switch {
			case d.Name != "Ride" || d.Title != "The ride" || d.Code != "R1" || d.PartnerID != "pr-1" || !d.Refundable || d.Type != "STANDARD" || d.Ext["k"] != "v":
				return "operator's fields"
			case d.HoldablePeriod != 1800 || v != 4:
				return "the operator's holdablePeriod and the stored version"
			case len(d.Prices) != 3 || d.Cutoff != 60:
				return "the booking system's prices and cutoff"
			}
			return ""
		}},
		{"no pricing: the operator's prices", octoExample(t, `"pricingFrom":[{"original":1000,"retail":1000,"net":8000,"currency":"EUR","currencyPrecision":2,"includedTaxes":[]},{"original":1000,"retail":1000,"net":8000,"currency":"USD","currencyPrecision":2,"includedTaxes":[]}]`, `"pricingFrom":[]`,
			`"pricingFrom":[{"original":500,"retail":500,"net":400,"currency":"EUR","currencyPrecision":2,"includedTaxes":[{"name":"VAT 10","retail":45,"original":45,"net":36}]}]`, `"pricingFrom":[]`),
			operator, func(d catalog.RateData, _ int64) string {
				if len(d.Prices) != 1 || d.Prices[0].ID != "op" {
					return "prices"
				}
				return ""
			}},
		{"a cutoff in days, no bound on units", octoExample(t, `"cancellationCutoffAmount":1,"cancellationCutoffUnit":"hour"`, `"cancellationCutoffAmount":2,"cancellationCutoffUnit":"day"`,
			`"restrictions":{"minUnits":0,"maxUnits":9}`, `"restrictions":{"minUnits":2,"maxUnits":null}`), nil, func(d catalog.RateData, _ int64) string {
			if d.Cutoff != 2*24*60 || d.MinTravelers != 2 || d.MaxTravelers != 0 {
				return "cutoff, min and max"
			}
			return ""
		}},
		{"pricing per booking", octoExample(t, `"pricingPer":"UNIT"`, `"pricingPer":"BOOKING"`, `"restrictions":{"minUnits":0,"maxUnits":9},`,
			`"restrictions":{"minUnits":0,"maxUnits":9},"pricingFrom":[{"original":2000,"retail":2000,"net":1600,"currency":"EUR","currencyPrecision":2,"includedTaxes":[]}],`),
			nil, func(d catalog.RateData, _ int64) string {
				if len(d.Prices) != 1 || d.Prices[0].ID != "booking" || d.Prices[0].TravelerType != nil || d.Prices[0].Retail.Amount != "20.00" {
					return "one price per booking"
				}
				return ""
			}},
		{"a doc 3 option (4 fields): doc 3's defaults", bookingsystem.Product{ID: "P1", Options: []bookingsystem.Option{{ID: "O1",
			Units: []bookingsystem.Unit{{ID: "adult", Type: "ADULT"}}}}}, nil, func(d catalog.RateData, _ int64) string {
			if !d.Holdable || !d.Cancelable || d.Cutoff != 0 || d.MinTravelers != 1 || d.MaxTravelers != 0 || d.Prices == nil || len(d.Prices) != 0 {
				return "defaults"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := MergeRate(tt.bp, tt.bp.Options[0], tt.cur)
			if why := tt.check(in.RateData, *in.Version); why != "" {
				t.Fatalf("%s: %+v", why, in.RateData)
			}
		})
	}
}

// TestRefreshProduct_OCTOReadsOneProduct: a change notification's refresh
// of one product of an OCTO system asks for that product (GET
// /products/{id}, with the pricing capability), not the whole list; a v2
// one reads the list (doc 3 has no read of one product).
func TestRefreshProduct_OCTOReadsOneProduct(t *testing.T) {
	for _, dialect := range []string{catalog.ConnectionOCTO, catalog.ConnectionBookingSystem} {
		t.Run(dialect, func(t *testing.T) {
			e := start(t, envOptions{dialect: dialect, sim: bookingsim.Config{OCTOOptionIDs: true}})
			out, err := e.syncer(nil).RefreshProduct(ctx, sid, "S1-P1", e.clock.today(0), e.clock.today(1))
			if err != nil || len(out.Failures) != 0 {
				t.Fatalf("%+v %v", out, err)
			}
			var paths []string
			for _, c := range e.takeCalls() {
				if c.Method == http.MethodGet && strings.Contains(c.Path, "/products") {
					paths = append(paths, c.Path)
				}
			}
			want := []string{"/suppliers/S1/products"}
			if dialect == catalog.ConnectionOCTO {
				want = []string{"/S1/products/S1-P1"}
			}
			if !slices.Equal(paths, want) {
				t.Fatalf("product reads %v, want %v", paths, want)
			}
			rates, err := e.Store.Rates(ctx, catalog.SystemScope(), sid, "S1-P1")
			if err != nil || len(rates) != 2 || len(rates[0].Prices) == 0 || rates[0].Cutoff != 60 {
				t.Fatalf("rates %+v %v", rates, err)
			}
			if dialect == catalog.ConnectionOCTO && rates[0].ID != "DEFAULT" {
				t.Fatalf("OCTO option ids: %v", rates[0].ID)
			}
			if _, err := e.syncer(nil).RefreshProduct(ctx, sid, "S1-P9", e.clock.today(0), e.clock.today(1)); err == nil ||
				err.Error() != fmt.Sprintf("product %s/S1-P9: not offered by the supplier's booking system", sid) {
				t.Fatalf("unknown product: %v", err)
			}
		})
	}
}

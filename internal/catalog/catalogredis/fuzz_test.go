package catalogredis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// roundTrip checks what a rebuild relies on: a validated record encodes,
// decodes and encodes again to the same bytes.
func roundTrip[T any](t *testing.T, v *T) {
	t.Helper()
	a := catalogwire.MustJSON(v)
	var back T
	if err := json.Unmarshal(a, &back); err != nil {
		t.Fatalf("stored form does not decode: %v: %s", err, a)
	}
	if b := catalogwire.MustJSON(&back); !bytes.Equal(a, b) {
		t.Fatalf("stored form is not stable:\n%s\n%s", a, b)
	}
}

func FuzzSupplierBody(f *testing.F) {
	f.Add([]byte(`{"name":"n","code":"c","connection":{"kind":"partner","baseUrl":"https://x.example/","credentials":{"apiKey":"k","apiSecret":"s"}}}`))
	f.Add([]byte(`{"id":"s1","name":"n","code":"c","extensions":{"a":[1,{"b":null}]},"mainLocation":{"longLat":{"latitude":1e1,"longitude":-0.5},"references":[{"url":"https://m.example"}]},"hours":[{"dates":["2024-01-01"],"daysOfWeek":[7],"times":[{"open":"00:00","close":"24:00"}],"timezone":"UTC","valid":{"from":"2024-01-01T00:00:00+02:00"}}],"travelerTypes":[{"minAge":0,"maxAge":3,"addOns":[{"id":"a","content":{"ratings":[{"source":"x","average":{"value":4.5}}]}}]}],"content":{"duration":{"length":"1.5"},"categories":[[{"text":"x","locale":"fr-CA"}]]},"connection":{"kind":"octo","baseUrl":"http://h","credentials":{"set":true}}}`))
	f.Add([]byte(`{"name":"\u00e9","code":"<&>","ext":{"k":"v"},"connection":{"kind":"bookingsystem","baseUrl":"https://h/v2","credentials":{"bearerToken":"t"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in catalog.SupplierInput
		if httpapi.DecodeJSON(body, &in) != nil {
			return
		}
		if catalog.ValidateSupplier("", &in.SupplierData) != nil {
			return
		}
		conn, err := catalog.ResolveConnection(outbound.Policy{}, in.Connection, nil)
		if err != nil {
			return
		}
		sup := catalog.Supplier{SupplierData: in.SupplierData, Version: 1, Connection: conn}
		roundTrip(t, &sup)
		for _, b := range [][]byte{catalogwire.RenderV12(&sup), catalogwire.RenderV13(&sup, false), catalogwire.RenderV13(&sup, true), catalogwire.MustJSON(catalogwire.SupplierOf(sup))} {
			if !json.Valid(b) {
				t.Fatalf("invalid rendering %s", b)
			}
		}
		if conn.Credentials.Set() && bytes.Contains(catalogwire.MustJSON(catalogwire.SupplierOf(sup)), []byte(`"apiSecret"`)) {
			t.Fatal("view carries credentials")
		}
	})
}

func FuzzProductBody(f *testing.F) {
	f.Add([]byte(`{"name":"n","availabilityType":"OPENING_HOURS","deliveryFormats":["TEXT"],"timeZone":"Europe/Paris","locations":[{"order":2}]}`))
	f.Add([]byte(`{"products":[{"name":"n"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in catalog.ProductInput
		if httpapi.DecodeJSON(body, &in) != nil || validateProductInput("", "s1", &in) != nil {
			return
		}
		p := catalog.Product{SupplierID: "s1", ProductData: in.ProductData, Version: 1}
		roundTrip(t, &p)
	})
}

func FuzzRateBody(f *testing.F) {
	f.Add([]byte(`{"name":"n","prices":[{"id":"a","labels":["x","y"],"net":{"amount":1.25,"currency":"EUR"},"includedTaxes":[{"currency":"EUR","net":0.2}],"travelerType":{"minAge":1}}]}`), "x")
	f.Add([]byte(`{"id":"r","optionId":"r","name":"n","valid":{"until":"2030-01-01T00:00:00Z"},"hours":[{"timezone":"Asia/Tokyo"}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, tag string) {
		var in catalog.RateInput
		if httpapi.DecodeJSON(body, &in) != nil || validateRateInput("", "s1", "p1", &in) != nil {
			return
		}
		if in.ID == "" {
			in.ID = "r"
		}
		in.OptionID = in.ID
		r := catalog.Rate{SupplierID: "s1", ProductID: "p1", RateData: in.RateData, Version: 1}
		roundTrip(t, &r)
		raw := catalogwire.RenderRate(&r)
		out, err := catalogwire.FilterPrices(raw, []string{tag})
		if err != nil || !json.Valid(out) {
			t.Fatalf("filter prices: %v %s", err, out)
		}
	})
}

func FuzzBindingBody(f *testing.F) {
	f.Add([]byte(`{"meta":{},"priceAt":"PRICE_AT_SALE","priceTags":["b","a","a"],"rateIds":["r2","r1"],"valid":{"from":"2020-01-01T00:00:00Z","until":"2030-01-01T00:00:00-05:00"}}`))
	f.Add([]byte(`{"optionIds":["a"]}`))
	f.Add([]byte(`{"rateIds":["r1"],"priceTags":["Tags\":[]","Ids\":[\"x\"]"]}`))
	f.Add([]byte(`{"rateIds":[],"priceTags":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in catalog.BindingInput
		if httpapi.DecodeJSON(body, &in) != nil {
			return
		}
		b, err := catalog.NormalizeBinding(in)
		if err != nil {
			return
		}
		b.SupplierID, b.ProductID, b.ChannelID, b.Version = "s", "p", "c", 1
		roundTrip(t, &b)
		_, rest := catalogwire.IndexOpen(catalogwire.IndexValue(&b), 0)
		if rest != string(catalogwire.MustJSON(&b)) {
			t.Fatalf("index value does not carry the binding: %q", rest)
		}
		// The reads cut the terms out of the stored binding (parseTerms):
		// the same as decoding it, whatever the price tags say.
		got, err := parseTerms(rest)
		if err != nil {
			t.Fatalf("parseTerms(%q): %v", rest, err)
		}
		if fmt.Sprint(got.rateIDs()) != fmt.Sprint(b.RateIDs) || fmt.Sprint(got.PriceTags) != fmt.Sprint(b.PriceTags) {
			t.Fatalf("parseTerms(%q) = %v %v, want %v %v", rest, got.rateIDs(), got.PriceTags, b.RateIDs, b.PriceTags)
		}
		for _, rid := range append([]string{"", "x"}, b.RateIDs...) {
			if want := len(b.RateIDs) == 0 || slices.Contains(b.RateIDs, rid); got.binds(rid) != want {
				t.Fatalf("parseTerms(%q).binds(%q) = %v", rest, rid, !want)
			}
		}
	})
}

// fuzzTime is the clock of the fuzz targets whose dates are judged
// against the window of internal/bounds.
var fuzzTime = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func FuzzAvailabilitiesBody(f *testing.F) {
	f.Add([]byte(`{"availabilities":[{"id":"a","start":"2030-01-01T09:00:00Z","end":"2030-01-01T10:00:00+01:00","capacity":0,"maxCapacity":0}]}`))
	f.Add([]byte(`{"availabilities":[{"id":"a","start":"2027-01-01T09:00:00Z","end":"2027-01-01T10:00:00+01:00","capacity":3,"maxCapacity":9}]}`))
	f.Add([]byte(`{"availabilities":[{"id":"a","start":"0001-01-01T09:00:00Z","end":"9999-01-01T10:00:00Z","capacity":9223372036854775807}]}`))
	from, until := bounds.Window(fuzzTime)
	f.Fuzz(func(t *testing.T, body []byte) {
		var in struct {
			Availabilities []catalog.Availability `json:"availabilities"`
		}
		if httpapi.DecodeJSON(body, &in) != nil || catalog.ValidateAvailabilities(in.Availabilities, fuzzTime) != nil {
			return
		}
		// Accepted: within the window and the capacity bound, so that no
		// column downstream (DateTime, Int32) can wrap.
		for _, a := range in.Availabilities {
			if a.Start.Before(from) || a.End.After(until) || a.Capacity < 0 || a.Capacity > bounds.MaxCapacity ||
				a.MaxCapacity != nil && *a.MaxCapacity > bounds.MaxCapacity {
				t.Fatalf("accepted out of bounds: %+v", a)
			}
		}
		for i := range in.Availabilities {
			in.Availabilities[i].Start, in.Availabilities[i].End = in.Availabilities[i].Start.UTC(), in.Availabilities[i].End.UTC()
		}
		set := catalog.AvailabilitySet{SupplierID: "s", ProductID: "p", RateID: "r", Availabilities: in.Availabilities, Version: 1}
		roundTrip(t, &set)
	})
}

func FuzzChannelBody(f *testing.F) {
	f.Add([]byte(`{"id":"c1","name":"n","companyName":"c","config":{"a":"b"},"logoUrl":"https://l.example/x.png"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in catalog.ChannelInput
		if httpapi.DecodeJSON(body, &in) != nil || catalog.ValidateChannel(&in) != nil {
			return
		}
		c := catalog.Channel{ID: "c", Name: in.Name, CompanyName: in.CompanyName, Config: in.Config, Ext: in.Ext, LogoURL: in.LogoURL, URL: in.URL, Version: 1}
		roundTrip(t, &c)
	})
}

func FuzzPriceScheduleBody(f *testing.F) {
	f.Add([]byte(`{"entries":[{"from":"2027-01-01","until":"2027-01-31","prices":[{"id":"a","labels":["x"],"retail":{"amount":10,"currency":"EUR"}}]},{"from":"2026-12-01","until":"2026-12-01","prices":[]}]}`))
	f.Add([]byte(`{"entries":[{"from":"2027-01-01","until":"2026-01-31","prices":[]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in struct {
			Entries []catalog.PriceScheduleEntry `json:"entries"`
		}
		if httpapi.DecodeJSON(body, &in) != nil || catalog.ValidatePriceSchedule(in.Entries, fuzzTime) != nil {
			return
		}
		// Accepted: sorted, never overlapping, a schedule is no change
		// to itself, and against nothing every entry's days changed.
		days := 0
		for i, e := range in.Entries {
			if i > 0 && e.From <= in.Entries[i-1].Until {
				t.Fatalf("accepted overlapping or unsorted entries %v", in.Entries)
			}
			from, _ := time.Parse(catalog.DateLayout, e.From)
			until, _ := time.Parse(catalog.DateLayout, e.Until)
			days += int(until.Sub(from)/(24*time.Hour)) + 1
		}
		if got := catalog.ChangedPriceDays(in.Entries, in.Entries, nil); len(got) != 0 {
			t.Fatalf("a schedule differs from itself on %v", got)
		}
		changed := 0
		for _, r := range catalog.ChangedPriceDays(nil, in.Entries, nil) {
			changed += int(r.End.Sub(r.Start) / (24 * time.Hour))
		}
		if changed != days {
			t.Fatalf("first schedule changed %d days, its entries cover %d", changed, days)
		}
		ps := catalog.PriceSchedule{SupplierID: "s", ProductID: "p", RateID: "r", Entries: in.Entries, Version: 1}
		roundTrip(t, &ps)
	})
}

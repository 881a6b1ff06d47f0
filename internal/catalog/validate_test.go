package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// TestResolveConnection_BaseURLFollowsTheOutboundPolicy: a supplier whose
// connection.baseUrl the outbound policy refuses by its literal form is
// refused when written (400 on connection.baseUrl, the url not echoed), on
// the default settings; with both allow settings on it is accepted (the
// demo's and tests' simulators on loopback). Names are judged when the
// clients connect (internal/platform/outbound's Dialer).
func TestResolveConnection_BaseURLFollowsTheOutboundPolicy(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		refused bool // on the default settings; accepted with both allow settings
		invalid bool // refused on both
	}{
		{name: "public name", url: "https://bookings.example.com/v2"},
		{name: "loopback", url: "https://127.0.0.1:8443/v2", refused: true},
		{name: "loopback, plain http", url: "http://127.0.0.1:1/", refused: true},
		{name: "IPv6 loopback", url: "https://[::1]/v2", refused: true},
		{name: "private 10/8", url: "https://10.1.2.3/", refused: true},
		{name: "private 192.168/16", url: "https://192.168.0.10/", refused: true},
		{name: "metadata", url: "http://169.254.169.254/latest/meta-data", refused: true},
		{name: "metadata over https", url: "https://169.254.169.254/", refused: true},
		{name: "IPv6 metadata", url: "https://[fd00:ec2::254]/", refused: true},
		{name: "IPv4-mapped loopback", url: "https://[::ffff:127.0.0.1]/", refused: true},
		{name: "IPv4-mapped metadata", url: "https://[::ffff:169.254.169.254]/", refused: true},
		{name: "CGNAT", url: "https://100.64.0.1/", refused: true},
		{name: "unspecified", url: "https://0.0.0.0/", refused: true},
		{name: "localhost", url: "https://localhost:8443/", refused: true},
		{name: "plain http, public name", url: "http://bookings.example.com/v2", refused: true},
		{name: "decimal loopback", url: "https://2130706433/", invalid: true},
		{name: "hex loopback", url: "https://0x7f000001/", invalid: true},
		{name: "short loopback", url: "https://127.1/", invalid: true},
		{name: "octal loopback", url: "https://0177.0.0.1/", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &ConnectionInput{Kind: ConnectionBookingSystem, BaseURL: tt.url, Credentials: &CredentialsInput{BearerToken: "tok"}}
			for _, c := range []struct {
				policy outbound.Policy
				bad    bool
			}{{outbound.Policy{}, tt.refused || tt.invalid}, {outbound.Policy{AllowHTTP: true, AllowPrivate: true}, tt.invalid}} {
				_, err := resolveConnection(c.policy, in, nil)
				if !c.bad {
					if err != nil {
						t.Fatalf("%+v: %v, want accepted", c.policy, err)
					}
					continue
				}
				checkField(t, err, "connection.baseUrl")
				if strings.Contains(err.Error(), tt.url) {
					t.Errorf("the refusal %q echoes the url", err)
				}
				if tt.refused && !strings.Contains(err.Error(), "refused by the outbound policy") {
					t.Errorf("the refusal %q does not say it is the outbound policy's", err)
				}
			}
		})
	}
}

func TestValidateSupplier_NamesTheField(t *testing.T) {
	conn := `"connection":{"kind":"partner","baseUrl":"https://x.example"}`
	tests := []struct {
		name  string
		body  string
		field string // "" valid
	}{
		{"minimal", `{"name":"n","code":"c",` + conn + `}`, ""},
		{"bad id", `{"id":"a/b","name":"n","code":"c",` + conn + `}`, "id"},
		{"no code", `{"name":"n",` + conn + `}`, "code"},
		{"extensions not an object", `{"name":"n","code":"c","extensions":[1],` + conn + `}`, "extensions"},
		{"country alpha-2", `{"name":"n","code":"c","mainLocation":{"address":{"countryCode":"FR"}},` + conn + `}`, "mainLocation.address.countryCode"},
		{"latitude out of range", `{"name":"n","code":"c","otherLocations":[{},{"longLat":{"latitude":91,"longitude":0}}],` + conn + `}`, "otherLocations[1].longLat.latitude"},
		{"day 8", `{"name":"n","code":"c","hours":[{"daysOfWeek":[8]}],` + conn + `}`, "hours[0].daysOfWeek[0]"},
		{"time 25:00", `{"name":"n","code":"c","hours":[{"times":[{"open":"25:00","close":"26:00"}]}],` + conn + `}`, "hours[0].times[0].open"},
		{"close 24:00 is fine", `{"name":"n","code":"c","hours":[{"times":[{"open":"20:00","close":"24:00"}]}],` + conn + `}`, ""},
		{"bad date", `{"name":"n","code":"c","hours":[{"dates":["2024-02-30"]}],` + conn + `}`, "hours[0].dates[0]"},
		{"ages upside down", `{"name":"n","code":"c","travelerTypes":[{"minAge":30,"maxAge":10}],` + conn + `}`, "travelerTypes[0].maxAge"},
		{"bad constraint pattern", `{"name":"n","code":"c","travelerTypes":[{"constraints":[{"type":"x","pattern":"("}]}],` + conn + `}`, "travelerTypes[0].constraints[0].pattern"},
		{"add-on without id", `{"name":"n","code":"c","travelerTypes":[{"addOns":[{"title":"t"}]}],` + conn + `}`, "travelerTypes[0].addOns[0].id"},
		{"media url relative", `{"name":"n","code":"c","content":{"media":[{"url":"/a.jpg"}]},` + conn + `}`, "content.media[0].url"},
		{"bad locale", `{"name":"n","code":"c","content":{"title":[{"text":"x","locale":"en_US!"}]},` + conn + `}`, "content.title[0].locale"},
		{"base url with a query", `{"name":"n","code":"c","connection":{"kind":"partner","baseUrl":"https://x.example/?k=v"}}`, "connection.baseUrl"},
		{"bearer and api key", `{"name":"n","code":"c","connection":{"kind":"partner","baseUrl":"https://x.example","credentials":{"apiKey":"a","apiSecret":"b","bearerToken":"c"}}}`, "connection.credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in SupplierInput
			if err := httpapi.DecodeJSON([]byte(tt.body), &in); err != nil {
				t.Fatalf("decode: %v", err)
			}
			err := validateSupplier("", &in.SupplierData)
			if err == nil {
				_, err = resolveConnection(outbound.Policy{}, in.Connection, nil)
			}
			checkField(t, err, tt.field)
		})
	}
}

func checkField(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var fe *FieldError
	if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v, want a FieldError for %s", err, field)
	}
	if fe.Field != field {
		t.Fatalf("field %q (%v), want %q", fe.Field, err, field)
	}
}

func TestValidateProductAndRate_NamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		rate  bool
		field string
	}{
		{"product minimal", `{"name":"n"}`, false, ""},
		{"product delivery format", `{"name":"n","deliveryFormats":["QR_CODE","PDF"]}`, false, "deliveryFormats[1]"},
		{"product redemption", `{"name":"n","redemptionMethod":"SHOUT"}`, false, "redemptionMethod"},
		{"product time zone", `{"name":"n","timeZone":"Local"}`, false, "timeZone"},
		{"product locale", `{"name":"n","locale":"-"}`, false, "locale"},
		{"rate minimal", `{"name":"n"}`, true, ""},
		{"rate option id must be its id", `{"id":"a","optionId":"b","name":"n"}`, true, "optionId"},
		{"rate travelers", `{"name":"n","minTravelers":5,"maxTravelers":2}`, true, "maxTravelers"},
		{"rate negative cutoff", `{"name":"n","cutoff":-1}`, true, "cutoff"},
		{"rate valid window", `{"name":"n","valid":{"from":"2030-01-02T00:00:00Z","until":"2030-01-01T00:00:00Z"}}`, true, "valid.until"},
		{"price without id", `{"name":"n","prices":[{"name":"p"}]}`, true, "prices[0].id"},
		{"tax currency", `{"name":"n","prices":[{"id":"p","includedTaxes":[{"currency":"x"}]}]}`, true, "prices[0].includedTaxes[0].currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.rate {
				var in RateInput
				if err := httpapi.DecodeJSON([]byte(tt.body), &in); err != nil {
					t.Fatal(err)
				}
				err = validateRate("", &in.RateData)
			} else {
				var in ProductInput
				if err := httpapi.DecodeJSON([]byte(tt.body), &in); err != nil {
					t.Fatal(err)
				}
				err = validateProduct("", &in.ProductData)
			}
			checkField(t, err, tt.field)
		})
	}
}

// roundTrip checks what a rebuild relies on: a validated record encodes,
// decodes and encodes again to the same bytes.
func roundTrip[T any](t *testing.T, v *T) {
	t.Helper()
	a := mustJSON(v)
	var back T
	if err := json.Unmarshal(a, &back); err != nil {
		t.Fatalf("stored form does not decode: %v: %s", err, a)
	}
	if b := mustJSON(&back); !bytes.Equal(a, b) {
		t.Fatalf("stored form is not stable:\n%s\n%s", a, b)
	}
}

func FuzzSupplierBody(f *testing.F) {
	f.Add([]byte(`{"name":"n","code":"c","connection":{"kind":"partner","baseUrl":"https://x.example/","credentials":{"apiKey":"k","apiSecret":"s"}}}`))
	f.Add([]byte(`{"id":"s1","name":"n","code":"c","extensions":{"a":[1,{"b":null}]},"mainLocation":{"longLat":{"latitude":1e1,"longitude":-0.5},"references":[{"url":"https://m.example"}]},"hours":[{"dates":["2024-01-01"],"daysOfWeek":[7],"times":[{"open":"00:00","close":"24:00"}],"timezone":"UTC","valid":{"from":"2024-01-01T00:00:00+02:00"}}],"travelerTypes":[{"minAge":0,"maxAge":3,"addOns":[{"id":"a","content":{"ratings":[{"source":"x","average":{"value":4.5}}]}}]}],"content":{"duration":{"length":"1.5"},"categories":[[{"text":"x","locale":"fr-CA"}]]},"connection":{"kind":"octo","baseUrl":"http://h","credentials":{"set":true}}}`))
	f.Add([]byte(`{"name":"\u00e9","code":"<&>","ext":{"k":"v"},"connection":{"kind":"bookingsystem","baseUrl":"https://h/v2","credentials":{"bearerToken":"t"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in SupplierInput
		if httpapi.DecodeJSON(body, &in) != nil {
			return
		}
		if validateSupplier("", &in.SupplierData) != nil {
			return
		}
		conn, err := resolveConnection(outbound.Policy{}, in.Connection, nil)
		if err != nil {
			return
		}
		sup := Supplier{SupplierData: in.SupplierData, Version: 1, Connection: conn}
		roundTrip(t, &sup)
		for _, b := range [][]byte{renderV12(&sup), renderV13(&sup, false), renderV13(&sup, true), mustJSON(sup.View())} {
			if !json.Valid(b) {
				t.Fatalf("invalid rendering %s", b)
			}
		}
		if conn.Credentials.Set() && bytes.Contains(mustJSON(sup.View()), []byte(`"apiSecret"`)) {
			t.Fatal("view carries credentials")
		}
	})
}

func FuzzProductBody(f *testing.F) {
	f.Add([]byte(`{"name":"n","availabilityType":"OPENING_HOURS","deliveryFormats":["TEXT"],"timeZone":"Europe/Paris","locations":[{"order":2}]}`))
	f.Add([]byte(`{"products":[{"name":"n"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in ProductInput
		if httpapi.DecodeJSON(body, &in) != nil || validateProductInput("", "s1", &in) != nil {
			return
		}
		p := Product{SupplierID: "s1", ProductData: in.ProductData, Version: 1}
		roundTrip(t, &p)
	})
}

func FuzzRateBody(f *testing.F) {
	f.Add([]byte(`{"name":"n","prices":[{"id":"a","labels":["x","y"],"net":{"amount":1.25,"currency":"EUR"},"includedTaxes":[{"currency":"EUR","net":0.2}],"travelerType":{"minAge":1}}]}`), "x")
	f.Add([]byte(`{"id":"r","optionId":"r","name":"n","valid":{"until":"2030-01-01T00:00:00Z"},"hours":[{"timezone":"Asia/Tokyo"}]}`), "")
	f.Fuzz(func(t *testing.T, body []byte, tag string) {
		var in RateInput
		if httpapi.DecodeJSON(body, &in) != nil || validateRateInput("", "s1", "p1", &in) != nil {
			return
		}
		if in.ID == "" {
			in.ID = "r"
		}
		in.OptionID = in.ID
		r := Rate{SupplierID: "s1", ProductID: "p1", RateData: in.RateData, Version: 1}
		roundTrip(t, &r)
		raw := renderRate(&r)
		out, err := filterPrices(raw, []string{tag})
		if err != nil || !json.Valid(out) {
			t.Fatalf("filter prices: %v %s", err, out)
		}
	})
}

func FuzzBindingBody(f *testing.F) {
	f.Add([]byte(`{"meta":{},"priceAt":"PRICE_AT_SALE","priceTags":["b","a","a"],"rateIds":["r2","r1"],"valid":{"from":"2020-01-01T00:00:00Z","until":"2030-01-01T00:00:00-05:00"}}`))
	f.Add([]byte(`{"optionIds":["a"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in BindingInput
		if httpapi.DecodeJSON(body, &in) != nil {
			return
		}
		b, err := normalizeBinding(in)
		if err != nil {
			return
		}
		b.SupplierID, b.ProductID, b.ChannelID, b.Version = "s", "p", "c", 1
		roundTrip(t, &b)
		if _, rest := indexOpen(indexValue(&b), 0); rest != string(mustJSON(&b)) {
			t.Fatalf("index value does not carry the binding: %q", rest)
		}
	})
}

// fuzzNow is the clock of the fuzz targets and table tests whose dates are
// judged against the window of internal/bounds.
var fuzzNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func FuzzAvailabilitiesBody(f *testing.F) {
	f.Add([]byte(`{"availabilities":[{"id":"a","start":"2030-01-01T09:00:00Z","end":"2030-01-01T10:00:00+01:00","capacity":0,"maxCapacity":0}]}`))
	f.Add([]byte(`{"availabilities":[{"id":"a","start":"2027-01-01T09:00:00Z","end":"2027-01-01T10:00:00+01:00","capacity":3,"maxCapacity":9}]}`))
	f.Add([]byte(`{"availabilities":[{"id":"a","start":"0001-01-01T09:00:00Z","end":"9999-01-01T10:00:00Z","capacity":9223372036854775807}]}`))
	from, until := bounds.Window(fuzzNow)
	f.Fuzz(func(t *testing.T, body []byte) {
		var in struct {
			Availabilities []Availability `json:"availabilities"`
		}
		if httpapi.DecodeJSON(body, &in) != nil || validateAvailabilities(in.Availabilities, fuzzNow) != nil {
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
		set := AvailabilitySet{SupplierID: "s", ProductID: "p", RateID: "r", Availabilities: in.Availabilities, Version: 1}
		roundTrip(t, &set)
	})
}

func FuzzChannelBody(f *testing.F) {
	f.Add([]byte(`{"id":"c1","name":"n","companyName":"c","config":{"a":"b"},"logoUrl":"https://l.example/x.png"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in ChannelInput
		if httpapi.DecodeJSON(body, &in) != nil || validateChannel(&in) != nil {
			return
		}
		c := Channel{ID: "c", Name: in.Name, CompanyName: in.CompanyName, Config: in.Config, Ext: in.Ext, LogoURL: in.LogoURL, URL: in.URL, Version: 1}
		roundTrip(t, &c)
	})
}

func FuzzPriceScheduleBody(f *testing.F) {
	f.Add([]byte(`{"entries":[{"from":"2027-01-01","until":"2027-01-31","prices":[{"id":"a","labels":["x"],"retail":{"amount":10,"currency":"EUR"}}]},{"from":"2026-12-01","until":"2026-12-01","prices":[]}]}`))
	f.Add([]byte(`{"entries":[{"from":"2027-01-01","until":"2026-01-31","prices":[]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in struct {
			Entries []PriceScheduleEntry `json:"entries"`
		}
		if httpapi.DecodeJSON(body, &in) != nil || validatePriceSchedule(in.Entries, fuzzNow) != nil {
			return
		}
		// Accepted: sorted, never overlapping, a schedule is no change
		// to itself, and against nothing every entry's days changed.
		days := 0
		for i, e := range in.Entries {
			if i > 0 && e.From <= in.Entries[i-1].Until {
				t.Fatalf("accepted overlapping or unsorted entries %v", in.Entries)
			}
			from, _ := time.Parse(DateLayout, e.From)
			until, _ := time.Parse(DateLayout, e.Until)
			days += int(until.Sub(from)/(24*time.Hour)) + 1
		}
		if got := ChangedPriceDays(in.Entries, in.Entries, nil); len(got) != 0 {
			t.Fatalf("a schedule differs from itself on %v", got)
		}
		changed := 0
		for _, r := range ChangedPriceDays(nil, in.Entries, nil) {
			changed += int(r.End.Sub(r.Start) / (24 * time.Hour))
		}
		if changed != days {
			t.Fatalf("first schedule changed %d days, its entries cover %d", changed, days)
		}
		ps := PriceSchedule{SupplierID: "s", ProductID: "p", RateID: "r", Entries: in.Entries, Version: 1}
		roundTrip(t, &ps)
	})
}

// TestBounds_DatesAndNumbersOfOperatorBodies: issue 18 found holds at year
// 0001, 100-year availability windows and capacities of 2^63-1 accepted.
// Every date and number of the operator's bodies is bounded
// (internal/bounds) and refused with INVALID_FIELD naming the field.
func TestBounds_DatesAndNumbersOfOperatorBodies(t *testing.T) {
	now := fuzzNow
	at := func(d time.Duration) time.Time { return now.Add(d) }
	big := 1 << 62
	tests := []struct {
		name  string
		err   func() error
		field string // "" accepted
	}{
		{"availability next month", func() error {
			return validateAvailabilities([]Availability{{ID: "a", Start: at(30 * 24 * time.Hour), End: at(30*24*time.Hour + time.Hour), Capacity: 5}}, now)
		}, ""},
		{"availability at year 0001", func() error {
			return validateAvailabilities([]Availability{{ID: "a", Start: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), End: at(time.Hour)}}, now)
		}, "availabilities[0].start"},
		{"a 100-year availability", func() error {
			return validateAvailabilities([]Availability{{ID: "a", Start: at(time.Hour), End: now.AddDate(100, 0, 0)}}, now)
		}, "availabilities[0].end"},
		{"capacity 2^62", func() error {
			return validateAvailabilities([]Availability{{ID: "a", Start: at(time.Hour), End: at(2 * time.Hour), Capacity: big}}, now)
		}, "availabilities[0].capacity"},
		{"maxCapacity 2^62", func() error {
			return validateAvailabilities([]Availability{{ID: "a", Start: at(time.Hour), End: at(2 * time.Hour), Capacity: 1, MaxCapacity: &big}}, now)
		}, "availabilities[0].maxCapacity"},
		{"cutoff of 2^62 seconds", func() error { return validateRate("", &RateData{Name: "r", Cutoff: big}) }, "cutoff"},
		{"holdablePeriod over a year", func() error { return validateRate("", &RateData{Name: "r", HoldablePeriod: 400 * 24 * 3600}) }, "holdablePeriod"},
		{"maxTravelers 2^62", func() error { return validateRate("", &RateData{Name: "r", MaxTravelers: big}) }, "maxTravelers"},
		{"validity at year 9999", func() error {
			return checkValidity("valid", &Validity{From: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)})
		}, "valid.from"},
		{"validity until 2099", func() error {
			return checkValidity("valid", &Validity{From: now, Until: time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)})
		}, ""},
		{"opening-hours date at year 0001", func() error { return checkHours("hours", []Hours{{Dates: []string{"0001-01-01"}}}) }, "hours[0].dates[0]"},
		{"an amount Decimal(18, 4) cannot hold", func() error {
			return checkMoney("retail", &Money{Amount: json.Number("1e15"), Currency: "EUR"})
		}, "retail.amount"},
		{"an age of 1000", func() error { a := int32(1000); return checkAges("travelerType", nil, &a) }, "travelerType.maxAge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkField(t, tt.err(), tt.field)
		})
	}
}

package catalog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

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
				_, err := ResolveConnection(c.policy, in, nil)
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
			err := ValidateSupplier("", &in.SupplierData)
			if err == nil {
				_, err = ResolveConnection(outbound.Policy{}, in.Connection, nil)
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
				err = ValidateRate("", &in.RateData)
			} else {
				var in ProductInput
				if err := httpapi.DecodeJSON([]byte(tt.body), &in); err != nil {
					t.Fatal(err)
				}
				err = ValidateProduct("", &in.ProductData)
			}
			checkField(t, err, tt.field)
		})
	}
}

// fuzzNow is the clock of the fuzz targets and table tests whose dates are
// judged against the window of internal/bounds.
var fuzzNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

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
			return ValidateAvailabilities([]Availability{{ID: "a", Start: at(30 * 24 * time.Hour), End: at(30*24*time.Hour + time.Hour), Capacity: 5}}, now)
		}, ""},
		{"availability at year 0001", func() error {
			return ValidateAvailabilities([]Availability{{ID: "a", Start: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), End: at(time.Hour)}}, now)
		}, "availabilities[0].start"},
		{"a 100-year availability", func() error {
			return ValidateAvailabilities([]Availability{{ID: "a", Start: at(time.Hour), End: now.AddDate(100, 0, 0)}}, now)
		}, "availabilities[0].end"},
		{"capacity 2^62", func() error {
			return ValidateAvailabilities([]Availability{{ID: "a", Start: at(time.Hour), End: at(2 * time.Hour), Capacity: big}}, now)
		}, "availabilities[0].capacity"},
		{"maxCapacity 2^62", func() error {
			return ValidateAvailabilities([]Availability{{ID: "a", Start: at(time.Hour), End: at(2 * time.Hour), Capacity: 1, MaxCapacity: &big}}, now)
		}, "availabilities[0].maxCapacity"},
		{"cutoff of 2^62 seconds", func() error { return ValidateRate("", &RateData{Name: "r", Cutoff: big}) }, "cutoff"},
		{"holdablePeriod over a year", func() error { return ValidateRate("", &RateData{Name: "r", HoldablePeriod: 400 * 24 * 3600}) }, "holdablePeriod"},
		{"maxTravelers 2^62", func() error { return ValidateRate("", &RateData{Name: "r", MaxTravelers: big}) }, "maxTravelers"},
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

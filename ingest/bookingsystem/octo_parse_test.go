package bookingsystem_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
)

const octoBookingUUID = "0b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b"

// octoBooking is an OCTO booking body with fields replaced by repl
// ("old", "new" pairs).
func octoBooking(repl ...string) []byte {
	s := `{"id":"b1","uuid":"` + octoBookingUUID + `","testMode":false,"resellerReference":"R-1","supplierReference":"SUP-1",` +
		`"status":"ON_HOLD","utcCreatedAt":"2026-11-22T08:00:00Z","utcExpiresAt":"2026-11-22T08:30:00.5Z","productId":"P1","optionId":"O1",` +
		`"cancellable":true,"cancellation":null,"freesale":false,"availabilityId":"2026-11-23T09:00:00+01:00",` +
		`"availability":{"id":"2026-11-23T09:00:00+01:00","localDateTimeStart":"2026-11-23T09:00:00+01:00","localDateTimeEnd":"2026-11-23T11:00:00+01:00","allDay":false,"openingHours":[]},` +
		`"contact":{"fullName":"Ada","locales":[]},"notes":null,"deliveryMethods":["VOUCHER","TICKET"],"voucher":null,` +
		`"unitItems":[{"uuid":"u1","unitId":"adult","resellerReference":null,"supplierReference":"T1","status":"ON_HOLD","contact":{},"ticket":null}]}`
	return []byte(strings.NewReplacer(repl...).Replace(s))
}

func TestParseOCTOBooking_MapsOntoDoc3Booking(t *testing.T) {
	tests := []struct {
		name      string
		body      []byte
		exp       bookingsystem.BookingExpect
		wantRules []string
		check     func(bookingsystem.Booking) bool
	}{
		{"hold with OCTO names", octoBooking(), bookingsystem.BookingExpect{UUID: octoBookingUUID}, nil, func(b bookingsystem.Booking) bool {
			return b.Status == "ON_HOLD" && b.UTCHoldExpiration.Nanosecond() == 0 && b.UTCHoldExpiration.Minute() == 30 &&
				b.Availability.ID == "2026-11-23T09:00:00+01:00" && *b.DeliveryMethod == "VOUCHER" && *b.SupplierReference == "SUP-1" &&
				b.Contact != nil && *b.Contact.FullName == "Ada" && len(b.UnitItems) == 1 && *b.UnitItems[0].SupplierReference == "T1" &&
				b.ChannelID == "" && b.ChannelName == ""
		}},
		{"redeemed is confirmed", octoBooking(`"status":"ON_HOLD"`, `"status":"REDEEMED"`), bookingsystem.BookingExpect{Statuses: []string{"CONFIRMED"}}, nil,
			func(b bookingsystem.Booking) bool { return b.Status == "CONFIRMED" }},
		{"availabilityId without the object", octoBooking(`"availability":{"id":"2026-11-23T09:00:00+01:00","localDateTimeStart":"2026-11-23T09:00:00+01:00","localDateTimeEnd":"2026-11-23T11:00:00+01:00","allDay":false,"openingHours":[]}`, `"availability":null`),
			bookingsystem.BookingExpect{}, nil, func(b bookingsystem.Booking) bool {
				return b.Availability != nil && b.Availability.ID == "2026-11-23T09:00:00+01:00" && b.Availability.LocalDateTimeStart.IsZero()
			}},
		{"cancellation is a resolved cancellation request", octoBooking(`"status":"ON_HOLD"`, `"status":"CANCELLED"`,
			`"utcExpiresAt":"2026-11-22T08:30:00.5Z"`, `"utcExpiresAt":"2026-11-22T08:30:00.5Z","utcConfirmedAt":"2026-11-22T08:10:00Z"`,
			`"cancellation":null`, `"cancellation":{"refund":"FULL","reason":"ill","utcCancelledAt":"2026-11-22T09:00:00Z"}`), bookingsystem.BookingExpect{}, nil,
			func(b bookingsystem.Booking) bool {
				c := b.CancellationRequest
				return b.Status == "CANCELLED" && c != nil && c.Reason == "ill" && *c.Refund == "FULL" && c.UTCResolvedAt.Hour() == 9 && c.Status == "CONFIRMED"
			}},
		// OCTO cancels a released hold; doc 3 calls that EXPIRED (ON_HOLD
		// by cancellation), and CANCELLED comes only from CONFIRMED.
		{"a released hold is expired", octoBooking(`"status":"ON_HOLD"`, `"status":"CANCELLED"`), bookingsystem.BookingExpect{Statuses: []string{"EXPIRED"}}, nil,
			func(b bookingsystem.Booking) bool { return b.Status == "EXPIRED" }},
		// OCTO's utcExpiresAt is nullable (doc 3's hold expiration is a
		// MUST, for v2 only): the hold's life is then Switchback's default.
		{"hold without expiry", octoBooking(`"utcExpiresAt":"2026-11-22T08:30:00.5Z"`, `"utcExpiresAt":null`), bookingsystem.BookingExpect{}, nil,
			func(b bookingsystem.Booking) bool { return b.Status == "ON_HOLD" && b.UTCHoldExpiration == nil }},
		{"tickets and voucher in the catalog's spelling", octoBooking(`"voucher":null`, `"voucher":{"redemptionMethod":"DIGITAL","utcRedeemedAt":null,"deliveryOptions":[{"deliveryFormat":"PDF_URL","deliveryValue":"https://t.example/v.pdf"}]}`,
			`"ticket":null`, `"ticket":{"redemptionMethod":"DIGITAL","utcRedeemedAt":null,"deliveryOptions":[{"deliveryFormat":"QRCODE","deliveryValue":"QR-1"},{"deliveryFormat":"AZTECCODE","deliveryValue":"AZ-1"}]}`),
			bookingsystem.BookingExpect{}, nil, func(b bookingsystem.Booking) bool {
				tk := b.UnitItems[0].Ticket
				return b.Voucher != nil && b.Voucher.DeliveryOptions[0].DeliveryFormat == "PDF_URL" && tk != nil &&
					tk.DeliveryOptions[0] == bookingsystem.DeliveryOption{DeliveryFormat: "QR_CODE", DeliveryValue: "QR-1"} &&
					tk.DeliveryOptions[1].DeliveryFormat == "AZTECCODE"
			}},
		{"another booking than asked", octoBooking(), bookingsystem.BookingExpect{UUID: "1b7e1c2a-3f4d-4e5f-8a9b-1c2d3e4f5a6b"}, []string{"uuid"}, nil},
		{"a status the call cannot lead to", octoBooking(), bookingsystem.BookingExpect{Statuses: []string{"CONFIRMED", "PENDING"}}, []string{"transition"}, nil},
		{"unknown status", octoBooking(`"status":"ON_HOLD"`, `"status":"MAYBE"`), bookingsystem.BookingExpect{}, []string{"status"}, nil},
		{"unit item without unit", octoBooking(`"unitId":"adult"`, `"unitId":""`), bookingsystem.BookingExpect{}, []string{"id_missing"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ps, err := bookingsystem.ParseOCTOBooking(tt.body, tt.exp)
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, p := range ps {
				rules = append(rules, p.Rule)
			}
			if !slices.Equal(rules, tt.wantRules) {
				t.Fatalf("rules %v, want %v", rules, tt.wantRules)
			}
			if tt.check != nil && !tt.check(b) {
				t.Fatalf("booking %+v", b)
			}
			if tt.wantRules != nil && b.UUID != "" {
				t.Fatal("a rejected booking was returned")
			}
		})
	}
	for _, body := range []string{`[]`, `{"uuid":1}`, `{} {}`, `nope`} {
		if _, _, err := bookingsystem.ParseOCTOBooking([]byte(body), bookingsystem.BookingExpect{}); !errors.Is(err, bookingsystem.ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", body, err)
		}
	}
}

// octoAv is one OCTO availability object of 2026-11-23 with extra fields.
func octoAv(id, start, end, extra string) string {
	return `{"id":"` + id + `","localDateTimeStart":"2026-11-` + start + `","localDateTimeEnd":"2026-11-` + end +
		`","utcCutoffAt":"2026-11-23T08:00:00Z","allDay":false,"available":true,"status":"AVAILABLE","vacancies":5,` +
		`"capacity":10,"maxUnits":null,"openingHours":[]` + extra + `}`
}

func price(unit string, retail int) string {
	return `{"unitId":"` + unit + `","original":` + strconv.Itoa(retail) + `,"retail":` + strconv.Itoa(retail) + `,"net":null,"currency":"EUR","currencyPrecision":2,"includedTaxes":[]}`
}

func TestParseOCTOAvailability_OptionCapacityAndPrices(t *testing.T) {
	exp := bookingsystem.AvailabilityExpect{AvailabilityType: bookingsystem.StartTime, OptionID: "O1", LocalDateStart: "2026-11-23", LocalDateEnd: "2026-11-25"}
	tests := []struct {
		name      string
		items     []string
		wantRules []string
		wantValid int
	}{
		{"valid, with prices", []string{octoAv("a", "23T09:00:00Z", "23T11:00:00Z", `,"unitPricing":[`+price("adult", 5000)+`,`+price("child", 2500)+`]`)}, nil, 1},
		{"negative capacity", []string{octoAv("a", "23T09:00:00Z", "23T11:00:00Z", `,"capacity":-1`)}, []string{"vacancies_negative"}, 0},
		{"price without currency", []string{octoAv("a", "23T09:00:00Z", "23T11:00:00Z", `,"unitPricing":[`+strings.Replace(price("adult", 5000), "EUR", "", 1)+`]`)}, []string{"price"}, 0},
		{"two prices of one unit", []string{octoAv("a", "23T09:00:00Z", "23T11:00:00Z", `,"unitPricing":[`+price("adult", 5000)+`,`+price("adult", 4000)+`]`)}, []string{"price"}, 0},
		{"outside the window", []string{octoAv("a", "25T09:00:00Z", "25T11:00:00Z", "")}, []string{"outside_window"}, 0},
		{"one of two is malformed", []string{octoAv("a", "23T09:00:00Z", "23T11:00:00Z", ""), `{"id":"b","vacancies":"many"}`}, []string{"malformed"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A later duplicate key wins in encoding/json: the extras
			// override the defaults of octoAv.
			out, ps, err := bookingsystem.ParseOCTOAvailability([]byte("["+strings.Join(tt.items, ",")+"]"), exp)
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, p := range ps {
				rules = append(rules, p.Rule)
			}
			if !slices.Equal(rules, tt.wantRules) || len(out) != tt.wantValid {
				t.Fatalf("rules %v valid %d, want %v %d", rules, len(out), tt.wantRules, tt.wantValid)
			}
			for _, a := range out {
				if a.OptionID != "O1" || a.Capacity == nil || *a.Capacity != 10 || a.Available == nil || !*a.Available {
					t.Fatalf("availability %+v", a)
				}
			}
		})
	}
	if _, _, err := bookingsystem.ParseOCTOAvailability([]byte(`[]`), bookingsystem.AvailabilityExpect{AvailabilityType: bookingsystem.StartTime}); !errors.Is(err, bookingsystem.ErrInvalid) {
		t.Fatalf("no optionId: %v", err)
	}
}

func TestParseOCTOPricing_DaysMergeIntoRanges(t *testing.T) {
	exp := bookingsystem.AvailabilityExpect{AvailabilityType: bookingsystem.StartTime, OptionID: "O1", LocalDateStart: "2026-11-01", LocalDateEnd: "2026-12-01"}
	av := func(id, day string, p ...string) string {
		extra := ""
		if p != nil {
			extra = `,"unitPricing":[` + strings.Join(p, ",") + `]`
		}
		return octoAv(id, day+"T09:00:00Z", day+"T11:00:00Z", extra)
	}
	tests := []struct {
		name      string
		items     []string
		want      [][2]string // [start, end) of each entry
		wantRules []string
	}{
		{"same price three days", []string{av("a", "23", price("adult", 5000)), av("b", "24", price("adult", 5000)), av("c", "25", price("adult", 5000))},
			[][2]string{{"2026-11-23", "2026-11-26"}}, nil},
		{"a price change splits", []string{av("a", "23", price("adult", 5000)), av("b", "24", price("adult", 6000))},
			[][2]string{{"2026-11-23", "2026-11-24"}, {"2026-11-24", "2026-11-25"}}, nil},
		{"a day without availability splits", []string{av("a", "23", price("adult", 5000)), av("b", "25", price("adult", 5000))},
			[][2]string{{"2026-11-23", "2026-11-24"}, {"2026-11-25", "2026-11-26"}}, nil},
		{"slots of a day that disagree", []string{av("a", "23", price("adult", 5000)), octoAv("a2", "23T13:00:00Z", "23T15:00:00Z", `,"unitPricing":[`+price("adult", 7000)+`]`),
			av("b", "24", price("adult", 5000))}, [][2]string{{"2026-11-24", "2026-11-25"}}, []string{"price"}},
		{"no prices, no entries", []string{av("a", "23"), av("b", "24")}, nil, nil},
		{"an availability that breaks a rule is left out", []string{av("a", "23", price("adult", 5000)), av("b", "24", price("adult", -1))},
			[][2]string{{"2026-11-23", "2026-11-24"}}, []string{"price"}},
		{"unit order does not matter", []string{av("a", "23", price("adult", 5000), price("child", 100)), av("b", "24", price("child", 100), price("adult", 5000))},
			[][2]string{{"2026-11-23", "2026-11-25"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, ps, err := bookingsystem.ParseOCTOPricing([]byte("["+strings.Join(tt.items, ",")+"]"), exp)
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]string
			for _, e := range es {
				got = append(got, [2]string{e.LocalDateStart, e.LocalDateEnd})
				if e.OptionID != "O1" || len(e.UnitPricing) == 0 || e.UnitPricing[0].Currency != "EUR" {
					t.Fatalf("entry %+v", e)
				}
			}
			var rules []string
			for _, p := range ps {
				rules = append(rules, p.Rule)
				// Callers attribute a price-schedule problem to Problem.ID.
				if p.ID != "O1" || p.Detail == "" {
					t.Fatalf("problem %+v: want the option id O1 and what in it broke the rule", p)
				}
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(rules, tt.wantRules) {
				t.Fatalf("entries %v rules %v, want %v %v", got, rules, tt.want, tt.wantRules)
			}
		})
	}
}

func TestParseOCTOSupplierAndProduct_OneObject(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantErr   bool
		wantRules []string
		wantN     int
	}{
		{"supplier", `{"id":"S1","name":"n","endpoint":"https://octo.example/S1/","contact":{"website":null}}`, false, nil, 1},
		{"supplier with a bad endpoint", `{"id":"S1","endpoint":"ftp://x"}`, false, []string{"endpoint"}, 0},
		{"an array is not a supplier", `[{"id":"S1","endpoint":"https://x"}]`, true, nil, 0},
		{"trailing data", `{"id":"S1","endpoint":"https://x"} {}`, true, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ps, err := bookingsystem.ParseOCTOSupplier([]byte(tt.body))
			if tt.wantErr != errors.Is(err, bookingsystem.ErrMalformed) || (err != nil && !tt.wantErr) {
				t.Fatalf("err %v", err)
			}
			var rules []string
			for _, p := range ps {
				rules = append(rules, p.Rule)
			}
			if len(out) != tt.wantN || !slices.Equal(rules, tt.wantRules) {
				t.Fatalf("suppliers %+v rules %v", out, rules)
			}
			if len(out) == 1 && strings.HasSuffix(out[0].Endpoint, "/") {
				t.Fatalf("endpoint kept its trailing slash: %s", out[0].Endpoint)
			}
		})
	}
	p, ps, err := bookingsystem.ParseOCTOProduct([]byte(`{"id":"P1","timeZone":"Europe/Paris","availabilityType":"OPENING_HOURS","options":[]}`))
	if err != nil || p.ID != "" || len(ps) != 1 || ps[0].Rule != "options" {
		t.Fatalf("product without options: %+v %v %v", p, ps, err)
	}
}

// OCTO sends an OPENING_HOURS availability per day with its openingHours;
// doc 3 rule 2 wants one availability per contiguous range: each range is
// an availability of its own, on the product's local date, with an id
// that maps back to the day (OCTOAvailabilityID).
func TestParseOCTOAvailability_OpeningHoursAreOneAvailabilityPerRange(t *testing.T) {
	const day = "2026-11-23T00:00:00+01:00"
	dayAv := func(start, end, hours string) string {
		return `{"id":"` + day + `","localDateTimeStart":"` + start + `","localDateTimeEnd":"` + end + `","utcCutoffAt":"2026-11-23T08:00:00Z",` +
			`"allDay":true,"available":true,"status":"FREESALE","vacancies":null,"capacity":null,"maxUnits":null,"openingHours":[` + hours + `]}`
	}
	oh := func(from, to string) string { return `{"from":"` + from + `","to":"` + to + `"}` }
	local := func(d, hm string) string { return "2026-11-" + d + "T" + hm + ":00+01:00" }
	type av struct{ id, start, end string }
	tests := []struct {
		name      string
		item      string
		asked     []string // a unit check's availabilityIds
		want      []av
		wantRules []string
	}{
		{"a lunch break: two ranges", dayAv(day, local("24", "00:00"), oh("09:00", "12:00")+","+oh("13:00", "18:00")), nil,
			[]av{{day + "#09:00-12:00", local("23", "09:00"), local("23", "12:00")}, {day + "#13:00-18:00", local("23", "13:00"), local("23", "18:00")}}, nil},
		{"one range keeps the day's id", dayAv(day, local("24", "00:00"), oh("09:00", "18:00")), nil,
			[]av{{day, local("23", "09:00"), local("23", "18:00")}}, nil},
		{"no opening hours: the day as sent", dayAv(day, local("24", "00:00"), ""), nil,
			[]av{{day, local("23", "00:00"), local("24", "00:00")}}, nil},
		{"the day sent in UTC: ranges in the product's time zone", dayAv("2026-11-22T23:00:00Z", "2026-11-23T23:00:00Z", oh("09:00", "12:00")+","+oh("20:00", "24:00")), nil,
			[]av{{day + "#09:00-12:00", local("23", "09:00"), local("23", "12:00")}, {day + "#20:00-24:00", local("23", "20:00"), local("24", "00:00")}}, nil},
		{"open past midnight", dayAv(day, local("24", "00:00"), oh("08:00", "11:00")+","+oh("18:00", "02:00")), nil,
			[]av{{day + "#08:00-11:00", local("23", "08:00"), local("23", "11:00")}, {day + "#18:00-02:00", local("23", "18:00"), local("24", "02:00")}}, nil},
		// OCTO does not forbid ranges that touch or overlap (doc 3 rule 2
		// does, for v2): merged into one contiguous range.
		{"ranges that touch: merged", dayAv(day, local("24", "00:00"), oh("09:00", "12:00")+","+oh("12:00", "18:00")), nil,
			[]av{{day, local("23", "09:00"), local("23", "18:00")}}, nil},
		{"ranges that overlap, and one apart", dayAv(day, local("24", "00:00"), oh("14:00", "18:00")+","+oh("09:00", "12:00")+","+oh("11:00", "13:00")), nil,
			[]av{{day + "#09:00-13:00", local("23", "09:00"), local("23", "13:00")}, {day + "#14:00-18:00", local("23", "14:00"), local("23", "18:00")}}, nil},
		{"a range that is not HH:MM: the day is rejected whole", dayAv(day, local("24", "00:00"), oh("09:00", "12:00")+","+oh("13:00", "25:00")), nil,
			nil, []string{"time_range"}},
		{"a unit check of one range answers that range", dayAv(day, local("24", "00:00"), oh("09:00", "12:00")+","+oh("13:00", "18:00")), []string{day + "#13:00-18:00"},
			[]av{{day + "#13:00-18:00", local("23", "13:00"), local("23", "18:00")}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := bookingsystem.AvailabilityExpect{AvailabilityType: bookingsystem.OpeningHours, OptionID: "O1",
				LocalDateStart: "2026-11-23", LocalDateEnd: "2026-11-24", TimeZone: "Europe/Paris", AvailabilityIDs: tt.asked}
			if tt.asked != nil {
				exp.LocalDateStart, exp.LocalDateEnd = "", ""
			}
			out, ps, err := bookingsystem.ParseOCTOAvailability([]byte("["+tt.item+"]"), exp)
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, p := range ps {
				rules = append(rules, p.Rule)
			}
			var got []av
			for _, a := range out {
				got = append(got, av{a.ID, a.LocalDateTimeStart.Format(time.RFC3339), a.LocalDateTimeEnd.Format(time.RFC3339)})
				ranges := strings.Contains(tt.item, `"from"`)
				if a.Status != bookingsystem.Freesale || a.AllDay == ranges || bookingsystem.OCTOAvailabilityID(a.ID) != day {
					t.Fatalf("availability %+v: want FREESALE, of the day %s, all day only without opening hours", a, day)
				}
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(rules, tt.wantRules) {
				t.Fatalf("availabilities %v rules %v,\nwant %v %v", got, rules, tt.want, tt.wantRules)
			}
		})
	}
}

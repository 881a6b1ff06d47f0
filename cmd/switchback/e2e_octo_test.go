package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
)

// TestE2E_OCTO_EveryKindOfSupplier sells every kind of supplier
// (operator-pushed, partner, booking system v2, OCTO upstream) through
// the OCTO endpoints over the binary, with an OCTO client written here
// from the OCTO specification (octotravel/octo-types, src/openapi.yaml)
// and sharing no code with the server: supplier, products, calendar,
// availability by range, date and id, reservation (retried: the same
// booking), extend, update, confirm (retried), get, list by both
// references, cancel of a confirmed booking and of a reservation, and
// every OCTO error with its name. Every answer is checked against the
// schemas below, written from the specification. A reservation made
// through OCTO is the hold /v1.2/holds shows, its confirmation the
// booking /v1.2/bookings shows.
func TestE2E_OCTO_EveryKindOfSupplier(t *testing.T) {
	for _, k := range contractKinds() { // the OCTO walk checks no barcode format
		t.Run(k.name, func(t *testing.T) { walkOCTO(t, k) })
	}
}

// ---- the OCTO client (from the specification only)

type octoClient struct {
	t     *testing.T
	base  string // https://host/octo/{supplierId}
	token string // "<key>:<secret>"
}

// call sends an OCTO request (Authorization: Bearer, JSON) and returns
// the status and the decoded JSON answer.
func (c octoClient) call(method, path, body string) (int, any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Octo-Capabilities", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		c.t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode, raw)
	}
	if resp.StatusCode == 200 {
		// OCTO: every success carries the Octo-Capabilities header.
		if _, ok := resp.Header["Octo-Capabilities"]; !ok {
			c.t.Errorf("%s %s: no Octo-Capabilities header", method, path)
		}
	}
	return resp.StatusCode, v
}

// ok calls and wants 200 with a body of schema.
func (c octoClient) ok(method, path, body, schema string) any {
	c.t.Helper()
	status, v := c.call(method, path, body)
	if status != 200 {
		c.t.Fatalf("%s %s: %d %v, want 200", method, path, status, v)
	}
	checkOCTO(c.t, method+" "+path, schema, v)
	return v
}

// fails calls and wants OCTO's error: 400 with error name and an
// errorMessage.
func (c octoClient) fails(method, path, body, name string) map[string]any {
	c.t.Helper()
	status, v := c.call(method, path, body)
	m, _ := v.(map[string]any)
	if status != 400 || m["error"] != name {
		c.t.Fatalf("%s %s: %d %v, want 400 %s", method, path, status, v, name)
	}
	checkOCTO(c.t, method+" "+path, "Error", v)
	return m
}

// ---- the schemas, from octo-types src/openapi.yaml (components.schemas;
// the fields every core answer must carry)

// A field is "type", "type?" (nullable), "[]type" (array of), "enum(A|B)",
// "obj(Schema)", "obj?(Schema)"; types: string, bool, int, datetime (RFC
// 3339 with offset), utc (ends in Z), date (YYYY-MM-DD), hhmm (HH:MM).
var octoSchemas = map[string]map[string]string{
	"Supplier":        {"id": "string", "name": "string", "endpoint": "string", "contact": "obj(SupplierContact)"},
	"SupplierContact": {"website": "string?", "email": "string?", "telephone": "string?", "address": "string?"},
	"Product": {"id": "string", "internalName": "string", "reference": "string?", "locale": "string", "timeZone": "string",
		"allowFreesale": "bool", "instantConfirmation": "bool", "instantDelivery": "bool", "availabilityRequired": "bool",
		"availabilityType": "enum(START_TIME|OPENING_HOURS)", "deliveryFormats": "[]enum(PDF_URL|QRCODE|CODE128|PKPASS_URL|AZTECCODE)",
		"deliveryMethods": "[]enum(VOUCHER|TICKET)", "redemptionMethod": "enum(REDEEM|DIGITAL|PRINT|MANIFEST)", "options": "[]obj(Option)"},
	"Option": {"id": "string", "default": "bool", "internalName": "string", "reference": "string?", "availabilityLocalStartTimes": "[]hhmm",
		"cancellationCutoff": "string", "cancellationCutoffAmount": "int", "cancellationCutoffUnit": "enum(hour|minute|day)",
		"requiredContactFields": "[]enum(firstName|lastName|emailAddress|phoneNumber|country|notes|locales|allowMarketing|postalCode)",
		"restrictions":          "obj(OptionRestrictions)", "units": "[]obj(Unit)"},
	"OptionRestrictions": {"minUnits": "int?", "maxUnits": "int?"},
	"Unit": {"id": "string", "internalName": "string", "reference": "string?",
		"type": "enum(ADULT|YOUTH|CHILD|INFANT|FAMILY|SENIOR|STUDENT|MILITARY|OTHER)", "restrictions": "obj(UnitRestrictions)",
		"requiredContactFields": "[]string"},
	"UnitRestrictions": {"minAge": "int", "maxAge": "int", "idRequired": "bool", "minQuantity": "int?", "maxQuantity": "int?",
		"paxCount": "int", "accompaniedBy": "[]string"},
	"Availability": {"id": "string", "localDateTimeStart": "datetime", "localDateTimeEnd": "datetime", "utcCutoffAt": "utc",
		"allDay": "bool", "available": "bool", "status": "enum(AVAILABLE|FREESALE|SOLD_OUT|LIMITED|CLOSED)", "vacancies": "int?",
		"capacity": "int?", "maxUnits": "int?", "openingHours": "[]obj(OpeningHours)"},
	"OpeningHours": {"from": "hhmm", "to": "hhmm"},
	"AvailabilityCalendar": {"localDate": "date", "available": "bool", "status": "enum(AVAILABLE|FREESALE|SOLD_OUT|LIMITED|CLOSED)",
		"vacancies": "int?", "capacity": "int?", "openingHours": "[]obj(OpeningHours)"},
	"Booking": {"id": "string", "uuid": "string", "testMode": "bool", "resellerReference": "string?", "supplierReference": "string?",
		"status": "enum(ON_HOLD|CONFIRMED|EXPIRED|CANCELLED|REDEEMED|PENDING|REJECTED)", "utcCreatedAt": "utc", "utcUpdatedAt": "utc",
		"utcExpiresAt": "utc?", "utcRedeemedAt": "utc?", "utcConfirmedAt": "utc?", "productId": "string", "optionId": "string",
		"cancellable": "bool", "cancellation": "obj?(BookingCancellation)", "freesale": "bool", "availabilityId": "string?",
		"availability": "obj?(Availability)", "contact": "obj(Contact)", "notes": "string?", "deliveryMethods": "[]enum(VOUCHER|TICKET)",
		"voucher": "obj?(Ticket)", "unitItems": "[]obj(UnitItem)"},
	"BookingCancellation": {"refund": "enum(FULL|PARTIAL|NONE)", "reason": "string?", "utcCancelledAt": "utc"},
	"Contact": {"fullName": "string?", "firstName": "string?", "lastName": "string?", "emailAddress": "string?", "phoneNumber": "string?",
		"locales": "[]string", "postalCode": "string?", "country": "string?", "notes": "string?"},
	"UnitItem": {"uuid": "string", "resellerReference": "string?", "supplierReference": "string?", "unitId": "string", "unit": "obj(Unit)",
		"status": "enum(ON_HOLD|CONFIRMED|EXPIRED|CANCELLED|REDEEMED|PENDING|REJECTED)", "utcRedeemedAt": "utc?", "contact": "obj(Contact)",
		"ticket": "obj?(Ticket)"},
	"Ticket":         {"redemptionMethod": "enum(REDEEM|DIGITAL|PRINT|MANIFEST)", "utcRedeemedAt": "utc?", "deliveryOptions": "[]obj(DeliveryOption)"},
	"DeliveryOption": {"deliveryFormat": "enum(PDF_URL|QRCODE|CODE128|PKPASS_URL|AZTECCODE)", "deliveryValue": "string"},
	"Capability":     {"id": "string", "revision": "int", "required": "bool", "dependencies": "[]string", "docs": "string?"},
	// BaseError and the INVALID_* errors' own field (checked apart).
	"Error": {"error": "enum(INVALID_PRODUCT_ID|INVALID_OPTION_ID|INVALID_UNIT_ID|INVALID_AVAILABILITY_ID|INVALID_BOOKING_UUID|BAD_REQUEST|UNPROCESSABLE_ENTITY|INTERNAL_SERVER_ERROR|UNAUTHORIZED|FORBIDDEN)",
		"errorMessage": "string"},
}

// errorFields are the fields the INVALID_* errors add to BaseError.
var errorFields = map[string]string{"INVALID_PRODUCT_ID": "productId", "INVALID_OPTION_ID": "optionId", "INVALID_UNIT_ID": "unitId",
	"INVALID_AVAILABILITY_ID": "availabilityId", "INVALID_BOOKING_UUID": "uuid"}

var (
	rfc3339Offset = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	utcTime       = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)
	dateOnly      = regexp.MustCompile(`^\d{4}-\d\d-\d\d$`)
	hhmm          = regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d$`)
	typeRE        = regexp.MustCompile(`^(\[\])?(obj\??\((\w+)\)|enum\(([^)]*)\)|(\w+)(\?)?)$`)
)

// checkOCTO checks v against schema: a list schema is "[]Name".
func checkOCTO(t *testing.T, at, schema string, v any) {
	t.Helper()
	if name, ok := strings.CutPrefix(schema, "[]"); ok {
		list, ok := v.([]any)
		if !ok {
			t.Errorf("%s: %T, want an array of %s", at, v, name)
			return
		}
		for i, e := range list {
			checkOCTO(t, fmt.Sprintf("%s[%d]", at, i), name, e)
		}
		return
	}
	fields, ok := octoSchemas[schema]
	if !ok {
		t.Fatalf("no schema %s", schema)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: %T, want an object %s", at, v, schema)
		return
	}
	extra := ""
	if schema == "Error" {
		extra = errorFields[fmt.Sprint(m["error"])]
		if extra != "" {
			if _, ok := m[extra].(string); !ok {
				t.Errorf("%s: error %v without its %s", at, m["error"], extra)
			}
		}
	}
	for k := range m {
		if _, ok := fields[k]; !ok && k != extra {
			t.Errorf("%s: %s has field %q the specification does not define (no capability was asked for)", at, schema, k)
		}
	}
	for k, spec := range fields {
		val, present := m[k]
		if !present {
			t.Errorf("%s: %s.%s is required", at, schema, k)
			continue
		}
		checkField(t, at+"."+k, spec, val)
	}
}

func checkField(t *testing.T, at, spec string, v any) {
	t.Helper()
	g := typeRE.FindStringSubmatch(spec)
	if g == nil {
		t.Fatalf("bad spec %q", spec)
	}
	if g[1] == "[]" {
		list, ok := v.([]any)
		if !ok {
			t.Errorf("%s: %v, want an array", at, v)
			return
		}
		for i, e := range list {
			checkField(t, fmt.Sprintf("%s[%d]", at, i), strings.TrimPrefix(spec, "[]"), e)
		}
		return
	}
	switch {
	case g[3] != "":
		if v == nil && strings.HasPrefix(g[2], "obj?") {
			return
		}
		checkOCTO(t, at, g[3], v)
	case g[4] != "":
		s, _ := v.(string)
		if !slices.Contains(strings.Split(g[4], "|"), s) {
			t.Errorf("%s: %v, want one of %s", at, v, g[4])
		}
	default:
		if v == nil {
			if g[6] != "?" {
				t.Errorf("%s: null, want %s", at, g[5])
			}
			return
		}
		s, isStr := v.(string)
		switch g[5] {
		case "string":
			if !isStr {
				t.Errorf("%s: %v, want a string", at, v)
			}
		case "bool":
			if _, ok := v.(bool); !ok {
				t.Errorf("%s: %v, want a boolean", at, v)
			}
		case "int":
			if f, ok := v.(float64); !ok || f != float64(int64(f)) {
				t.Errorf("%s: %v, want an integer", at, v)
			}
		case "datetime":
			if !isStr || !rfc3339Offset.MatchString(s) {
				t.Errorf("%s: %v, want an ISO 8601 date-time with offset", at, v)
			}
		case "utc":
			if !isStr || !utcTime.MatchString(s) {
				t.Errorf("%s: %v, want an ISO 8601 UTC date-time", at, v)
			}
		case "date":
			if !isStr || !dateOnly.MatchString(s) {
				t.Errorf("%s: %v, want YYYY-MM-DD", at, v)
			}
		case "hhmm":
			if !isStr || !hhmm.MatchString(s) {
				t.Errorf("%s: %v, want HH:MM", at, v)
			}
		default:
			t.Fatalf("bad type %q", g[5])
		}
	}
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func arr(v any) []any          { a, _ := v.([]any); return a }

// ---- the walk

func walkOCTO(t *testing.T, k contractKind) {
	p, w := startContract(t, "SWITCHBACK_SYNC_INTERVAL=2s", "SWITCHBACK_SYNC_HORIZON_DAYS=10")
	api := "http://" + p.api
	s := k.setup(t, w)
	c := octoClient{t: t, base: api + "/octo/" + s.sup, token: "demo-reseller:demo-reseller-secret"}

	// Supplier, capabilities, products.
	eventually(t, "the supplier on the OCTO endpoint", func() (map[string]any, bool) {
		status, v := c.call("GET", "/supplier", "")
		return obj(v), status == 200
	})
	sup := obj(c.ok("GET", "/supplier", "", "Supplier"))
	if sup["id"] != s.sup || sup["endpoint"] != c.base {
		t.Errorf("supplier %v: want id %s and endpoint %s", sup, s.sup, c.base)
	}
	c.ok("GET", "/capabilities", "", "[]Capability")
	var prod map[string]any
	for _, e := range arr(c.ok("GET", "/products", "", "[]Product")) {
		if obj(e)["id"] == s.prod {
			prod = obj(e)
		}
	}
	if prod == nil {
		t.Fatalf("GET /products has no %s", s.prod)
	}
	one := obj(c.ok("GET", "/products/"+s.prod, "", "Product"))
	var option map[string]any
	for _, o := range arr(one["options"]) {
		if obj(o)["id"] == s.rate {
			option = obj(o)
		}
	}
	if option == nil {
		t.Fatalf("product %v has no option %s", one, s.rate)
	}
	var unitIDs []string
	for _, u := range arr(option["units"]) {
		unitIDs = append(unitIDs, obj(u)["id"].(string))
	}
	if !slices.Contains(unitIDs, s.priceID) {
		t.Fatalf("option %v has no unit %s", option, s.priceID)
	}
	loc, err := time.LoadLocation(one["timeZone"].(string))
	if err != nil {
		t.Fatalf("timeZone %v: %v", one["timeZone"], err)
	}

	// Calendar and availability: by range, by date, by id.
	from := time.Now().In(loc).AddDate(0, 0, 1).Format("2006-01-02")
	to := time.Now().In(loc).AddDate(0, 0, 5).Format("2006-01-02")
	rangeBody := fmt.Sprintf(`{"productId":%q,"optionId":%q,"localDateStart":%q,"localDateEnd":%q,"units":[{"id":%q,"quantity":2}]}`,
		s.prod, s.rate, from, to, s.priceID)
	var slot map[string]any
	eventually(t, "an available slot for 2", func() (map[string]any, bool) {
		status, v := c.call("POST", "/availability", rangeBody)
		for _, a := range arr(v) {
			if obj(a)["available"] == true {
				slot = obj(a)
			}
		}
		return nil, status == 200 && slot != nil
	})
	all := arr(c.ok("POST", "/availability", rangeBody, "[]Availability"))
	cal := arr(c.ok("POST", "/availability/calendar", rangeBody, "[]AvailabilityCalendar"))
	if len(cal) != 5 {
		t.Errorf("calendar %s..%s: %d days, want 5", from, to, len(cal))
	}
	slotDay := slot["localDateTimeStart"].(string)[:10]
	for _, d := range cal {
		if obj(d)["localDate"] == slotDay && obj(d)["available"] != true {
			t.Errorf("calendar day %v: want available (slot %v)", d, slot)
		}
	}
	byDate := arr(c.ok("POST", "/availability", fmt.Sprintf(`{"productId":%q,"optionId":%q,"localDate":%q}`, s.prod, s.rate, slotDay), "[]Availability"))
	if !hasOCTOID(byDate, slot["id"].(string)) || len(byDate) > len(all) {
		t.Errorf("availability of %s: %v, want %v among them", slotDay, byDate, slot["id"])
	}
	byID := arr(c.ok("POST", "/availability", fmt.Sprintf(`{"productId":%q,"optionId":%q,"availabilityIds":[%q]}`, s.prod, s.rate, slot["id"]), "[]Availability"))
	if len(byID) != 1 || obj(byID[0])["id"] != slot["id"] {
		t.Errorf("availability by id %v: %v", slot["id"], byID)
	}

	// Reservation, retried: the same booking.
	id := uuid.NewString()
	ref := "OCTO-" + k.name
	reserve := fmt.Sprintf(`{"uuid":%q,"productId":%q,"optionId":%q,"availabilityId":%q,"resellerReference":%q,"notes":"window seat",
"unitItems":[{"unitId":%q},{"unitId":%q}],"contact":{"firstName":"Ada","lastName":"Lovelace","emailAddress":"ada@example.com"}}`,
		id, s.prod, s.rate, slot["id"], ref, s.priceID, s.priceID)
	b := obj(c.ok("POST", "/bookings", reserve, "Booking"))
	if b["uuid"] != id || b["status"] != "ON_HOLD" || b["utcExpiresAt"] == nil || b["resellerReference"] != ref || len(arr(b["unitItems"])) != 2 ||
		b["availabilityId"] != slot["id"] || b["cancellable"] != true || b["notes"] != "window seat" || obj(b["contact"])["emailAddress"] != "ada@example.com" {
		t.Fatalf("reservation %v", b)
	}
	again := obj(c.ok("POST", "/bookings", reserve, "Booking"))
	if again["uuid"] != id || again["utcCreatedAt"] != b["utcCreatedAt"] || fmt.Sprint(again["unitItems"]) != fmt.Sprint(b["unitItems"]) {
		t.Errorf("retried reservation %v, want the first %v", again, b)
	}
	c.fails("POST", "/bookings", strings.Replace(reserve, ref, ref+"-other", 1), "INVALID_BOOKING_UUID")
	// The same hold through v1.2.
	if status, got, _ := w.reseller.do("GET", "/v1.2/holds/"+id, ""); status != 200 || obj(got["hold"])["status"] != "ACTIVE" {
		t.Errorf("GET /v1.2/holds/%s: %d %v, want the reservation's ACTIVE hold", id, status, got)
	}

	// Extend: booking systems hold longer; a partner cannot (doc 2 has
	// no such call).
	if k.system {
		ext := obj(c.ok("POST", "/bookings/"+id+"/extend", `{"expirationMinutes":60}`, "Booking"))
		if ext["status"] != "ON_HOLD" || ext["utcExpiresAt"].(string) <= b["utcExpiresAt"].(string) {
			t.Errorf("extended %v, want ON_HOLD later than %v", ext, b["utcExpiresAt"])
		}
	} else {
		c.fails("POST", "/bookings/"+id+"/extend", `{"expirationMinutes":60}`, "UNPROCESSABLE_ENTITY")
	}

	// Update (reservation): notes and contact.
	upd := obj(c.ok("PATCH", "/bookings/"+id, `{"notes":"aisle seat","contact":{"fullName":"Ada King","emailAddress":"ada@king.example"}}`, "Booking"))
	if upd["notes"] != "aisle seat" || obj(upd["contact"])["fullName"] != "Ada King" || upd["resellerReference"] != ref {
		t.Errorf("updated %v", upd)
	}

	// Confirm, retried: the same booking.
	confirm := fmt.Sprintf(`{"resellerReference":%q,"contact":{"firstName":"Ada","lastName":"Lovelace","emailAddress":"ada@example.com","locales":["en"]},
"unitItems":[{"uuid":%q,"unitId":%q,"contact":{"firstName":"Grace","lastName":"Hopper"}},{"uuid":%q,"unitId":%q}]}`,
		ref, obj(arr(b["unitItems"])[0])["uuid"], s.priceID, obj(arr(b["unitItems"])[1])["uuid"], s.priceID)
	cb := obj(c.ok("POST", "/bookings/"+id+"/confirm", confirm, "Booking"))
	want := "CONFIRMED"
	if k.accepted {
		want = "PENDING"
	}
	if cb["status"] != want || cb["utcExpiresAt"] != nil || cb["resellerReference"] != ref {
		t.Fatalf("confirmed %v, want %s", cb, want)
	}
	if again := obj(c.ok("POST", "/bookings/"+id+"/confirm", confirm, "Booking")); again["status"] != cb["status"] || again["uuid"] != id {
		t.Errorf("retried confirm %v, want %v", again, cb)
	}
	cb = obj(eventually(t, "the booking CONFIRMED with tickets", func() (map[string]any, bool) {
		got := obj(c.ok("GET", "/bookings/"+id, "", "Booking"))
		items := arr(got["unitItems"])
		return got, got["status"] == "CONFIRMED" && len(items) == 2 && obj(items[0])["ticket"] != nil
	}))
	if cb["utcConfirmedAt"] == nil || cb["cancellable"] != true || obj(obj(arr(cb["unitItems"])[0])["contact"])["firstName"] != "Grace" {
		t.Errorf("booking %v", cb)
	}
	for _, u := range arr(cb["unitItems"]) {
		if tk := obj(obj(u)["ticket"]); len(arr(tk["deliveryOptions"])) == 0 || obj(u)["status"] != "CONFIRMED" {
			t.Errorf("unit item %v: want CONFIRMED with a ticket's delivery option", u)
		}
	}
	if status, got, _ := w.reseller.do("GET", "/v1.2/bookings/"+id, ""); status != 200 || obj(got["booking"])["holdId"] != id {
		t.Errorf("GET /v1.2/bookings/%s: %d %v, want the booking of hold %s", id, status, got, id)
	}

	// Update (booking), list by both references.
	upd = obj(c.ok("PATCH", "/bookings/"+id, `{"resellerReference":"`+ref+`-2"}`, "Booking"))
	if upd["resellerReference"] != ref+"-2" {
		t.Errorf("updated booking %v", upd)
	}
	list := arr(c.ok("GET", "/bookings?resellerReference="+ref+"-2", "", "[]Booking"))
	if len(list) != 1 || obj(list[0])["uuid"] != id {
		t.Errorf("bookings by resellerReference: %v", list)
	}
	if old := arr(c.ok("GET", "/bookings?resellerReference="+ref, "", "[]Booking")); len(old) != 0 {
		t.Errorf("bookings by the reference replaced: %v, want none", old)
	}
	list = arr(c.ok("GET", "/bookings?supplierReference="+cb["supplierReference"].(string), "", "[]Booking"))
	if len(list) != 1 || obj(list[0])["uuid"] != id {
		t.Errorf("bookings by supplierReference: %v", list)
	}
	c.fails("GET", "/bookings", "", "BAD_REQUEST")

	// Cancel the confirmed booking (again: the same), then a reservation.
	cc := obj(c.ok("POST", "/bookings/"+id+"/cancel", `{"reason":"plans changed"}`, "Booking"))
	if cc["status"] != "CANCELLED" || cc["cancellation"] == nil || obj(cc["cancellation"])["reason"] != "plans changed" || cc["cancellable"] != false {
		t.Errorf("cancelled %v", cc)
	}
	if again := obj(c.ok("POST", "/bookings/"+id+"/cancel", "", "Booking")); again["status"] != "CANCELLED" {
		t.Errorf("cancelled again %v", again)
	}
	c.fails("POST", "/bookings/"+id+"/extend", `{"expirationMinutes":10}`, "UNPROCESSABLE_ENTITY")
	id2 := uuid.NewString()
	r2 := obj(c.ok("POST", "/bookings", fmt.Sprintf(`{"uuid":%q,"productId":%q,"optionId":%q,"availabilityId":%q,"unitItems":[{"unitId":%q}]}`,
		id2, s.prod, s.rate, slot["id"], s.priceID), "Booking"))
	if r2["status"] != "ON_HOLD" {
		t.Fatalf("second reservation %v", r2)
	}
	if got := obj(c.ok("POST", "/bookings/"+id2+"/cancel", "", "Booking")); got["status"] != "CANCELLED" || got["cancellation"] == nil {
		t.Errorf("cancelled reservation %v", got)
	}
	c.fails("POST", "/bookings/"+id2+"/confirm", `{"contact":{"firstName":"Ada"}}`, "UNPROCESSABLE_ENTITY")

	// Every error, with its name.
	checkOCTOErrors(t, c, s, slot["id"].(string), loc)
	p.stop(t)
	// The bearer tokens sent, right and wrong, are in no log line.
	for _, secret := range []string{"demo-reseller-secret", "not-the-secret"} {
		if strings.Contains(p.stderr.String(), secret) {
			t.Errorf("the logs carry the bearer token's secret %q", secret)
		}
	}
}

// TestE2E_OCTO_SupplierFailureIsInternalServerError: the supplier's
// partner failing a hold is OCTO's INTERNAL_SERVER_ERROR, its cause not
// shown, and no reservation is left behind.
func TestE2E_OCTO_SupplierFailureIsInternalServerError(t *testing.T) {
	p, w := startContract(t)
	api := "http://" + p.api
	failHolds := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/holds") {
				http.Error(rw, "partner database exploded", http.StatusInternalServerError)
				return
			}
			h.ServeHTTP(rw, r)
		})
	}
	s := setupPartnerKindWith(t, w, partnersim.TxConfig{}, true, failHolds)
	c := octoClient{t: t, base: api + "/octo/" + s.sup, token: "demo-reseller:demo-reseller-secret"}
	var slot string
	eventually(t, "the pushed slot", func() (map[string]any, bool) {
		day := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
		status, v := c.call("POST", "/availability", fmt.Sprintf(`{"productId":%q,"optionId":%q,"localDateStart":%q,"localDateEnd":%q}`,
			s.prod, s.rate, day, time.Now().UTC().AddDate(0, 0, 3).Format("2006-01-02")))
		if a := arr(v); status == 200 && len(a) > 0 {
			slot, _ = obj(a[0])["id"].(string)
		}
		return nil, slot != ""
	})
	id := uuid.NewString()
	e := c.fails("POST", "/bookings", fmt.Sprintf(`{"uuid":%q,"productId":%q,"optionId":%q,"availabilityId":%q,"unitItems":[{"unitId":%q}]}`,
		id, s.prod, s.rate, slot, s.priceID), "INTERNAL_SERVER_ERROR")
	if strings.Contains(fmt.Sprint(e["errorMessage"]), "exploded") {
		t.Errorf("errorMessage %q shows the partner's answer", e["errorMessage"])
	}
	c.fails("GET", "/bookings/"+id, "", "INVALID_BOOKING_UUID")
	p.stop(t)
}

func hasOCTOID(list []any, id string) bool {
	for _, e := range list {
		if obj(e)["id"] == id {
			return true
		}
	}
	return false
}

func checkOCTOErrors(t *testing.T, c octoClient, s contractSupplier, slot string, loc *time.Location) {
	day := time.Now().In(loc).AddDate(0, 0, 1).Format("2006-01-02")
	avail := func(pid, oid, units string) string {
		return fmt.Sprintf(`{"productId":%q,"optionId":%q,"localDate":%q,"units":%s}`, pid, oid, day, units)
	}
	anon := octoClient{t: t, base: c.base}
	anon.fails("GET", "/products", "", "UNAUTHORIZED")
	wrong := octoClient{t: t, base: c.base, token: "demo-reseller:not-the-secret"}
	wrong.fails("GET", "/products", "", "FORBIDDEN")
	operator := octoClient{t: t, base: c.base, token: "demo-operator:demo-operator-secret"}
	operator.fails("GET", "/products", "", "FORBIDDEN")
	other := octoClient{t: t, base: strings.TrimSuffix(c.base, s.sup) + "not-bound-supplier", token: c.token}
	other.fails("GET", "/supplier", "", "FORBIDDEN")
	if e := c.fails("GET", "/products/no-such-product", "", "INVALID_PRODUCT_ID"); e["productId"] != "no-such-product" {
		t.Errorf("INVALID_PRODUCT_ID %v: want the productId", e)
	}
	c.fails("POST", "/availability", avail("no-such-product", s.rate, "[]"), "INVALID_PRODUCT_ID")
	if e := c.fails("POST", "/availability", avail(s.prod, "no-such-option", "[]"), "INVALID_OPTION_ID"); e["optionId"] != "no-such-option" {
		t.Errorf("INVALID_OPTION_ID %v: want the optionId", e)
	}
	if e := c.fails("POST", "/availability", avail(s.prod, s.rate, `[{"id":"no-such-unit","quantity":1}]`), "INVALID_UNIT_ID"); e["unitId"] != "no-such-unit" {
		t.Errorf("INVALID_UNIT_ID %v: want the unitId", e)
	}
	c.fails("POST", "/availability", fmt.Sprintf(`{"productId":%q,"optionId":%q,"availabilityIds":["no-such-slot"]}`, s.prod, s.rate), "INVALID_AVAILABILITY_ID")
	c.fails("POST", "/availability", fmt.Sprintf(`{"productId":%q,"optionId":%q}`, s.prod, s.rate), "BAD_REQUEST")
	c.fails("POST", "/availability", `{"productId":`, "BAD_REQUEST")
	c.fails("POST", "/availability/calendar", fmt.Sprintf(`{"productId":%q,"optionId":%q,"localDateStart":"tomorrow","localDateEnd":%q}`, s.prod, s.rate, day), "BAD_REQUEST")
	reserve := func(avID, units string) string {
		return fmt.Sprintf(`{"uuid":%q,"productId":%q,"optionId":%q,"availabilityId":%q,"unitItems":%s}`, uuid.NewString(), s.prod, s.rate, avID, units)
	}
	unit := fmt.Sprintf(`[{"unitId":%q}]`, s.priceID)
	if e := c.fails("POST", "/bookings", reserve("no-such-slot", unit), "INVALID_AVAILABILITY_ID"); e["availabilityId"] != "no-such-slot" {
		t.Errorf("INVALID_AVAILABILITY_ID %v: want the availabilityId", e)
	}
	c.fails("POST", "/bookings", reserve(slot, `[]`), "UNPROCESSABLE_ENTITY")
	c.fails("POST", "/bookings", reserve(slot, `[{"unitId":"no-such-unit"}]`), "INVALID_UNIT_ID")
	many := make([]string, 2000)
	for i := range many {
		many[i] = fmt.Sprintf(`{"unitId":%q}`, s.priceID)
	}
	c.fails("POST", "/bookings", reserve(slot, "["+strings.Join(many, ",")+"]"), "UNPROCESSABLE_ENTITY") // more than the slot has
	missing := uuid.NewString()
	if e := c.fails("GET", "/bookings/"+missing, "", "INVALID_BOOKING_UUID"); e["uuid"] != missing {
		t.Errorf("INVALID_BOOKING_UUID %v: want the uuid", e)
	}
	c.fails("POST", "/bookings/"+missing+"/confirm", `{"contact":{}}`, "INVALID_BOOKING_UUID")
	c.fails("POST", "/bookings/"+missing+"/cancel", ``, "INVALID_BOOKING_UUID")
	c.fails("GET", "/no-such-route", "", "BAD_REQUEST")
}

package contract

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	checkerOnce sync.Once
	checker     *Checker
	checkerErr  error
)

func loadChecker(t *testing.T) *Checker {
	t.Helper()
	checkerOnce.Do(func() { checker, checkerErr = New() })
	if checkerErr != nil {
		t.Fatal(checkerErr)
	}
	return checker
}

const meta = `"meta":{"reqId":"r-1"}`

// exchange builds an exchange: a reseller's request (credentials set) and
// the answer.
func exchange(method, path, reqBody string, status int, respBody string, header ...string) Exchange {
	r := httptest.NewRequest(method, "http://127.0.0.1:8080"+path, strings.NewReader(reqBody))
	r.Header.Set("X-API-Key", "k")
	r.Header.Set("X-API-Secret", "s")
	h := http.Header{"X-Request-Id": {"r-1"}}
	if respBody != "" {
		h.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return Exchange{Request: r, RequestBody: []byte(reqBody), Status: status, Header: h, ResponseBody: []byte(respBody)}
}

const supplier = `{"code":"ALPINE","id":"demo-alpine","name":"Alpine Adventures","version":3}`

func TestCheck_ConformingExchangesPass(t *testing.T) {
	c := loadChecker(t)
	noCreds := exchange("GET", "/v1.2/suppliers", "", 401, `{"code":"UNAUTHORIZED","message":"missing or invalid credentials",`+meta+`}`)
	noCreds.Request.Header.Del("X-API-Key")
	noCreds.Request.Header.Del("X-API-Secret")
	tests := []struct {
		name string
		x    Exchange
	}{
		{"supplier list", exchange("GET", "/v1.2/suppliers", "", 200, `{`+meta+`,"suppliers":[`+supplier+`]}`)},
		{"without credentials, 401", noCreds},
		{"unknown path, the router's 404", exchange("GET", "/v1.2/nothing", "", 404, `{"code":"NOT_FOUND","message":"no route matches this path",`+meta+`}`)},
		{"wrong method, 405 with the documented methods", exchange("PATCH", "/v1.2/suppliers", "", 405,
			`{"code":"METHOD_NOT_ALLOWED","message":"m","data":{"allow":"GET"},`+meta+`}`, "Allow", "GET")},
		{"invalid request answered 400", exchange("POST", "/v1.2/holds", `{"hold":{"items":[{"x":1}]}}`, 400,
			`{"code":"INVALID_FIELD","message":"unknown field \"x\"","data":{"field":"x"},`+meta+`}`)},
		{"release, 204 without body", exchange("DELETE", "/v1.3/holds/h-1", "", 204, "")},
		{"rule list, a bare array", exchange("GET", "/registry/v1.1/supplier", "", 200, `[]`)},
		{"an operator's availabilities with the booking system's ids", exchange("GET", "/channel/v1.2/suppliers/s/products/p/rates/r/availabilities", "", 200,
			`{`+meta+`,"supplierId":"s","productId":"p","rateId":"r","version":2,"availabilities":[`+
				`{"id":"a1","start":"2026-11-26T09:00:00Z","end":"2026-11-26T12:00:00Z","capacity":4,"maxCapacity":20,"systemId":"2026-11-26T09:00:00+01:00"}]}`)},
		{"a console file, its path with slashes", exchange("GET", "/console/assets/js/api.js", "", 200, "export {}",
			"Content-Type", "text/javascript; charset=utf-8", "ETag", `"abc"`, "Cache-Control", "no-cache", "Content-Security-Policy", "default-src 'self'")},
		{"public index without credentials", exchange("GET", "/", "", 200,
			`{`+meta+`,"name":"Switchback","docs":"/docs","documents":[]}`)},
		{"OCTO capabilities", exchange("GET", "/octo/s/capabilities", "", 200, `[]`, "Octo-Capabilities", "")},
		{"OCTO error with its id", exchange("GET", "/octo/s/products/p", "", 400,
			`{"error":"INVALID_PRODUCT_ID","errorMessage":"The productId was missing or invalid","productId":"p"}`)},
		{"OCTO unknown path, OCTO's BAD_REQUEST", exchange("GET", "/octo/s/nothing", "", 400,
			`{"error":"BAD_REQUEST","errorMessage":"No OCTO endpoint matches this path"}`)},
		{"OCTO wrong method, OCTO's BAD_REQUEST", exchange("DELETE", "/octo/s/bookings/b", "", 400,
			`{"error":"BAD_REQUEST","errorMessage":"method not allowed"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if vs := c.Check(tt.x); len(vs) > 0 {
				t.Fatalf("violations: %v", vs)
			}
		})
	}
}

func TestCheck_ReportsWhatLeavesTheContract(t *testing.T) {
	c := loadChecker(t)
	tests := []struct {
		name string
		x    Exchange
		want string
	}{
		{"undocumented field where the contract is closed",
			exchange("GET", "/v1.2/suppliers", "", 200, `{`+meta+`,"suppliers":[{"code":"A","id":"a","name":"A","version":1,"bogus":1}]}`),
			"bogus"},
		{"missing required field",
			exchange("GET", "/v1.2/suppliers/a", "", 200, `{`+meta+`,"supplier":{"id":"a","name":"A","version":1}}`),
			"code"},
		{"missing meta.reqId",
			exchange("GET", "/v1.2/suppliers", "", 200, `{"suppliers":[]}`),
			"meta"},
		{"wrong status",
			exchange("GET", "/v1.2/suppliers", "", 418, `{"code":"BAD_REQUEST","message":"m",`+meta+`}`),
			"status 418 is not documented"},
		{"wrong error code for the status",
			exchange("GET", "/v1.2/suppliers/a", "", 404, `{"code":"CONFLICT","message":"m",`+meta+`}`),
			"response"},
		{"duplicate JSON key",
			exchange("GET", "/v1.2/suppliers", "", 200, `{`+meta+`,`+meta+`,"suppliers":[]}`),
			`duplicate JSON key "meta"`},
		{"undocumented route",
			exchange("GET", "/v9/things", "", 200, `{`+meta+`}`),
			"undocumented route"},
		{"405 listing other methods than the documents",
			exchange("DELETE", "/v1.2/suppliers", "", 405, `{"code":"METHOD_NOT_ALLOWED","message":"m",`+meta+`}`, "Allow", "GET, POST"),
			"405 Allow"},
		{"body on a response documented without one",
			exchange("DELETE", "/v1.2/holds/h-1", "", 204, `{`+meta+`}`),
			"a body on a 204 documented without one"},
		{"request outside the contract accepted",
			exchange("POST", "/v1.2/holds", `{"hold":{"items":[{"supplierId":"s","productId":"p","rateId":"r","quantity":1,"color":"red"}]}}`, 201,
				`{`+meta+`,"hold":{"expires":"2026-11-25T16:51:37Z","id":"h","items":[{"supplierId":"s","productId":"p","rateId":"r","quantity":1,"rate":{"id":"r"}}],"retrieved":"2026-11-25T16:36:37Z","status":"ACTIVE","timeline":[]}}`),
			"a request outside the contract was accepted with 201"},
		{"wrong format",
			exchange("GET", "/operator/v2/notifications/n", "", 200, `{`+meta+`,"notification":{"id":"not-a-uuid","createRequest":{"supplierId":"s","productId":"p"},"inserted":"2026-11-25T16:36:40Z","beganWorking":null,"finishedWorking":null,"mode":"standard","status":"WAITING","startDate":"2026-11-25","endDate":"2026-12-02"}}`),
			"uuid"},
		{"OCTO unknown path answered with the router's 404",
			exchange("GET", "/octo/s/nothing", "", 404, `{"code":"NOT_FOUND","message":"no route matches this path",`+meta+`}`),
			"undocumented route: answered 404, want 400"},
		{"OCTO unknown path answered with another body",
			exchange("GET", "/octo/s/nothing", "", 400, `{"error":"NOT_FOUND","errorMessage":"m"}`),
			"the body is not Error"},
		{"OCTO INVALID_* error without its id",
			exchange("POST", "/octo/s/availability", `{"productId":"p","optionId":"o","localDate":"2026-11-26"}`, 400,
				`{"error":"INVALID_OPTION_ID","errorMessage":"m"}`),
			"response"},
		{"OCTO error status other than 400",
			exchange("GET", "/octo/s/supplier", "", 401, `{"error":"UNAUTHORIZED","errorMessage":"m"}`),
			"status 401 is not documented"},
		{"a cancelled booking still cancelable",
			exchange("GET", "/v1.2/bookings/b", "", 200, `{`+meta+`,"booking":{"channelId":"c","holdId":"h","id":"b","items":[{"id":"i","supplierId":"s","productId":"p","rateId":"r","quantity":1,"rate":{"id":"r"}}],"cancelable":true,"status":"CANCELLED","timeline":[]}}`),
			"cancelable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := c.Check(tt.x)
			if !slices.ContainsFunc(vs, func(v Violation) bool { return strings.Contains(v.Message, tt.want) }) {
				t.Fatalf("no violation mentioning %q; got %v", tt.want, vs)
			}
			for _, v := range vs {
				if v.Known != nil {
					t.Errorf("%v taken for the known deviation %s", v, v.Known)
				}
			}
		})
	}
}

func TestCheck_MarksKnownDeviations(t *testing.T) {
	dev := &Deviation{Issue: "issue 0, item 1: two meta keys", Method: "GET",
		Routes:   both("/suppliers/{supplier_id}/products/{product_id}/rates/{rate_id}/priceschedule"),
		Messages: []string{`duplicate JSON key "meta"`}}
	other := &Deviation{Issue: "issue 0, item 2: never seen", Method: "GET", Routes: both("/suppliers"),
		Messages: []string{"status 418 is not documented"}}
	c := loadChecker(t).withDeviations([]*Deviation{dev, other})

	x := exchange("GET", "/v1.3/suppliers/s/products/p/rates/r/priceschedule", "", 200,
		`{`+meta+`,`+meta+`,"priceSchedule":{"supplierId":"s","productId":"p","rateId":"r","version":0,"entries":[]}}`)
	vs := c.Check(x)
	if len(vs) != 1 || vs[0].Known != dev {
		t.Fatalf("violations %v, want the one known deviation", vs)
	}
	if got := c.Counts().Known; got != 1 {
		t.Errorf("known count %d, want 1", got)
	}
	// The same duplicate key on another route is not that deviation.
	vs = c.Check(exchange("GET", "/v1.2/suppliers", "", 200, `{`+meta+`,`+meta+`,"suppliers":[]}`))
	if len(vs) != 1 || vs[0].Known != nil {
		t.Fatalf("violations %v, want one that is not known", vs)
	}
	if got := c.Unseen(); len(got) != 1 || got[0] != other {
		t.Errorf("unseen %v, want only the deviation no exchange matched", got)
	}
	if !strings.Contains(c.Summary(), "known deviation seen 1 times: "+dev.Issue) {
		t.Errorf("summary does not count the deviation seen:\n%s", c.Summary())
	}
}

func webhookRequest(typ, body string) *http.Request {
	r := httptest.NewRequest("POST", "http://127.0.0.1:9999/"+typ, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "switchback-webhook")
	r.Header.Set("X-Switchback-Delivery-Id", "8b5b8a70-1f0e-4f4a-9c69-2f7d1f7f8f11")
	r.Header.Set("X-Switchback-Notification-Type", typ)
	return r
}

const signature = `"signature":{"sum":"5f0a1c5e0a3e8b1f2d9c4b7a6e5d4c3b2a19f8e7d6c5b4a39281706f5e4d3c2b","timestamp":1795624564,"token":"6b1e0f3c9a2d4e5f8a7b6c5d4e3f2a1b"}`

func TestWebhook_ChecksPayloadSignatureAndHeaders(t *testing.T) {
	c := loadChecker(t)
	tests := []struct {
		name, typ, body string
		header          map[string]string
		want            string // "" when valid
	}{
		{"supplier", "supplier", `{"supplierID":"s","operation":"updated",` + signature + `}`, nil, ""},
		{"availability", "availability", `{"supplierID":"s","productID":"p","rateID":"r","start":"2026-11-26T09:00:00Z","end":"2026-11-27T19:00:00Z",` + signature + `}`, nil, ""},
		{"booking without a start time", "booking", `{"bookingID":"b","startTime":"","operation":"canceled",` + signature + `}`, nil, ""},
		{"no signature", "supplier", `{"supplierID":"s","operation":"updated"}`, nil, "signature"},
		{"field of another type", "supplier", `{"supplierID":"s","productID":"p","operation":"updated",` + signature + `}`, nil, "productID"},
		{"operation outside the type's", "channelbinding", `{"supplierID":"s","productID":"p","operation":"deleted",` + signature + `}`, nil, "operation"},
		{"sum not hex", "rate", `{"supplierID":"s","productID":"p","rateID":"r","operation":"updated","signature":{"sum":"xyz","timestamp":1,"token":"t"}}`, nil, "sum"},
		{"undocumented type", "coupon", `{"x":1}`, nil, "not a documented webhook"},
		{"no delivery id", "supplier", `{"supplierID":"s","operation":"updated",` + signature + `}`,
			map[string]string{"X-Switchback-Delivery-Id": ""}, "X-Switchback-Delivery-Id"},
		{"another user agent", "supplier", `{"supplierID":"s","operation":"updated",` + signature + `}`,
			map[string]string{"User-Agent": "switchback-something"}, "User-Agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := webhookRequest(tt.typ, tt.body)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			vs := c.Webhook(r, []byte(tt.body))
			if tt.want == "" {
				if len(vs) > 0 {
					t.Fatalf("violations: %v", vs)
				}
				return
			}
			if !slices.ContainsFunc(vs, func(v Violation) bool { return strings.Contains(v.Message, tt.want) }) {
				t.Fatalf("no violation mentioning %q; got %v", tt.want, vs)
			}
		})
	}
}

func TestDocuments_AreValidOpenAPI31(t *testing.T) {
	c := loadChecker(t)
	if errs := c.ValidateDocuments(); len(errs) > 0 {
		t.Fatalf("%d problems:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}

func TestDuplicateKeys(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"a":1,"a":2}`, []string{"a"}},
		{`{"a":{"b":1,"b":2},"c":[{"d":1},{"d":2}]}`, []string{"b"}},
		{`{"a":{"x":1},"b":{"x":1}}`, nil},
		{`{"a":[1,2],"a":{"k":"a"}}`, []string{"a"}},
		{`[{"k":1,"k":1}]`, []string{"k"}},
		{`{"s":"a","t":"s"}`, nil},
		{`not json`, nil},
		{``, nil},
	}
	for _, tt := range tests {
		if got := duplicateKeys([]byte(tt.body)); !slices.Equal(got, tt.want) {
			t.Errorf("duplicateKeys(%s) = %v, want %v", tt.body, got, tt.want)
		}
	}
}

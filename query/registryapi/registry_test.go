package registryapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// typeCase is one rule type with its paths (spec doc 1, Registry
// endpoints), a valid non-default config and a valid test body.
type typeCase struct {
	typ, crud, test string
	config          string
	wantConfig      string // the config as answered
	testBody        string
	wantPayload     string // the payload the subscriber gets, without signature
}

var typeCases = []typeCase{
	{schemas.TypeChannelBinding, "/channelbindings", "/channelbinding/test/",
		`{"operations":["created","removed"],"supplierIDs":["S1"]}`,
		`{"operations":["created","removed"],"supplierIDs":["S1"],"productIDs":[]}`,
		`{"supplierID":"S1","productID":"P1","operation":"created"}`,
		`{"supplierID":"S1","productID":"P1","operation":"created"}`},
	{schemas.TypeSupplier, "/supplier", "/supplier/test/",
		`{"supplierIDs":["S1","S2"]}`,
		`{"operations":["updated"],"supplierIDs":["S1","S2"]}`,
		`{"supplierID":"S1","operation":"updated"}`,
		`{"supplierID":"S1","operation":"updated"}`},
	{schemas.TypeProduct, "/product", "/product/test/",
		`{"operations":["updated"],"productIDs":["P1"]}`,
		`{"operations":["updated"],"supplierIDs":[],"productIDs":["P1"]}`,
		`{"supplierID":"S1","productID":"P1","operation":"updated"}`,
		`{"supplierID":"S1","productID":"P1","operation":"updated"}`},
	{schemas.TypeRate, "/rate", "/rate/test/",
		`{"rateIDs":["R1"]}`,
		`{"operations":["updated"],"supplierIDs":[],"productIDs":[],"rateIDs":["R1"]}`,
		`{"supplierID":"S1","productID":"P1","rateID":"R1","operation":"updated"}`,
		`{"supplierID":"S1","productID":"P1","rateID":"R1","operation":"updated"}`},
	{schemas.TypeAvailability, "/availability", "/availability/test/",
		`{"maxLookAheadDays":14,"vacanciesUnder":3,"productIDs":["P1"]}`,
		`{"maxLookAheadDays":14,"vacanciesUnder":3,"supplierIDs":[],"productIDs":["P1"],"rateIDs":[]}`,
		`{"supplierID":"S1","productID":"P1","rateID":"R1","start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z"}`,
		`{"supplierID":"S1","productID":"P1","rateID":"R1","start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z"}`},
	{schemas.TypePriceSchedule, "/priceschedule", "/priceschedule/test/",
		`{"maxLookAheadDays":30}`,
		`{"maxLookAheadDays":30,"supplierIDs":[],"productIDs":[],"rateIDs":[]}`,
		`{"supplierID":"S1","productID":"P1","start":"2030-01-01T00:00:00Z","end":"2030-01-08T00:00:00Z"}`,
		`{"supplierID":"S1","productID":"P1","start":"2030-01-01T00:00:00Z","end":"2030-01-08T00:00:00Z"}`},
	{schemas.TypeBooking, "/booking", "/booking/test/",
		`{"operations":["canceled"]}`,
		`{"operations":["canceled"],"supplierIDs":[],"productIDs":[],"rateIDs":[]}`,
		`{"bookingID":"B1","startTime":"2030-01-01T09:00:00Z","resellerBookingReference":"REF-1","operation":"canceled"}`,
		`{"bookingID":"B1","startTime":"2030-01-01T09:00:00Z","resellerBookingReference":"REF-1","operation":"canceled"}`},
}

func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	var g any
	_ = json.Unmarshal(b, &g)
	return reflect.DeepEqual(g, w)
}

func ruleBodyJSON(id, url string, disabled bool, config string) string {
	m := map[string]any{"url": url, "disabled": disabled}
	if id != "" {
		m["id"] = id
	}
	if config != "" {
		m["config"] = json.RawMessage(config)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// verifySignature checks the signature object as spec doc 1
// ("Authentication", 1) describes it, written from the spec text.
func verifySignature(t *testing.T, body []byte, key string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("webhook body: %v", err)
	}
	sig, ok := m["signature"].(map[string]any)
	if !ok {
		t.Fatalf("no signature in %s", body)
	}
	ts := strconv.FormatInt(int64(sig["timestamp"].(float64)), 10)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ts + sig["token"].(string)))
	if hex.EncodeToString(mac.Sum(nil)) != sig["sum"] {
		t.Fatalf("signature does not verify: %s", body)
	}
	delete(m, "signature")
	return m
}

func TestRegistry_EveryEndpointOfEveryType(t *testing.T) {
	e := start(t, envOptions{})
	for _, tc := range typeCases {
		t.Run(tc.typ, func(t *testing.T) {
			hook := e.sink.srv.URL + "/hooks/" + tc.typ

			// GET with no rule: 200 [].
			status, b := e.Do(t, http.MethodGet, tc.crud, e.a, "")
			if status != http.StatusOK || strings.TrimSpace(string(b)) != "[]" {
				t.Fatalf("GET without a rule: %d %s, want 200 []", status, b)
			}

			// POST: 201 with the generated fields and the config.
			status, b = e.Do(t, http.MethodPost, tc.crud, e.a, ruleBodyJSON("", hook, false, tc.config))
			if status != http.StatusCreated {
				t.Fatalf("POST: %d %s", status, b)
			}
			created := decodeRule(t, b)
			if created.ID == "" || len(created.SecurityKey) != 64 || created.URL != hook || created.Disabled {
				t.Fatalf("POST answered %s", b)
			}
			for _, ts := range []string{created.CreatedOn, created.UpdatedOn} {
				if _, err := time.Parse(time.RFC3339, ts); err != nil {
					t.Fatalf("timestamp %q is not RFC 3339", ts)
				}
			}
			if !jsonEqual(t, created.Config, tc.wantConfig) {
				t.Fatalf("config %v, want %s", created.Config, tc.wantConfig)
			}

			// A second rule of the type: 409.
			status, b = e.Do(t, http.MethodPost, tc.crud, e.a, ruleBodyJSON("", hook, false, ""))
			expectErr(t, status, b, http.StatusConflict, "CONFLICT", "")

			// GET: 200 [rule].
			status, b = e.Do(t, http.MethodGet, tc.crud, e.a, "")
			if list := decodeRules(t, b); status != http.StatusOK || len(list) != 1 || !reflect.DeepEqual(list[0], created) {
				t.Fatalf("GET: %d %s, want [created]", status, b)
			}

			// PUT: 200, key and createdOn kept; a securityKey sent is ignored.
			body := `{"id":"` + created.ID + `","url":"` + hook + `/v2","disabled":true,"securityKey":"mine","config":{}}`
			status, b = e.Do(t, http.MethodPut, tc.crud, e.a, body)
			if status != http.StatusOK {
				t.Fatalf("PUT: %d %s", status, b)
			}
			updated := decodeRule(t, b)
			if updated.ID != created.ID || updated.SecurityKey != created.SecurityKey || updated.CreatedOn != created.CreatedOn ||
				updated.URL != hook+"/v2" || !updated.Disabled {
				t.Fatalf("PUT answered %s (created %+v)", b, created)
			}

			// PUT back what GET answered: accepted as is.
			_, b = e.Do(t, http.MethodGet, tc.crud, e.a, "")
			roundTrip, _ := json.Marshal(decodeRules(t, b)[0])
			if status, b := e.Do(t, http.MethodPut, tc.crud, e.a, string(roundTrip)); status != http.StatusOK {
				t.Fatalf("PUT of a rule as read: %d %s", status, b)
			}

			// PUT without id: 400 naming id; with an unknown id: 404.
			status, b = e.Do(t, http.MethodPut, tc.crud, e.a, ruleBodyJSON("", hook, false, ""))
			expectErr(t, status, b, http.StatusBadRequest, "INVALID_FIELD", "id")
			status, b = e.Do(t, http.MethodPut, tc.crud, e.a, ruleBodyJSON("no-such-rule", hook, false, ""))
			expectErr(t, status, b, http.StatusNotFound, "NOT_FOUND", "")

			// Test (the rule is disabled now: a test still sends): 200, no body,
			// and the subscriber got one signed notification.
			before := len(e.sink.received())
			status, b = e.Do(t, http.MethodPost, tc.test+created.ID, e.a, tc.testBody)
			if status != http.StatusOK || len(b) != 0 {
				t.Fatalf("test: %d %s, want 200 and no body", status, b)
			}
			got := e.sink.received()
			if len(got) != before+1 {
				t.Fatalf("sink got %d notifications, want 1", len(got)-before)
			}
			last := got[len(got)-1]
			if last.Path != "/hooks/"+tc.typ+"/v2" || last.DeliveryID == "" {
				t.Fatalf("sink got %+v", last)
			}
			if payload := verifySignature(t, last.Body, created.SecurityKey); !jsonEqual(t, payload, tc.wantPayload) {
				t.Fatalf("payload %v, want %s", payload, tc.wantPayload)
			}
			// Doc 1 lists 400 and 500 for the test endpoints.
			status, b = e.Do(t, http.MethodPost, tc.test+"no-such-rule", e.a, tc.testBody)
			expectErr(t, status, b, http.StatusBadRequest, "INVALID_FIELD", "id")

			// DELETE: unknown id 404; the rule's id 200 without body; then gone.
			status, b = e.Do(t, http.MethodDelete, tc.crud+"/no-such-rule", e.a, "")
			expectErr(t, status, b, http.StatusNotFound, "NOT_FOUND", "")
			status, b = e.Do(t, http.MethodDelete, tc.crud+"/"+created.ID, e.a, "")
			if status != http.StatusOK || len(b) != 0 {
				t.Fatalf("DELETE: %d %s, want 200 and no body", status, b)
			}
			if status, b = e.Do(t, http.MethodGet, tc.crud, e.a, ""); status != http.StatusOK || strings.TrimSpace(string(b)) != "[]" {
				t.Fatalf("GET after DELETE: %d %s", status, b)
			}
			status, b = e.Do(t, http.MethodDelete, tc.crud+"/"+created.ID, e.a, "")
			expectErr(t, status, b, http.StatusNotFound, "NOT_FOUND", "")
			status, b = e.Do(t, http.MethodPut, tc.crud, e.a, ruleBodyJSON(created.ID, hook, false, ""))
			expectErr(t, status, b, http.StatusNotFound, "NOT_FOUND", "")
			status, b = e.Do(t, http.MethodPost, tc.test+created.ID, e.a, tc.testBody)
			expectErr(t, status, b, http.StatusBadRequest, "INVALID_FIELD", "id")

			// The type can be registered again, with a client-chosen id.
			status, b = e.Do(t, http.MethodPost, tc.crud, e.a, ruleBodyJSON("my-"+tc.typ, hook, false, ""))
			if status != http.StatusCreated || decodeRule(t, b).ID != "my-"+tc.typ {
				t.Fatalf("POST with an id: %d %s", status, b)
			}
		})
	}
}

func TestRegistry_PathsAreExactlyTheSpecs(t *testing.T) {
	e := start(t, envOptions{})
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/channelbinding", http.StatusNotFound},          // CRUD is plural
		{http.MethodPost, "/channelbindings/test/x", http.StatusNotFound}, // test is singular
		{http.MethodGet, "/suppliers", http.StatusNotFound},               // the others are singular
		{http.MethodGet, "/rates", http.StatusNotFound},
		{http.MethodGet, "/supplier/test/x", http.StatusMethodNotAllowed}, // test is POST only
		{http.MethodPatch, "/booking", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/metadata", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if status, b := e.Do(t, tt.method, tt.path, e.a, ""); status != tt.status {
				t.Fatalf("%d %s, want %d", status, b, tt.status)
			}
		})
	}
}

func TestRegistry_OnlyAuthenticatedResellers(t *testing.T) {
	e := start(t, envOptions{})
	for _, path := range []string{"/supplier", "/channelbindings", "/metadata"} {
		status, b := e.Do(t, http.MethodGet, path, catalogtest.Cred{}, "")
		expectErr(t, status, b, http.StatusUnauthorized, "UNAUTHORIZED", "")
		status, b = e.Do(t, http.MethodGet, path, catalogtest.Cred{Key: e.a.Key, Secret: "wrong-secret-000000"}, "")
		expectErr(t, status, b, http.StatusUnauthorized, "UNAUTHORIZED", "")
		status, b = e.Do(t, http.MethodGet, path, e.op, "")
		expectErr(t, status, b, http.StatusForbidden, "FORBIDDEN", "")
	}
}

func TestRegistry_SubscribersAreIsolated(t *testing.T) {
	e := start(t, envOptions{})
	hook := e.sink.srv.URL + "/a"
	status, b := e.Do(t, http.MethodPost, "/supplier", e.a, ruleBodyJSON("", hook, false, ""))
	if status != http.StatusCreated {
		t.Fatalf("%d %s", status, b)
	}
	ruleA := decodeRule(t, b)
	if status, b := e.Do(t, http.MethodPut, "/metadata", e.a, `{"throttleDelay":"5s","disableAll":true}`); status != http.StatusOK {
		t.Fatalf("%d %s", status, b)
	}

	// B sees nothing of A's...
	if status, b := e.Do(t, http.MethodGet, "/supplier", e.b, ""); status != http.StatusOK || strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("B's GET: %d %s", status, b)
	}
	status, b = e.Do(t, http.MethodGet, "/metadata", e.b, "")
	var md map[string]any
	_ = json.Unmarshal(b, &md)
	if status != http.StatusOK || md["throttleDelay"] != "0s" || md["disableAll"] != false {
		t.Fatalf("B's metadata: %d %s", status, b)
	}
	// ...cannot change or delete A's rule by its id (404), nor test it
	// (400: the test endpoints' status list, the same as an unknown id)...
	status, b = e.Do(t, http.MethodPut, "/supplier", e.b, ruleBodyJSON(ruleA.ID, hook, true, ""))
	expectErr(t, status, b, http.StatusNotFound, "NOT_FOUND", "")
	status, b = e.Do(t, http.MethodDelete, "/supplier/"+ruleA.ID, e.b, "")
	expectErr(t, status, b, http.StatusNotFound, "NOT_FOUND", "")
	status, b = e.Do(t, http.MethodPost, "/supplier/test/"+ruleA.ID, e.b, `{"supplierID":"S1","operation":"updated"}`)
	expectErr(t, status, b, http.StatusBadRequest, "INVALID_FIELD", "id")
	if n := len(e.sink.received()); n != 0 {
		t.Fatalf("B's test reached A's endpoint %d times", n)
	}
	// ...and has a supplier slot of its own (no 409 from A's rule).
	if status, b := e.Do(t, http.MethodPost, "/supplier", e.b, ruleBodyJSON("", e.sink.srv.URL+"/b", false, "")); status != http.StatusCreated {
		t.Fatalf("B's own rule: %d %s", status, b)
	}
	// A's rule and metadata are unchanged.
	_, b = e.Do(t, http.MethodGet, "/supplier", e.a, "")
	if list := decodeRules(t, b); len(list) != 1 || !reflect.DeepEqual(list[0], ruleA) {
		t.Fatalf("A's rules changed: %s", b)
	}
	_, b = e.Do(t, http.MethodGet, "/metadata", e.a, "")
	_ = json.Unmarshal(b, &md)
	if md["throttleDelay"] != "5s" || md["disableAll"] != true {
		t.Fatalf("A's metadata changed: %s", b)
	}
	// Storage is per subscriber too.
	for _, sub := range []string{e.a.ID, e.b.ID} {
		rules, err := e.reg.Rules(t.Context(), sub)
		if err != nil || len(rules) != 1 {
			t.Fatalf("%s has %d rules (%v)", sub, len(rules), err)
		}
	}
}

func TestCreateRule_ConcurrentCreatesOfOneTypeGiveExactlyOne201(t *testing.T) {
	e := start(t, envOptions{})
	const n = 12
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], _ = e.Do(t, http.MethodPost, "/booking", e.a, ruleBodyJSON("", e.sink.srv.URL+"/b", false, ""))
		})
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[http.StatusCreated] != 1 || counts[http.StatusConflict] != n-1 {
		t.Fatalf("statuses %v, want one 201 and %d 409", counts, n-1)
	}
	if len(e.pub.Messages()) != 1 {
		t.Fatalf("%d events published, want 1", len(e.pub.Messages()))
	}
}

func TestCreateRule_RejectsInvalidBodiesWith400NamingTheField(t *testing.T) {
	e := start(t, envOptions{})
	ok := e.sink.srv.URL + "/x"
	tests := []struct {
		name, path, body string
		code, field      string
	}{
		{"empty body", "/supplier", ``, "MALFORMED_JSON", ""},
		{"not JSON", "/supplier", `url=x`, "MALFORMED_JSON", ""},
		{"truncated", "/supplier", `{"url":"` + ok, "MALFORMED_JSON", ""},
		{"an array", "/supplier", `[]`, "MALFORMED_JSON", ""},
		{"trailing data", "/supplier", `{"url":"` + ok + `"} {}`, "MALFORMED_JSON", ""},
		{"unknown field", "/supplier", `{"url":"` + ok + `","type":"supplier"}`, "INVALID_FIELD", "type"},
		{"url missing", "/supplier", `{}`, "INVALID_FIELD", "url"},
		{"url of wrong type", "/supplier", `{"url":1}`, "INVALID_FIELD", "url"},
		{"url not absolute", "/supplier", `{"url":"hooks/x"}`, "INVALID_FIELD", "url"},
		{"id of wrong type", "/supplier", `{"id":5,"url":"` + ok + `"}`, "INVALID_FIELD", "id"},
		{"id not path-safe", "/supplier", `{"id":"a b","url":"` + ok + `"}`, "INVALID_FIELD", "id"},
		{"disabled not a boolean", "/supplier", `{"url":"` + ok + `","disabled":"yes"}`, "INVALID_FIELD", "disabled"},
		{"config not an object", "/supplier", `{"url":"` + ok + `","config":[]}`, "INVALID_FIELD", "config"},
		{"channelbinding bad operation", "/channelbindings", `{"url":"` + ok + `","config":{"operations":["canceled"]}}`, "INVALID_FIELD", "config.operations"},
		{"channelbinding rateIDs", "/channelbindings", `{"url":"` + ok + `","config":{"rateIDs":["R"]}}`, "INVALID_FIELD", "config.rateIDs"},
		{"supplier operations other than updated", "/supplier", `{"url":"` + ok + `","config":{"operations":["updated","created"]}}`, "INVALID_FIELD", "config.operations"},
		{"supplier productIDs", "/supplier", `{"url":"` + ok + `","config":{"productIDs":["P"]}}`, "INVALID_FIELD", "config.productIDs"},
		{"product operations other than updated", "/product", `{"url":"` + ok + `","config":{"operations":["created"]}}`, "INVALID_FIELD", "config.operations"},
		{"product ids not strings", "/product", `{"url":"` + ok + `","config":{"productIDs":[1]}}`, "INVALID_FIELD", "config.productIDs"},
		{"rate unknown field", "/rate", `{"url":"` + ok + `","config":{"maxLookAheadDays":7}}`, "INVALID_FIELD", "config.maxLookAheadDays"},
		{"rate empty id", "/rate", `{"url":"` + ok + `","config":{"rateIDs":[""]}}`, "INVALID_FIELD", "config.rateIDs"},
		{"availability maxLookAheadDays 0", "/availability", `{"url":"` + ok + `","config":{"maxLookAheadDays":0}}`, "INVALID_FIELD", "config.maxLookAheadDays"},
		{"availability vacanciesUnder negative", "/availability", `{"url":"` + ok + `","config":{"vacanciesUnder":-1}}`, "INVALID_FIELD", "config.vacanciesUnder"},
		{"availability operations", "/availability", `{"url":"` + ok + `","config":{"operations":["updated"]}}`, "INVALID_FIELD", "config.operations"},
		{"priceschedule maxLookAheadDays negative", "/priceschedule", `{"url":"` + ok + `","config":{"maxLookAheadDays":-7}}`, "INVALID_FIELD", "config.maxLookAheadDays"},
		{"priceschedule vacanciesUnder", "/priceschedule", `{"url":"` + ok + `","config":{"vacanciesUnder":1}}`, "INVALID_FIELD", "config.vacanciesUnder"},
		{"booking updated", "/booking", `{"url":"` + ok + `","config":{"operations":["updated"]}}`, "INVALID_FIELD", "config.operations"},
		{"booking misspelled filter", "/booking", `{"url":"` + ok + `","config":{"bookingIDs":["B"]}}`, "INVALID_FIELD", "config.bookingIDs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := e.Do(t, http.MethodPost, tt.path, e.a, tt.body)
			expectErr(t, status, b, http.StatusBadRequest, tt.code, tt.field)
		})
	}
	if len(e.pub.Messages()) != 0 {
		t.Fatal("an invalid rule was published")
	}
}

func TestCreateRule_PublicHTTPSOnlyUnlessAllowed(t *testing.T) {
	e := start(t, envOptions{strict: true})
	tests := []struct {
		url    string
		status int
	}{
		{"https://hooks.example.com/supplier", http.StatusCreated},
		{"http://hooks.example.com/supplier", http.StatusBadRequest},
		{"https://127.0.0.1:8443/supplier", http.StatusBadRequest},
		{"https://10.0.0.7/supplier", http.StatusBadRequest},
		{"https://169.254.169.254/latest/meta-data", http.StatusBadRequest},
		{"https://[::1]/supplier", http.StatusBadRequest},
		{"https://localhost/supplier", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			status, b := e.Do(t, http.MethodPost, "/supplier", e.a, ruleBodyJSON("", tt.url, false, ""))
			if status != tt.status {
				t.Fatalf("%d %s, want %d", status, b, tt.status)
			}
			if status == http.StatusBadRequest {
				expectErr(t, status, b, http.StatusBadRequest, "INVALID_FIELD", "url")
			}
		})
	}
}

func TestRegistry_KafkaDownIs503AndNothingChanges(t *testing.T) {
	e := start(t, envOptions{})
	hook := e.sink.srv.URL + "/s"
	_, b := e.Do(t, http.MethodPost, "/supplier", e.a, ruleBodyJSON("", hook, false, ""))
	rule := decodeRule(t, b)
	e.pub.SetFail(true)
	tests := []struct{ method, path, body string }{
		{http.MethodPost, "/product", ruleBodyJSON("", hook, false, "")},
		{http.MethodPut, "/supplier", ruleBodyJSON(rule.ID, hook+"2", false, "")},
		{http.MethodDelete, "/supplier/" + rule.ID, ""},
		{http.MethodPut, "/metadata", `{"disableAll":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			status, b := e.Do(t, tt.method, tt.path, e.a, tt.body)
			eb := expectErr(t, status, b, http.StatusServiceUnavailable, "UNAVAILABLE", "")
			if strings.Contains(eb.Message, "broker") {
				t.Fatalf("the cause leaked: %s", b)
			}
		})
	}
	e.pub.SetFail(false)
	_, b = e.Do(t, http.MethodGet, "/supplier", e.a, "")
	if list := decodeRules(t, b); len(list) != 1 || !reflect.DeepEqual(list[0], rule) {
		t.Fatalf("rules changed while Kafka was down: %s", b)
	}
	if _, b = e.Do(t, http.MethodGet, "/product", e.a, ""); strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("product rule created while Kafka was down: %s", b)
	}
	// Reads keep working while Kafka is down; writes work again after.
	if status, b := e.Do(t, http.MethodPost, "/product", e.a, ruleBodyJSON("", hook, false, "")); status != http.StatusCreated {
		t.Fatalf("create after Kafka is back: %d %s", status, b)
	}
}

func TestMetadata_DefaultsUpdatesAndValidation(t *testing.T) {
	e := start(t, envOptions{})
	status, b := e.Do(t, http.MethodGet, "/metadata", e.a, "")
	var md map[string]any
	if err := json.Unmarshal(b, &md); err != nil || status != http.StatusOK || md["throttleDelay"] != "0s" || md["disableAll"] != false {
		t.Fatalf("never set: %d %s, want 200 with the defaults", status, b)
	}
	if _, ok := md["createdOn"]; ok {
		t.Fatalf("never set metadata has no createdOn: %s", b)
	}

	valid := []struct{ body, throttle string }{
		{`{"throttleDelay":"0s"}`, "0s"},
		{`{"throttleDelay":"1.5s"}`, "1.5s"},
		{`{"throttleDelay":"250ms"}`, "250ms"},
		{`{"throttleDelay":"2h45m"}`, "2h45m"},
		{`{"throttleDelay":"10µs"}`, "10µs"},
		{`{"throttleDelay":"+1m"}`, "+1m"},
		{`{"disableAll":true}`, "+1m"}, // throttleDelay left out keeps its value
	}
	for _, tt := range valid {
		t.Run("valid "+tt.body, func(t *testing.T) {
			status, b := e.Do(t, http.MethodPut, "/metadata", e.a, tt.body)
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, b)
			}
			var got registry.Metadata
			if err := json.Unmarshal(b, &got); err != nil || got.ThrottleDelay != tt.throttle || got.CreatedOn.IsZero() || got.UpdatedOn.IsZero() {
				t.Fatalf("answered %s", b)
			}
			_, g := e.Do(t, http.MethodGet, "/metadata", e.a, "")
			var read registry.Metadata
			_ = json.Unmarshal(g, &read)
			if read != got {
				t.Fatalf("GET %s after PUT %s", g, b)
			}
		})
	}

	invalid := []struct{ name, body, code, field string }{
		{"negative", `{"throttleDelay":"-1s"}`, "INVALID_FIELD", "throttleDelay"},
		{"no unit", `{"throttleDelay":"5"}`, "INVALID_FIELD", "throttleDelay"},
		{"days", `{"throttleDelay":"1d"}`, "INVALID_FIELD", "throttleDelay"},
		{"empty", `{"throttleDelay":""}`, "INVALID_FIELD", "throttleDelay"},
		{"space", `{"throttleDelay":"1 s"}`, "INVALID_FIELD", "throttleDelay"},
		{"a number", `{"throttleDelay":5}`, "INVALID_FIELD", "throttleDelay"},
		{"over a day", `{"throttleDelay":"25h"}`, "INVALID_FIELD", "throttleDelay"},
		{"disableAll not a boolean", `{"disableAll":"false"}`, "INVALID_FIELD", "disableAll"},
		{"unknown field", `{"throttleDelay":"1s","maxQueue":10}`, "INVALID_FIELD", "maxQueue"},
		{"malformed", `{"throttleDelay":`, "MALFORMED_JSON", ""},
		{"empty body", ``, "MALFORMED_JSON", ""},
	}
	for _, tt := range invalid {
		t.Run("invalid "+tt.name, func(t *testing.T) {
			status, b := e.Do(t, http.MethodPut, "/metadata", e.a, tt.body)
			expectErr(t, status, b, http.StatusBadRequest, tt.code, tt.field)
		})
	}
	_, b = e.Do(t, http.MethodGet, "/metadata", e.a, "")
	_ = json.Unmarshal(b, &md)
	if md["throttleDelay"] != "+1m" || md["disableAll"] != true {
		t.Fatalf("rejected PUTs changed the metadata: %s", b)
	}
	// PUT back what GET answered (meta and timestamps included).
	if status, b := e.Do(t, http.MethodPut, "/metadata", e.a, string(b)); status != http.StatusOK {
		t.Fatalf("PUT of metadata as read: %d %s", status, b)
	}
}

func TestTestNotification_AnswersWithTheSubscribersStatus(t *testing.T) {
	e := start(t, envOptions{})
	_, b := e.Do(t, http.MethodPost, "/supplier", e.a, ruleBodyJSON("", e.sink.srv.URL+"/s", false, ""))
	rule := decodeRule(t, b)
	body := `{"supplierID":"S1","operation":"updated"}`
	for _, answer := range []int{http.StatusNotFound, http.StatusInternalServerError, http.StatusNoContent, http.StatusAccepted} {
		t.Run(strconv.Itoa(answer), func(t *testing.T) {
			e.sink.status.Store(int64(answer))
			status, b := e.Do(t, http.MethodPost, "/supplier/test/"+rule.ID, e.a, body)
			eb := expectErr(t, status, b, http.StatusInternalServerError, "INTERNAL", "")
			if eb.Data["subscriberStatus"] != strconv.Itoa(answer) || eb.Data["deliveryId"] == "" || !strings.Contains(eb.Message, strconv.Itoa(answer)) {
				t.Fatalf("error %s, want data.subscriberStatus %d", b, answer)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		e.sink.srv.Close()
		status, b := e.Do(t, http.MethodPost, "/supplier/test/"+rule.ID, e.a, body)
		eb := expectErr(t, status, b, http.StatusInternalServerError, "INTERNAL", "")
		if _, ok := eb.Data["subscriberStatus"]; ok || !strings.Contains(eb.Message, "did not answer") {
			t.Fatalf("error %s", b)
		}
	})
}

func TestTestNotification_RejectsInvalidBodiesWith400NamingTheField(t *testing.T) {
	e := start(t, envOptions{})
	ids := map[string]string{}
	for _, tc := range typeCases {
		_, b := e.Do(t, http.MethodPost, tc.crud, e.a, ruleBodyJSON("", e.sink.srv.URL+"/"+tc.typ, false, ""))
		ids[tc.typ] = decodeRule(t, b).ID
	}
	tests := []struct{ name, typ, body, code, field string }{
		{"malformed", "supplier", `{"supplierID":`, "MALFORMED_JSON", ""},
		{"empty body", "supplier", ``, "MALFORMED_JSON", ""},
		{"unknown field", "supplier", `{"supplierID":"S","signature":{}}`, "INVALID_FIELD", "signature"},
		{"channelbinding operation missing", "channelbinding", `{"supplierID":"S","productID":"P"}`, "INVALID_FIELD", "operation"},
		{"channelbinding operation canceled", "channelbinding", `{"supplierID":"S","productID":"P","operation":"canceled"}`, "INVALID_FIELD", "operation"},
		{"channelbinding productID missing", "channelbinding", `{"supplierID":"S","operation":"created"}`, "INVALID_FIELD", "productID"},
		{"supplier supplierID missing", "supplier", `{"operation":"updated"}`, "INVALID_FIELD", "supplierID"},
		{"supplier operation created", "supplier", `{"supplierID":"S","operation":"created"}`, "INVALID_FIELD", "operation"},
		{"product rateID", "product", `{"supplierID":"S","productID":"P","rateID":"R"}`, "INVALID_FIELD", "rateID"},
		{"rate rateID missing", "rate", `{"supplierID":"S","productID":"P","operation":"updated"}`, "INVALID_FIELD", "rateID"},
		{"availability end missing", "availability", `{"supplierID":"S","productID":"P","rateID":"R","start":"2030-01-01T00:00:00Z"}`, "INVALID_FIELD", "end"},
		{"availability start not RFC 3339", "availability", `{"supplierID":"S","productID":"P","rateID":"R","start":"2030-01-01","end":"2030-01-02T00:00:00Z"}`, "INVALID_FIELD", "start"},
		{"priceschedule end before start", "priceschedule", `{"supplierID":"S","productID":"P","start":"2030-01-08T00:00:00Z","end":"2030-01-01T00:00:00Z"}`, "INVALID_FIELD", "end"},
		{"priceschedule operation", "priceschedule", `{"supplierID":"S","productID":"P","start":"2030-01-01T00:00:00Z","end":"2030-01-08T00:00:00Z","operation":"updated"}`, "INVALID_FIELD", "operation"},
		{"booking tickets-added", "booking", `{"bookingID":"B","startTime":"2030-01-01T09:00:00Z","operation":"tickets-added"}`, "INVALID_FIELD", "operation"},
		{"booking startTime missing", "booking", `{"bookingID":"B","operation":"canceled"}`, "INVALID_FIELD", "startTime"},
		{"booking startTime wrong type", "booking", `{"bookingID":"B","startTime":1}`, "INVALID_FIELD", "startTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := e.Do(t, http.MethodPost, "/"+tt.typ+"/test/"+ids[tt.typ], e.a, tt.body)
			expectErr(t, status, b, http.StatusBadRequest, tt.code, tt.field)
		})
	}
	if n := len(e.sink.received()); n != 0 {
		t.Fatalf("invalid tests sent %d notifications", n)
	}
}

func TestTestNotification_WithoutSenderIs503(t *testing.T) {
	e := start(t, envOptions{noSender: true})
	_, b := e.Do(t, http.MethodPost, "/supplier", e.a, ruleBodyJSON("", e.sink.srv.URL+"/s", false, ""))
	status, b := e.Do(t, http.MethodPost, "/supplier/test/"+decodeRule(t, b).ID, e.a, `{"supplierID":"S1"}`)
	expectErr(t, status, b, http.StatusServiceUnavailable, "UNAVAILABLE", "")
}

// FuzzRuleBody: decoding and validating any body for any type never
// panics, and what passes is a rule that renders and validates again.
func FuzzRuleBody(f *testing.F) {
	for _, tc := range typeCases {
		f.Add(tc.typ, []byte(ruleBodyJSON("", "https://hooks.example.com/x", false, tc.config)))
	}
	for _, seed := range []string{
		``, `{`, `[]`, `null`, `{"url":1}`, `{"url":"https://a.b/c","config":{"operations":null}}`,
		`{"url":"https://127.0.0.1/x"}`, `{"url":"https://a.b/c","config":{"maxLookAheadDays":1e9}}`,
		`{"id":"x","url":"https://[::1]:99999/","config":{"supplierIDs":["\u0000"]}}`,
		`{"url":"https://a.b/c","config":{"vacanciesUnder":-0,"rateIDs":[]}}`,
	} {
		f.Add("availability", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, typ string, body []byte) {
		in, err := parseRuleBody(body)
		if err != nil {
			return
		}
		rule, err := registry.ValidateRule(typ, in, registry.URLPolicy{})
		if err != nil {
			var fe *registry.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("rejection without a field: %v", err)
			}
			return
		}
		b, err := json.Marshal(rule)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := parseRuleBody(b)
		if err != nil {
			t.Fatalf("a rendered rule does not decode: %v (%s)", err, b)
		}
		rule2, err := registry.ValidateRule(typ, again, registry.URLPolicy{})
		if err != nil || !reflect.DeepEqual(rule2, rule) {
			t.Fatalf("a rendered rule does not validate to itself: %v\n%+v\n%+v", err, rule2, rule)
		}
	})
}

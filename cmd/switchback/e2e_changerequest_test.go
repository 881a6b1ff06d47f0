package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
)

// TestE2E_ChangeNotificationRefreshesAndNotifies is spec doc 3's change
// notification over the binary: an operator asks for a refresh of its
// product (201, WAITING), the worker polls the supplier's system at once
// and the request ends SUCCEEDED with its timestamps; after the partner's
// availability changed, a second request leads to an availability webhook
// at the subscriber's sink. The API's rules: startDate and endDate only
// together, another operator's product is 404, an unknown request 404.
func TestE2E_ChangeNotificationRefreshesAndNotifies(t *testing.T) {
	var skew atomic.Int64
	sim := partnersim.New(partnersim.Config{APIKey: "pk", APISecret: "ps", ChangeRate: 0.5, ChangeEvery: time.Hour,
		Rates: map[string][]string{"prod-cn": {"rate-a"}}, Clock: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	ps := serve(t, sim)

	d := startDemo(t)
	p, sk, admin, operator, reseller := d.p, d.sk, d.admin, d.operator, d.reseller
	otherOp, _ := admin.principal(`{"role":"operator","name":"Other operator"}`)

	const sup, prod = "sup-cn", "prod-cn"
	supplier := partnerSupplier(sup, "Change Tours", "CN", "pk", "ps", ps.URL)
	base := createProduct(operator, sup, prod, supplier, catalogtest.ProductBody(prod, "Fjord", "d"),
		catalogtest.RateBody("rate-a", "Adult"))
	operator.must("POST", base+"/channels/"+app.DemoChannelID, `{}`, 201)
	rule := reseller.must("POST", "/registry/v1.1/availability", fmt.Sprintf(`{"url":%q,"config":{"maxLookAheadDays":14}}`, sk.url+"/availability"), 201)

	q := fmt.Sprintf("/operator/v2/notifications?supplierId=%s&productId=%s", sup, prod)
	for _, c := range []struct {
		who        client
		path       string
		want       int
		wantInBody string
	}{
		{operator, q + "&startDate=2026-12-01", 400, "endDate"},
		{operator, q + "&endDate=2026-12-01", 400, "startDate"},
		{operator, "/operator/v2/notifications?productId=" + prod, 400, "supplierId"},
		{otherOp, q, 400, "supplierId"}, // doc 3 lists 400, 401, 403, 500: another operator's supplier is a bad parameter
		{reseller, q, 403, ""},
	} {
		if status, body, _ := c.who.do("POST", c.path, ""); status != c.want || !strings.Contains(fmt.Sprint(body), c.wantInBody) {
			t.Errorf("POST %s: %d %v, want %d naming %q", c.path, status, body, c.want, c.wantInBody)
		}
	}
	if status, _, _ := operator.do("GET", "/operator/v2/notifications/00000000-0000-4000-8000-000000000000", ""); status != 404 {
		t.Errorf("unknown request: %d, want 404", status)
	}

	request := func() string {
		t.Helper()
		status, body, _ := operator.do("POST", q, "")
		if status != 201 {
			t.Fatalf("POST notifications: %d %v", status, body)
		}
		n := body["notification"].(map[string]any)
		if n["status"] != "WAITING" && n["status"] != "WORKING" && n["status"] != "SUCCEEDED" {
			t.Fatalf("created notification %v", n)
		}
		id := n["id"].(string)
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, got, _ := operator.do("GET", "/operator/v2/notifications/"+id, "")
			n = got["notification"].(map[string]any)
			if n["status"] == "SUCCEEDED" {
				if n["beganWorking"] == nil || n["finishedWorking"] == nil || n["inserted"] == nil {
					t.Fatalf("finished without its timestamps: %v", n)
				}
				return id
			}
			if n["status"] == "FAILED" || n["status"] == "PARTIAL_FAILURE" || time.Now().After(deadline) {
				t.Fatalf("notification %s: %v", id, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := request()
	if calls := sim.Calls(); calls == 0 {
		t.Fatal("the refresh did not reach the partner")
	}
	skew.Store(int64(time.Hour)) // the partner's inventory moves on
	second := request()
	got := sk.waitFor(t, "/availability", 1, 30*time.Second)
	specVerify(t, rule["securityKey"].(string), got[0])
	if b := got[0].body; b["supplierID"] != sup || b["productID"] != prod || b["rateID"] != "rate-a" {
		t.Fatalf("availability webhook %s", got[0].raw)
	}
	_, list, _ := operator.do("GET", "/operator/v2/notifications?status=SUCCEEDED&limit=10", "")
	ns, _ := list["notifications"].([]any)
	if len(ns) != 2 || ns[0].(map[string]any)["id"] != second || ns[1].(map[string]any)["id"] != first {
		t.Errorf("list = %v, want the two requests newest first", list)
	}
	if _, list, _ := otherOp.do("GET", "/operator/v2/notifications", ""); len(list["notifications"].([]any)) != 0 {
		t.Errorf("another operator sees %v", list)
	}
	p.stop(t)
}

// TestE2E_ChangeNotificationFromABookingSystem is issue 6's end to end:
// an operator's change notification for a product whose availability
// changed in the simulated booking system (spec doc 3) ends SUCCEEDED and
// leads to an availability webhook at a subscriber's local sink. The first
// request is the baseline (nothing was known); the second, after the
// booking system's inventory moved, is news.
func TestE2E_ChangeNotificationFromABookingSystem(t *testing.T) {
	var skew atomic.Int64
	sim := bookingsim.New(bookingsim.Config{APIKey: "bs-token", ChangeRate: 0.5, ChangeEvery: time.Hour,
		Clock: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	bs := serve(t, sim)

	d := startDemo(t)
	p, sk, operator, reseller := d.p, d.sk, d.operator, d.reseller

	// The simulator's names: supplier S1, product S1-P1 (START_TIME),
	// options S1-P1-O1 and -O2 (our rates).
	const sup, prod = "S1", "S1-P1"
	supplier := `{"id":"S1","name":"Booking System Tours","code":"BST","connection":{"kind":"bookingsystem","baseUrl":"` + bs.URL + `","credentials":{"bearerToken":"bs-token"}}}`
	base := createProduct(operator, sup, prod, supplier, catalogtest.ProductBody(prod, "Glacier", "d"),
		catalogtest.RateBody("S1-P1-O1", "Option 1"), catalogtest.RateBody("S1-P1-O2", "Option 2"))
	operator.must("POST", base+"/channels/"+app.DemoChannelID, `{}`, 201)
	rule := reseller.must("POST", "/registry/v1.1/availability", fmt.Sprintf(`{"url":%q,"config":{"maxLookAheadDays":14}}`, sk.url+"/availability"), 201)
	q := fmt.Sprintf("/operator/v2/notifications?supplierId=%s&productId=%s", sup, prod)
	request := func() {
		t.Helper()
		status, body, _ := operator.do("POST", q, "")
		if status != 201 {
			t.Fatalf("POST notifications: %d %v", status, body)
		}
		id := body["notification"].(map[string]any)["id"].(string)
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, got, _ := operator.do("GET", "/operator/v2/notifications/"+id, "")
			n := got["notification"].(map[string]any)
			if n["status"] == "SUCCEEDED" {
				return
			}
			if n["status"] == "FAILED" || n["status"] == "PARTIAL_FAILURE" || time.Now().After(deadline) {
				t.Fatalf("notification %s: %v", id, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	request()
	if status, body, _ := operator.do("GET", base+"/rates/S1-P1-O1/availabilities", ""); status != 200 || !strings.Contains(fmt.Sprint(body), "capacity") {
		t.Fatalf("availabilities after the refresh: %d %v", status, body)
	}
	skew.Store(int64(time.Hour))
	request()
	got := sk.waitFor(t, "/availability", 1, 30*time.Second)
	specVerify(t, rule["securityKey"].(string), got[0])
	if b := got[0].body; b["supplierID"] != sup || b["productID"] != prod {
		t.Fatalf("availability webhook %s", got[0].raw)
	}
	p.stop(t)
}

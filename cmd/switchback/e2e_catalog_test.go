package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
)

// TestE2E_CatalogBindingsNotifySubscribers is issue 4's end-to-end path,
// over HTTP only: an operator sets up a supplier, a product and two rates,
// binds them to the demo channel in steps, and the demo reseller's sink
// receives channelbinding created, updated and removed, and a product
// updated; a reseller of another channel receives nothing and sees nothing.
func TestE2E_CatalogBindingsNotifySubscribers(t *testing.T) {
	d := startDemo(t)
	p, sk, admin, operator, reseller := d.p, d.sk, d.admin, d.operator, d.reseller

	// A second reseller on a second channel, subscribed to product updates.
	ch := admin.must("POST", "/admin/v1/channels", `{"name":"Other channel","companyName":"Other Co"}`, 201)
	otherChannel := nestedString(ch, "id")
	otherReseller, _ := admin.principal(fmt.Sprintf(`{"role":"reseller","name":"Other","channelId":%q}`, otherChannel))

	rules := map[string]string{}
	for _, r := range []struct {
		c          client
		path, sink string
	}{
		{reseller, "/registry/v1.1/channelbindings", "/cb"},
		{reseller, "/registry/v1.1/product", "/product"},
		{otherReseller, "/registry/v1.1/product", "/other-product"},
		{otherReseller, "/registry/v1.1/channelbindings", "/other-cb"},
	} {
		rule := r.c.must("POST", r.path, fmt.Sprintf(`{"url":%q}`, sk.url+r.sink), 201)
		rules[r.sink] = rule["securityKey"].(string)
	}

	const sup, prod = "sup-e2e", "prod-e2e"
	base := createProduct(operator, sup, prod, catalogtest.SupplierBody(sup, "E2E Tours", "E2E", "partner-key", "partner-secret"), catalogtest.ProductBody(prod, "Glacier walk", "A walk on the glacier"),
		catalogtest.RateBody("rate-a", "Adult"), catalogtest.RateBody("rate-b", "Child"))
	if status, _, _ := reseller.do("GET", "/v1.2/suppliers/"+sup, ""); status != 404 {
		t.Errorf("unbound supplier visible to the reseller: %d", status)
	}

	expect := func(path string, n int, op string) received {
		t.Helper()
		got := sk.waitFor(t, path, n, 20*time.Second)
		last := got[n-1]
		specVerify(t, rules[path], last)
		if last.body["operation"] != op || last.body["supplierID"] != sup || last.body["productID"] != prod {
			t.Fatalf("%s #%d = %s, want operation %s for %s/%s", path, n, last.raw, op, sup, prod)
		}
		return last
	}

	bindPath := base + "/channels/" + app.DemoChannelID
	if status, body, _ := operator.do("POST", bindPath, `{"priceAt":"PRICE_AT_SALE","rateIds":["rate-a"]}`); status != 201 {
		t.Fatalf("bind rate-a: %d %v", status, body)
	}
	expect("/cb", 1, "created")
	if status, body, _ := reseller.do("GET", "/v1.2/suppliers/"+sup, ""); status != 200 {
		t.Errorf("bound supplier invisible to the reseller: %d %v", status, body)
	}

	// The same binding through operator v2: both rates, replacing the set.
	if status, body, _ := operator.do("PUT", "/operator/v2/suppliers/"+sup+"/products/"+prod+"/bindings/"+app.DemoChannelID, `{"optionIds":["rate-a","rate-b"]}`); status != 200 {
		t.Fatalf("v2 PUT binding: %d %v", status, body)
	}
	expect("/cb", 2, "updated")
	_, v12, _ := operator.do("GET", base+"/channels", "")
	if !strings.Contains(fmt.Sprint(v12), "rate-b") {
		t.Errorf("v2 binding change not visible through v1.2: %v", v12)
	}

	changed := strings.Replace(catalogtest.ProductBody(prod, "Glacier walk", "A walk on the glacier"), "A walk on the glacier", "A longer walk on the glacier", 1)
	if status, body, _ := operator.do("PUT", "/channel/v1.2/suppliers/"+sup+"/products/"+prod, changed); status != 200 {
		t.Fatalf("update product: %d %v", status, body)
	}
	expect("/product", 1, "updated")

	if status, body, _ := operator.do("DELETE", bindPath, ""); status != 204 {
		t.Fatalf("unbind: %d %v", status, body)
	}
	expect("/cb", 3, "removed")
	if status, _, _ := reseller.do("GET", "/v1.2/suppliers/"+sup, ""); status != 404 {
		t.Errorf("unbound supplier still visible: %d", status)
	}

	// Everything above is on the demo channel: the other reseller's sinks
	// got nothing (checked after the last notification arrived, so any
	// stray one would have arrived too: one partition per subscriber, and
	// the dispatcher sends in arrival order).
	time.Sleep(300 * time.Millisecond)
	if n := len(sk.on("/other-product")) + len(sk.on("/other-cb")); n != 0 {
		t.Errorf("reseller of another channel received %d notifications", n)
	}
	if status, _, _ := otherReseller.do("GET", "/v1.2/suppliers/"+sup, ""); status != 404 {
		t.Errorf("supplier visible to another channel: %d", status)
	}
	if n := len(sk.on("/cb")); n != 3 {
		t.Errorf("channelbinding notifications = %d, want exactly 3", n)
	}
	if n := len(sk.on("/product")); n != 1 {
		t.Errorf("product notifications = %d, want exactly 1", n)
	}
	p.stop(t)
}

func nestedString(m map[string]any, keys ...string) string {
	var cur any = m
	for _, k := range keys {
		mm, _ := cur.(map[string]any)
		cur = mm[k]
	}
	s, _ := cur.(string)
	return s
}

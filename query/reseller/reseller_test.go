package reseller_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/query/querytest"
)

const (
	ch  = querytest.Ch
	v12 = querytest.V12
	v13 = querytest.V13
)

// seed sets up three suppliers:
//
//	s1 (operator): p1 {r1, r2}, p2 {r3}
//	s2 (operator2): p3 {r4}
//	s3 (operator): p5 {r5}, never bound
//
// and binds, on chan-a: s1/p1 at r1 with priceTags [b2b]; s2/p3 whole.
// On chan-b: s1/p2 whole but only from tomorrow; s2/p3 whole until
// yesterday.
func seed(t *testing.T, e *querytest.Env) {
	t.Helper()
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	yesterday := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	mk := func(who catalogtest.Cred, sid string, prods map[string][]string) {
		e.Must(t, 201, "POST", ch+"/supplier", who, catalogtest.SupplierBody(sid, "Supplier "+sid, strings.ToUpper(sid), "key-"+sid, "secret-"+sid))
		for pid, rates := range prods {
			e.Must(t, 201, "POST", ch+"/suppliers/"+sid+"/products", who, catalogtest.ProductBody(pid, "Product "+pid, "About "+pid))
			for _, rid := range rates {
				e.Must(t, 201, "POST", ch+"/suppliers/"+sid+"/products/"+pid+"/rates", who, catalogtest.RateBody(rid, "Rate "+rid))
			}
		}
	}
	mk(e.Operator, "s1", map[string][]string{"p1": {"r1", "r2"}, "p2": {"r3"}})
	mk(e.Operator2, "s2", map[string][]string{"p3": {"r4"}})
	mk(e.Operator, "s3", map[string][]string{"p5": {"r5"}})
	e.Must(t, 201, "POST", ch+"/suppliers/s1/products/p1/channels/chan-a", e.Operator, `{"rateIds":["r1"],"priceTags":["b2b"]}`)
	e.Must(t, 201, "POST", ch+"/suppliers/s2/products/p3/channels/chan-a", e.Operator2, `{}`)
	e.Must(t, 201, "POST", ch+"/suppliers/s1/products/p2/channels/chan-b", e.Operator, `{"valid":{"from":"`+tomorrow+`"}}`)
	e.Must(t, 201, "POST", ch+"/suppliers/s2/products/p3/channels/chan-b", e.Operator2, `{"valid":{"until":"`+yesterday+`"}}`)
}

type read struct {
	name     string
	who      func(e *querytest.Env) catalogtest.Cred
	path     string
	want     int
	contains []string
	absent   []string
}

var (
	r1 = func(e *querytest.Env) catalogtest.Cred { return e.Reseller1 }
	r2 = func(e *querytest.Env) catalogtest.Cred { return e.Reseller2 }
	op = func(e *querytest.Env) catalogtest.Cred { return e.Operator }
)

func check(t *testing.T, e *querytest.Env, reads []read) {
	t.Helper()
	for _, rd := range reads {
		t.Run(rd.name, func(t *testing.T) {
			status, body := e.Do(t, "GET", rd.path, rd.who(e), "")
			if status != rd.want {
				t.Fatalf("GET %s: %d, want %d: %s", rd.path, status, rd.want, body)
			}
			if !json.Valid(body) {
				t.Fatalf("invalid JSON: %s", body)
			}
			if dup := testharness.DuplicateKey(body); dup != "" {
				t.Fatalf("duplicate JSON key %s: %s", dup, body)
			}
			for _, c := range rd.contains {
				if !strings.Contains(string(body), c) {
					t.Errorf("body lacks %s: %s", c, body)
				}
			}
			for _, a := range rd.absent {
				if strings.Contains(string(body), a) {
					t.Errorf("body has %s: %s", a, body)
				}
			}
		})
	}
}

func TestResellerReads_VisibilityFollowsChannelBindings(t *testing.T) {
	e := querytest.Start(t, querytest.Options{})
	seed(t, e)
	check(t, e, []read{
		{name: "list shows suppliers with a product bound to the channel", who: r1, path: v12 + "/suppliers", want: 200,
			contains: []string{`{"meta":{"reqId":"test-req"},"suppliers":[{`, `"id":"s1"`, `"id":"s2"`}, absent: []string{`"id":"s3"`, "secret-", "connection", "owner"}},
		{name: "a channel whose bindings are outside their window sees nothing", who: r2, path: v12 + "/suppliers", want: 200,
			contains: []string{`"suppliers":[]`}},
		{name: "unbound supplier is 404", who: r1, path: v12 + "/suppliers/s3", want: 404, contains: []string{`"code":"NOT_FOUND"`}},
		{name: "unknown supplier is the same 404", who: r1, path: v12 + "/suppliers/nope", want: 404, contains: []string{`"code":"NOT_FOUND"`}},
		{name: "bound supplier 1.2", who: r1, path: v12 + "/suppliers/s1", want: 200,
			contains: []string{`"supplier":{"code":"S1"`, `"city":"Paris"`, `"primary":true`, `"version":1`}, absent: []string{`"content"`, `"title":"Grown-up"`, "MEETING_POINT"}},
		{name: "binding not yet valid is 404", who: r2, path: v12 + "/suppliers/s1", want: 404},
		{name: "binding no longer valid is 404", who: r2, path: v12 + "/suppliers/s2", want: 404},
		{name: "only bound products", who: r1, path: v12 + "/suppliers/s1/products", want: 200,
			contains: []string{`"products":[{"supplierId":"s1","id":"p1"`}, absent: []string{`"id":"p2"`}},
		{name: "unbound product is 404", who: r1, path: v12 + "/suppliers/s1/products/p2", want: 404},
		{name: "products of an unseen supplier are 404", who: r2, path: v12 + "/suppliers/s1/products", want: 404},
		{name: "bound product", who: r1, path: v12 + "/suppliers/s1/products/p1", want: 200, contains: []string{`"product":{"supplierId":"s1","id":"p1"`}},
		{name: "only bound rates, prices with all the tags", who: r1, path: v12 + "/suppliers/s1/products/p1/rates", want: 200,
			contains: []string{`"rates":[{"productId":"p1","id":"r1"`, `"id":"p-net"`}, absent: []string{`"id":"r2"`, `"id":"p-std"`}},
		{name: "unbound rate is 404", who: r1, path: v12 + "/suppliers/s1/products/p1/rates/r2", want: 404},
		{name: "bound rate hides untagged prices", who: r1, path: v12 + "/suppliers/s1/products/p1/rates/r1", want: 200,
			contains: []string{`"rate":{"productId":"p1","id":"r1"`, `"id":"p-net"`}, absent: []string{`"id":"p-std"`}},
		{name: "whole-product binding shows every rate and price", who: r1, path: v12 + "/suppliers/s2/products/p3/rates", want: 200,
			contains: []string{`"id":"r4"`, `"id":"p-std"`, `"id":"p-net"`}},
		{name: "the other channel's reseller sees none of it", who: r2, path: v12 + "/suppliers/s1/products/p1/rates/r1", want: 404},
		{name: "code filter", who: r1, path: v12 + "/suppliers?code=S2", want: 200, contains: []string{`"id":"s2"`}, absent: []string{`"id":"s1"`}},
		{name: "partner_id filter", who: r1, path: v12 + "/suppliers?partner_id=p-S1", want: 200, contains: []string{`"id":"s1"`}, absent: []string{`"id":"s2"`}},
		{name: "filters that match nothing", who: r1, path: v12 + "/suppliers?code=S1&partner_id=p-S2", want: 200, contains: []string{`"suppliers":[]`}},
		{name: "1.3 list has no rich content", who: r1, path: v13 + "/suppliers", want: 200,
			contains: []string{`"id":"s1"`, `"type":"MEETING_POINT"`, `"title":"Grown-up"`}, absent: []string{`"content"`, `"city"`, `"primary"`}},
		{name: "1.3 supplier without content", who: r1, path: v13 + "/suppliers/s1", want: 200, absent: []string{`"content"`}},
		{name: "1.3 supplier with content=true", who: r1, path: v13 + "/suppliers/s1?content=true", want: 200,
			contains: []string{`"content":{"name":"c","title":[{"text":"Hello","locale":"en"}]`}},
		{name: "1.3 content must be a boolean", who: r1, path: v13 + "/suppliers/s1?content=maybe", want: 400},
		// v1.3 products and rates: the v1.2 shapes and visibility.
		{name: "1.3 only bound products", who: r1, path: v13 + "/suppliers/s1/products", want: 200,
			contains: []string{`{"meta":{"reqId":"test-req"},"products":[{"supplierId":"s1","id":"p1"`}, absent: []string{`"id":"p2"`}},
		{name: "1.3 bound product", who: r1, path: v13 + "/suppliers/s1/products/p1", want: 200, contains: []string{`"product":{"supplierId":"s1","id":"p1"`, `"type":"START"`}},
		{name: "1.3 unbound product is 404", who: r1, path: v13 + "/suppliers/s1/products/p2", want: 404, contains: []string{`"code":"NOT_FOUND"`}},
		{name: "1.3 rates, prices with all the tags", who: r1, path: v13 + "/suppliers/s1/products/p1/rates", want: 200,
			contains: []string{`"rates":[{"productId":"p1","id":"r1"`, `"id":"p-net"`}, absent: []string{`"id":"r2"`, `"id":"p-std"`}},
		{name: "1.3 bound rate", who: r1, path: v13 + "/suppliers/s1/products/p1/rates/r1", want: 200, contains: []string{`"rate":{"productId":"p1","id":"r1"`}},
		{name: "1.3 unbound rate is 404", who: r1, path: v13 + "/suppliers/s1/products/p1/rates/r2", want: 404},
		{name: "1.3 unbound supplier is 404", who: r1, path: v13 + "/suppliers/s3?content=true", want: 404},
		{name: "operators may not use reseller routes", who: op, path: v12 + "/suppliers", want: 403},
		{name: "without valid credentials: 401", who: func(*querytest.Env) catalogtest.Cred {
			return catalogtest.Cred{Key: "t-reseller1", Secret: "wrong-secret-0123456789"}
		}, path: v13 + "/suppliers", want: 401},
	})
}

func TestResellerReads_RateBoundThenUnbound(t *testing.T) {
	e := querytest.Start(t, querytest.Options{})
	seed(t, e)
	rate := func(rid string) string { return v12 + "/suppliers/s1/products/p1/rates/" + rid }
	e.Must(t, 200, "GET", rate("r1"), e.Reseller1, "")
	e.Must(t, 404, "GET", rate("r2"), e.Reseller1, "")

	// Rebind at r2 only, without tags: r1 disappears, r2 appears with all
	// its prices.
	e.Must(t, 200, "PUT", ch+"/suppliers/s1/products/p1/channels/chan-a", e.Operator, `{"rateIds":["r2"]}`)
	e.Must(t, 404, "GET", rate("r1"), e.Reseller1, "")
	body := e.Must(t, 200, "GET", rate("r2"), e.Reseller1, "")
	if !strings.Contains(string(body), `"id":"p-std"`) {
		t.Errorf("untagged binding hides a price: %s", body)
	}

	// Unbind: the product, its rates and the supplier vanish for chan-a.
	e.Must(t, 204, "DELETE", ch+"/suppliers/s1/products/p1/channels/chan-a", e.Operator, "")
	e.Must(t, 404, "GET", rate("r2"), e.Reseller1, "")
	e.Must(t, 404, "GET", v12+"/suppliers/s1/products/p1", e.Reseller1, "")
	e.Must(t, 404, "GET", v12+"/suppliers/s1", e.Reseller1, "")
	list := e.Must(t, 200, "GET", v12+"/suppliers", e.Reseller1, "")
	if strings.Contains(string(list), `"id":"s1"`) {
		t.Errorf("unbound supplier still listed: %s", list)
	}

	// Opening chan-b's window makes s1/p2 visible there, whole.
	e.Must(t, 200, "PUT", ch+"/suppliers/s1/products/p2/channels/chan-b", e.Operator, `{"valid":{"from":"2001-01-01T00:00:00Z"}}`)
	e.Must(t, 200, "GET", v12+"/suppliers/s1", e.Reseller2, "")
	e.Must(t, 200, "GET", v12+"/suppliers/s1/products/p2/rates/r3", e.Reseller2, "")

	// A rate added under a whole-product binding is visible at once.
	e.Must(t, 201, "POST", ch+"/suppliers/s1/products/p2/rates", e.Operator, catalogtest.RateBody("r9", "Late rate"))
	e.Must(t, 200, "GET", v12+"/suppliers/s1/products/p2/rates/r9", e.Reseller2, "")
}

func TestResellerReads_TwoResellersOfOneChannelSeeTheSame(t *testing.T) {
	e := querytest.Start(t, querytest.Options{})
	seed(t, e)
	for _, p := range []string{v12 + "/suppliers", v13 + "/suppliers", v12 + "/suppliers/s1/products/p1/rates"} {
		a := e.Must(t, 200, "GET", p, e.Reseller1, "")
		b := e.Must(t, 200, "GET", p, e.Reseller1b, "")
		if string(a) != string(b) {
			t.Errorf("GET %s differs between resellers of one channel:\n%s\n%s", p, a, b)
		}
	}
}

// TestResellerReads_V13ProductsDropTheDeprecatedLocationFields: a product
// whose locations carry the 1.2 fields (city, country, state, utcOffset)
// shows them under v1.2 only; v1.3 shows its Location shape, as it does
// for suppliers.
func TestResellerReads_V13ProductsDropTheDeprecatedLocationFields(t *testing.T) {
	e := querytest.Start(t, querytest.Options{})
	seed(t, e)
	e.Must(t, 200, "PUT", ch+"/suppliers/s1/products/p1", e.Operator, strings.Replace(catalogtest.ProductBody("p1", "Product p1", "About p1"),
		`"locations":[{"name":"Start","type":"START","order":1}]`, `"locations":[{"name":"Start","type":"START","order":1,"city":"Paris","utcOffset":"+01:00"}]`, 1))
	check(t, e, []read{
		{name: "1.2 keeps them", who: r1, path: v12 + "/suppliers/s1/products/p1", want: 200, contains: []string{`"city":"Paris"`, `"utcOffset":"+01:00"`}},
		{name: "1.3 product", who: r1, path: v13 + "/suppliers/s1/products/p1", want: 200, contains: []string{`"type":"START"`, `"name":"Start"`},
			absent: []string{`"city"`, `"utcOffset"`}},
		{name: "1.3 list", who: r1, path: v13 + "/suppliers/s1/products", want: 200, contains: []string{`"type":"START"`}, absent: []string{`"city"`, `"utcOffset"`}},
	})
}

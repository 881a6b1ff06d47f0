package operator_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/query/querytest"
)

const (
	ch = querytest.Ch
	op = querytest.Op
)

func seed(t *testing.T, e *querytest.Env) {
	t.Helper()
	e.Must(t, 201, "POST", ch+"/supplier", e.Operator, catalogtest.SupplierBody("s1", "Sup One", "S1", "k", "s"))
	e.Must(t, 201, "POST", ch+"/suppliers/s1/products", e.Operator, catalogtest.ProductBody("p1", "Tour", "d"))
	e.Must(t, 201, "POST", ch+"/suppliers/s1/products", e.Operator, catalogtest.ProductBody("p2", "Other", "d"))
	e.Must(t, 200, "POST", ch+"/bulk/suppliers/s1/products/p1/rates", e.Operator,
		`{"rates":[`+catalogtest.RateBody("r1", "A")+`,`+catalogtest.RateBody("r2", "B")+`,`+catalogtest.RateBody("r3", "C")+`]}`)
	e.Must(t, 201, "POST", ch+"/suppliers/s1/products/p2/rates", e.Operator, catalogtest.RateBody("r4", "D"))
	e.Must(t, 201, "POST", ch+"/supplier", e.Operator2, catalogtest.SupplierBody("s2", "Sup Two", "S2", "k", "s"))
}

// v2Options reads the v2 binding's optionIds (nil when 404).
func v2Options(t *testing.T, e *querytest.Env, cid string) []string {
	t.Helper()
	status, b := e.Do(t, "GET", op+"/suppliers/s1/products/p1/bindings/"+cid, e.Operator, "")
	if status == 404 {
		return nil
	}
	if status != 200 {
		t.Fatalf("v2 GET: %d %s", status, b)
	}
	var out struct {
		Binding struct {
			OptionIDs []string `json:"optionIds"`
		} `json:"binding"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Binding.OptionIDs
}

// v12Rates reads the v1.2 channelRate of the channel: rateIds and
// priceTags (nil, nil when absent from the product's list).
func v12Rates(t *testing.T, e *querytest.Env, cid string) (rateIDs, tags []string) {
	t.Helper()
	b := e.Must(t, 200, "GET", ch+"/suppliers/s1/products/p1/channels", e.Operator, "")
	var out struct {
		ChannelRates []struct {
			Channel struct {
				ID string `json:"id"`
			} `json:"channel"`
			RateIDs   []string `json:"rateIds"`
			PriceTags []string `json:"priceTags"`
		} `json:"channelRates"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for _, cr := range out.ChannelRates {
		if cr.Channel.ID == cid {
			return cr.RateIDs, cr.PriceTags
		}
	}
	return nil, nil
}

func TestBindings_V12AndV2AreTwoViewsOfOneBinding(t *testing.T) {
	e := querytest.Start(t, querytest.Options{})
	seed(t, e)
	v2 := op + "/suppliers/s1/products/p1/bindings/chan-a"
	v1 := ch + "/suppliers/s1/products/p1/channels/chan-a"
	tests := []struct {
		name          string
		method, path  string
		body          string
		status        int
		wantOptions   []string // v2 view after the step (nil: no binding)
		wantRateIDs   []string // v1.2 view after the step
		wantPriceTags []string
	}{
		{"v2 PUT creates the binding, seen by v1.2", "PUT", v2, `{"optionIds":["r2","r1"]}`, 200, []string{"r1", "r2"}, []string{"r1", "r2"}, []string{}},
		{"v1.2 PUT changes rates and tags, seen by v2", "PUT", v1, `{"rateIds":["r3"],"priceTags":["b2b"]}`, 200, []string{"r3"}, []string{"r3"}, []string{"b2b"}},
		{"v2 PUT replaces the set, never appends, and keeps the terms", "PUT", v2, `{"optionIds":["r1"]}`, 200, []string{"r1"}, []string{"r1"}, []string{"b2b"}},
		{"v1.2 whole-product binding shows every option in v2", "PUT", v1, `{"rateIds":[]}`, 200, []string{"r1", "r2", "r3"}, []string{}, []string{}},
		{"v2 option of another product is 400", "PUT", v2, `{"optionIds":["r4"]}`, 400, []string{"r1", "r2", "r3"}, []string{}, []string{}},
		{"v2 unknown option is 400", "PUT", v2, `{"optionIds":["r1","nope"]}`, 400, []string{"r1", "r2", "r3"}, []string{}, []string{}},
		{"v2 empty set is 400", "PUT", v2, `{"optionIds":[]}`, 400, []string{"r1", "r2", "r3"}, []string{}, []string{}},
		{"v2 DELETE removes it from v1.2", "DELETE", v2, "", 204, nil, nil, nil},
		{"v1.2 DELETE of the removed binding is 404", "DELETE", v1, "", 404, nil, nil, nil},
		{"v1.2 POST creates it, seen by v2", "POST", v1, `{"rateIds":["r2"]}`, 201, []string{"r2"}, []string{"r2"}, []string{}},
		{"v1.2 DELETE removes it from v2", "DELETE", v1, "", 204, nil, nil, nil},
		{"v2 DELETE of the removed binding is 404", "DELETE", v2, "", 404, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Must(t, tt.status, tt.method, tt.path, e.Operator, tt.body)
			if got := v2Options(t, e, "chan-a"); !slices.Equal(got, tt.wantOptions) {
				t.Errorf("v2 optionIds %v, want %v", got, tt.wantOptions)
			}
			rates, tags := v12Rates(t, e, "chan-a")
			if !slices.Equal(rates, tt.wantRateIDs) || !slices.Equal(tags, tt.wantPriceTags) {
				t.Errorf("v1.2 rateIds %v priceTags %v, want %v %v", rates, tags, tt.wantRateIDs, tt.wantPriceTags)
			}
		})
	}
}

func TestOperatorV2_EveryEndpointAndStatus(t *testing.T) {
	e := querytest.Start(t, querytest.Options{})
	seed(t, e)
	b := op + "/suppliers/s1/products/p1/bindings"
	tests := []struct {
		name         string
		who          func() catalogtest.Cred
		method, path string
		body         string
		status       int
		contains     string
	}{
		{"channels", func() catalogtest.Cred { return e.Operator }, "GET", op + "/channels", "", 200,
			`"channels":[{"id":"chan-a","name":"Channel A","companyName":"A Travel"},{"id":"chan-b","name":"Channel B","companyName":"B Tours"}]`},
		{"no bindings yet", func() catalogtest.Cred { return e.Operator }, "GET", b, "", 200, `"bindings":[]`},
		{"put binding", func() catalogtest.Cred { return e.Operator }, "PUT", b + "/chan-b", `{"optionIds":["r1"]}`, 200,
			`"binding":{"channelId":"chan-b","channelName":"Channel B","optionIds":["r1"],"productId":"p1","productName":"Tour","supplierId":"s1","supplierName":"Sup One"}`},
		{"list bindings", func() catalogtest.Cred { return e.Operator }, "GET", b, "", 200, `"bindings":[{"channelId":"chan-b"`},
		{"get binding", func() catalogtest.Cred { return e.Operator }, "GET", b + "/chan-b", "", 200, `"optionIds":["r1"]`},
		{"get an absent binding is 404", func() catalogtest.Cred { return e.Operator }, "GET", b + "/chan-a", "", 404, `"NOT_FOUND"`},
		{"get a binding to an unknown channel is 404", func() catalogtest.Cred { return e.Operator }, "GET", b + "/nope", "", 404, `"NOT_FOUND"`},
		{"put to an unknown channel is 404", func() catalogtest.Cred { return e.Operator }, "PUT", b + "/nope", `{"optionIds":["r1"]}`, 404, `"NOT_FOUND"`},
		{"put on an unknown product is 404", func() catalogtest.Cred { return e.Operator }, "PUT", op + "/suppliers/s1/products/nope/bindings/chan-a", `{"optionIds":["r1"]}`, 404, ""},
		{"malformed body is 400", func() catalogtest.Cred { return e.Operator }, "PUT", b + "/chan-b", `{"optionIds":"r1"}`, 400, `"field":"optionIds"`},
		{"another operator gets 404", func() catalogtest.Cred { return e.Operator2 }, "GET", b, "", 404, ""},
		{"another operator cannot bind it", func() catalogtest.Cred { return e.Operator2 }, "PUT", b + "/chan-a", `{"optionIds":["r1"]}`, 404, ""},
		{"another operator cannot unbind it", func() catalogtest.Cred { return e.Operator2 }, "DELETE", b + "/chan-b", "", 404, ""},
		{"a reseller is 403", func() catalogtest.Cred { return e.Reseller1 }, "GET", op + "/channels", "", 403, `"FORBIDDEN"`},
		{"an admin sees any supplier's bindings", func() catalogtest.Cred { return e.Admin }, "GET", b, "", 200, `"channelId":"chan-b"`},
		{"delete binding", func() catalogtest.Cred { return e.Operator }, "DELETE", b + "/chan-b", "", 204, ""},
		{"delete again is 404", func() catalogtest.Cred { return e.Operator }, "DELETE", b + "/chan-b", "", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := e.Must(t, tt.status, tt.method, tt.path, tt.who(), tt.body)
			if tt.contains != "" && !strings.Contains(string(body), tt.contains) {
				t.Errorf("body lacks %s: %s", tt.contains, body)
			}
		})
	}
}

package registry

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/schemas"
)

func TestValidateRule_FillsTheDefaultsOfEachType(t *testing.T) {
	tests := []struct {
		typ  string
		want Config
	}{
		{schemas.TypeChannelBinding, Config{Operations: []string{"created", "removed", "updated"}}},
		{schemas.TypeSupplier, Config{Operations: []string{"updated"}}},
		{schemas.TypeProduct, Config{Operations: []string{"updated"}}},
		{schemas.TypeRate, Config{Operations: []string{"updated"}}},
		{schemas.TypeAvailability, Config{MaxLookAheadDays: 7}},
		{schemas.TypePriceSchedule, Config{MaxLookAheadDays: 7}},
		{schemas.TypeBooking, Config{Operations: []string{"canceled", "tickets-added"}}},
	}
	for _, tt := range tests {
		for _, config := range []string{"", "null", "{}"} {
			t.Run(tt.typ+"/config="+config, func(t *testing.T) {
				rule, err := ValidateRule(tt.typ, ruleIn("https://hooks.example.com/"+tt.typ, config), URLPolicy{})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(rule.Config, tt.want) {
					t.Fatalf("config = %+v, want %+v", rule.Config, tt.want)
				}
				if rule.Type != tt.typ || rule.Disabled {
					t.Fatalf("rule = %+v", rule)
				}
			})
		}
	}
}

func TestValidateRule_KeepsValidConfigsNormalised(t *testing.T) {
	tests := []struct {
		name, typ, config string
		want              Config
	}{
		{"channelbinding operations in canonical order, deduplicated", schemas.TypeChannelBinding,
			`{"operations":["updated","created","updated"],"supplierIDs":["s1","s2","s1"],"productIDs":["p1"]}`,
			Config{Operations: []string{"created", "updated"}, SupplierIDs: []string{"s1", "s2"}, ProductIDs: []string{"p1"}}},
		{"supplier updated only", schemas.TypeSupplier, `{"operations":["updated"],"supplierIDs":["s1"]}`,
			Config{Operations: []string{"updated"}, SupplierIDs: []string{"s1"}}},
		{"product filters", schemas.TypeProduct, `{"supplierIDs":["s1"],"productIDs":["p1","p2"]}`,
			Config{Operations: []string{"updated"}, SupplierIDs: []string{"s1"}, ProductIDs: []string{"p1", "p2"}}},
		{"rate filters", schemas.TypeRate, `{"operations":["updated"],"rateIDs":["r1"]}`,
			Config{Operations: []string{"updated"}, RateIDs: []string{"r1"}}},
		{"availability window and threshold", schemas.TypeAvailability,
			`{"maxLookAheadDays":30,"vacanciesUnder":5,"supplierIDs":["s1"],"productIDs":["p1"],"rateIDs":["r1"]}`,
			Config{MaxLookAheadDays: 30, VacanciesUnder: 5, SupplierIDs: []string{"s1"}, ProductIDs: []string{"p1"}, RateIDs: []string{"r1"}}},
		{"availability vacanciesUnder 0 means every change", schemas.TypeAvailability, `{"vacanciesUnder":0}`,
			Config{MaxLookAheadDays: 7}},
		{"priceschedule window", schemas.TypePriceSchedule, `{"maxLookAheadDays":1,"rateIDs":[]}`,
			Config{MaxLookAheadDays: 1}},
		{"booking one operation", schemas.TypeBooking, `{"operations":["tickets-added"],"productIDs":["p1"]}`,
			Config{Operations: []string{"tickets-added"}, ProductIDs: []string{"p1"}}},
		{"null fields take defaults", schemas.TypeBooking, `{"operations":null,"supplierIDs":null}`,
			Config{Operations: []string{"canceled", "tickets-added"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, err := ValidateRule(tt.typ, ruleIn("https://hooks.example.com/x", tt.config), URLPolicy{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rule.Config, tt.want) {
				t.Fatalf("config = %+v, want %+v", rule.Config, tt.want)
			}
		})
	}
}

func TestValidateRule_RejectsInvalidRulesNamingTheField(t *testing.T) {
	const ok = "https://hooks.example.com/x"
	tests := []struct {
		name, typ string
		in        RuleInput
		field     string
	}{
		{"unknown type", "bookings", ruleIn(ok, ""), "type"},
		{"url missing", schemas.TypeSupplier, ruleIn("", ""), "url"},
		{"url relative", schemas.TypeSupplier, ruleIn("/hook", ""), "url"},
		{"url http", schemas.TypeSupplier, ruleIn("http://hooks.example.com/x", ""), "url"},
		{"url ftp", schemas.TypeSupplier, ruleIn("ftp://hooks.example.com/x", ""), "url"},
		{"url no host", schemas.TypeSupplier, ruleIn("https:///x", ""), "url"},
		{"url with credentials", schemas.TypeSupplier, ruleIn("https://u:p@hooks.example.com/x", ""), "url"},
		{"url with fragment", schemas.TypeSupplier, ruleIn("https://hooks.example.com/x#f", ""), "url"},
		{"url loopback", schemas.TypeSupplier, ruleIn("https://127.0.0.1/x", ""), "url"},
		{"url localhost", schemas.TypeSupplier, ruleIn("https://localhost:8443/x", ""), "url"},
		{"url private", schemas.TypeSupplier, ruleIn("https://10.1.2.3/x", ""), "url"},
		{"url link-local metadata service", schemas.TypeSupplier, ruleIn("https://169.254.169.254/latest", ""), "url"},
		{"url ipv6 loopback", schemas.TypeSupplier, ruleIn("https://[::1]/x", ""), "url"},
		{"url ipv4-mapped loopback", schemas.TypeSupplier, ruleIn("https://[::ffff:127.0.0.1]/x", ""), "url"},
		{"url numeric shorthand", schemas.TypeSupplier, ruleIn("https://127.1/x", ""), "url"},
		{"url hex host", schemas.TypeSupplier, ruleIn("https://0x7f000001/x", ""), "url"},
		{"url bad port", schemas.TypeSupplier, ruleIn("https://hooks.example.com:99999/x", ""), "url"},
		{"url too long", schemas.TypeSupplier, ruleIn("https://hooks.example.com/"+strings.Repeat("a", MaxURLLen), ""), "url"},
		{"id with slash", schemas.TypeSupplier, RuleInput{ID: "a/b", URL: ok}, "id"},
		{"id too long", schemas.TypeSupplier, RuleInput{ID: strings.Repeat("a", MaxIDLen+1), URL: ok}, "id"},
		{"config not an object", schemas.TypeSupplier, ruleIn(ok, `["updated"]`), "config"},
		{"config a string", schemas.TypeSupplier, ruleIn(ok, `"x"`), "config"},
		{"unknown config field", schemas.TypeSupplier, ruleIn(ok, `{"supplierIds":["s"]}`), "config.supplierIds"},
		{"productIDs on supplier", schemas.TypeSupplier, ruleIn(ok, `{"productIDs":["p"]}`), "config.productIDs"},
		{"rateIDs on product", schemas.TypeProduct, ruleIn(ok, `{"rateIDs":["r"]}`), "config.rateIDs"},
		{"rateIDs on channelbinding", schemas.TypeChannelBinding, ruleIn(ok, `{"rateIDs":["r"]}`), "config.rateIDs"},
		{"operations on priceschedule", schemas.TypePriceSchedule, ruleIn(ok, `{"operations":["updated"]}`), "config.operations"},
		{"operations on availability", schemas.TypeAvailability, ruleIn(ok, `{"operations":["updated"]}`), "config.operations"},
		{"vacanciesUnder on priceschedule", schemas.TypePriceSchedule, ruleIn(ok, `{"vacanciesUnder":1}`), "config.vacanciesUnder"},
		{"maxLookAheadDays on booking", schemas.TypeBooking, ruleIn(ok, `{"maxLookAheadDays":7}`), "config.maxLookAheadDays"},
		{"supplier operation other than updated", schemas.TypeSupplier, ruleIn(ok, `{"operations":["created"]}`), "config.operations"},
		{"product operation other than updated", schemas.TypeProduct, ruleIn(ok, `{"operations":["removed"]}`), "config.operations"},
		{"rate operation other than updated", schemas.TypeRate, ruleIn(ok, `{"operations":["canceled"]}`), "config.operations"},
		{"channelbinding unknown operation", schemas.TypeChannelBinding, ruleIn(ok, `{"operations":["deleted"]}`), "config.operations"},
		{"booking unknown operation", schemas.TypeBooking, ruleIn(ok, `{"operations":["updated"]}`), "config.operations"},
		{"empty operations", schemas.TypeBooking, ruleIn(ok, `{"operations":[]}`), "config.operations"},
		{"operations not strings", schemas.TypeBooking, ruleIn(ok, `{"operations":[1]}`), "config.operations"},
		{"operations not an array", schemas.TypeBooking, ruleIn(ok, `{"operations":"canceled"}`), "config.operations"},
		{"supplierIDs not strings", schemas.TypeSupplier, ruleIn(ok, `{"supplierIDs":[1,2]}`), "config.supplierIDs"},
		{"supplierIDs not an array", schemas.TypeSupplier, ruleIn(ok, `{"supplierIDs":"s1"}`), "config.supplierIDs"},
		{"empty product id", schemas.TypeProduct, ruleIn(ok, `{"productIDs":["p1",""]}`), "config.productIDs"},
		{"rate id with control character", schemas.TypeRate, ruleIn(ok, `{"rateIDs":["r\n1"]}`), "config.rateIDs"},
		{"too many ids", schemas.TypeRate, ruleIn(ok, `{"rateIDs":[`+strings.Repeat(`"r",`, MaxFilterIDs)+`"r"]}`), "config.rateIDs"},
		{"maxLookAheadDays zero", schemas.TypeAvailability, ruleIn(ok, `{"maxLookAheadDays":0}`), "config.maxLookAheadDays"},
		{"maxLookAheadDays negative", schemas.TypePriceSchedule, ruleIn(ok, `{"maxLookAheadDays":-1}`), "config.maxLookAheadDays"},
		{"maxLookAheadDays fraction", schemas.TypePriceSchedule, ruleIn(ok, `{"maxLookAheadDays":1.5}`), "config.maxLookAheadDays"},
		{"maxLookAheadDays string", schemas.TypeAvailability, ruleIn(ok, `{"maxLookAheadDays":"7"}`), "config.maxLookAheadDays"},
		{"maxLookAheadDays over a year", schemas.TypeAvailability, ruleIn(ok, `{"maxLookAheadDays":366}`), "config.maxLookAheadDays"},
		{"vacanciesUnder negative", schemas.TypeAvailability, ruleIn(ok, `{"vacanciesUnder":-1}`), "config.vacanciesUnder"},
		{"vacanciesUnder not an integer", schemas.TypeAvailability, ruleIn(ok, `{"vacanciesUnder":true}`), "config.vacanciesUnder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateRule(tt.typ, tt.in, URLPolicy{})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if got := fieldOf(err); got != tt.field {
				t.Fatalf("field = %q, want %q (err %v)", got, tt.field, err)
			}
		})
	}
}

func TestURLPolicy_AllowSwitchesAdmitHTTPAndPrivateTargets(t *testing.T) {
	tests := []struct {
		url                string
		allowHTTP, private bool
		ok                 bool
	}{
		{"https://hooks.example.com/supplier", false, false, true},
		{"https://hooks.example.com:8443/a?b=c", false, false, true},
		{"https://93.184.216.34/x", false, false, true},
		{"https://[2606:2800:220:1::]/x", false, false, true},
		{"HTTPS://hooks.example.com/x", false, false, true},
		{"http://hooks.example.com/x", false, false, false},
		{"http://hooks.example.com/x", true, false, true},
		{"http://127.0.0.1:9000/x", true, false, false},
		{"http://127.0.0.1:9000/x", true, true, true},
		{"https://localhost/x", false, true, true},
		{"https://192.168.1.10/x", false, true, true},
		{"https://100.64.0.1/x", false, false, false},
		{"https://[fe80::1%25eth0]/x", false, false, false},
		{"https://0.0.0.0/x", false, false, false},
		{"https://app.localhost/x", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := URLPolicy{AllowHTTP: tt.allowHTTP, AllowPrivate: tt.private}.Check(tt.url)
			if (err == nil) != tt.ok {
				t.Fatalf("Check(%q) = %v, want ok=%v", tt.url, err, tt.ok)
			}
		})
	}
}

// Registration admits a literal address exactly when the dispatcher's
// client would send to it (outbound.PublicAddr, R6).
func TestURLPolicy_LiteralAddressesFollowTheDeliveryRule(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"93.184.216.34", true}, {"8.8.8.8", true}, {"2606:4700::1111", true},
		{"127.0.0.1", false}, {"10.0.0.1", false}, {"172.16.5.4", false}, {"192.168.0.1", false},
		{"169.254.169.254", false}, {"0.0.0.0", false}, {"224.0.0.1", false}, {"255.255.255.255", false},
		{"100.64.1.1", false}, {"::1", false}, {"::", false}, {"fe80::1", false}, {"fd00::1", false},
		{"::ffff:10.0.0.1", false}, {"64:ff9b::a00:1", false}, {"64:ff9b::808:808", true}, {"fe80::1%eth0", false}, {"2001:4860::1%eth0", false},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := outbound.PublicAddr(a); got != tt.want {
			t.Fatalf("outbound.PublicAddr(%s) = %v, want %v", tt.addr, got, tt.want)
		}
		host := a.String()
		if a.Is6() {
			host = "[" + strings.ReplaceAll(host, "%", "%25") + "]"
		}
		u := "https://" + host + "/hook"
		if err := (URLPolicy{}).Check(u); (err == nil) != tt.want {
			t.Errorf("Check(%q) = %v, want ok=%v", u, err, tt.want)
		}
	}
}

func TestRule_MarshalsTheSpecShapePerType(t *testing.T) {
	tests := []struct {
		typ        string
		configKeys []string
	}{
		{schemas.TypeChannelBinding, []string{"operations", "productIDs", "supplierIDs"}},
		{schemas.TypeSupplier, []string{"operations", "supplierIDs"}},
		{schemas.TypeProduct, []string{"operations", "productIDs", "supplierIDs"}},
		{schemas.TypeRate, []string{"operations", "productIDs", "rateIDs", "supplierIDs"}},
		{schemas.TypeAvailability, []string{"maxLookAheadDays", "productIDs", "rateIDs", "supplierIDs", "vacanciesUnder"}},
		{schemas.TypePriceSchedule, []string{"maxLookAheadDays", "productIDs", "rateIDs", "supplierIDs"}},
		{schemas.TypeBooking, []string{"operations", "productIDs", "rateIDs", "supplierIDs"}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			rule, err := ValidateRule(tt.typ, ruleIn("https://hooks.example.com/x", ""), URLPolicy{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(rule)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"id", "url", "disabled", "securityKey", "createdOn", "updatedOn", "config"} {
				if _, ok := got[k]; !ok {
					t.Fatalf("%s missing in %s", k, b)
				}
			}
			var config map[string]json.RawMessage
			if err := json.Unmarshal(got["config"], &config); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range config {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !reflect.DeepEqual(keys, tt.configKeys) {
				t.Fatalf("config keys = %v, want %v (%s)", keys, tt.configKeys, got["config"])
			}
			if string(config["supplierIDs"]) != "[]" {
				t.Fatalf("an absent filter renders as [], got %s", config["supplierIDs"])
			}
		})
	}
}

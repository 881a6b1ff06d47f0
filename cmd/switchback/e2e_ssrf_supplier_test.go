package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/outbound/outboundtest"
)

// The supplier SSRF tests are issue 18's operator cases over the binary:
// a supplier's connection.baseUrl is an address the operator chooses, and
// the booking-system synchronization, change notifications and reseller
// reads, holds, bookings and cancels all call it. On the default settings
// a literal loopback, private, link-local, metadata, CGNAT, IPv4-mapped or
// numeric address, localhost and plain http are refused when the supplier
// is written (400 on connection.baseUrl); a name resolving to loopback is
// accepted there and refused at every call when connecting (the outbound
// policy's dialer), with no connection made, whether or not anything
// listens, and the cron report and change notification say "refused by
// the outbound policy" in the same words for every such target. With the
// allow settings on the same targets are accepted and reached (the
// positive control), a redirect is the booking system's answer ("answered
// status 307"), never followed. Only this machine is ever dialled.

func TestE2E_SSRFSuppliersRefusedOnDefaultSettings(t *testing.T) {
	runSupplierSSRF(t, false)
}

func TestE2E_SSRFSuppliersAllowedWhenConfigured(t *testing.T) {
	runSupplierSSRF(t, true)
}

// supplierSSRFCases are the baseUrls judged when a supplier is written.
var supplierSSRFCases = []ssrfRegistrationCase{
	{name: "public name (control)", url: "https://bookings.example.com/v2"},
	{name: "loopback", url: "https://127.0.0.1:8443/v2", refused: true},
	{name: "loopback, plain http", url: "http://127.0.0.1:1/v2", refused: true},
	{name: "IPv6 loopback", url: "https://[::1]/v2", refused: true},
	{name: "private 10/8", url: "https://10.0.0.5/v2", refused: true},
	{name: "private 172.16/12", url: "https://172.16.0.1/v2", refused: true},
	{name: "private 192.168/16", url: "https://192.168.1.10/v2", refused: true},
	{name: "cloud metadata", url: "http://169.254.169.254/latest/meta-data", refused: true},
	{name: "cloud metadata over https", url: "https://169.254.169.254/latest", refused: true},
	{name: "IPv6 metadata (ULA)", url: "https://[fd00:ec2::254]/", refused: true},
	{name: "IPv4-mapped loopback", url: "https://[::ffff:127.0.0.1]/v2", refused: true},
	{name: "IPv4-mapped metadata", url: "https://[::ffff:169.254.169.254]/", refused: true},
	{name: "NAT64 of metadata", url: "https://[64:ff9b::a9fe:a9fe]/", refused: true},
	{name: "link-local", url: "https://169.254.1.1/", refused: true},
	{name: "CGNAT", url: "https://100.64.0.1/", refused: true},
	{name: "unspecified", url: "https://0.0.0.0/", refused: true},
	{name: "localhost", url: "https://localhost:8443/v2", refused: true},
	{name: "plain http, public name", url: "http://bookings.example.com/v2", refused: true},
	{name: "decimal loopback", url: "https://2130706433/v2", invalid: true},
	{name: "hex loopback", url: "https://0x7f000001/v2", invalid: true},
	{name: "short loopback", url: "https://127.1/v2", invalid: true},
	{name: "octal loopback", url: "https://0177.0.0.1/v2", invalid: true},
}

func supplierBody(id, kind, baseURL string) string {
	creds := `{"bearerToken":"bs-token-` + id + `"}`
	if kind == "partner" {
		creds = `{"apiKey":"pk","apiSecret":"ps-` + id + `"}`
	}
	return fmt.Sprintf(`{"id":%q,"name":"SSRF %s","code":%q,"connection":{"kind":%q,"baseUrl":%q,"credentials":%s}}`,
		id, id, strings.ToUpper(id), kind, baseURL, creds)
}

func runSupplierSSRF(t *testing.T, allow bool) {
	flag := fmt.Sprint(allow)
	p := startBinary(t, "SWITCHBACK_OUTBOUND_ALLOW_HTTP="+flag, "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE="+flag)
	api := "http://" + p.api
	operator := client{t, api, "demo-operator", "demo-operator-secret"}
	reseller := client{t, api, "demo-reseller", "demo-reseller-secret"}
	wrong := 0
	defer func() {
		t.Logf("RELIABILITY fault=supplier-ssrf allow=%v registration_urls=%d wrong=%d", allow, len(supplierSSRFCases), wrong)
	}()

	t.Run("registration", func(t *testing.T) {
		// A supplier written with a public name, then changed (PUT) to
		// each target: both writes are judged alike.
		if status, body, _ := operator.do("POST", "/channel/v1.2/suppliers", supplierBody("ssrf-kept", "bookingsystem", "https://bookings.example.com/v2")); status != 201 {
			t.Fatalf("supplier with a public name: %d %v", status, body)
		}
		for i, c := range supplierSSRFCases {
			ok := t.Run(c.name, func(t *testing.T) {
				want := c.invalid || (c.refused && !allow)
				for _, kind := range []string{"bookingsystem", "partner", "octo"} {
					id := fmt.Sprintf("ssrf-reg-%d-%s", i, kind)
					status, got, _ := operator.do("POST", "/channel/v1.2/suppliers", supplierBody(id, kind, c.url))
					checkBaseURLRefusal(t, "POST "+kind, c.url, status, got, want)
					if status == 201 {
						// Accepted (allowed): deleted again so that nothing
						// synchronizes against it.
						if status, body, _ := operator.do("DELETE", "/channel/v1.2/suppliers/"+id, ""); status != 204 {
							t.Fatalf("delete %s: %d %v", id, status, body)
						}
					}
				}
				status, got, _ := operator.do("PUT", "/channel/v1.2/suppliers/ssrf-kept", supplierBody("ssrf-kept", "bookingsystem", c.url))
				checkBaseURLRefusal(t, "PUT", c.url, status, got, want)
				if status == 200 {
					if status, body, _ := operator.do("PUT", "/channel/v1.2/suppliers/ssrf-kept", supplierBody("ssrf-kept", "bookingsystem", "https://bookings.example.com/v2")); status != 200 {
						t.Fatalf("restore: %d %v", status, body)
					}
				}
			})
			if !ok {
				wrong++
			}
		}
	})

	name := outboundtest.LoopbackName()
	if name == "" {
		t.Log("/etc/hosts maps no name but localhost to loopback: the connect-time cases need one")
		p.stop(t)
		return
	}
	listening := outboundtest.NewServer(t, nil)
	closed := outboundtest.NewServer(t, nil)
	closedPort := closed.Port()
	closed.Close()
	scheme := "https"
	if allow {
		scheme = "http" // the positive control reaches the plain-http listener
	}

	t.Run("booking system named to loopback", func(t *testing.T) {
		reports := map[string]string{}
		for _, tc := range []struct{ sup, port string }{{"ssrf-bs-open", listening.Port()}, {"ssrf-bs-closed", closedPort}} {
			base := fmt.Sprintf("%s://%s:%s/v2", scheme, name, tc.port)
			if status, body, _ := operator.do("POST", "/channel/v1.2/suppliers", supplierBody(tc.sup, "bookingsystem", base)); status != 201 {
				t.Fatalf("supplier %s at a name (judged when connecting): %d %v", base, status, body)
			}
			// Its first synchronization runs at once: its report.
			reports[tc.sup] = strings.ReplaceAll(cronReportErrors(t, operator, tc.sup), tc.sup, "<supplier>")
		}
		t.Logf("cron report errors: %v", reports)
		open, shut := reports["ssrf-bs-open"], reports["ssrf-bs-closed"]
		if allow {
			if listening.Requests.Load() == 0 {
				t.Errorf("with the allow settings the booking system was never called (positive control)")
			}
			if !strings.Contains(shut, "could not be reached") || strings.Contains(shut, closedPort) || strings.Contains(shut, "refused") {
				t.Errorf("a closed port reads %q, want \"could not be reached\" and nothing of the network", shut)
			}
			return
		}
		if !strings.Contains(open, "refused by the outbound policy") || open != shut {
			t.Errorf("reports %q and %q: want the same refusal whatever listens", open, shut)
		}
		if strings.Contains(open, "127.0.0.1") || strings.Contains(open, listening.Port()) {
			t.Errorf("the report %q names the address", open)
		}
	})

	t.Run("partner named to loopback", func(t *testing.T) {
		const sup, prod = "ssrf-partner", "ssrf-prod"
		base := fmt.Sprintf("%s://%s:%s", scheme, name, listening.Port())
		path := "/channel/v1.2/suppliers/" + sup + "/products/" + prod
		before := listening.Requests.Load()
		for _, s := range []struct{ method, path, body string }{
			{"POST", "/channel/v1.2/suppliers", strings.Replace(catalogtest.SupplierBody(sup, "Named", "SN", "pk", "ps-named"), "https://partner.example.com/api/", base, 1)},
			{"POST", "/channel/v1.2/suppliers/" + sup + "/products", catalogtest.ProductBody(prod, "P", "d")},
			{"POST", path + "/rates", catalogtest.RateBody("rate-a", "Adult")},
			{"POST", path + "/channels/" + app.DemoChannelID, `{}`},
		} {
			if status, body, _ := operator.do(s.method, s.path, s.body); status != 201 {
				t.Fatalf("%s %s: %d %v", s.method, s.path, status, body)
			}
		}
		// A reseller's read calls the partner (GET).
		day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2)
		read := fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", sup, prod, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))
		status, body, _ := reseller.do("GET", read, "")
		// A change notification calls it too; its errors are the
		// operator's words of what happened.
		status2, created, _ := operator.do("POST", fmt.Sprintf("/operator/v2/notifications?supplierId=%s&productId=%s", sup, prod), "")
		if status2 != 201 {
			t.Fatalf("change notification: %d %v", status2, created)
		}
		id := nestedString(created, "notification", "id")
		var n map[string]any
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, got, _ := operator.do("GET", "/operator/v2/notifications/"+id, "")
			n, _ = got["notification"].(map[string]any)
			if s := fmt.Sprint(n["status"]); s != "WAITING" && s != "WORKING" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("change notification %s not finished: %v", id, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
		errs, _ := json.Marshal(n["errors"])
		t.Logf("reseller read: %d %v; change notification: %v", status, body, n)
		if allow {
			if listening.Requests.Load() == before {
				t.Errorf("with the allow settings the partner was never called (positive control)")
			}
			return
		}
		if status != http.StatusServiceUnavailable || body["code"] != "UNAVAILABLE" {
			t.Errorf("reseller read of a refused partner: %d %v, want 503 UNAVAILABLE", status, body)
		}
		if n["status"] != "FAILED" || !strings.Contains(string(errs), "refused by the outbound policy") || strings.Contains(string(errs), listening.Port()) {
			t.Errorf("change notification %v, want FAILED saying refused by the outbound policy, no address", n)
		}
	})

	if allow {
		t.Run("redirect is the answer", func(t *testing.T) {
			target := outboundtest.NewServer(t, nil)
			redirect := outboundtest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			const sup = "ssrf-redirect"
			if status, body, _ := operator.do("POST", "/channel/v1.2/suppliers", supplierBody(sup, "bookingsystem", redirect.URL+"/v2")); status != 201 {
				t.Fatalf("supplier: %d %v", status, body)
			}
			errs := cronReportErrors(t, operator, sup)
			if !strings.Contains(errs, "answered status 307") {
				t.Errorf("report errors %q, want the 307 as the answer", errs)
			}
			if n := target.Conns.Load(); n != 0 {
				t.Errorf("the redirect target got %d connections: a redirect was followed", n)
			}
		})
	} else if n := listening.Conns.Load(); n != 0 {
		t.Errorf("the loopback listener accepted %d connections on the default settings, want 0", n)
		wrong++
	}
	p.stop(t)
}

// checkBaseURLRefusal wants a supplier write accepted, or refused with
// 400 INVALID_FIELD on connection.baseUrl without the url in the answer.
func checkBaseURLRefusal(t *testing.T, what, url string, status int, got map[string]any, refused bool) {
	t.Helper()
	if !refused {
		if status != 201 && status != 200 {
			t.Errorf("%s supplier with baseUrl %s: %d %v, want it accepted", what, url, status, got)
		}
		return
	}
	if status != 400 || got["code"] != "INVALID_FIELD" || nestedString(got, "data", "field") != "connection.baseUrl" {
		t.Errorf("%s supplier with baseUrl %s: %d %v, want 400 INVALID_FIELD on connection.baseUrl", what, url, status, got)
	}
	if raw, _ := json.Marshal(got); strings.Contains(string(raw), url) {
		t.Errorf("%s: the refusal echoes the url: %s", what, raw)
	}
}

// cronReportErrors waits for the first cron report of supplier sid and
// returns its error report as JSON ("" when it has none).
func cronReportErrors(t *testing.T, operator client, sid string) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, _, list := operator.do("GET", "/operator/v2/cron/reports?externalSystemID="+sid, "")
		if len(list) > 0 {
			id := fmt.Sprint(int64(list[0].(map[string]any)["id"].(float64)))
			status, full, _ := operator.do("GET", "/operator/v2/cron/reports/"+id, "")
			if status != 200 {
				t.Fatalf("GET cron report %s: %d %v", id, status, full)
			}
			if full["errorReport"] == nil {
				return ""
			}
			raw, _ := json.Marshal(full["errorReport"])
			return string(raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cron report of %s within 60 s", sid)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

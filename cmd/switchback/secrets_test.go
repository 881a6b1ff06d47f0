package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/bench/bookingsim"
	"github.com/switchbackhq/switchback/bench/partnersim"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/query/httpapi/httpapitest"
)

// TestBinary_SecretsNeverInLogsOrMetrics runs the binary outside demo mode
// at debug level and exercises the paths that handle secrets: the
// bootstrap admin, created principals, a supplier's partner credentials
// (used on a partner call, and refused once by the partner), a booking
// system's Bearer token (used by a change notification, then refused),
// rules' securityKeys (a signed test notification), and failing requests. None of
// the secrets may appear in the process's logs, its banner, or /metrics.
func TestBinary_SecretsNeverInLogsOrMetrics(t *testing.T) {
	const adminSecret = "bootstrap-admin-secret-7f3a9c"
	const partnerKey, partnerSecret = "partner-key-5d1e8b", "partner-secret-9c4f2a"
	sim := partnersim.New(partnersim.Config{APIKey: partnerKey, APISecret: partnerSecret, Rates: map[string][]string{"prod-sec": {"rate-a"}}})
	ps := httptest.NewServer(sim)
	t.Cleanup(ps.Close)

	p := startBinary(t, "SWITCHBACK_DEMO=false", "SWITCHBACK_LOG_LEVEL=debug", "SWITCHBACK_ADMIN_KEY=boot-admin",
		"SWITCHBACK_ADMIN_SECRET="+adminSecret, "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true")
	sk := newSink(t)
	api := "http://" + p.api
	admin := client{t, api, "boot-admin", adminSecret}
	secrets := []string{adminSecret, partnerKey, partnerSecret}

	status, ch, _ := admin.do("POST", "/admin/v1/channels", `{"name":"Secret channel","companyName":"Co"}`)
	if status != 201 {
		t.Fatalf("create channel: %d %v", status, ch)
	}
	mk := func(body string) client {
		t.Helper()
		status, got, _ := admin.do("POST", "/admin/v1/principals", body)
		if status != 201 {
			t.Fatalf("create principal: %d %v", status, got)
		}
		secrets = append(secrets, got["secret"].(string))
		return client{t, api, got["key"].(string), got["secret"].(string)}
	}
	operator := mk(`{"role":"operator","name":"Sec operator"}`)
	reseller := mk(fmt.Sprintf(`{"role":"reseller","name":"Sec reseller","channelId":%q}`, ch["id"]))

	const sup, prod = "sup-sec", "prod-sec"
	base := "/channel/v1.2/suppliers/" + sup + "/products/" + prod
	supplier := strings.Replace(catalogtest.SupplierBody(sup, "Secret Tours", "SEC", partnerKey, partnerSecret), "https://partner.example.com/api/", ps.URL, 1)
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/channel/v1.2/suppliers", supplier},
		{"POST", "/channel/v1.2/suppliers/" + sup + "/products", catalogtest.ProductBody(prod, "Vault tour", "d")},
		{"POST", base + "/rates", catalogtest.RateBody("rate-a", "Adult")},
		{"POST", base + "/channels/" + ch["id"].(string), `{"rateIds":["rate-a"]}`},
	} {
		if status, body, _ := operator.do(s.method, s.path, s.body); status != 201 {
			t.Fatalf("%s %s: %d %v", s.method, s.path, status, body)
		}
	}
	// The supplier as the operator reads it: credentials never in clear.
	if _, body, _ := operator.do("GET", "/channel/v1.2/suppliers/"+sup, ""); strings.Contains(fmt.Sprint(body), partnerSecret) || strings.Contains(fmt.Sprint(body), partnerKey) {
		t.Errorf("supplier read shows the partner credentials: %v", body)
	}

	status, rule, _ := reseller.do("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, sk.url+"/supplier"))
	if status != 201 {
		t.Fatalf("create rule: %d %v", status, rule)
	}
	secrets = append(secrets, rule["securityKey"].(string))
	if status, body, _ := reseller.do("POST", "/registry/v1.1/supplier/test/"+rule["id"].(string), `{"supplierID":"s","operation":"updated"}`); status != 200 {
		t.Fatalf("test notification: %d %v", status, body)
	}

	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2)
	avail := fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", sup, prod, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, _, _ = reseller.do("GET", avail, "")
		if status == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status != 200 {
		t.Fatalf("availability read: %d", status)
	}
	// The partner now refuses our credentials: an error path that must not
	// echo them either.
	sim.Update(func(c *partnersim.Config) { c.APISecret = "rotated" })
	if status, body, _ := reseller.do("GET", avail+"&rate_id=rate-a&x=1", ""); strings.Contains(fmt.Sprint(body), partnerSecret) {
		t.Errorf("error answer %d echoes the partner secret: %v", status, body)
	}
	// A booking-system supplier (spec doc 3): its Bearer token is used by a
	// change notification's refresh, then refused by the booking system
	// (an error path that must not echo it either).
	const bsToken = "bs-bearer-token-3e8a1f"
	secrets = append(secrets, bsToken)
	bsim := bookingsim.New(bookingsim.Config{APIKey: bsToken})
	bs := httptest.NewServer(bsim)
	t.Cleanup(bs.Close)
	const bsSup, bsProd = "S1", "S1-P1"
	bsBase := "/channel/v1.2/suppliers/" + bsSup + "/products/" + bsProd
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/channel/v1.2/suppliers", `{"id":"S1","name":"Booking System Tours","code":"BST","connection":{"kind":"bookingsystem","baseUrl":"` + bs.URL + `","credentials":{"bearerToken":"` + bsToken + `"}}}`},
		{"POST", "/channel/v1.2/suppliers/" + bsSup + "/products", catalogtest.ProductBody(bsProd, "Glacier", "d")},
		{"POST", bsBase + "/rates", catalogtest.RateBody("S1-P1-O1", "Option 1")},
	} {
		if status, body, _ := operator.do(s.method, s.path, s.body); status != 201 {
			t.Fatalf("%s %s: %d %v", s.method, s.path, status, body)
		}
	}
	if _, body, _ := operator.do("GET", "/channel/v1.2/suppliers/"+bsSup, ""); strings.Contains(fmt.Sprint(body), bsToken) {
		t.Errorf("supplier read shows the booking system's token: %v", body)
	}
	changeRequest := func(want string) {
		t.Helper()
		status, body, _ := operator.do("POST", "/operator/v2/notifications?supplierId="+bsSup+"&productId="+bsProd, "")
		if status != 201 {
			t.Fatalf("POST notifications: %d %v", status, body)
		}
		id := body["notification"].(map[string]any)["id"].(string)
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, got, _ := operator.do("GET", "/operator/v2/notifications/"+id, "")
			n, _ := got["notification"].(map[string]any)
			if st, _ := n["status"].(string); st != "WAITING" && st != "WORKING" && st != "" {
				if st != want {
					t.Fatalf("change notification %s: %v, want %s", id, n, want)
				}
				if strings.Contains(fmt.Sprint(got), bsToken) {
					t.Errorf("change notification answer echoes the booking system's token: %v", got)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("change notification %s not finished: %v", id, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	changeRequest("SUCCEEDED")
	bsim.Update(func(c *bookingsim.Config) { c.APIKey = "rotated" })
	changeRequest("FAILED")

	// Wrong and missing credentials.
	_, _, _ = client{t, api, "boot-admin", "not-" + adminSecret}.do("GET", "/admin/v1/principals", "")

	// Malformed requests of every kind (issue 18), with the reseller's
	// and the admin's credentials: fasthttp would log their raw headers.
	malformed := 0
	for _, c := range []client{reseller, admin} {
		for _, m := range httpapitest.MalformedRequests("/registry/v1.1/supplier", c.key, c.secret) {
			got, err := httpapitest.Send(p.api, m.Raw)
			if err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
			if strings.Contains(got, c.secret) {
				t.Errorf("%s: the answer repeats the secret", m.Name)
			}
			malformed++
		}
	}

	resp, err := http.Get("http://" + p.ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.stop(t)

	outputs := map[string]string{"logs": p.stderr.String(), "banner": p.stdout.String(), "metrics": string(metrics)}
	if !strings.Contains(outputs["logs"], "level=DEBUG") {
		t.Fatalf("no debug logs captured: the check would prove nothing")
	}
	if n := strings.Count(outputs["logs"], "request rejected before routing"); n < malformed/2 {
		t.Fatalf("%d of %d malformed requests logged: the check would prove little", n, malformed)
	}
	leaks, size := 0, 0
	for where, text := range outputs {
		size += len(text)
		for _, s := range secrets {
			if strings.Contains(text, s) {
				leaks++
				t.Errorf("a secret (%.4s…) appears in the %s", s, where)
			}
		}
	}
	lines := strings.Count(outputs["logs"], "\n")
	t.Logf("RELIABILITY fault=secrets-in-output secrets=%d outputs=%d bytes_searched=%d log_lines=%d malformed_requests=%d leaks=%d",
		len(secrets), len(outputs), size, lines, malformed, leaks)
}

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/platform/outbound/outboundtest"
	"github.com/switchbackhq/switchback/schemas"
)

// The SSRF tests are issue 9's "webhook SSRF" over the built binary:
// private, loopback, link-local and metadata addresses, names resolving to
// them, and redirects to them are refused unless the allow settings are
// on. A webhook url's literal address is judged when the rule is written
// (400 INVALID_FIELD on url, internal/registry URLPolicy); a name is judged
// when the dispatcher connects (internal/webhook refuses the resolved
// address in the dialer's Control, so /etc/hosts, DNS or a changed answer
// cannot slip past); and no redirect is ever followed (a 3xx is the
// subscriber's answer, a failed attempt). The same table runs against a
// binary on the default settings and against one with
// SWITCHBACK_WEBHOOK_ALLOW_HTTP and _ALLOW_PRIVATE on, where the same
// rules are accepted and the same deliveries arrive: the positive control.
//
// Every target is on this machine's loopback: the sinks serve https with a
// certificate made here, trusted by the binary through SSL_CERT_FILE, so
// that the default binary (https only) reaches them as it would a public
// host — were their address public.

func TestE2E_SSRFRefusedOnDefaultSettings(t *testing.T) {
	runSSRF(t, false)
}

func TestE2E_SSRFAllowedWhenConfigured(t *testing.T) {
	runSSRF(t, true)
}

// ssrfRegistrationCase is one webhook url and what registration answers.
type ssrfRegistrationCase struct {
	name string
	url  string
	// refused: 400 on the default settings; invalid: 400 on both (a host
	// that is no valid name nor address: resolvers read such numeric forms
	// as addresses).
	refused, invalid bool
}

var ssrfRegistrationCases = []ssrfRegistrationCase{
	{name: "public name (control)", url: "https://hooks.example.com/hook"},
	{name: "loopback", url: "https://127.0.0.1/hook", refused: true},
	{name: "loopback with port", url: "https://127.0.0.1:8443/hook", refused: true},
	{name: "loopback elsewhere in 127/8", url: "https://127.10.20.30/hook", refused: true},
	{name: "IPv6 loopback", url: "https://[::1]/hook", refused: true},
	{name: "private 10/8", url: "https://10.0.0.5/hook", refused: true},
	{name: "private 172.16/12 low", url: "https://172.16.0.1/hook", refused: true},
	{name: "private 172.16/12 high", url: "https://172.31.255.254/hook", refused: true},
	{name: "private 192.168/16", url: "https://192.168.1.10/hook", refused: true},
	{name: "cloud metadata", url: "https://169.254.169.254/latest/meta-data/", refused: true},
	{name: "link-local", url: "https://169.254.1.1/hook", refused: true},
	{name: "IPv6 link-local", url: "https://[fe80::1]/hook", refused: true},
	{name: "IPv6 link-local with zone", url: "https://[fe80::1%25eth0]/hook", refused: true},
	{name: "IPv6 unique local", url: "https://[fd00::1]/hook", refused: true},
	{name: "IPv4-mapped loopback", url: "https://[::ffff:127.0.0.1]/hook", refused: true},
	{name: "IPv4-mapped metadata", url: "https://[::ffff:169.254.169.254]/hook", refused: true},
	{name: "NAT64 of metadata", url: "https://[64:ff9b::a9fe:a9fe]/hook", refused: true},
	{name: "unspecified", url: "https://0.0.0.0/hook", refused: true},
	{name: "CGNAT", url: "https://100.64.0.1/hook", refused: true},
	{name: "localhost", url: "https://localhost/hook", refused: true},
	{name: "localhost upper case, trailing dot", url: "https://LOCALHOST./hook", refused: true},
	{name: "subdomain of localhost", url: "https://api.localhost/hook", refused: true},
	{name: "plain http", url: "http://hooks.example.com/hook", refused: true},
	{name: "short loopback form", url: "https://127.1/hook", invalid: true},
	{name: "decimal loopback", url: "https://2130706433/hook", invalid: true},
	{name: "hex loopback", url: "https://0x7f000001/hook", invalid: true},
	{name: "octal loopback", url: "https://0177.0.0.1/hook", invalid: true},
}

// ssrfDeliveryCase is one rule whose url needs resolution or a response to
// judge, and what becomes of a notification sent to it.
type ssrfDeliveryCase struct {
	name string
	path string // on the TLS sink
	// host: "name" (a name /etc/hosts maps to loopback), "localhost" or
	// "literal" (127.0.0.1, refused at registration by default).
	host string
	// redirectTo: the sink answers 307 to this url instead of 200.
	redirectTo func(landing string) string
}

var ssrfDeliveryCases = []ssrfDeliveryCase{
	{name: "name resolving to loopback", path: "/by-name", host: "name"},
	{name: "localhost", path: "/by-localhost", host: "localhost"},
	{name: "literal loopback", path: "/by-literal", host: "literal"},
	{name: "redirect to a plain-http loopback target", path: "/redirect-plain", host: "name",
		redirectTo: func(landing string) string { return landing + "/landed" }},
	{name: "redirect to the metadata address", path: "/redirect-metadata", host: "name",
		redirectTo: func(string) string { return "http://169.254.169.254/latest/meta-data/" }},
}

func runSSRF(t *testing.T, allow bool) {
	name := outboundtest.LoopbackName()
	landing := newSink(t) // where the redirects point; must never be reached
	redirects := map[string]string{}
	for _, c := range ssrfDeliveryCases {
		if c.redirectTo != nil {
			redirects[c.path] = c.redirectTo(landing.url)
		}
	}
	names := []string{"localhost"}
	if name != "" {
		names = append(names, name)
	}
	ts, caFile := newTLSSink(t, names, redirects)

	// The defaults of the allow settings are false (internal/platform/config); they
	// are set here anyway so that an environment setting them cannot turn
	// the default run into a permissive one.
	flag := fmt.Sprint(allow)
	p := startBinary(t, "SSL_CERT_FILE="+caFile,
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP="+flag, "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE="+flag,
		"SWITCHBACK_DISPATCH_RETRY_SCHEDULE=100ms,100ms")
	api := "http://" + p.api
	admin := client{t, api, "demo-admin", "demo-admin-secret"}
	subscriber := func(label string) (client, string) {
		t.Helper()
		c, got := admin.principal(fmt.Sprintf(`{"role":"reseller","name":%q,"channelId":%q}`, label, app.DemoChannelID))
		return c, got["id"].(string)
	}

	t.Run("registration", func(t *testing.T) {
		res, _ := subscriber("registration checks")
		const kept = "https://hooks.example.com/kept"
		status, rule, _ := res.do("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, kept))
		if status != 201 {
			t.Fatalf("rule with a public name: %d %v", status, rule)
		}
		id := rule["id"].(string)
		for _, c := range ssrfRegistrationCases {
			t.Run(c.name, func(t *testing.T) {
				want := c.invalid || (c.refused && !allow)
				// A new rule (POST) and a changed one (PUT) are checked alike.
				status, got, _ := res.do("POST", "/registry/v1.1/product", fmt.Sprintf(`{"url":%q}`, c.url))
				ssrfCheckRegistration(t, "POST", c.url, status, got, want)
				if status == 201 {
					if status, got, _ := res.do("DELETE", "/registry/v1.1/product/"+got["id"].(string), ""); status != 200 {
						t.Fatalf("delete the accepted rule: %d %v", status, got)
					}
				}
				status, got, _ = res.do("PUT", "/registry/v1.1/supplier", fmt.Sprintf(`{"id":%q,"url":%q}`, id, c.url))
				ssrfCheckRegistration(t, "PUT", c.url, status, got, want)
				if status == 200 {
					if status, got, _ := res.do("PUT", "/registry/v1.1/supplier", fmt.Sprintf(`{"id":%q,"url":%q}`, id, kept)); status != 200 {
						t.Fatalf("restore the rule: %d %v", status, got)
					}
				}
			})
		}
		// A refused PUT changed nothing.
		if _, _, rules := res.do("GET", "/registry/v1.1/supplier", ""); len(rules) != 1 || rules[0].(map[string]any)["url"] != kept {
			t.Errorf("after the refusals the rule is %v, want its url %s", rules, kept)
		}
	})

	ch := clickHouseUp(t, p)
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	failedDeliveryCases := 0
	defer func() {
		landing.mu.Lock()
		reached := len(landing.got)
		landing.mu.Unlock()
		t.Logf("RELIABILITY fault=webhook-ssrf allow=%v registration_urls=%d delivery_cases=%d delivery_cases_wrong=%d redirect_target_reached=%d",
			allow, len(ssrfRegistrationCases), len(ssrfDeliveryCases), failedDeliveryCases, reached)
	}()
	for i, c := range ssrfDeliveryCases {
		ok := t.Run("delivery/"+c.name, func(t *testing.T) {
			if c.host == "name" && name == "" {
				t.Skip("/etc/hosts maps no name but localhost to loopback only: resolution is not exercised without DNS")
			}
			host := map[string]string{"name": name, "localhost": "localhost", "literal": "127.0.0.1"}[c.host]
			url := fmt.Sprintf("https://%s:%d%s", host, port, c.path)
			res, subID := subscriber("ssrf " + c.name)
			status, rule, _ := res.do("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, url))
			if c.host != "name" && !allow {
				// The literal address and localhost never get as far as a
				// delivery: refused when the rule is written.
				ssrfCheckRegistration(t, "POST", url, status, rule, true)
				return
			}
			if status != 201 {
				t.Fatalf("rule %s: %d %v, want 201 (a name is judged when connecting)", url, status, rule)
			}
			ruleID, key := rule["id"].(string), rule["securityKey"].(string)
			reachable := allow // the first hop: refused at connect by default
			redirect := c.redirectTo != nil

			// The test endpoint sends at once through the same client.
			status, body, _ := res.do("POST", "/registry/v1.1/supplier/test/"+ruleID, `{"supplierID":"ssrf-test"}`)
			switch {
			case reachable && !redirect:
				if status != 200 {
					t.Errorf("test notification: %d %v, want 200", status, body)
				}
			case reachable && redirect:
				if status != 500 || body["code"] != "INTERNAL" || nestedString(body, "data", "subscriberStatus") != "307" {
					t.Errorf("test notification to a redirecting sink: %d %v, want 500 with data.subscriberStatus 307 (not followed)", status, body)
				}
			default:
				if status != 500 || body["code"] != "INTERNAL" || nestedString(body, "data", "subscriberStatus") != "" {
					t.Errorf("test notification to a refused address: %d %v, want 500 INTERNAL without a subscriber status (nothing was sent)", status, body)
				}
			}
			t.Logf("test notification: %d %v", status, body)
			tests := len(ts.on(c.path))
			if want := map[bool]int{true: 1, false: 0}[reachable]; tests != want {
				t.Errorf("the sink received %d test POSTs, want %d", tests, want)
			}

			// A published notification goes through the dispatcher.
			deliveryID := fmt.Sprintf("ssrf-%v-%d-%d", allow, i, time.Now().UnixNano())
			publish(t, p.kafka, supplierNotification(deliveryID, subID, "ssrf-supplier"))
			if reachable && !redirect {
				got := ts.waitFor(t, c.path, tests+1, 20*time.Second)
				last := got[len(got)-1]
				if last.deliveryID != deliveryID {
					t.Errorf("delivered id %q, want %s", last.deliveryID, deliveryID)
				}
				specVerify(t, key, last)
			}
			if !ch {
				t.Log("ClickHouse parked: the delivery log is not checked")
				return
			}
			// The delivery log says how it ended; once it is final, nothing
			// more is sent.
			rows := ssrfDeliveryLog(t, res, deliveryID)
			last := rows[0]
			for _, r := range rows {
				if r.attempt > last.attempt {
					last = r
				}
			}
			t.Logf("delivery log of %s: %+v", deliveryID, rows)
			switch {
			case reachable && !redirect:
				if last.outcome != schemas.OutcomeDelivered || last.status != 200 {
					t.Errorf("delivery log: %+v, want delivered with 200", rows)
				}
			case reachable && redirect:
				for _, r := range rows {
					if r.status != 307 || r.outcome == schemas.OutcomeDelivered {
						t.Errorf("delivery log row %+v: want status 307 (the redirect, not followed), not delivered", r)
					}
				}
				if last.outcome != schemas.OutcomeFailed {
					t.Errorf("delivery log: %+v, want failed after the retries", rows)
				}
			default:
				if last.outcome != schemas.OutcomeFailed {
					t.Errorf("delivery log: %+v, want failed", rows)
				}
				for _, r := range rows {
					if r.status != 0 || !strings.Contains(r.err, "refused by the outbound policy") {
						t.Errorf("delivery log row %+v: want no status and the refusal (refused by the outbound policy)", r)
					}
				}
			}
			// The sink saw exactly the test and each logged attempt: none
			// where the address was refused.
			want := tests + last.attempt
			if !reachable {
				want = 0
			}
			if n := len(ts.on(c.path)); n != want {
				t.Errorf("the sink received %d POSTs on %s, want %d", n, c.path, want)
			}
			if redirect {
				landing.mu.Lock()
				n := len(landing.got)
				landing.mu.Unlock()
				if n != 0 {
					t.Errorf("the redirect target received %d requests: a redirect was followed", n)
				}
			}
		})
		if !ok {
			failedDeliveryCases++
		}
	}
	p.stop(t)
}

// ssrfCheckRegistration wants a rule write accepted, or refused with 400
// INVALID_FIELD on url.
func ssrfCheckRegistration(t *testing.T, method, url string, status int, got map[string]any, refused bool) {
	t.Helper()
	if !refused {
		if status != 201 && status != 200 {
			t.Errorf("%s rule with url %s: %d %v, want it accepted", method, url, status, got)
		}
		return
	}
	if status != 400 || got["code"] != "INVALID_FIELD" || nestedString(got, "data", "field") != "url" {
		t.Errorf("%s rule with url %s: %d %v, want 400 INVALID_FIELD on url", method, url, status, got)
	}
}

// ssrfLogRow is one attempt of the delivery log.
type ssrfLogRow struct {
	attempt, status int
	outcome, err    string
}

// ssrfDeliveryLog polls the subscriber's delivery log until the delivery has a
// final row (delivered or failed), and returns its rows, newest first.
func ssrfDeliveryLog(t *testing.T, c client, deliveryID string) []ssrfLogRow {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, got, _ := c.do("GET", "/registry/v1.1/deliveries?type=supplier&limit=100", "")
		items, _ := got["items"].([]any)
		var rows []ssrfLogRow
		final := false
		for _, it := range items {
			m := it.(map[string]any)
			if m["deliveryId"] != deliveryID {
				continue
			}
			r := ssrfLogRow{outcome: fmt.Sprint(m["outcome"]), err: fmt.Sprint(m["error"])}
			if v, ok := m["status"].(float64); ok {
				r.status = int(v)
			}
			if v, ok := m["attempt"].(float64); ok {
				r.attempt = int(v)
			}
			rows = append(rows, r)
			final = final || r.outcome == schemas.OutcomeDelivered || r.outcome == schemas.OutcomeFailed
		}
		if final {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s has no final row in the log within 30s: %v", deliveryID, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tlsSink is the TLS sink: a sink answering 200, or 307 to a location for
// the paths of redirects.
type tlsSink struct {
	*httptest.Server
	rec *sink
}

func (s tlsSink) on(path string) []received { return s.rec.on(path) }

func (s tlsSink) waitFor(t *testing.T, path string, n int, within time.Duration) []received {
	t.Helper()
	return s.rec.waitFor(t, path, n, within)
}

// newTLSSink serves https on 127.0.0.1 with a self-signed certificate for
// names and the loopback addresses, and returns the PEM file of that
// certificate, the one root the binary is to trust.
func newTLSSink(t *testing.T, names []string, redirects map[string]string) (tlsSink, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "switchback ssrf test sink"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		DNSNames:              names,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "sink-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}

	rec := &sink{scripts: map[string][]int{}, served: map[string]int{}}
	// The TLS sink answers by its redirects, not by a script.
	record := func(r *http.Request) { rec.record(r) }
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loc, ok := redirects[r.URL.Path]; ok {
			record(r)
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		record(r)
		w.WriteHeader(http.StatusOK)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	rec.url = srv.URL
	return tlsSink{Server: srv, rec: rec}, caFile
}

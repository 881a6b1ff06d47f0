package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
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
	// And never at rest in clear: see the dumps at the end.
	const adminSecret = "bootstrap-admin-secret-7f3a9c"
	const partnerKey, partnerSecret = "partner-key-5d1e8b", "partner-secret-9c4f2a"
	sim := partnersim.New(partnersim.Config{APIKey: partnerKey, APISecret: partnerSecret, Rates: map[string][]string{"prod-sec": {"rate-a"}}})
	ps := serve(t, sim)

	secretsKey := newSecretsKey(t)
	p := startBinary(t, "SWITCHBACK_DEMO=false", "SWITCHBACK_LOG_LEVEL=debug", "SWITCHBACK_ADMIN_KEY=boot-admin",
		"SWITCHBACK_ADMIN_SECRET="+adminSecret, "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true",
		"SWITCHBACK_SECRETS_KEY="+secretsKey)
	sk := newSink(t)
	api := "http://" + p.api
	admin := client{t, api, "boot-admin", adminSecret}
	secrets := []string{adminSecret, partnerKey, partnerSecret, secretsKey}

	ch := admin.must("POST", "/admin/v1/channels", `{"name":"Secret channel","companyName":"Co"}`, 201)
	mk := func(body string) client {
		t.Helper()
		c, _ := admin.principal(body)
		secrets = append(secrets, c.secret)
		return c
	}
	operator := mk(`{"role":"operator","name":"Sec operator"}`)
	reseller := mk(fmt.Sprintf(`{"role":"reseller","name":"Sec reseller","channelId":%q}`, ch["id"]))

	const sup, prod = "sup-sec", "prod-sec"
	supplier := partnerSupplier(sup, "Secret Tours", "SEC", partnerKey, partnerSecret, ps.URL)
	base := createProduct(operator, sup, prod, supplier, catalogtest.ProductBody(prod, "Vault tour", "d"),
		catalogtest.RateBody("rate-a", "Adult"))
	operator.must("POST", base+"/channels/"+ch["id"].(string), `{"rateIds":["rate-a"]}`, 201)
	// The supplier as the operator reads it: credentials never in clear.
	if _, body, _ := operator.do("GET", "/channel/v1.2/suppliers/"+sup, ""); strings.Contains(fmt.Sprint(body), partnerSecret) || strings.Contains(fmt.Sprint(body), partnerKey) {
		t.Errorf("supplier read shows the partner credentials: %v", body)
	}

	rule := reseller.must("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, sk.url+"/supplier"), 201)
	secrets = append(secrets, rule["securityKey"].(string))
	if status, body, _ := reseller.do("POST", "/registry/v1.1/supplier/test/"+rule["id"].(string), `{"supplierID":"s","operation":"updated"}`); status != 200 {
		t.Fatalf("test notification: %d %v", status, body)
	}

	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2)
	avail := fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", sup, prod, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))
	reseller.awaitGet("availability read", avail, 20*time.Second)
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
	bs := serve(t, bsim)
	const bsSup, bsProd = "S1", "S1-P1"
	createProduct(operator, bsSup, bsProd, `{"id":"S1","name":"Booking System Tours","code":"BST","connection":{"kind":"bookingsystem","baseUrl":"`+bs.URL+`","credentials":{"bearerToken":"`+bsToken+`"}}}`, catalogtest.ProductBody(bsProd, "Glacier", "d"),
		catalogtest.RateBody("S1-P1-O1", "Option 1"))
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

	metrics := p.metrics(t)

	// At rest (issue 18): every record of every topic and every value of
	// every Redis key, read back raw, holds no credential and no
	// securityKey in clear (they are sealed with SWITCHBACK_SECRETS_KEY).
	atRest := map[string]string{"kafka": dumpTopics(t, p.kafka), "redis": dumpRedis(t, p)}
	for where, text := range atRest {
		if len(text) < 1000 {
			t.Fatalf("the %s dump is %d bytes: the check would prove nothing", where, len(text))
		}
	}
	if !strings.Contains(atRest["kafka"], `"bearerToken":"sb:v1:`) || !strings.Contains(atRest["redis"], `"securityKey":"sb:v1:`) {
		t.Errorf("the dumps lack the sealed values: the secrets are not where the check looks")
	}
	atRestLeaks := 0
	for where, text := range atRest {
		for _, s := range []string{partnerKey, partnerSecret, bsToken, rule["securityKey"].(string), secretsKey} {
			if strings.Contains(text, s) {
				atRestLeaks++
				t.Errorf("a secret (%.4s…) is in clear in %s", s, where)
			}
		}
	}
	t.Logf("RELIABILITY fault=secrets-at-rest kafka_bytes=%d redis_bytes=%d leaks=%d", len(atRest["kafka"]), len(atRest["redis"]), atRestLeaks)
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

// newSecretsKey is a random SWITCHBACK_SECRETS_KEY.
func newSecretsKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// dumpTopics reads every record of every topic of the broker (kafka-go,
// as kcat would) and returns keys, headers and values as text.
func dumpTopics(t *testing.T, broker string) string {
	t.Helper()
	conn, err := kafka.Dial("tcp", broker)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := conn.ReadPartitions()
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, pt := range parts {
		lc, err := kafka.DialLeader(context.Background(), "tcp", broker, pt.Topic, pt.ID)
		if err != nil {
			t.Fatal(err)
		}
		first, last, err := lc.ReadOffsets()
		if err != nil {
			lc.Close()
			t.Fatal(err)
		}
		for off := first; off < last; {
			if _, err := lc.Seek(off, kafka.SeekAbsolute); err != nil {
				t.Fatal(err)
			}
			_ = lc.SetReadDeadline(time.Now().Add(10 * time.Second))
			m, err := lc.ReadMessage(16 << 20)
			if err != nil {
				off++ // a transaction marker or a compacted gap
				continue
			}
			fmt.Fprintf(&b, "%s/%d@%d %s ", pt.Topic, pt.ID, m.Offset, m.Key)
			for _, h := range m.Headers {
				fmt.Fprintf(&b, "%s=%s ", h.Key, h.Value)
			}
			b.Write(m.Value)
			b.WriteByte('\n')
			off = m.Offset + 1
		}
		lc.Close()
	}
	return b.String()
}

// dumpRedis reads every key of the binary's Redis (its address from the
// banner) by type and returns the keys and values as text.
func dumpRedis(t *testing.T, p *proc) string {
	t.Helper()
	m := regexp.MustCompile(`Redis\s+(redis://\S+)`).FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no Redis address in the banner:\n%s", p.stdout.String())
	}
	opt, err := redis.ParseURL(m[1])
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	var b strings.Builder
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		fmt.Fprintf(&b, "%s: ", k)
		switch typ, _ := rdb.Type(ctx, k).Result(); typ {
		case "string":
			b.WriteString(rdb.Get(ctx, k).Val())
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				fmt.Fprintf(&b, "%s=%s ", f, v)
			}
		case "set":
			b.WriteString(strings.Join(rdb.SMembers(ctx, k).Val(), " "))
		case "zset":
			b.WriteString(strings.Join(rdb.ZRange(ctx, k, 0, -1).Val(), " "))
		case "list":
			b.WriteString(strings.Join(rdb.LRange(ctx, k, 0, -1).Val(), " "))
		case "stream":
			for _, e := range rdb.XRange(ctx, k, "-", "+").Val() {
				fmt.Fprintf(&b, "%v ", e.Values)
			}
		}
		b.WriteByte('\n')
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestBinary_SecretsWithoutAKeyAreRefused: outside demo mode without
// SWITCHBACK_SECRETS_KEY, the binary refuses to store a supplier's
// credentials or a rule (its securityKey) with 503 naming the setting, says
// so at start, and stores nothing; a supplier without credentials is fine.
func TestBinary_SecretsWithoutAKeyAreRefused(t *testing.T) {
	const adminSecret = "bootstrap-admin-secret-nokey"
	p := startBinary(t, "SWITCHBACK_DEMO=false", "SWITCHBACK_ADMIN_KEY=boot-admin", "SWITCHBACK_ADMIN_SECRET="+adminSecret)
	api := "http://" + p.api
	admin := client{t, api, "boot-admin", adminSecret}
	ch := admin.must("POST", "/admin/v1/channels", `{"name":"C","companyName":"Co"}`, 201)
	_, op, _ := admin.do("POST", "/admin/v1/principals", `{"role":"operator","name":"Op"}`)
	_, res, _ := admin.do("POST", "/admin/v1/principals", fmt.Sprintf(`{"role":"reseller","name":"Res","channelId":%q}`, ch["id"]))
	operator := client{t, api, op["key"].(string), op["secret"].(string)}
	reseller := client{t, api, res["key"].(string), res["secret"].(string)}
	for _, c := range []struct {
		who        client
		path, body string
	}{
		{operator, "/channel/v1.2/suppliers", `{"id":"nk1","name":"N","code":"NK","connection":{"kind":"bookingsystem","baseUrl":"https://bookings.example.com/v2","credentials":{"bearerToken":"nokey-token-1"}}}`},
		{reseller, "/registry/v1.1/supplier", `{"url":"https://hooks.example.com/x"}`},
	} {
		status, body, _ := c.who.do("POST", c.path, c.body)
		if status != 503 || body["code"] != "UNAVAILABLE" || !strings.Contains(fmt.Sprint(body["message"]), "SWITCHBACK_SECRETS_KEY") {
			t.Errorf("POST %s without a secrets key: %d %v, want 503 naming SWITCHBACK_SECRETS_KEY", c.path, status, body)
		}
	}
	if status, body, _ := operator.do("POST", "/channel/v1.2/suppliers", `{"id":"nk2","name":"N","code":"NK2","connection":{"kind":"bookingsystem","baseUrl":"https://bookings.example.com/v2"}}`); status != 201 {
		t.Errorf("a supplier without credentials: %d %v", status, body)
	}
	if status, _, _ := operator.do("GET", "/channel/v1.2/suppliers/nk1", ""); status != 404 {
		t.Errorf("the refused supplier exists: %d", status)
	}
	if !strings.Contains(p.stderr.String(), "SWITCHBACK_SECRETS_KEY is unset") {
		t.Errorf("the start does not say the key is unset:\n%s", tail(p.stderr.String(), 3000))
	}
	p.stop(t)
}

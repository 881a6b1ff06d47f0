package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/contract"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// received is one webhook POST as the sink saw it.
type received struct {
	path       string
	deliveryID string
	body       map[string]any
	raw        []byte
	at         time.Time
}

// sink is a subscriber's webhook endpoint: it records every POST and
// answers per path from a script (a list of statuses, the last repeating).
type sink struct {
	srv     *http.Server
	url     string
	mu      sync.Mutex
	got     []received
	scripts map[string][]int
	served  map[string]int
	hooks   *contract.WebhookLog
}

func newSink(t *testing.T) *sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{url: "http://" + ln.Addr().String(), scripts: map[string][]int{}, served: map[string]int{},
		hooks: contractChecker.WatchWebhooks(t)}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(s.record(r))
	})}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// record keeps one webhook POST and returns the status the sink's script
// has for its path: the script's next one (its last, once used up), 200
// without a script.
func (s *sink) record(r *http.Request) int {
	raw, _ := io.ReadAll(r.Body)
	s.hooks.Received(r, raw)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, received{path: r.URL.Path, deliveryID: r.Header.Get(schemas.HeaderDeliveryID), body: body, raw: raw, at: time.Now()})
	status := 200
	if script := s.scripts[r.URL.Path]; len(script) > 0 {
		i := s.served[r.URL.Path]
		if i >= len(script) {
			i = len(script) - 1
		}
		status = script[i]
	}
	s.served[r.URL.Path]++
	return status
}

func (s *sink) script(path string, statuses ...int) {
	s.mu.Lock()
	s.scripts[path] = statuses
	s.mu.Unlock()
}

func (s *sink) on(path string) []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []received
	for _, r := range s.got {
		if r.path == path {
			out = append(out, r)
		}
	}
	return out
}

// waitFor polls until at least n POSTs reached path.
func (s *sink) waitFor(t *testing.T, path string, n int, within time.Duration) []received {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := s.on(path)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink got %d POSTs on %s within %s, want %d", len(got), path, within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// specVerify is written from spec doc 1, Authentication 1, independently of
// the service's signing code: HMAC-SHA256 keyed by the securityKey over the
// decimal timestamp immediately followed by the token, lowercase hex,
// compared with signature.sum.
func specVerify(t *testing.T, securityKey string, r received) {
	t.Helper()
	sig, ok := r.body["signature"].(map[string]any)
	if !ok {
		t.Fatalf("no signature object in %s", r.raw)
	}
	var wire struct {
		Signature struct {
			Timestamp json.Number `json:"timestamp"`
		} `json:"signature"`
	}
	dec := json.NewDecoder(strings.NewReader(string(r.raw)))
	dec.UseNumber()
	if err := dec.Decode(&wire); err != nil {
		t.Fatal(err)
	}
	ts, err := strconv.ParseInt(wire.Signature.Timestamp.String(), 10, 64)
	if err != nil {
		t.Fatalf("timestamp %q is not a decimal integer", wire.Signature.Timestamp)
	}
	token, _ := sig["token"].(string)
	mac := hmac.New(sha256.New, []byte(securityKey))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + token))
	want := hex.EncodeToString(mac.Sum(nil))
	if sig["sum"] != want {
		t.Fatalf("signature sum %v does not verify (want %s) for %s", sig["sum"], want, r.raw)
	}
	if token == "" {
		t.Fatal("empty signature token")
	}
}

type client struct {
	t           *testing.T
	base        string
	key, secret string
}

func (c client) do(method, path, body string) (int, map[string]any, []any) {
	c.t.Helper()
	status, raw := c.raw(method, path, body)
	var obj map[string]any
	var arr []any
	if len(raw) > 0 && raw[0] == '[' {
		_ = json.Unmarshal(raw, &arr)
	} else if len(raw) > 0 {
		_ = json.Unmarshal(raw, &obj)
	}
	return status, obj, arr
}

// raw sends a request and returns the status and body. Every JSON answer
// of the e2e suite goes through it, and none may hold a duplicate key
// (strict parsers refuse the document; encoding/json keeps the last).
func (c client) raw(method, path, body string) (int, []byte) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	req.Header.Set("X-API-Key", c.key)
	req.Header.Set("X-API-Secret", c.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if dup := testharness.DuplicateKey(raw); dup != "" {
			c.t.Errorf("%s %s: the answer has a duplicate JSON key %s: %s", method, path, dup, raw)
		}
	}
	return resp.StatusCode, raw
}

// must sends a request that has to answer want, and fails the test
// with the answer otherwise: the setup calls of the e2e tests.
func (c client) must(method, path, body string, want int) map[string]any {
	c.t.Helper()
	status, obj, _ := c.do(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s: %d %v, want %d", method, path, status, obj, want)
	}
	return obj
}

// principal has the admin c create a principal (body: its role, name
// and channelId) and returns a client of it and the answer (id, key,
// secret).
func (c client) principal(body string) (client, map[string]any) {
	c.t.Helper()
	got := c.must("POST", "/admin/v1/principals", body, 201)
	key, _ := got["key"].(string)
	secret, _ := got["secret"].(string)
	return client{c.t, c.base, key, secret}, got
}

// awaitGet repeats GET path until it answers 200 (the binding or change
// it waits for reached the query tier's view) and fails the test with the
// last answer when within passes first.
func (c client) awaitGet(what, path string, within time.Duration) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		status, body, _ := c.do("GET", path, "")
		if status == 200 {
			return body
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: %d %v", what, status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// step is one setup call of an e2e test, which has to answer 201.
type step struct{ method, path, body string }

// mustAll sends the setup steps in order: each has to answer 201.
func (c client) mustAll(steps []step) {
	c.t.Helper()
	for _, s := range steps {
		c.must(s.method, s.path, s.body, 201)
	}
}

// createProduct has the operator op create supplier sup (body supplier),
// its product prod (body product) and the product's rates (their bodies),
// each answering 201, and returns the product's channel API path.
func createProduct(op client, sup, prod, supplier, product string, rates ...string) string {
	op.t.Helper()
	base := "/channel/v1.2/suppliers/" + sup + "/products/" + prod
	steps := []step{{"POST", "/channel/v1.2/suppliers", supplier}, {"POST", "/channel/v1.2/suppliers/" + sup + "/products", product}}
	for _, r := range rates {
		steps = append(steps, step{"POST", base + "/rates", r})
	}
	op.mustAll(steps)
	return base
}

// demo is the binary with local webhooks allowed (the sink listens on
// loopback), a sink, and clients of the demo principals: how most e2e
// tests begin.
type demo struct {
	p                         *proc
	sk                        *sink
	api                       string
	admin, operator, reseller client
}

func startDemo(t *testing.T, extra ...string) demo {
	t.Helper()
	p := startBinary(t, append([]string{"SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true"}, extra...)...)
	api := "http://" + p.api
	return demo{p: p, sk: newSink(t), api: api,
		admin:    client{t, api, "demo-admin", "demo-admin-secret"},
		operator: client{t, api, "demo-operator", "demo-operator-secret"},
		reseller: client{t, api, "demo-reseller", "demo-reseller-secret"},
	}
}

// partnerSupplier is catalogtest's partner supplier body pointed at a
// local partner (a simulator's test server) instead of the example host.
func partnerSupplier(sup, name, code, key, secret, url string) string {
	return strings.Replace(catalogtest.SupplierBody(sup, name, code, key, secret), "https://partner.example.com/api/", url, 1)
}

// serve starts a test server for h, closed when the test ends.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// publish writes notification records to the binary's broker in the
// topic's envelope, as the processors do: the e2e test is the test
// producer.
func publish(t *testing.T, broker string, ns ...schemas.Notification) {
	t.Helper()
	writeNotifications(t, broker, func(n schemas.Notification) any {
		env, err := schemas.NewNotificationEvent(n)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}, ns...)
}

// publishBare writes bare notification objects, what the processors wrote
// before the envelope: records of before an upgrade stay on the topic for
// its retention.
func publishBare(t *testing.T, broker string, ns ...schemas.Notification) {
	t.Helper()
	writeNotifications(t, broker, func(n schemas.Notification) any { return n }, ns...)
}

func writeNotifications(t *testing.T, broker string, record func(schemas.Notification) any, ns ...schemas.Notification) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(broker), Topic: schemas.TopicNotifications, RequiredAcks: kafka.RequireAll, Balancer: &kafka.Hash{}, BatchTimeout: time.Millisecond}
	defer w.Close()
	msgs := make([]kafka.Message, len(ns))
	for i, n := range ns {
		v, err := json.Marshal(record(n))
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = kafka.Message{Key: []byte(n.Subscriber), Value: v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

func supplierNotification(id, subscriber, supplierID string) schemas.Notification {
	payload, _ := json.Marshal(schemas.SupplierPayload{SupplierID: supplierID, Operation: "updated"})
	return schemas.Notification{ID: id, Subscriber: subscriber, Type: schemas.TypeSupplier, EntityKey: supplierID, Payload: payload, CreatedAt: time.Now().UTC()}
}

// TestE2E_RegistryAndDispatcher drives the running binary over HTTP (and
// the broker, standing in for the processors): rules registered by a
// reseller, test notifications, published notifications with signatures,
// throttle spacing, retries after 500s and the automatic disableAll at the
// backlog bound.
func TestE2E_RegistryAndDispatcher(t *testing.T) {
	p := startBinary(t,
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP=true",
		"SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true",
		"SWITCHBACK_DISPATCH_RETRY_SCHEDULE=150ms,150ms,150ms,150ms,150ms,150ms,150ms,150ms",
		"SWITCHBACK_DISPATCH_BACKLOG_LIMIT=3",
	)
	sk := newSink(t)
	api := "http://" + p.api
	reseller := client{t, api, "demo-reseller", "demo-reseller-secret"}
	subscriber := principals.FixedID("demo-reseller")

	// Register a supplier rule pointing at the sink.
	status, rule, _ := reseller.do("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, sk.url+"/supplier"))
	if status != 201 {
		t.Fatalf("create supplier rule: %d %v", status, rule)
	}
	ruleID, _ := rule["id"].(string)
	key, _ := rule["securityKey"].(string)
	if ruleID == "" || key == "" {
		t.Fatalf("rule lacks id or securityKey: %v", rule)
	}
	if status, body, _ := reseller.do("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, sk.url+"/supplier")); status != 409 {
		t.Fatalf("second supplier rule: %d %v, want 409", status, body)
	}

	t.Run("test endpoint sends one signed notification at once", func(t *testing.T) {
		status, body, _ := reseller.do("POST", "/registry/v1.1/supplier/test/"+ruleID, `{"supplierID":"placeholder-supplier","operation":"updated"}`)
		if status != 200 {
			t.Fatalf("test notification: %d %v", status, body)
		}
		got := sk.waitFor(t, "/supplier", 1, 5*time.Second)
		specVerify(t, key, got[0])
		if got[0].body["supplierID"] != "placeholder-supplier" || got[0].body["operation"] != "updated" {
			t.Errorf("payload = %s", got[0].raw)
		}
		if got[0].deliveryID == "" {
			t.Error("no delivery id header")
		}
	})

	for _, c := range []struct {
		name         string
		write        func(t *testing.T, broker string, ns ...schemas.Notification)
		id, supplier string
		operation    bool // the payload's operation is checked too
	}{
		{"published notification is delivered signed with its delivery id", publish, "e2e-delivered-1", "sup-1", true},
		{"a bare notification of before the envelope is still delivered", publishBare, "e2e-bare-1", "sup-b", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(sk.on("/supplier"))
			c.write(t, p.kafka, supplierNotification(c.id, subscriber, c.supplier))
			got := sk.waitFor(t, "/supplier", before+1, 20*time.Second)
			last := got[len(got)-1]
			specVerify(t, key, last)
			if last.deliveryID != c.id || last.body["supplierID"] != c.supplier || (c.operation && last.body["operation"] != "updated") {
				t.Errorf("delivery id %q, payload %s", last.deliveryID, last.raw)
			}
		})
	}

	t.Run("throttleDelay spaces one subscriber's sends", func(t *testing.T) {
		if status, body, _ := reseller.do("PUT", "/registry/v1.1/metadata", `{"throttleDelay":"400ms"}`); status != 200 {
			t.Fatalf("PUT metadata: %d %v", status, body)
		}
		before := len(sk.on("/supplier"))
		publish(t, p.kafka,
			supplierNotification("e2e-throttle-1", subscriber, "sup-t1"),
			supplierNotification("e2e-throttle-2", subscriber, "sup-t2"),
			supplierNotification("e2e-throttle-3", subscriber, "sup-t3"))
		got := sk.waitFor(t, "/supplier", before+3, 20*time.Second)[before:]
		for i := 1; i < len(got); i++ {
			// The delay is applied before each send; receipt times carry
			// a few milliseconds of network and scheduling noise.
			if gap := got[i].at.Sub(got[i-1].at); gap < 380*time.Millisecond {
				t.Errorf("gap between sends %d and %d = %s, want ≥ throttleDelay 400ms", i-1, i, gap)
			}
		}
		if status, body, _ := reseller.do("PUT", "/registry/v1.1/metadata", `{"throttleDelay":"0s"}`); status != 200 {
			t.Fatalf("PUT metadata: %d %v", status, body)
		}
	})

	t.Run("retries after the subscriber answered 500, same delivery id", func(t *testing.T) {
		sk.script("/flaky", 500, 500, 200)
		status, body, _ := reseller.do("PUT", "/registry/v1.1/supplier", fmt.Sprintf(`{"id":%q,"url":%q}`, ruleID, sk.url+"/flaky"))
		if status != 200 {
			t.Fatalf("PUT rule: %d %v", status, body)
		}
		publish(t, p.kafka, supplierNotification("e2e-retry-1", subscriber, "sup-r"))
		got := sk.waitFor(t, "/flaky", 3, 30*time.Second)
		for _, r := range got {
			if r.deliveryID != "e2e-retry-1" {
				t.Errorf("attempt carried delivery id %q, want e2e-retry-1", r.deliveryID)
			}
			specVerify(t, key, r)
		}
		time.Sleep(500 * time.Millisecond) // a 4th attempt would show a retry after success
		if n := len(sk.on("/flaky")); n != 3 {
			t.Errorf("attempts = %d, want 3 (two 500s then 200)", n)
		}
	})

	t.Run("backlog bound sets disableAll automatically", func(t *testing.T) {
		admin := client{t, api, "demo-admin", "demo-admin-secret"}
		if status, ch, _ := admin.do("POST", "/admin/v1/channels", `{"id":"channel-down","name":"Down channel","companyName":"Down Co"}`); status != 201 {
			t.Fatalf("create channel: %d %v", status, ch)
		}
		down, created := admin.principal(`{"role":"reseller","name":"Down subscriber","channelId":"channel-down"}`)
		downID := created["id"].(string)
		sk.script("/down", 500)
		if status, body, _ := down.do("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, sk.url+"/down")); status != 201 {
			t.Fatalf("create rule: %d %v", status, body)
		}
		var ns []schemas.Notification
		for i := range 6 {
			ns = append(ns, supplierNotification(fmt.Sprintf("e2e-down-%d", i), downID, fmt.Sprintf("sup-d%d", i)))
		}
		publish(t, p.kafka, ns...)
		deadline := time.Now().Add(30 * time.Second)
		for {
			status, meta, _ := down.do("GET", "/registry/v1.1/metadata", "")
			if status == 200 && meta["disableAll"] == true {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("disableAll not set within 30s: %d %v", status, meta)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// The other subscriber is unaffected.
		if _, meta, _ := reseller.do("GET", "/registry/v1.1/metadata", ""); meta["disableAll"] == true {
			t.Error("disableAll leaked to another subscriber")
		}
		raw := p.metrics(t)
		if !strings.Contains(string(raw), "switchback_dispatcher_auto_disabled_total 1") {
			t.Errorf("metrics do not count the auto-disable")
		}

		// Recovery: the subscriber fixes its endpoint, re-enables delivery
		// and replays what was suppressed, found through its delivery log
		// (history in ClickHouse).
		if !clickHouseUp(t, p) {
			t.Log("ClickHouse parked: delivery log and replay not exercised")
			return
		}
		suppressed := map[string]bool{}
		deadline = time.Now().Add(30 * time.Second)
		for len(suppressed) < len(ns) {
			_, log, _ := down.do("GET", "/registry/v1.1/deliveries?type=supplier&outcome=suppressed&limit=100", "")
			items, _ := log["items"].([]any)
			for _, it := range items {
				suppressed[it.(map[string]any)["deliveryId"].(string)] = true
			}
			if time.Now().After(deadline) {
				t.Fatalf("delivery log shows %d suppressed deliveries within 30s, want %d", len(suppressed), len(ns))
			}
			time.Sleep(200 * time.Millisecond)
		}
		sk.script("/down", 200)
		sk.mu.Lock()
		mark := len(sk.got) // what reaches the sink after this is the replay
		sk.mu.Unlock()
		if status, body, _ := down.do("PUT", "/registry/v1.1/metadata", `{"disableAll":false}`); status != 200 {
			t.Fatalf("re-enable: %d %v", status, body)
		}
		from := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
		to := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		status, body, _ := down.do("POST", "/registry/v1.1/deliveries/replay", fmt.Sprintf(`{"type":"supplier","from":%q,"to":%q}`, from, to))
		if status != 202 || body["replayed"] != float64(len(ns)) {
			t.Fatalf("replay: %d %v, want 202 replaying %d", status, body, len(ns))
		}
		deadline = time.Now().Add(20 * time.Second)
		for {
			got := receivedSince(sk, "/down", mark, suppressed)
			if len(got) == len(ns) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replayed notifications received: %d of %d", len(got), len(ns))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	p.stop(t)
}

// clickHouseUp reports whether the binary has a ClickHouse (not parked).
func clickHouseUp(t *testing.T, p *proc) bool {
	t.Helper()
	status, deps, err := p.readyz()
	if status == 0 {
		t.Fatal(err)
	}
	return deps["clickhouse"].Status == "up"
}

// receivedSince returns the distinct ids of want that reached path at or
// after position mark of the sink's log.
func receivedSince(s *sink, path string, mark int, want map[string]bool) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, r := range s.got[mark:] {
		if r.path == path && want[r.deliveryID] {
			out[r.deliveryID] = true
		}
	}
	return out
}

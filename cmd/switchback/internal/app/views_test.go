package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
)

// TestRun_RedisFlushedWhileRunning: Redis loses everything (FLUSHALL)
// under `switchback run`. Every answer meanwhile is the correct one or a
// 503 (never the 404 of an existing supplier, product or rule); the views
// come back from the topics; operators' writes work again; and a change
// made after the flush still notifies the subscriber whose rule was in the
// flushed registry.
func TestRun_RedisFlushedWhileRunning(t *testing.T) {
	var mu sync.Mutex
	received := map[string]int{}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		received[r.URL.Path]++
		mu.Unlock()
	}))
	t.Cleanup(sink.Close)
	ep, _ := startRun(t, t.TempDir(), map[string]string{
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP": "true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE": "true",
		"SWITCHBACK_RATE_LIMIT": "0", // the loop below reads as fast as it can
	})
	api := "http://" + ep.HTTP
	op := func(method, path, body string) apiResponse {
		return call(t, method, api+path, "demo-operator", "demo-operator-secret", body, nil)
	}
	res := func(method, path, body string) apiResponse {
		return call(t, method, api+path, "demo-reseller", "demo-reseller-secret", body, nil)
	}
	const sup, prod = "sup-flush", "prod-flush"
	base := "/channel/v1.2/suppliers/" + sup + "/products/" + prod
	for _, s := range []struct {
		do                 func(method, path, body string) apiResponse
		method, path, body string
		want               int
	}{
		{res, "POST", "/registry/v1.1/product", fmt.Sprintf(`{"url":%q}`, sink.URL+"/product"), 201},
		{op, "POST", "/channel/v1.2/suppliers", catalogtest.SupplierBody(sup, "Flush Tours", "FL", "k", "s"), 201},
		{op, "POST", "/channel/v1.2/suppliers/" + sup + "/products", catalogtest.ProductBody(prod, "Glacier walk", "v1"), 201},
		{op, "POST", base + "/rates", catalogtest.RateBody("rate-a", "Adult"), 201},
		{op, "POST", base + "/channels/" + DemoChannelID, `{"priceAt":"PRICE_AT_SALE","rateIds":["rate-a"]}`, 201},
	} {
		if r := s.do(s.method, s.path, s.body); r.status != s.want {
			t.Fatalf("%s %s: %d %v", s.method, s.path, r.status, r.body)
		}
	}
	reads := []struct {
		name string
		do   func() rawResponse
	}{
		{"operator reads its supplier", func() rawResponse { return rawCall(t, api+"/channel/v1.2/suppliers/"+sup, "demo-operator") }},
		{"reseller reads the bound product", func() rawResponse {
			return rawCall(t, api+"/v1.2/suppliers/"+sup+"/products/"+prod, "demo-reseller")
		}},
		{"reseller lists its rules", func() rawResponse { return rawCall(t, api+"/registry/v1.1/product", "demo-reseller") }},
	}
	for _, r := range reads {
		if got := r.do(); got.status != 200 {
			t.Fatalf("%s before the flush: %d %v", r.name, got.status, got.body)
		}
	}

	opts, err := redis.ParseURL(ep.Redis)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// Read until every read has been correct a few times in a row; any
	// answer but 200 or 503 fails.
	deadline := time.Now().Add(30 * time.Second)
	okInARow, unavailable := 0, 0
	for okInARow < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("reads not back within 30s (%d answers 503)", unavailable)
		}
		allOK := true
		for _, r := range reads {
			got := r.do()
			switch got.status {
			case 200:
			case 503:
				unavailable++
				allOK = false
				if got.header.Get("Retry-After") == "" {
					t.Errorf("%s: 503 without Retry-After", r.name)
				}
			default:
				t.Fatalf("%s after the flush: %d %v: wrong (want the answer or a 503)", r.name, got.status, got.body)
			}
		}
		if allOK {
			okInARow++
		} else {
			okInARow = 0
			// Pace the loop a little, as clients honouring Retry-After
			// would (much more): a tight loop of 503s starves the rebuild
			// of this 2-core machine's CPU.
			time.Sleep(time.Millisecond)
		}
	}
	t.Logf("%d answers were 503 while the views were rebuilt", unavailable)
	if rules := rawCall(t, api+"/registry/v1.1/product", "demo-reseller"); !strings.Contains(rules.body, sink.URL) {
		t.Errorf("rules after the rebuild: %s", rules.body)
	}
	rz := call(t, "GET", "http://"+ep.Ops+"/readyz", "", "", "", nil)
	if rz.status != 200 || !strings.Contains(fmt.Sprint(rz.body), "views") {
		t.Errorf("/readyz after the rebuild = %d %v", rz.status, rz.body)
	}

	// An operator's write after the flush works, and its notification
	// reaches the subscriber of the flushed registry.
	changed := catalogtest.ProductBody(prod, "Glacier walk", "v2 after the flush")
	if r := op("PUT", "/channel/v1.2/suppliers/"+sup+"/products/"+prod, changed); r.status != 200 {
		t.Fatalf("update after the flush: %d %v", r.status, r.body)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := received["/product"]
		mu.Unlock()
		if n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the product update after the flush notified nobody")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get("http://" + ep.Ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(text), `switchback_views_losses_total{cause="missing"} 1`) {
		t.Errorf("metrics lack the loss:\n%s", grepLines(string(text), "switchback_views_"))
	}
}

type rawResponse struct {
	status int
	header http.Header
	body   string
}

// rawCall GETs url as a demo principal (key = name, secret = name-secret),
// whatever the body (the registry lists rules as an array).
func rawCall(t *testing.T, url, principal string) rawResponse {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", principal)
	req.Header.Set("X-API-Secret", principal+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResponse{resp.StatusCode, resp.Header, string(b)}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

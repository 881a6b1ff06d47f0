package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/config"
)

// startRun runs `switchback run` in-process on free loopback ports with its
// data under dataDir, and returns its endpoints and a stop function that
// waits for a clean exit.
func startRun(t *testing.T, dataDir string, env map[string]string) (Endpoints, func()) {
	t.Helper()
	base := map[string]string{
		"SWITCHBACK_DATA_DIR":                 dataDir,
		"SWITCHBACK_EMBEDDED_KAFKA_ADDR":      "127.0.0.1:0",
		"SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR": "127.0.0.1:0",
		"SWITCHBACK_HTTP_ADDR":                "127.0.0.1:0",
		"SWITCHBACK_OPS_ADDR":                 "127.0.0.1:0",
		"SWITCHBACK_DEMO":                     "true",
		"SWITCHBACK_DEMO_DATA":                "false",
		"SWITCHBACK_SHUTDOWN_TIMEOUT":         "20s",
	}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load("test", nil, func(k string) string { return base[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Endpoints, 1)
	done := make(chan error, 1)
	var logs syncBuffer
	go func() {
		done <- Run(ctx, Options{Config: cfg, Command: "run", Version: "test", Stdout: io.Discard, Stderr: &logs,
			Ready: func(ep Endpoints) { ready <- ep }})
	}()
	var ep Endpoints
	select {
	case ep = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Run returned before ready: %v\n%s", err, logs.String())
	case <-time.After(90 * time.Second):
		cancel()
		t.Fatalf("not ready within 90s\n%s", logs.String())
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("Run did not stop within 60s\n%s", logs.String())
			}
		})
	}
	t.Cleanup(stop)
	return ep, stop
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type apiResponse struct {
	status int
	body   map[string]any
	header http.Header
}

func call(t *testing.T, method, url, key, secret, body string, hdr map[string]string) apiResponse {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
		req.Header.Set("X-API-Secret", secret)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := apiResponse{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %q", method, url, raw)
		}
	}
	return out
}

func TestRun_ServesHealthReadinessAndTheAuthenticatedAPI(t *testing.T) {
	// A small body limit keeps the oversized body inside the socket buffers,
	// so the client reads the 413 instead of a reset while still writing.
	ep, _ := startRun(t, t.TempDir(), map[string]string{"SWITCHBACK_MAX_BODY_BYTES": "4096"})
	api := "http://" + ep.HTTP
	ops := "http://" + ep.Ops

	if r := call(t, "GET", ops+"/healthz", "", "", "", nil); r.status != 200 {
		t.Fatalf("/healthz = %d", r.status)
	}
	r := call(t, "GET", ops+"/readyz", "", "", "", nil)
	if r.status != 200 {
		t.Fatalf("/readyz = %d %v", r.status, r.body)
	}
	deps, _ := r.body["dependencies"].(map[string]any)
	for _, name := range []string{"kafka", "redis", "clickhouse"} {
		if _, ok := deps[name]; !ok {
			t.Errorf("/readyz lacks %s: %v", name, r.body)
		}
	}

	tests := []struct {
		name       string
		method     string
		path       string
		key        string
		secret     string
		body       string
		wantStatus int
		wantCode   string
	}{
		{"demo admin lists principals", "GET", "/admin/v1/principals", "demo-admin", "demo-admin-secret", "", 200, ""},
		{"no credentials", "GET", "/admin/v1/principals", "", "", "", 401, "UNAUTHORIZED"},
		{"wrong secret", "GET", "/admin/v1/principals", "demo-admin", "nope", "", 401, "UNAUTHORIZED"},
		{"reseller on admin route", "GET", "/admin/v1/principals", "demo-reseller", "demo-reseller-secret", "", 403, "FORBIDDEN"},
		{"unknown route", "GET", "/v1.2/nothing-here", "demo-admin", "demo-admin-secret", "", 404, "NOT_FOUND"},
		{"wrong method", "PUT", "/admin/v1/principals", "demo-admin", "demo-admin-secret", "", 405, "METHOD_NOT_ALLOWED"},
		{"malformed JSON", "POST", "/admin/v1/principals", "demo-admin", "demo-admin-secret", `{"role":`, 400, "MALFORMED_JSON"},
		{"body over the limit", "POST", "/admin/v1/principals", "demo-admin", "demo-admin-secret", `{"name":"` + strings.Repeat("x", 8192) + `"}`, 413, "PAYLOAD_TOO_LARGE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, tt.method, api+tt.path, tt.key, tt.secret, tt.body, map[string]string{"X-Request-ID": "req-" + strings.ReplaceAll(tt.name, " ", "-")})
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (%v)", r.status, tt.wantStatus, r.body)
			}
			if tt.wantCode != "" && r.body["code"] != tt.wantCode {
				t.Errorf("code = %v, want %s", r.body["code"], tt.wantCode)
			}
			if tt.wantCode != "" {
				if _, ok := r.body["message"].(string); !ok {
					t.Errorf("error object lacks a message: %v", r.body)
				}
			}
			wantID := "req-" + strings.ReplaceAll(tt.name, " ", "-")
			if got := r.header.Get("X-Request-ID"); got != wantID {
				t.Errorf("X-Request-ID = %q, want %q", got, wantID)
			}
			meta, _ := r.body["meta"].(map[string]any)
			if meta["reqId"] != wantID {
				t.Errorf("meta.reqId = %v, want %q", meta["reqId"], wantID)
			}
		})
	}
}

// A second `make run` must find what the first one stored: the principals
// live on a topic of the embedded broker, whose log is under the data dir.
func TestRun_RestartFindsThePreviousData(t *testing.T) {
	dir := t.TempDir()
	ep, stop := startRun(t, dir, nil)
	r := call(t, "POST", "http://"+ep.HTTP+"/admin/v1/principals", "demo-admin", "demo-admin-secret", `{"role":"operator","name":"Alpine Tours"}`, nil)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	key, secret, id := r.body["key"].(string), r.body["secret"].(string), r.body["id"].(string)
	if rr := call(t, "DELETE", "http://"+ep.HTTP+"/admin/v1/principals/"+id, "demo-admin", "demo-admin-secret", "", nil); rr.status != 204 {
		t.Fatalf("revoke = %d", rr.status)
	}
	r = call(t, "POST", "http://"+ep.HTTP+"/admin/v1/principals", "demo-admin", "demo-admin-secret", `{"role":"admin","name":"Second admin"}`, nil)
	if r.status != 201 {
		t.Fatalf("create = %d %v", r.status, r.body)
	}
	key2, secret2 := r.body["key"].(string), r.body["secret"].(string)
	stop()

	ep, _ = startRun(t, dir, nil)
	api := "http://" + ep.HTTP
	if rr := call(t, "GET", api+"/admin/v1/principals", key2, secret2, "", nil); rr.status != 200 {
		t.Errorf("admin created before the restart: %d, want 200", rr.status)
	}
	if rr := call(t, "GET", api+"/admin/v1/principals", key, secret, "", nil); rr.status != 401 {
		t.Errorf("principal revoked before the restart: %d, want 401", rr.status)
	}
	list := call(t, "GET", api+"/admin/v1/principals", "demo-admin", "demo-admin-secret", "", nil)
	ps, _ := list.body["principals"].([]any)
	if want := len(DemoPrincipals()) + 2; len(ps) != want {
		t.Errorf("principals after restart = %d, want %d (the demo ones + 2 created): %v", len(ps), want, list.body)
	}
}

func TestRun_WithoutDemoHasNoDemoPrincipalsButTheBootstrapAdmin(t *testing.T) {
	ep, _ := startRun(t, t.TempDir(), map[string]string{
		"SWITCHBACK_DEMO":         "false",
		"SWITCHBACK_ADMIN_KEY":    "ops-admin",
		"SWITCHBACK_ADMIN_SECRET": "a-long-bootstrap-secret",
	})
	api := "http://" + ep.HTTP
	if r := call(t, "GET", api+"/admin/v1/principals", "demo-admin", "demo-admin-secret", "", nil); r.status != 401 {
		t.Errorf("demo admin outside demo mode: %d, want 401", r.status)
	}
	r := call(t, "GET", api+"/admin/v1/principals", "ops-admin", "a-long-bootstrap-secret", "", nil)
	if r.status != 200 {
		t.Fatalf("bootstrap admin: %d, want 200", r.status)
	}
	if ps, _ := r.body["principals"].([]any); len(ps) != 1 {
		t.Errorf("principals = %v, want only the bootstrap admin", r.body)
	}
}

func TestRun_SingleTierRefusesEmbeddedServers(t *testing.T) {
	tests := []struct {
		name, cmd, want string
		env             map[string]string
	}{
		{"query without kafka", "query", "SWITCHBACK_KAFKA_BROKERS", nil},
		{"process without redis", "process", "SWITCHBACK_REDIS_URL", map[string]string{"SWITCHBACK_KAFKA_BROKERS": "127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load("test", nil, func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			err = Run(context.Background(), Options{Config: cfg, Command: tt.cmd, Stderr: io.Discard})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// An external server that is down at start is retried while /readyz says
// what is down; the process stays up (healthz 200) and stops cleanly.
func TestRun_UnreachableExternalKafkaIsRetriedAndReported(t *testing.T) {
	cfg, err := config.Load("test", nil, func(k string) string {
		return map[string]string{
			"SWITCHBACK_KAFKA_BROKERS": "127.0.0.1:1",
			"SWITCHBACK_REDIS_URL":     "redis://127.0.0.1:1/0",
			"SWITCHBACK_HTTP_ADDR":     "127.0.0.1:0",
			"SWITCHBACK_OPS_ADDR":      "127.0.0.1:0",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	// The ops address is only known once bound: take a free port first.
	ln, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg.OpsAddr = ln
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: cfg, Command: "query", Stderr: io.Discard}) }()
	deadline := time.Now().Add(30 * time.Second)
	var last apiResponse
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + ln + "/readyz")
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = apiResponse{status: resp.StatusCode}
			_ = json.Unmarshal(raw, &last.body)
			deps, _ := last.body["dependencies"].(map[string]any)
			kafka, _ := deps["kafka"].(map[string]any)
			if kafka["status"] == "down" {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if last.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d %v, want 503 naming kafka down", last.status, last.body)
	}
	if r := call(t, "GET", "http://"+ln+"/healthz", "", "", "", nil); r.status != 200 {
		t.Errorf("/healthz = %d while dependencies are down, want 200", r.status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want a clean stop", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not stop while retrying")
	}
}

func freePort() (string, error) {
	l, err := netListen()
	if err != nil {
		return "", err
	}
	defer l.Close()
	return fmt.Sprint(l.Addr()), nil
}

func netListen() (interface {
	Close() error
	Addr() net.Addr
}, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}

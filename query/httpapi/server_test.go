package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

type cred struct{ key, secret string }

// env is a running server with three principals and a few test routes.
type env struct {
	api      *querytest.Client
	store    *principals.Store
	reg      *prometheus.Registry
	logs     *catalogtest.SyncBuffer
	admin    cred
	reseller cred
	revoked  cred
	ids      map[string]string // role -> principal id
}

const maxBody = 1024

type itemResponse struct {
	httpapi.Meta `json:"meta"`
	Item         string `json:"item"`
}

func start(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	store := principals.NewStore(&catalogtest.Recorder{})
	e := &env{store: store, reg: prometheus.NewRegistry(), logs: &catalogtest.SyncBuffer{}, ids: map[string]string{}}
	mk := func(req principals.CreateRequest) cred {
		p, secret, err := store.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		e.ids[string(req.Role)] = p.ID
		return cred{p.Key, secret}
	}
	e.admin = mk(principals.CreateRequest{Role: principals.RoleAdmin})
	e.reseller = mk(principals.CreateRequest{Role: principals.RoleReseller, ChannelID: "ch-1"})
	e.revoked = mk(principals.CreateRequest{Role: principals.RoleOperator})
	if err := store.Revoke(ctx, e.ids["operator"]); err != nil {
		t.Fatal(err)
	}

	s := httpapi.New(httpapi.Options{
		MaxBodyBytes: maxBody,
		Logger:       slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registry:     e.reg,
		Principals:   store,
	})
	v13 := s.Group(httpapi.BaseResellerV13)
	v13.Handle(http.MethodGet, "/items/{id}", nil, func(r *httpapi.Request) error {
		return r.JSON(http.StatusOK, &itemResponse{Meta: httpapi.Meta{Data: map[string]string{"k": "v"}}, Item: r.Param("id")})
	})
	v13.Handle(http.MethodDelete, "/items/{id}", nil, func(r *httpapi.Request) error { return r.NoContent() })
	v13.Handle(http.MethodGet, "/plain", nil, func(r *httpapi.Request) error {
		return r.JSON(http.StatusOK, map[string]string{"principal": r.Principal.ID})
	})
	v13.Handle(http.MethodGet, "/empty", nil, func(r *httpapi.Request) error { return r.JSON(http.StatusOK, struct{}{}) })
	v13.Handle(http.MethodPost, "/echo", nil, func(r *httpapi.Request) error {
		var body struct {
			Name string `json:"name"`
		}
		if err := r.DecodeJSON(&body); err != nil {
			return err
		}
		return r.JSON(http.StatusOK, body)
	})
	v13.Handle(http.MethodGet, "/panic", nil, func(r *httpapi.Request) error { panic("boom") })
	v13.Handle(http.MethodGet, "/missing", nil, func(r *httpapi.Request) error {
		return errors.Join(errors.New("item x"), apierror.ErrNotFound)
	})
	s.Group(httpapi.BaseRegistryV11).Handle(http.MethodGet, "/supplier", nil, func(r *httpapi.Request) error {
		return r.JSON(http.StatusOK, []string{"a", "b"}) // spec: "array of Rule"
	})
	s.Group(httpapi.BaseAdminV1).Handle(http.MethodGet, "/ping", []principals.Role{principals.RoleAdmin}, func(r *httpapi.Request) error {
		return r.JSON(http.StatusOK, map[string]bool{"ok": true})
	})

	e.api = querytest.NewClient(t, querytest.Serve(t, s))
	e.api.HTTP.Timeout = 5 * time.Second
	return e
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(t *testing.T, method, path string, c *cred, body []byte, hdr map[string]string) response {
	t.Helper()
	var as catalogtest.Cred
	if c != nil {
		as = catalogtest.Cred{Key: c.key, Secret: c.secret}
	}
	res, b := e.api.Request(t, method, path, as, bytes.NewReader(body), hdr)
	return response{res.StatusCode, res.Header, b}
}

// mustErrorObject checks the error object's shape: JSON content type,
// exactly the keys code, message, optional data, and meta.reqId equal to
// the X-Request-ID header.
func mustErrorObject(t *testing.T, r response, status int, code apierror.Code) apierror.Body {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &keys); err != nil {
		t.Fatalf("body is not a JSON object: %s", r.body)
	}
	for k := range keys {
		if k != "code" && k != "message" && k != "data" && k != "meta" {
			t.Errorf("unexpected key %q in error object %s", k, r.body)
		}
	}
	var e apierror.Body
	_ = json.Unmarshal(r.body, &e)
	if e.Code != code || e.Message == "" {
		t.Errorf("error object = %s, want code %s and a message", r.body, code)
	}
	if e.Meta.ReqID == "" || e.Meta.ReqID != r.header.Get("X-Request-ID") {
		t.Errorf("meta.reqId %q, X-Request-ID header %q: want equal and set", e.Meta.ReqID, r.header.Get("X-Request-ID"))
	}
	return e
}

func TestAuth_Matrix(t *testing.T) {
	e := start(t)
	tests := []struct {
		name   string
		path   string
		cred   *cred
		status int
	}{
		{"no credentials is 401", "/v1.3/plain", nil, 401},
		{"key without secret is 401", "/v1.3/plain", &cred{e.reseller.key, ""}, 401},
		{"wrong secret is 401", "/v1.3/plain", &cred{e.reseller.key, e.reseller.secret + "x"}, 401},
		{"unknown key is 401", "/v1.3/plain", &cred{"sbk_unknown", e.reseller.secret}, 401},
		{"revoked key is 401", "/v1.3/plain", &e.revoked, 401},
		{"right key goes through", "/v1.3/plain", &e.reseller, 200},
		{"reseller on an admin route is 403", "/admin/v1/ping", &e.reseller, 403},
		{"admin on an admin route goes through", "/admin/v1/ping", &e.admin, 200},
		{"revoked key on an admin route is 401, not 403", "/admin/v1/ping", &e.revoked, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodGet, tt.path, tt.cred, nil, nil)
			switch tt.status {
			case 401:
				got := mustErrorObject(t, r, 401, apierror.Unauthorized)
				if got.Message != "missing or invalid credentials" {
					t.Errorf("401 message %q must not say which part was wrong", got.Message)
				}
			case 403:
				mustErrorObject(t, r, 403, apierror.Forbidden)
			default:
				if r.status != tt.status {
					t.Fatalf("status = %d, want %d; body %s", r.status, tt.status, r.body)
				}
			}
		})
	}
	t.Run("the handler sees the authenticated principal", func(t *testing.T) {
		r := e.do(t, http.MethodGet, "/v1.3/plain", &e.reseller, nil, nil)
		var body struct{ Principal string }
		_ = json.Unmarshal(r.body, &body)
		if body.Principal != e.ids["reseller"] {
			t.Errorf("principal = %q, want %q", body.Principal, e.ids["reseller"])
		}
	})
}

func TestAuth_RevokedCredentialStopsWorkingAtOnce(t *testing.T) {
	e := start(t)
	if r := e.do(t, http.MethodGet, "/v1.3/plain", &e.reseller, nil, nil); r.status != 200 {
		t.Fatalf("before revoke: %d", r.status)
	}
	if err := e.store.Revoke(context.Background(), e.ids["reseller"]); err != nil {
		t.Fatal(err)
	}
	mustErrorObject(t, e.do(t, http.MethodGet, "/v1.3/plain", &e.reseller, nil, nil), 401, apierror.Unauthorized)
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRequestID(t *testing.T) {
	e := start(t)
	tests := []struct {
		name    string
		sent    string // "" sends none
		path    string
		cred    *cred
		want    string // "" means a generated UUIDv4
		wantErr bool
	}{
		{"given id is echoed", "client-req-42", "/v1.3/plain", &e.reseller, "client-req-42", false},
		{"given id with quotes is echoed and stays valid JSON", `a"b\c`, "/v1.3/plain", &e.reseller, `a"b\c`, false},
		{"missing id is generated", "", "/v1.3/plain", &e.reseller, "", false},
		{"oversize id is replaced", strings.Repeat("x", 129), "/v1.3/plain", &e.reseller, "", false},
		{"non-ASCII id is replaced", "réq", "/v1.3/plain", &e.reseller, "", false},
		{"given id is echoed on errors", "err-req-1", "/v1.3/plain", nil, "err-req-1", true},
		{"generated id on errors", "", "/nowhere", nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.sent != "" {
				hdr["X-Request-ID"] = tt.sent
			}
			r := e.do(t, http.MethodGet, tt.path, tt.cred, nil, hdr)
			got := r.header.Get("X-Request-ID")
			var body struct {
				Meta struct {
					ReqID string `json:"reqId"`
				} `json:"meta"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatalf("body %s: %v", r.body, err)
			}
			if body.Meta.ReqID != got {
				t.Errorf("meta.reqId = %q, header = %q: want equal", body.Meta.ReqID, got)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("X-Request-ID = %q, want %q", got, tt.want)
			}
			if tt.want == "" && !uuidV4.MatchString(got) {
				t.Errorf("X-Request-ID = %q, want a generated UUIDv4", got)
			}
			if tt.wantErr != (r.status >= 400) {
				t.Errorf("status %d", r.status)
			}
		})
	}
}

func TestErrorObject(t *testing.T) {
	e := start(t)
	tests := []struct {
		name   string
		method string
		path   string
		cred   *cred
		body   []byte
		status int
		code   apierror.Code
		data   map[string]string
	}{
		{"malformed JSON is 400 naming the offset", "POST", "/v1.3/echo", &e.reseller, []byte(`{"name": }`), 400, apierror.MalformedJSON, map[string]string{"offset": "9"}},
		{"unknown field is 400 naming the field", "POST", "/v1.3/echo", &e.reseller, []byte(`{"nmae":"x"}`), 400, apierror.InvalidField, map[string]string{"field": "nmae"}},
		{"no credentials is 401", "GET", "/v1.3/plain", nil, nil, 401, apierror.Unauthorized, nil},
		{"unknown route is 404", "GET", "/v1.3/nowhere", &e.reseller, nil, 404, apierror.NotFound, nil},
		{"unknown base path is 404", "GET", "/v9/items/1", nil, nil, 404, apierror.NotFound, nil},
		{"trailing slash is 404, not a redirect", "GET", "/v1.3/plain/", &e.reseller, nil, 404, apierror.NotFound, nil},
		{"wrong method is 405 with the allowed ones", "PUT", "/v1.3/items/7", &e.reseller, nil, 405, apierror.MethodNotAllowed, map[string]string{"allow": "DELETE, GET"}},
		{"body over the limit is 413", "POST", "/v1.3/echo", &e.reseller, bytes.Repeat([]byte("x"), maxBody+1), 413, apierror.PayloadTooLarge, map[string]string{"limit": "1024"}},
		{"panic is 500 with a generic message", "GET", "/v1.3/panic", &e.reseller, nil, 500, apierror.Internal, nil},
		{"returned sentinel maps to its status", "GET", "/v1.3/missing", &e.reseller, nil, 404, apierror.NotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, tt.method, tt.path, tt.cred, tt.body, nil)
			got := mustErrorObject(t, r, tt.status, tt.code)
			for k, v := range tt.data {
				if got.Data[k] != v {
					t.Errorf("data[%s] = %q, want %q (data %v)", k, got.Data[k], v, got.Data)
				}
			}
			if tt.status == 405 && r.header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
		})
	}
}

func TestPanic_IsLoggedWithStackAndServerKeepsServing(t *testing.T) {
	e := start(t)
	r := e.do(t, http.MethodGet, "/v1.3/panic", &e.reseller, nil, map[string]string{"X-Request-ID": "panic-1"})
	mustErrorObject(t, r, 500, apierror.Internal)
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"panic in handler"`) || !strings.Contains(logs, `"level":"ERROR"`) ||
		!strings.Contains(logs, "server_test.go") || !strings.Contains(logs, `"reqId":"panic-1"`) {
		t.Errorf("panic log line missing level, stack or reqId:\n%s", logs)
	}
	if r := e.do(t, http.MethodGet, "/v1.3/plain", &e.reseller, nil, nil); r.status != 200 {
		t.Errorf("after a panic: %d", r.status)
	}
}

func TestJSON_AlwaysCarriesMetaReqID(t *testing.T) {
	e := start(t)
	hdr := map[string]string{"X-Request-ID": "rid"}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"embedded Meta keeps meta.data", "/v1.3/items/7", `{"meta":{"reqId":"rid","data":{"k":"v"}},"item":"7"}`},
		{"plain object gets meta first", "/v1.3/plain", `{"meta":{"reqId":"rid"},"principal":"` + e.ids["reseller"] + `"}`},
		{"empty object gets meta", "/v1.3/empty", `{"meta":{"reqId":"rid"}}`},
		{"array is written as the spec shapes it", "/registry/v1.1/supplier", `["a","b"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodGet, tt.path, &e.reseller, nil, hdr)
			if r.status != 200 || string(r.body) != tt.want {
				t.Fatalf("%d %s, want 200 %s", r.status, r.body, tt.want)
			}
		})
	}
	t.Run("NoContent has no body", func(t *testing.T) {
		r := e.do(t, http.MethodDelete, "/v1.3/items/7", &e.reseller, nil, nil)
		if r.status != 204 || len(r.body) != 0 {
			t.Fatalf("%d %q, want 204 and no body", r.status, r.body)
		}
	})
}

func TestMetrics_AreLabelledByRoutePattern(t *testing.T) {
	e := start(t)
	for _, id := range []string{"1", "2", "3"} {
		e.do(t, http.MethodGet, "/v1.3/items/"+id, &e.reseller, nil, nil)
	}
	e.do(t, http.MethodGet, "/v1.3/items/9", nil, nil, nil)
	e.do(t, http.MethodGet, "/probe/secret-looking-path", nil, nil, nil)
	e.do(t, "BREW", "/v1.3/items/1", nil, nil, nil)

	counts := map[string]float64{}
	routes := map[string]bool{}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := labels(m)
			routes[l["route"]] = true
			if mf.GetName() == "switchback_query_requests_total" {
				counts[l["route"]+" "+l["method"]+" "+l["status"]] = m.GetCounter().GetValue()
			}
			if mf.GetName() == "switchback_query_request_seconds" && l["route"] == "/v1.3/items/{id}" && l["method"] == "GET" && m.GetHistogram().GetSampleCount() != 4 {
				t.Errorf("histogram count = %d, want 4", m.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"/v1.3/items/{id} GET 200": 3,
		"/v1.3/items/{id} GET 401": 1,
		"unmatched GET 404":        1,
		"unmatched OTHER 405":      1,
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("requests_total{%s} = %v, want %v (all: %v)", k, counts[k], v, counts)
		}
	}
	for r := range routes {
		if r != "unmatched" && strings.Contains(r, "/") && !strings.HasPrefix(r, "/v1.3/") && !strings.HasPrefix(r, "/registry/") && !strings.HasPrefix(r, "/admin/") {
			t.Errorf("route label %q is not a registered pattern", r)
		}
		if strings.Contains(r, "secret-looking") || strings.HasSuffix(r, "/1") {
			t.Errorf("raw path %q used as a label", r)
		}
	}
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func TestAccessLog_HasRouteAndPrincipalButNoSecretsOrQuery(t *testing.T) {
	e := start(t)
	e.do(t, http.MethodGet, "/v1.3/items/42?token=hunter2", &e.reseller, nil, map[string]string{"X-Request-ID": "log-1"})
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		if strings.Contains(l, `"reqId":"log-1"`) && strings.Contains(l, `"msg":"request"`) {
			_ = json.Unmarshal([]byte(l), &line)
		}
	}
	if line == nil {
		t.Fatalf("no access log line for the request:\n%s", e.logs.String())
	}
	for k, want := range map[string]any{"method": "GET", "route": "/v1.3/items/{id}", "status": float64(200), "principal": e.ids["reseller"]} {
		if line[k] != want {
			t.Errorf("access log %s = %v, want %v", k, line[k], want)
		}
	}
	if _, ok := line["dur"]; !ok {
		t.Error("access log has no duration")
	}
	all := e.logs.String()
	for _, bad := range []string{e.reseller.secret, "hunter2", "/v1.3/items/42"} {
		if strings.Contains(all, bad) {
			t.Errorf("logs contain %q", bad)
		}
	}
}

func TestBodyLimit_OverRawTCPAnswersJSON(t *testing.T) {
	// A client that declares a large Content-Length: fasthttp refuses before
	// reading the body; the answer must still be the error object.
	e := start(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.api.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := "POST /v1.3/echo HTTP/1.1\r\nHost: x\r\nX-Request-ID: big-1\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{}"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	r := response{res.StatusCode, res.Header, b}
	got := mustErrorObject(t, r, 413, apierror.PayloadTooLarge)
	if got.Meta.ReqID != "big-1" {
		t.Errorf("meta.reqId = %q, want the client's big-1", got.Meta.ReqID)
	}
}

func TestNew_WithoutPrincipalsPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without Principals did not panic")
		}
	}()
	httpapi.New(httpapi.Options{})
}

func TestShutdown_LetsTheRequestInFlightFinish(t *testing.T) {
	store := principals.NewStore(&catalogtest.Recorder{})
	p, secret, err := store.Create(context.Background(), principals.CreateRequest{Role: principals.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	s := httpapi.New(httpapi.Options{Principals: store})
	entered, release := make(chan struct{}), make(chan struct{})
	ctxErr := make(chan error, 1)
	s.Handle(http.MethodGet, "/admin/v1/slow", nil, func(r *httpapi.Request) error {
		close(entered)
		<-release
		ctxErr <- r.Context().Err()
		return r.JSON(http.StatusOK, map[string]string{"done": "yes"})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()

	type result struct {
		status int
		err    error
	}
	got := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/admin/v1/slow", nil)
		req.Header.Set("X-API-Key", p.Key)
		req.Header.Set("X-API-Secret", secret)
		res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			got <- result{0, err}
			return
		}
		res.Body.Close()
		got <- result{res.StatusCode, nil}
	}()
	<-entered
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	close(release)
	if r := <-got; r.err != nil || r.status != http.StatusOK {
		t.Fatalf("request in flight: %d, %v; want 200", r.status, r.err)
	}
	if err := <-ctxErr; err != nil {
		t.Errorf("the request's context was cancelled during a graceful shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after Shutdown, want nil", err)
	}
}

package apidocs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchbackhq/switchback/query/apidocs"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas/openapi"
)

func start(t *testing.T) string {
	t.Helper()
	return startWith(t, openapi.Load)
}

func startWith(t *testing.T, load func() (*openapi.Documents, error)) string {
	t.Helper()
	store, _ := querytest.Principals(t)
	s := httpapi.New(httpapi.Options{Principals: store})
	if err := apidocs.Register(s, load); err != nil {
		t.Fatal(err)
	}
	return querytest.Serve(t, s)
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func get(t *testing.T, url string, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// No redirects followed: GET / answers one to browsers.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

func TestRegister_ServesTheReferenceWithoutCredentials(t *testing.T) {
	url := start(t)
	tests := []struct {
		name, path   string
		header       map[string]string
		status       int
		ctype        string
		bodyContains string
	}{
		{"index for API clients", "/", nil, 200, "application/json", `"docs":"/docs"`},
		{"index sends browsers to the pages", "/", map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}, 302, "", ""},
		{"reseller page at /docs", "/docs", nil, 200, "text/html; charset=utf-8", `data-spec="/openapi/reseller.json"`},
		{"a family's page", "/docs/registry", nil, 200, "text/html; charset=utf-8", `data-spec="/openapi/registry.json"`},
		{"unknown family page", "/docs/nope", nil, 404, "application/json", `"code":"NOT_FOUND"`},
		{"viewer", "/docs/assets/redoc.standalone.js", nil, 200, "text/javascript; charset=utf-8", "Redoc"},
		{"viewer licence", "/docs/assets/redoc.LICENSE.txt", nil, 200, "text/plain; charset=utf-8", "MIT"},
		{"unknown asset", "/docs/assets/x.js", nil, 404, "application/json", `"code":"NOT_FOUND"`},
		{"document as JSON", "/openapi/channel.json", nil, 200, "application/json", `"openapi": "3.1.0"`},
		{"document as YAML", "/openapi/operator.yaml", nil, 200, "application/yaml", "openapi: 3.1.0"},
		{"unknown document", "/openapi/nope.json", nil, 404, "application/json", `"code":"NOT_FOUND"`},
		{"unknown format", "/openapi/channel.xml", nil, 404, "application/json", `"code":"NOT_FOUND"`},
		{"no format", "/openapi/channel", nil, 404, "application/json", `"code":"NOT_FOUND"`},
		{"no family", "/openapi/.json", nil, 404, "application/json", `"code":"NOT_FOUND"`},
		{"two extensions", "/openapi/channel.json.yaml", nil, 404, "application/json", `"code":"NOT_FOUND"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := get(t, url+tt.path, tt.header)
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			if tt.ctype != "" && a.header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", a.header.Get("Content-Type"), tt.ctype)
			}
			if !strings.Contains(string(a.body), tt.bodyContains) {
				t.Errorf("body does not contain %q: %.300s", tt.bodyContains, a.body)
			}
			if a.header.Get("X-Request-ID") == "" {
				t.Error("no X-Request-ID")
			}
			if tt.status == 302 && a.header.Get("Location") != "/docs" {
				t.Errorf("Location %q, want /docs", a.header.Get("Location"))
			}
		})
	}
}

func TestRegister_PagesLoadNothingFromOutside(t *testing.T) {
	url := start(t)
	a := get(t, url+"/docs/reseller", nil)
	csp := a.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "img-src 'self' data:", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "http") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q allows an outside origin or eval", csp)
	}
	page := string(a.body)
	for _, attr := range []string{`src="`, `href="`} {
		for rest := page; ; {
			i := strings.Index(rest, attr)
			if i < 0 {
				break
			}
			rest = rest[i+len(attr):]
			if !strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, "data:") {
				t.Errorf("the page refers to %q outside the service", rest[:strings.IndexByte(rest, '"')])
			}
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("inline script: the policy allows none")
	}
}

func TestRegister_IndexListsEveryFamily(t *testing.T) {
	url := start(t)
	var idx struct {
		Meta      struct{ ReqID string } `json:"meta"`
		Documents []struct{ Family, JSON, Docs string }
	}
	a := get(t, url+"/", nil)
	if err := json.Unmarshal(a.body, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Meta.ReqID != a.header.Get("X-Request-ID") {
		t.Errorf("meta.reqId %q, header %q", idx.Meta.ReqID, a.header.Get("X-Request-ID"))
	}
	if len(idx.Documents) != 7 {
		t.Fatalf("%d documents, want 7", len(idx.Documents))
	}
	for _, d := range idx.Documents {
		for _, path := range []string{d.JSON, d.Docs} {
			if got := get(t, url+path, nil); got.status != 200 {
				t.Errorf("%s: %d", path, got.status)
			}
		}
	}
}

func TestRegister_ServedDocumentsAreTheBundles(t *testing.T) {
	url := start(t)
	docs, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range docs.Families() {
		want, _ := docs.JSON(f.Name)
		if got := get(t, url+"/openapi/"+f.Name+".json", nil); string(got.body) != string(want) {
			t.Errorf("%s.json is not the bundle", f.Name)
		}
		ys := get(t, url+"/openapi/"+f.Name+".yaml", nil)
		var v map[string]any
		if err := yaml.Unmarshal(ys.body, &v); err != nil || v["openapi"] != "3.1.0" {
			t.Errorf("%s.yaml: %v", f.Name, err)
		}
	}
}

func TestRegister_DocumentsThatDoNotLoadAreA500NotAStartFailure(t *testing.T) {
	calls := 0
	url := startWith(t, func() (*openapi.Documents, error) {
		calls++
		return nil, errors.New("broken embedded document")
	})
	for _, path := range []string{"/", "/docs", "/openapi/reseller.json"} {
		a := get(t, url+path, nil)
		if a.status != 500 || !strings.Contains(string(a.body), `"code":"INTERNAL"`) || strings.Contains(string(a.body), "broken") {
			t.Errorf("%s: %d %s, want 500 INTERNAL without the cause", path, a.status, a.body)
		}
	}
	if a := get(t, url+"/docs/assets/docs.js", nil); a.status != 200 {
		t.Errorf("assets: %d, want 200 (they need no document)", a.status)
	}
	if calls != 1 {
		t.Errorf("load called %d times, want once", calls)
	}
}

// TestVendoredViewer_IsTheReleasedRedoc holds the vendored files to the
// hashes of the npm package redoc@2.5.4 (assets/README.md): an edit of the
// bundle, or a new version without updating the record, fails.
func TestVendoredViewer_IsTheReleasedRedoc(t *testing.T) {
	want := map[string]string{
		"assets/redoc.standalone.js":             "dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b",
		"assets/redoc.standalone.js.LICENSE.txt": "eed602ec32e00b2b9df1984fbcc26a687b1b3193ec01961389c4b8439e6edf73",
		"assets/redoc.LICENSE.txt":               "d3026d549cf68ab7355bcfa85877bf8f845b3334a7efbfdc63936432fb34ff0e",
	}
	readme, err := os.ReadFile("assets/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for file, sum := range want {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: sha256 %x, want %s", file, got, sum)
		}
		if !strings.Contains(string(readme), sum) {
			t.Errorf("assets/README.md does not record %s of %s", sum, file)
		}
	}
}

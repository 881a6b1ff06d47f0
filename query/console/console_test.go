package console

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

// serve starts an API server with the console and one authenticated
// route, rate-limited to one request: the console's files must not count.
func serve(t *testing.T) string {
	t.Helper()
	store, _ := querytest.Principals(t)
	s := httpapi.New(httpapi.Options{Principals: store, RateLimit: 1, RateBurst: 1})
	if err := Register(s); err != nil {
		t.Fatal(err)
	}
	s.Group(httpapi.BaseAdminV1).Handle(http.MethodGet, "/ping", nil, func(r *httpapi.Request) error {
		return r.JSON(http.StatusOK, map[string]bool{"ok": true})
	})
	return querytest.Serve(t, s)
}

// client sends no Accept-Encoding of its own (so that gzip is asked for
// explicitly) and keeps no connection.
var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true, DisableKeepAlives: true}}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestConsole_ServesThePageWithoutCredentialsUnderAStrictPolicy(t *testing.T) {
	base := serve(t)
	for _, p := range []string{"/console", "/console", "/console"} {
		resp, body := get(t, base+p, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || !bytes.Contains(body, []byte(`<script type="module" src="/console/assets/js/app.js">`)) {
			t.Fatalf("GET %s = %d %s: %.200s", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		m := importMap.FindSubmatch(body)
		if m == nil {
			t.Fatal("the page has no import map")
		}
		sum := sha256.Sum256(m[1])
		for _, want := range []string{"default-src 'none'", "script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
			"connect-src 'self'", "form-action 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("CSP allows unsafe sources: %q", csp)
		}
		for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
			"Cache-Control": "no-cache"} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("%s = %q, want %q", h, got, want)
			}
		}
		if resp.Header.Get(httpapi.HeaderRequestID) == "" {
			t.Error("no X-Request-ID")
		}
	}
	// Served three times without credentials under a limit of one request
	// per second; the authenticated route still refuses.
	if resp, _ := get(t, base+"/admin/v1/ping", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("authenticated route without credentials = %d, want 401", resp.StatusCode)
	}
}

func TestConsole_ServesEveryAssetWithItsTypeGzippedOnRequest(t *testing.T) {
	base := serve(t)
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.assets) < 15 {
		t.Fatalf("only %d assets embedded", len(c.assets))
	}
	for rel, a := range c.assets {
		if rel == "index.html" {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			resp, body := get(t, base+"/console/assets/"+rel, nil)
			if resp.StatusCode != 200 || !bytes.Equal(body, a.body) || resp.Header.Get("Content-Type") != a.ctype {
				t.Fatalf("= %d %s, %d bytes; want 200 %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), a.ctype, len(a.body))
			}
			if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("asset without CSP or nosniff")
			}
			resp, body = get(t, base+"/console/assets/"+rel, map[string]string{"Accept-Encoding": "gzip"})
			if a.gz == nil {
				if resp.Header.Get("Content-Encoding") != "" {
					t.Errorf("small asset encoded %q", resp.Header.Get("Content-Encoding"))
				}
				return
			}
			if resp.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(plain, a.body) {
				t.Fatalf("gunzipped body differs (%v)", err)
			}
		})
	}
}

func TestConsole_AnyOtherPathIsTheAPIs404(t *testing.T) {
	base := serve(t)
	for _, p := range []string{"/console/", "/console/nope", "/console/assets/nope.js", "/console/assets/", "/console/assets/js", "/console/assets/index.html",
		"/console/assets/../console.go", "/console/assets/%2e%2e/console.go", "/console/assets/js/../../console.go", "/consoles"} {
		resp, body := get(t, base+p, nil)
		var e struct {
			Code string `json:"code"`
		}
		if resp.StatusCode != 404 || json.Unmarshal(body, &e) != nil || e.Code != "NOT_FOUND" {
			t.Errorf("GET %s = %d %.120s, want 404 NOT_FOUND", p, resp.StatusCode, body)
		}
		if bytes.Contains(body, []byte("package console")) {
			t.Errorf("GET %s served source", p)
		}
	}
}

func TestConsole_UnchangedFilesAre304(t *testing.T) {
	base := serve(t)
	resp, _ := get(t, base+"/console/assets/js/app.js", nil)
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	resp, body := get(t, base+"/console/assets/js/app.js", map[string]string{"If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("revalidation = %d with %d bytes, want 304 empty", resp.StatusCode, len(body))
	}
	if resp, _ := get(t, base+"/console/assets/js/app.js", map[string]string{"If-None-Match": `"other"`}); resp.StatusCode != 200 {
		t.Fatalf("another ETag = %d, want 200", resp.StatusCode)
	}
}

// TestVendor_FilesAreTheVendoredOnes: every vendored file is listed in
// SHA256SUMS with its sum (scripts/vendor-console.sh writes it), and every
// listed file is there, unmodified.
func TestVendor_FilesAreTheVendoredOnes(t *testing.T) {
	sums, err := fs.ReadFile(embedded, "assets/vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		listed[file] = sum
	}
	if len(listed) < 10 {
		t.Fatalf("SHA256SUMS lists %d files", len(listed))
	}
	for file, want := range listed {
		b, err := fs.ReadFile(embedded, "assets/vendor/"+file)
		if err != nil {
			t.Errorf("%s listed but missing: %v", file, err)
			continue
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("%s differs from the vendored file (sha256 %x, want %s): re-run scripts/vendor-console.sh", file, got, want)
		}
	}
	err = fs.WalkDir(embedded, "assets/vendor", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, "assets/vendor/")
		if rel == "SHA256SUMS" || rel == "README.md" {
			return nil
		}
		if _, ok := listed[rel]; !ok {
			t.Errorf("vendored file %s is not in SHA256SUMS", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each library has its licence.
	for _, lib := range []string{"preact-", "htm-", "uplot-"} {
		found := false
		for f := range listed {
			found = found || (strings.HasPrefix(f, lib) && path.Base(f) == "LICENSE")
		}
		if !found {
			t.Errorf("no LICENSE vendored for %s*", lib)
		}
	}
}

var (
	importFrom = regexp.MustCompile(`(?m)^import\s[^;]*?from\s+'([^']+)';`)
	absURL     = regexp.MustCompile(`https?://`)
)

// TestAssets_ImportsResolveInsideTheBinary: every import of the console's
// own modules is a sibling module that exists or a name of the page's
// import map, whose targets exist; no own file names another origin.
func TestAssets_ImportsResolveInsideTheBinary(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var imap struct {
		Imports map[string]string `json:"imports"`
	}
	if err := json.Unmarshal(importMap.FindSubmatch(c.index.body)[1], &imap); err != nil {
		t.Fatal(err)
	}
	for name, target := range imap.Imports {
		if _, ok := c.assets[strings.TrimPrefix(target, Base+"/assets/")]; !ok {
			t.Errorf("import map %s -> %s: no such asset", name, target)
		}
	}
	own := 0
	for rel, a := range c.assets {
		if strings.HasPrefix(rel, "vendor/") {
			continue
		}
		own++
		if absURL.Match(a.body) {
			t.Errorf("%s names an absolute URL: the console uses its own origin only", rel)
		}
		if !strings.HasSuffix(rel, ".js") {
			continue
		}
		for _, m := range importFrom.FindAllSubmatch(a.body, -1) {
			spec := string(m[1])
			if strings.HasPrefix(spec, "./") {
				if _, ok := c.assets[path.Join(path.Dir(rel), spec)]; !ok {
					t.Errorf("%s imports %s: no such module", rel, spec)
				}
				continue
			}
			if _, ok := imap.Imports[spec]; !ok {
				t.Errorf("%s imports %q, which the import map does not name", rel, spec)
			}
		}
	}
	if own < 10 {
		t.Fatalf("only %d own assets", own)
	}
	// The page's scripts are the import map and the app module only.
	if n := bytes.Count(c.index.body, []byte("<script")); n != 2 {
		t.Errorf("index.html has %d scripts, want the import map and app.js", n)
	}
}

// TestAssets_CredentialsOnlyInHeadersAndSessionStorage reads the module
// that calls the API: the secret goes to the X-API-Secret header and to
// sessionStorage, never to localStorage, a cookie, a URL or the console.
func TestAssets_CredentialsOnlyInHeadersAndSessionStorage(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for rel, a := range c.assets {
		if strings.HasPrefix(rel, "vendor/") || !strings.HasSuffix(rel, ".js") {
			continue
		}
		for _, bad := range []string{"localStorage", "document.cookie", "console.log", "console.error", "indexedDB"} {
			if bytes.Contains(a.body, []byte(bad)) {
				t.Errorf("%s uses %s", rel, bad)
			}
		}
	}
	apiJS := string(c.assets["js/api.js"].body)
	for _, want := range []string{"'X-API-Secret': creds.secret", "sessionStorage.setItem", "credentials: 'omit'"} {
		if !strings.Contains(apiJS, want) {
			t.Errorf("api.js lacks %q", want)
		}
	}
	if strings.Count(apiJS, "creds.secret") != 1 {
		t.Errorf("api.js reads the secret %d times, want once (the header)", strings.Count(apiJS, "creds.secret"))
	}
}

// TestVendorScript_PinsTheVersionsThePageLoads: the versions the vendoring
// script pins are the directories the import map and the stylesheet name.
func TestVendorScript_PinsTheVersionsThePageLoads(t *testing.T) {
	script, err := os.ReadFile("../../scripts/vendor-console.sh")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ name, dir string }{{"PREACT", "preact-"}, {"HTM", "htm-"}, {"UPLOT", "uplot-"}} {
		m := regexp.MustCompile(`(?m)^` + v.name + `=([0-9.]+)`).FindSubmatch(script)
		if m == nil {
			t.Fatalf("scripts/vendor-console.sh pins no %s", v.name)
		}
		dir := "vendor/" + v.dir + string(m[1]) + "/"
		if !bytes.Contains(c.index.body, []byte(Base+"/assets/"+dir)) {
			t.Errorf("index.html does not load %s", dir)
		}
		var files []string
		for rel := range c.assets {
			if strings.HasPrefix(rel, dir) {
				files = append(files, rel)
			}
		}
		if !slices.ContainsFunc(files, func(f string) bool { return path.Base(f) == "LICENSE" }) {
			t.Errorf("%s: files %v, no LICENSE", dir, files)
		}
	}
}

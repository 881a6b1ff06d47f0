// Package console serves the web console of issue 25 at /console: one page
// and its scripts, built into the binary (assets/, embedded), for
// subscribers (reseller principals: rules, metadata, deliveries, replay,
// charts, a signature checker) and operators (suppliers, bindings, change
// notifications, cron reports).
//
// It serves files only, without credentials, and must not hold data or
// decide anything: the page calls the same APIs as any client, with the
// same X-API-Key and X-API-Secret headers, so the same authorization
// applies (a reseller sees its own subscriber's data and its channel's
// catalog, nothing else). The credentials live in the tab's sessionStorage
// and travel in those headers only: never in a URL, a cookie or a log.
//
// Every answer carries a Content-Security-Policy that admits scripts,
// styles and requests of this origin only (plus the page's one inline
// script, the import map, by its hash), so that an injected script could
// neither load nor send the session's credentials elsewhere.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

//go:embed assets
var embedded embed.FS

// Base is the console's path; its files are under Base + "/assets/".
const Base = "/console"

// asset is one file, ready to serve.
type asset struct {
	body  []byte
	gz    []byte // gzip of body, nil when not worth it
	ctype string
	etag  string
}

// contentTypes are the types of the files the console has; a file of
// another kind is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".map":  "application/json",
	".md":   "text/plain; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
}

// importMap finds the page's one inline script.
var importMap = regexp.MustCompile(`(?s)<script type="importmap">(.*?)</script>`)

// Console is the set of files and the headers they are served with.
type Console struct {
	index  asset
	assets map[string]asset // by path under assets/, e.g. "js/app.js"
	csp    string
}

// New loads the embedded files. It fails if the page lacks its import map
// or a file has a type the console does not serve.
func New() (*Console, error) { return load(embedded) }

func load(fsys fs.FS) (*Console, error) {
	c := &Console{assets: map[string]asset{}}
	err := fs.WalkDir(fsys, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, "assets/")
		if rel == "SHA256SUMS" || path.Base(rel) == "SHA256SUMS" || path.Base(rel) == "LICENSE" {
			return c.add(fsys, p, rel, "text/plain; charset=utf-8")
		}
		ctype, ok := contentTypes[path.Ext(rel)]
		if !ok {
			return fmt.Errorf("console asset %s: no content type for %q", rel, path.Ext(rel))
		}
		return c.add(fsys, p, rel, ctype)
	})
	if err != nil {
		return nil, err
	}
	idx, ok := c.assets["index.html"]
	if !ok {
		return nil, errors.New("console: assets/index.html missing")
	}
	c.index = idx
	m := importMap.FindSubmatch(idx.body)
	if m == nil {
		return nil, errors.New("console: index.html has no import map")
	}
	sum := sha256.Sum256(m[1])
	c.csp = strings.Join([]string{
		"default-src 'none'",
		"script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
		"style-src 'self'",
		"img-src 'self' data:",
		"connect-src 'self'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
	return c, nil
}

func (c *Console) add(fsys fs.FS, p, rel, ctype string) error {
	body, err := fs.ReadFile(fsys, p)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	a := asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	if strings.HasPrefix(ctype, "text/") || ctype == "application/json" || ctype == "image/svg+xml" {
		if len(body) > 1024 {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			_, _ = zw.Write(body)
			if err := zw.Close(); err != nil {
				return fmt.Errorf("gzip %s: %w", rel, err)
			}
			a.gz = b.Bytes()
		}
	}
	c.assets[rel] = a
	return nil
}

// Register adds the console's routes to s: the page at /console, its files
// under /console/assets/; any other path under /console/ is the API's 404.
// (The router cannot serve /console/ too: a route for it and one for
// /console conflict, and the catch-all does not match it once /console
// exists.) No credentials: they are
// files, and the page asks for the credentials it then sends to the API.
func Register(s *httpapi.Server) error {
	c, err := New()
	if err != nil {
		return err
	}
	c.Register(s)
	return nil
}

// Register adds c's routes to s.
func (c *Console) Register(s *httpapi.Server) {
	s.HandlePublic(http.MethodGet, Base, c.page)
	s.HandlePublic(http.MethodGet, Base+"/{path:*}", c.file)
}

// CSP is the Content-Security-Policy of every answer.
func (c *Console) CSP() string { return c.csp }

func (c *Console) page(r *httpapi.Request) error {
	c.write(r, c.index)
	return nil
}

// file answers /console/assets/<path> with the file; anything else is 404.
// Paths are looked up in the embedded set only, so no path reaches
// outside it.
func (c *Console) file(r *httpapi.Request) error {
	rel, ok := strings.CutPrefix(r.Param("path"), "assets/")
	a, found := c.assets[rel]
	if !ok || !found || rel == "index.html" {
		return apierror.New(apierror.NotFound, "no console file at this path")
	}
	c.write(r, a)
	return nil
}

// write answers with a, or 304 when the client has it (ETag); gzip when
// the client takes it. The page and its files are revalidated at every
// load (no-cache): they change with the binary and are small.
func (c *Console) write(r *httpapi.Request, a asset) {
	h := &r.Ctx.Response.Header
	h.Set("Content-Security-Policy", c.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	if match := string(r.Ctx.Request.Header.Peek("If-None-Match")); match != "" && strings.Contains(match, a.etag) {
		r.Ctx.SetStatusCode(http.StatusNotModified)
		return
	}
	h.SetContentType(a.ctype)
	r.Ctx.SetStatusCode(http.StatusOK)
	if a.gz != nil && r.Ctx.Request.Header.HasAcceptEncoding("gzip") {
		h.Set("Content-Encoding", "gzip")
		r.Ctx.Response.SetBodyRaw(a.gz)
		return
	}
	r.Ctx.Response.SetBodyRaw(a.body)
}

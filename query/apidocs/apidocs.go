// Package apidocs serves the API contract of schemas/openapi without
// credentials, on the API listener:
//
//	GET /                          the index of the documents (a browser is sent to /docs)
//	GET /docs, /docs/{family}      the reference pages, rendered by the vendored Redoc
//	GET /docs/assets/{file}        the viewer, its licences, the page's script and style
//	GET /openapi/{family}.{format} a family's document, bundled: .json or .yaml
//
// Everything it serves is built into the binary: the pages load nothing
// from outside the service (their Content-Security-Policy says so to the
// browser). The routes are described by schemas/openapi/discovery.yaml
// like every other route by its family's document.
//
// It must not serve anything that reads a store or needs a principal.
package apidocs

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas/openapi"
)

//go:embed page.html assets/redoc.standalone.js assets/redoc.standalone.js.LICENSE.txt assets/redoc.LICENSE.txt assets/docs.js assets/docs.css
var files embed.FS

// contentSecurityPolicy lets the pages run the service's own scripts and
// styles only: no outside origin for anything. Redoc needs inline styles
// (styled-components), data: images (its icons) and a blob: worker (its
// search index); its sidebar logo from the Redocly CDN is blocked.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// defaultFamily is the family /docs shows: resellers are the API's first
// readers.
const defaultFamily = "reseller"

// labels name the families in the pages' bar.
var labels = map[string]string{
	"reseller":  "Reseller",
	"channel":   "Channel",
	"registry":  "Registry and webhooks",
	"operator":  "Operator",
	"admin":     "Admin",
	"octo":      "OCTO",
	"discovery": "Reference",
}

// asset is one file of /docs/assets.
type asset struct {
	contentType string
	body        []byte
}

type handlers struct {
	load   func() (*openapi.Documents, error)
	once   sync.Once
	built  *built
	err    error
	assets map[string]asset
}

// built is what the routes serve, made on first use: bundling the
// documents takes ~150 ms, which a start need not wait for.
type built struct {
	docs  *openapi.Documents
	pages map[string][]byte // family -> rendered HTML
	index index
}

// index is GET /.
type index struct {
	Name      string          `json:"name"`
	Docs      string          `json:"docs"`
	Documents []indexDocument `json:"documents"`
}

type indexDocument struct {
	Family string `json:"family"`
	Title  string `json:"title"`
	Docs   string `json:"docs"`
	JSON   string `json:"json"`
	YAML   string `json:"yaml"`
}

// Register adds the public reference routes to s. load gives the bundled
// documents (openapi.Load); it is called once, on the first request that
// needs them, and its failure (a defect of the embedded documents, which
// their tests rule out) is a 500.
func Register(s *httpapi.Server, load func() (*openapi.Documents, error)) error {
	h := &handlers{load: load, assets: map[string]asset{}}
	for name, ct := range map[string]string{
		"redoc.standalone.js":             "text/javascript; charset=utf-8",
		"redoc.standalone.js.LICENSE.txt": "text/plain; charset=utf-8",
		"redoc.LICENSE.txt":               "text/plain; charset=utf-8",
		"docs.js":                         "text/javascript; charset=utf-8",
		"docs.css":                        "text/css; charset=utf-8",
	} {
		b, err := files.ReadFile("assets/" + name)
		if err != nil {
			return fmt.Errorf("reference asset %s: %w", name, err)
		}
		h.assets[name] = asset{contentType: ct, body: b}
	}
	s.HandlePublic(http.MethodGet, "/", h.root)
	s.HandlePublic(http.MethodGet, "/docs", h.page)
	s.HandlePublic(http.MethodGet, "/docs/{family}", h.page)
	s.HandlePublic(http.MethodGet, "/docs/assets/{file}", h.asset)
	// One segment, /openapi/{family}.{format} in the documents: the router
	// matches whole segments, and document splits it.
	s.HandlePublic(http.MethodGet, DocumentRoute, h.document)
	return nil
}

// get builds the documents, pages and index, once.
func (h *handlers) get() (*built, error) {
	h.once.Do(func() { h.built, h.err = build(h.load) })
	return h.built, h.err
}

func build(load func() (*openapi.Documents, error)) (*built, error) {
	docs, err := load()
	if err != nil {
		return nil, fmt.Errorf("API documents: %w", err)
	}
	tmpl, err := template.ParseFS(files, "page.html")
	if err != nil {
		return nil, fmt.Errorf("reference page template: %w", err)
	}
	b := &built{docs: docs, pages: map[string][]byte{}, index: index{Name: "Switchback", Docs: "/docs"}}
	type link struct{ Name, Title, Label string }
	var links []link
	for _, f := range docs.Families() {
		links = append(links, link{Name: f.Name, Title: f.Title, Label: labels[f.Name]})
		b.index.Documents = append(b.index.Documents, indexDocument{Family: f.Name, Title: f.Title, Docs: "/docs/" + f.Name,
			JSON: "/openapi/" + f.Name + ".json", YAML: "/openapi/" + f.Name + ".yaml"})
	}
	for _, l := range links {
		var buf bytes.Buffer
		if err := tmpl.Execute(&buf, struct {
			Current  link
			Families []link
		}{l, links}); err != nil {
			return nil, fmt.Errorf("reference page of %s: %w", l.Name, err)
		}
		b.pages[l.Name] = buf.Bytes()
	}
	if _, ok := b.pages[defaultFamily]; !ok {
		return nil, fmt.Errorf("no %s document to show at /docs", defaultFamily)
	}
	return b, nil
}

// root answers the index, or sends a browser to the pages.
func (h *handlers) root(r *httpapi.Request) error {
	if prefersHTML(string(r.Ctx.Request.Header.Peek("Accept"))) {
		r.Ctx.Response.Header.Set("Location", "/docs")
		r.Ctx.SetStatusCode(http.StatusFound)
		return nil
	}
	b, err := h.get()
	if err != nil {
		return err
	}
	return r.JSON(http.StatusOK, b.index)
}

// prefersHTML reports whether an Accept header asks for HTML before JSON:
// what a browser's navigation sends, and an API client does not.
func prefersHTML(accept string) bool {
	html, js := strings.Index(accept, "text/html"), strings.Index(accept, "application/json")
	return html >= 0 && (js < 0 || html < js)
}

func (h *handlers) page(r *httpapi.Request) error {
	b, err := h.get()
	if err != nil {
		return err
	}
	fam := r.Param("family")
	if fam == "" {
		fam = defaultFamily
	}
	page, ok := b.pages[fam]
	if !ok {
		return notFound("no API family " + fam)
	}
	resp := &r.Ctx.Response
	resp.Header.Set("Content-Security-Policy", contentSecurityPolicy)
	resp.Header.Set("X-Content-Type-Options", "nosniff")
	resp.Header.Set("Cache-Control", "no-cache")
	resp.Header.SetContentType("text/html; charset=utf-8")
	resp.SetBodyRaw(page)
	return nil
}

func (h *handlers) asset(r *httpapi.Request) error {
	a, ok := h.assets[r.Param("file")]
	if !ok {
		return notFound("no such asset")
	}
	resp := &r.Ctx.Response
	resp.Header.Set("X-Content-Type-Options", "nosniff")
	resp.Header.Set("Cache-Control", "public, max-age=300")
	resp.Header.SetContentType(a.contentType)
	resp.SetBodyRaw(a.body)
	return nil
}

func (h *handlers) document(r *httpapi.Request) error {
	b, err := h.get()
	if err != nil {
		return err
	}
	fam, format, _ := strings.Cut(r.Param("document"), ".")
	get, ct := b.docs.JSON, "application/json"
	switch format {
	case "json":
	case "yaml":
		get, ct = b.docs.YAML, "application/yaml"
	default:
		return notFound("no API document " + r.Param("document") + ": /openapi/{family}.json or .yaml")
	}
	doc, ok := get(fam)
	if !ok {
		return notFound("no API family " + fam)
	}
	resp := &r.Ctx.Response
	resp.Header.Set("Cache-Control", "no-cache")
	resp.Header.SetContentType(ct)
	resp.SetBodyRaw(doc)
	return nil
}

// DocumentRoute is the route of the OpenAPI documents, documented as
// /openapi/{family}.{format}.
const DocumentRoute = "/openapi/{document}"

func notFound(msg string) error { return apierror.New(apierror.NotFound, msg) }

// Package contract holds HTTP exchanges to the API contract of
// schemas/openapi, for tests: every request a test sends to the API and
// every answer it gets, and every webhook a test's subscriber receives,
// are validated against the bundled documents (libopenapi-validator, JSON
// Schema 2020-12 with formats asserted). What it reports:
//
//   - an undocumented route (a path no document has, answered other than
//     404 NOT_FOUND; a documented path with an undocumented method,
//     answered other than 405 with exactly the documented methods in
//     Allow; under the prefix a document claims with
//     x-switchback-unrouted, /octo/, answered other than that document's
//     own error);
//   - a status the operation does not document;
//   - a response body, or a header, that its schema does not admit: an
//     undocumented field where the contract is closed, a missing required
//     field, a wrong type or format;
//   - a body on a response documented without one;
//   - a duplicate key in a JSON body (strict parsers refuse them);
//   - a request outside the contract that the service accepted (2xx/3xx):
//     the documents are stricter than the service. A request outside the
//     contract answered with a documented 4xx is what negative tests do,
//     and is fine.
//
// Known deviations (deviations.go) are reported apart and do not fail a
// test: each names the issue that will remove it.
//
// It is imported by tests only; the binary does not link it.
package contract

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/switchbackhq/switchback/schemas/openapi"
)

// Violation is one way an exchange leaves the contract.
type Violation struct {
	// Method and Path are the request's; Route the documented path
	// template it matched ("" when none); Status the answer's.
	Method, Path, Route string
	Status              int
	// Message says what is wrong, in words stable enough for the known
	// deviations to match.
	Message string
	// Known is the known deviation it is, or nil.
	Known *Deviation
}

func (v Violation) String() string {
	where := v.Route
	if where == "" {
		where = v.Path
	}
	return fmt.Sprintf("%s %s -> %d: %s", v.Method, where, v.Status, v.Message)
}

// Checker validates exchanges against the documents of every family. It is
// safe for concurrent use.
type Checker struct {
	families []*family
	routes   []*route
	webhooks map[string]*webhook

	// validate serialises the validator calls (they share caches built for
	// one document at a time) and counts.
	// deviations are the known deviations (KnownDeviations).
	deviations []*Deviation

	mu     sync.Mutex
	counts Counts
	known  map[*Deviation]int
}

// Counts are what a Checker validated.
type Counts struct {
	// Exchanges are request/answer pairs, by family ("unrouted" for paths
	// no document has).
	Exchanges map[string]int
	// Webhooks are deliveries, by notification type.
	Webhooks   map[string]int
	Violations int
	Known      int
}

type family struct {
	name string
	v    validator.Validator
	doc  *v3.Document
	// unrouted is the family's own answer to the paths under its prefix
	// that no route serves (unroutedExtension), nil when it has none.
	unrouted *unrouted
}

// unroutedExtension is a document's root extension saying that every path
// under prefix belongs to the family, served or not: a path or method
// that no route serves there is answered status with a body of the
// document's components.schemas[schema], not the router's 404/405 error
// object. The OCTO dialect answers so (400 BAD_REQUEST, query/octo).
const unroutedExtension = "x-switchback-unrouted"

type unrouted struct {
	Prefix string `yaml:"prefix"`
	Status int    `yaml:"status"`
	Schema string `yaml:"schema"`

	schema *base.Schema
}

// route is one documented path template of a family.
type route struct {
	fam      *family
	template string
	re       *regexp.Regexp
	literal  int  // characters outside parameters: the most specific match wins, as in the router
	rest     bool // the last parameter takes the rest of the path (restExtension)
	item     *v3.PathItem
	methods  []string
}

type webhook struct {
	fam  *family
	item *v3.PathItem
}

// New loads and bundles the documents (schemas/openapi) and builds a
// validator for each.
func New() (*Checker, error) {
	docs, err := openapi.Load()
	if err != nil {
		return nil, err
	}
	c := newChecker(KnownDeviations)
	for _, f := range docs.Families() {
		raw, _ := docs.JSON(f.Name)
		doc, err := libopenapi.NewDocument(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			return nil, fmt.Errorf("%s: build model: %w", f.Name, err)
		}
		v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s: validator: %v", f.Name, errs)
		}
		fam := &family{name: f.Name, v: v, doc: &m.Model}
		if fam.unrouted, err = readUnrouted(&m.Model); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		c.families = append(c.families, fam)
		for p := m.Model.Paths.PathItems.First(); p != nil; p = p.Next() {
			rt, err := newRoute(fam, p.Key(), p.Value())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			c.routes = append(c.routes, rt)
		}
		if m.Model.Webhooks != nil {
			for w := m.Model.Webhooks.First(); w != nil; w = w.Next() {
				c.webhooks[w.Key()] = &webhook{fam: fam, item: w.Value()}
			}
		}
	}
	return c, nil
}

// readUnrouted reads the document's unroutedExtension, nil when absent.
func readUnrouted(doc *v3.Document) (*unrouted, error) {
	if doc.Extensions == nil {
		return nil, nil
	}
	n, ok := doc.Extensions.Get(unroutedExtension)
	if !ok {
		return nil, nil
	}
	var u unrouted
	if err := n.Decode(&u); err != nil {
		return nil, fmt.Errorf("%s: %w", unroutedExtension, err)
	}
	if !strings.HasPrefix(u.Prefix, "/") || !strings.HasSuffix(u.Prefix, "/") || u.Status < 400 || u.Status > 599 {
		return nil, fmt.Errorf("%s: want a prefix /.../ and an error status, got %q and %d", unroutedExtension, u.Prefix, u.Status)
	}
	var proxy *base.SchemaProxy
	if doc.Components != nil && doc.Components.Schemas != nil {
		proxy = doc.Components.Schemas.GetOrZero(u.Schema)
	}
	if proxy == nil {
		return nil, fmt.Errorf("%s: no schema %q in components.schemas", unroutedExtension, u.Schema)
	}
	if u.schema = proxy.Schema(); u.schema == nil {
		return nil, fmt.Errorf("%s: schema %q: %v", unroutedExtension, u.Schema, proxy.GetBuildError())
	}
	return &u, nil
}

// unroutedFamily is the family that answers the unserved paths under its
// prefix, for path; nil when none does.
func (c *Checker) unroutedFamily(path string) *family {
	for _, f := range c.families {
		if f.unrouted != nil && strings.HasPrefix(path, f.unrouted.Prefix) {
			return f
		}
	}
	return nil
}

// checkUnrouted reports what is wrong when the answer to an unserved path
// or method under f's prefix is not f's own: "" when it is.
func (c *Checker) checkUnrouted(f *family, x Exchange) string {
	if x.Status != f.unrouted.Status {
		return fmt.Sprintf("answered %d, want %d (%s under %s)", x.Status, f.unrouted.Status, f.unrouted.Schema, f.unrouted.Prefix)
	}
	if ok, errs := schema_validation.NewSchemaValidator(config.WithFormatAssertions()).ValidateSchemaBytes(f.unrouted.schema, x.ResponseBody); !ok {
		var why []string
		for _, e := range errs {
			why = append(why, describe(e)...)
		}
		return fmt.Sprintf("the body is not %s: %s", f.unrouted.Schema, strings.Join(why, "; "))
	}
	return ""
}

func newChecker(deviations []*Deviation) *Checker {
	return &Checker{webhooks: map[string]*webhook{}, deviations: deviations, known: map[*Deviation]int{},
		counts: Counts{Exchanges: map[string]int{}, Webhooks: map[string]int{}}}
}

// withDeviations is a Checker of the same documents with other known
// deviations and counts of its own.
func (c *Checker) withDeviations(deviations []*Deviation) *Checker {
	o := newChecker(deviations)
	o.families, o.routes, o.webhooks = c.families, c.routes, c.webhooks
	return o
}

// ValidateDocuments checks every bundled document against the OpenAPI 3.1
// specification's own schema.
func (c *Checker) ValidateDocuments() []string {
	var out []string
	for _, f := range c.families {
		if ok, errs := f.v.ValidateDocument(); !ok {
			for _, e := range errs {
				for _, d := range describe(e) {
					out = append(out, f.name+": "+d)
				}
			}
		}
	}
	return out
}

var paramRE = regexp.MustCompile(`\{[^}]+\}`)

func newRoute(fam *family, template string, item *v3.PathItem) (*route, error) {
	var re strings.Builder
	re.WriteString("^")
	literal, last, rest := 0, 0, false
	for _, loc := range paramRE.FindAllStringIndex(template, -1) {
		re.WriteString(regexp.QuoteMeta(template[last:loc[0]]))
		literal += loc[0] - last
		if loc[1] == len(template) && restParam(item, template[loc[0]+1:loc[1]-1]) {
			re.WriteString(`(.+?)`)
			rest = true
		} else {
			re.WriteString(`([^/]+?)`)
		}
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(template[last:]))
	literal += len(template) - last
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("path %s: %w", template, err)
	}
	rt := &route{fam: fam, template: template, re: rx, literal: literal, item: item, rest: rest}
	for op := item.GetOperations().First(); op != nil; op = op.Next() {
		rt.methods = append(rt.methods, strings.ToUpper(op.Key()))
	}
	sort.Strings(rt.methods)
	return rt, nil
}

// restExtension marks a path parameter that ends its template and takes
// the rest of the path, slashes included (the router's {name:*}): OpenAPI
// has no such parameter, so the documents say it with an extension.
const restExtension = "x-switchback-rest-of-path"

func restParam(item *v3.PathItem, name string) bool {
	for _, p := range item.Parameters {
		if p.In == "path" && p.Name == name && p.Extensions != nil {
			if _, ok := p.Extensions.Get(restExtension); ok {
				return true
			}
		}
	}
	return false
}

// Routes lists every documented operation as method and path template.
func (c *Checker) Routes() [][2]string {
	var out [][2]string
	for _, r := range c.routes {
		for _, m := range r.methods {
			out = append(out, [2]string{m, r.template})
		}
	}
	return out
}

// match finds the most specific documented template of a path.
func (c *Checker) match(path string) *route {
	var best *route
	for _, r := range c.routes {
		if r.re.MatchString(path) && (best == nil || r.literal > best.literal) {
			best = r
		}
	}
	return best
}

// Exchange is one request and its answer, bodies read.
type Exchange struct {
	Request      *http.Request
	RequestBody  []byte
	Status       int
	Header       http.Header
	ResponseBody []byte
}

// Check validates one exchange and returns its violations (known ones
// marked), counting it.
func (c *Checker) Check(x Exchange) []Violation {
	path := x.Request.URL.Path
	rt := c.match(path)
	own := c.unroutedFamily(path)
	fam := "unrouted"
	if rt != nil {
		fam = rt.fam.name
	} else if own != nil {
		fam = own.name
	}
	var vs []Violation
	add := func(route, msg string) {
		vs = append(vs, Violation{Method: x.Request.Method, Path: path, Route: route, Status: x.Status, Message: msg})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.Exchanges[fam]++

	for _, k := range duplicateKeys(x.ResponseBody) {
		add(routeOf(rt), fmt.Sprintf("duplicate JSON key %q in the response body", k))
	}
	switch {
	case own != nil && (rt == nil || !slices.Contains(rt.methods, x.Request.Method)):
		// Under a family's own prefix (x-switchback-unrouted): its error
		// answers what no route serves, in place of the router's 404/405.
		if msg := c.checkUnrouted(own, x); msg != "" {
			if rt == nil {
				add("", "undocumented route: "+msg)
			} else {
				add(rt.template, "undocumented method: "+msg)
			}
		}
	case rt == nil:
		// Not a route of the contract: only the router's 404 may answer.
		if msg := c.checkError(x, http.StatusNotFound); msg != "" {
			add("", "undocumented route: "+msg)
		}
	case !slices.Contains(rt.methods, x.Request.Method):
		if msg := c.checkError(x, http.StatusMethodNotAllowed); msg != "" {
			add(rt.template, "undocumented method: "+msg)
		} else if allow := x.Header.Get("Allow"); !sameMethods(allow, rt.methods) {
			add(rt.template, fmt.Sprintf("405 Allow %q, the documents list %s", allow, strings.Join(rt.methods, ", ")))
		}
	default:
		for _, m := range c.checkOperation(rt, x) {
			add(rt.template, m)
		}
	}
	for i := range vs {
		vs[i].Known = c.matchKnown(vs[i])
		if vs[i].Known != nil {
			c.known[vs[i].Known]++
			c.counts.Known++
		} else {
			c.counts.Violations++
		}
	}
	return vs
}

func routeOf(rt *route) string {
	if rt == nil {
		return ""
	}
	return rt.template
}

func sameMethods(allow string, want []string) bool {
	var got []string
	for _, m := range strings.Split(allow, ",") {
		if m = strings.TrimSpace(m); m != "" {
			got = append(got, m)
		}
	}
	sort.Strings(got)
	return slices.Equal(got, want)
}

// checkError reports what is wrong when the answer should be the error
// object with status: "" when it is.
func (c *Checker) checkError(x Exchange, status int) string {
	if x.Status != status {
		return fmt.Sprintf("answered %d, want %d", x.Status, status)
	}
	var e struct {
		Code    string            `json:"code"`
		Message string            `json:"message"`
		Data    map[string]string `json:"data"`
		Meta    struct {
			ReqID string `json:"reqId"`
		} `json:"meta"`
	}
	dec := json.NewDecoder(bytes.NewReader(x.ResponseBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Code == "" || e.Message == "" || e.Meta.ReqID == "" {
		return fmt.Sprintf("the body is not the error object: %.200s", x.ResponseBody)
	}
	return ""
}

// checkOperation validates the request and the answer of a documented
// operation.
func (c *Checker) checkOperation(rt *route, x Exchange) []string {
	req := cloneRequest(x.Request, x.RequestBody)
	if rt.rest {
		// The validator matches a parameter within one segment: hand it
		// the rest of the path as one, its slashes escaped.
		m := rt.re.FindStringSubmatchIndex(req.URL.Path)
		if i := m[len(m)-2]; i >= 0 {
			p := req.URL.Path[:i] + strings.ReplaceAll(req.URL.Path[i:], "/", "%2F")
			req.URL.Path, req.URL.RawPath = p, p
		}
	}
	var msgs []string
	_, reqErrs := rt.fam.v.ValidateHttpRequestWithPathItem(req, rt.item, rt.template)
	var reqProblems []string
	for _, e := range reqErrs {
		reqProblems = append(reqProblems, describe(e)...)
	}
	for _, k := range duplicateKeys(x.RequestBody) {
		reqProblems = append(reqProblems, fmt.Sprintf("duplicate JSON key %q in the request body", k))
	}

	op := operation(rt.item, x.Request.Method)
	resp := op.Responses.Codes.GetOrZero(strconv.Itoa(x.Status))
	if resp == nil {
		msgs = append(msgs, fmt.Sprintf("status %d is not documented for %s %s", x.Status, x.Request.Method, rt.template))
	} else {
		if orderedLen(resp) == 0 && len(bytes.TrimSpace(x.ResponseBody)) > 0 {
			msgs = append(msgs, fmt.Sprintf("a body on a %d documented without one: %.200s", x.Status, x.ResponseBody))
		}
		res := &http.Response{StatusCode: x.Status, Header: x.Header.Clone(), Request: req,
			Body: io.NopCloser(bytes.NewReader(x.ResponseBody))}
		_, respErrs := rt.fam.v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(req, res, rt.item, rt.template)
		for _, e := range respErrs {
			for _, d := range describe(e) {
				msgs = append(msgs, "response: "+d)
			}
		}
	}
	if len(reqProblems) > 0 {
		if x.Status < 400 {
			msgs = append(msgs, fmt.Sprintf("a request outside the contract was accepted with %d: %s",
				x.Status, strings.Join(reqProblems, "; ")))
		} else if x.Status >= 500 && x.Status != http.StatusServiceUnavailable {
			msgs = append(msgs, fmt.Sprintf("a request outside the contract was answered %d, not a 4xx: %s",
				x.Status, strings.Join(reqProblems, "; ")))
		}
	}
	return msgs
}

func operation(item *v3.PathItem, method string) *v3.Operation {
	for op := item.GetOperations().First(); op != nil; op = op.Next() {
		if strings.EqualFold(op.Key(), method) {
			return op.Value()
		}
	}
	return nil
}

func orderedLen(r *v3.Response) int {
	if r.Content == nil {
		return 0
	}
	return r.Content.Len()
}

// cloneRequest gives the validator its own copy with the body. A body sent
// without Content-Type is JSON to the service, so it is to the validator.
func cloneRequest(r *http.Request, body []byte) *http.Request {
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.ContentLength = int64(len(body))
	if len(body) > 0 && c.Header.Get("Content-Type") == "" {
		c.Header.Set("Content-Type", "application/json")
	}
	if c.URL.Host == "" {
		c.URL = &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
	}
	return c
}

// describe turns a validator error into lines: one per schema failure
// (where it is and what is wrong), or the message when there are none, so
// that each failure is one violation and a known deviation never hides
// another failure of the same body.
func describe(e *liberrors.ValidationError) []string {
	if len(e.SchemaValidationErrors) == 0 {
		if e.Reason != "" && !strings.Contains(e.Message, e.Reason) {
			return []string{e.Message + " (" + e.Reason + ")"}
		}
		return []string{e.Message}
	}
	what := e.Message
	// "201 response body for '/v1.2/holds' failed to validate schema":
	// the path is said elsewhere.
	if i := strings.Index(what, " for '"); i > 0 {
		if j := strings.Index(what[i+6:], "'"); j >= 0 {
			what = what[:i] + what[i+6+j+1:]
		}
	}
	var out []string
	for _, f := range e.SchemaValidationErrors {
		where := f.FieldPath
		if where == "" && len(f.InstancePath) > 0 {
			where = "/" + strings.Join(f.InstancePath, "/")
		}
		if where == "" {
			where = "$"
		}
		out = append(out, what+": "+where+": "+f.Reason)
	}
	return out
}

// Webhook validates one webhook delivery a subscriber received: the type
// header names a documented webhook, and the headers and body are what
// it documents.
func (c *Checker) Webhook(r *http.Request, body []byte) []Violation {
	typ := r.Header.Get("X-Switchback-Notification-Type")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.Webhooks[typ]++
	v := func(msg string) []Violation {
		c.counts.Violations++
		return []Violation{{Method: r.Method, Path: r.URL.Path, Route: "webhook " + typ, Message: msg}}
	}
	wh, ok := c.webhooks[typ]
	if !ok {
		return v(fmt.Sprintf("X-Switchback-Notification-Type %q is not a documented webhook", typ))
	}
	var out []Violation
	for _, k := range duplicateKeys(body) {
		out = append(out, v(fmt.Sprintf("duplicate JSON key %q", k))...)
	}
	req := cloneRequest(r, body)
	if _, errs := wh.fam.v.ValidateHttpRequestWithPathItem(req, wh.item, r.URL.Path); len(errs) > 0 {
		for _, e := range errs {
			for _, d := range describe(e) {
				out = append(out, v(d)...)
			}
		}
	}
	return out
}

// Summary is the counts and the known deviations seen, for the end of a
// test run.
func (c *Checker) Summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	total, hooks := 0, 0
	var fams, types []string
	for f, n := range c.counts.Exchanges {
		total += n
		fams = append(fams, fmt.Sprintf("%s %d", f, n))
	}
	for t, n := range c.counts.Webhooks {
		hooks += n
		types = append(types, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(fams)
	sort.Strings(types)
	var b strings.Builder
	fmt.Fprintf(&b, "contract: %d exchanges validated against the OpenAPI documents (%s)\n", total, strings.Join(fams, ", "))
	fmt.Fprintf(&b, "contract: %d webhook deliveries validated (%s)\n", hooks, strings.Join(types, ", "))
	fmt.Fprintf(&b, "contract: %d violations, %d known deviations\n", c.counts.Violations, c.counts.Known)
	ds := make([]*Deviation, 0, len(c.known))
	for d := range c.known {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b *Deviation) int { return cmp.Compare(a.Issue, b.Issue) })
	for _, d := range ds {
		fmt.Fprintf(&b, "contract: known deviation seen %d times: %s\n", c.known[d], d)
	}
	return b.String()
}

// Unseen lists the known deviations no exchange has matched: after a run
// of every test, an entry the service no longer produces, to delete.
func (c *Checker) Unseen() []*Deviation {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Deviation
	for _, d := range c.deviations {
		if c.known[d] == 0 {
			out = append(out, d)
		}
	}
	return out
}

// Counts returns a copy of the counts.
func (c *Checker) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{Exchanges: map[string]int{}, Webhooks: map[string]int{}, Violations: c.counts.Violations, Known: c.counts.Known}
	for k, v := range c.counts.Exchanges {
		out.Exchanges[k] = v
	}
	for k, v := range c.counts.Webhooks {
		out.Webhooks[k] = v
	}
	return out
}

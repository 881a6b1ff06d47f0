package httpapi

import (
	"strings"
	"testing"
)

// testRoutes is a route table shaped like the API's: literals and
// parameters at the same place, a literal subtree with only some methods,
// a catch-all.
func testRoutes() *routes {
	t := &routes{}
	for _, r := range []struct{ method, pattern string }{
		{"GET", "/"},
		{"GET", "/v1.2/suppliers"},
		{"POST", "/v1.2/suppliers"},
		{"GET", "/v1.2/suppliers/{supplier_id}"},
		{"GET", "/v1.2/suppliers/{supplier_id}/products/{product_id}"},
		{"GET", "/v1.2/suppliers/{supplier_id}/products/{product_id}/rates/{rate_id}"},
		{"POST", "/v1.2/suppliers/bulk"},
		{"DELETE", "/v1.2/suppliers/bulk/{job}"},
		{"GET", "/console"},
		{"GET", "/console/{path:*}"},
		{"PUT", "/admin/{id}"},
		{"GET", "/admin/{id}/keys"},
	} {
		t.add(&route{method: r.method, pattern: r.pattern})
	}
	return t
}

func TestRoutes_Match(t *testing.T) {
	rt := testRoutes()
	tests := []struct {
		name, method, path string
		want               string // matched pattern, "" for none
		params             map[string]string
		allow              string // when want is "": the Allow of a 405, "" for a 404
	}{
		{"root", "GET", "/", "/", nil, ""},
		{"literal", "GET", "/v1.2/suppliers", "/v1.2/suppliers", nil, ""},
		{"literal, other method", "POST", "/v1.2/suppliers", "/v1.2/suppliers", nil, ""},
		{"one parameter", "GET", "/v1.2/suppliers/s1", "/v1.2/suppliers/{supplier_id}", map[string]string{"supplier_id": "s1"}, ""},
		{"three parameters", "GET", "/v1.2/suppliers/s1/products/p-2/rates/r_3", "/v1.2/suppliers/{supplier_id}/products/{product_id}/rates/{rate_id}",
			map[string]string{"supplier_id": "s1", "product_id": "p-2", "rate_id": "r_3"}, ""},
		{"the literal before the parameter", "POST", "/v1.2/suppliers/bulk", "/v1.2/suppliers/bulk", nil, ""},
		{"back to the parameter when the literal has no route for the method", "GET", "/v1.2/suppliers/bulk",
			"/v1.2/suppliers/{supplier_id}", map[string]string{"supplier_id": "bulk"}, ""},
		{"back to the parameter below the literal", "GET", "/v1.2/suppliers/bulk/products/p1",
			"/v1.2/suppliers/{supplier_id}/products/{product_id}", map[string]string{"supplier_id": "bulk", "product_id": "p1"}, ""},
		{"raw path: no percent-decoding", "GET", "/v1.2/suppliers/a%2Fb", "/v1.2/suppliers/{supplier_id}", map[string]string{"supplier_id": "a%2Fb"}, ""},
		{"case sensitive", "GET", "/V1.2/suppliers", "", nil, ""},
		{"trailing slash is another path", "GET", "/v1.2/suppliers/", "", nil, ""},
		{"empty segment is no parameter", "GET", "/v1.2/suppliers//products/p1", "", nil, ""},
		{"too long", "GET", "/v1.2/suppliers/s1/x", "", nil, ""},
		{"no leading slash", "GET", "v1.2/suppliers", "", nil, ""},
		{"empty path", "GET", "", "", nil, ""},
		{"405 lists the path's methods, sorted", "DELETE", "/v1.2/suppliers", "", nil, "GET, POST"},
		{"405 through a parameter", "POST", "/admin/x", "", nil, "PUT"},
		{"405 by backtracking", "PUT", "/v1.2/suppliers/bulk", "", nil, "GET, POST"},
		{"HEAD is a method of its own", "HEAD", "/v1.2/suppliers", "", nil, "GET, POST"},
		{"catch-all", "GET", "/console/assets/app.js", "/console/{path:*}", map[string]string{"path": "assets/app.js"}, ""},
		{"catch-all, empty", "GET", "/console/", "/console/{path:*}", map[string]string{"path": ""}, ""},
		{"the literal before the catch-all", "GET", "/console", "/console", nil, ""},
		{"a parameter then a literal", "GET", "/admin/a1/keys", "/admin/{id}/keys", map[string]string{"id": "a1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ps paramSpans
			got := rt.match([]byte(tt.method), []byte(tt.path), &ps)
			if tt.want == "" {
				if got != nil {
					t.Fatalf("matched %s %s", got.method, got.pattern)
				}
				if a := rt.allowed([]byte(tt.path)); a != tt.allow {
					t.Fatalf("allowed = %q, want %q", a, tt.allow)
				}
				return
			}
			if got == nil || got.pattern != tt.want || got.method != tt.method {
				t.Fatalf("matched %+v, want %s %s", got, tt.method, tt.want)
			}
			r := &Request{}
			r.setRoute(got, []byte(tt.path), &ps)
			if len(got.params) != len(tt.params) {
				t.Fatalf("params %v, want %v", got.params, tt.params)
			}
			for name, want := range tt.params {
				if v := r.Param(name); v != want {
					t.Errorf("Param(%q) = %q, want %q", name, v, want)
				}
			}
			if v := r.Param("nope"); v != "" {
				t.Errorf("Param(nope) = %q", v)
			}
		})
	}
}

func TestRoutes_AddRefusesMistakes(t *testing.T) {
	tests := []struct{ name, first, pattern string }{
		{"duplicate", "/a/{x}", "/a/{y}"},
		{"no leading slash", "", "a"},
		{"part of a segment", "", "/a/{x}.json"},
		{"a kind other than *", "", "/a/{x:[a-z]+}"},
		{"catch-all not last", "", "/a/{x:*}/b"},
		{"a name twice", "", "/a/{x}/{x}"},
		{"more than maxParams", "", "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &routes{}
			if tt.first != "" {
				rt.add(&route{method: "GET", pattern: tt.first})
			}
			defer func() {
				if recover() == nil {
					t.Fatalf("add(%q) did not panic", tt.pattern)
				}
			}()
			rt.add(&route{method: "GET", pattern: tt.pattern})
		})
	}
}

// TestRoutes_MatchAllocatesNothing: matching is on the hot path of every
// request (the reason this router exists, routes.go).
func TestRoutes_MatchAllocatesNothing(t *testing.T) {
	rt := testRoutes()
	method, path := []byte("GET"), []byte("/v1.2/suppliers/bulk/products/p1/rates/r1")
	var ps paramSpans
	if n := testing.AllocsPerRun(100, func() {
		if rt.match(method, path, &ps) == nil {
			t.Fatal("no match")
		}
	}); n != 0 {
		t.Fatalf("match allocates %v times", n)
	}
}

// FuzzRoutesMatch: any path matches without panic, and a matched route's
// pattern, its parameters replaced by their values, is the path again.
func FuzzRoutesMatch(f *testing.F) {
	for _, s := range []string{"/", "/v1.2/suppliers/s1/products/p1", "/console/a/b/", "/v1.2/suppliers//x", "//", "/admin/%00/keys",
		"/v1.2/suppliers/{product_id}/products/x"} {
		f.Add("GET", s)
	}
	rt := testRoutes()
	f.Fuzz(func(t *testing.T, method, path string) {
		var ps paramSpans
		got := rt.match([]byte(method), []byte(path), &ps)
		if got == nil {
			_ = rt.allowed([]byte(path))
			return
		}
		if got.method != method || ps.n != len(got.params) {
			t.Fatalf("%s %q matched %s %s with %d params", method, path, got.method, got.pattern, ps.n)
		}
		r := &Request{}
		r.setRoute(got, []byte(path), &ps)
		// Rebuilt segment by segment: a value may itself read like a
		// parameter ({product_id}), which a string replace would confuse.
		segs := strings.Split(got.pattern, "/")
		k := 0
		for i, seg := range segs {
			if strings.HasPrefix(seg, "{") {
				v := r.Param(got.params[k])
				if strings.Contains(v, "/") && !strings.HasSuffix(seg, ":*}") {
					t.Fatalf("parameter %s = %q spans segments", got.params[k], v)
				}
				segs[i], k = v, k+1
			}
		}
		rebuilt := strings.Join(segs, "/")
		if rebuilt != path {
			t.Fatalf("%q matched %s, which rebuilds as %q", path, got.pattern, rebuilt)
		}
	})
}

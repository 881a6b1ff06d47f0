package httpapi

import (
	"slices"
	"strings"
)

// routes is the server's router: a tree of path segments, each route's
// pattern made of literal segments and {name} parameters
// (/v1.2/suppliers/{supplier_id}), the last segment maybe {name:*}, the
// rest of the path. It replaces fasthttp/router, whose
// matching allocated three times per path parameter (a slice, a copy and
// the boxing of ctx.SetUserValue): on the reseller reads, the hottest
// path of the API, five to nine allocations a request for routing alone
// (bench/RESULTS.md, issue 21, thirteenth session). Here a match allocates
// nothing, and a route with parameters costs one string, the path's copy,
// which every parameter is a substring of.
//
// Matching is as fasthttp/router's with the options the server used: the
// raw path (PathOriginal: no percent-decoding, no normalizing), case
// sensitive, a literal segment before a parameter at the same place with
// backtracking when the literal's subtree has no route for the method, no
// redirects (a trailing slash is another path: 404), 405 with the methods
// the path has. Unlike fasthttp/router an empty segment never matches a
// parameter: /v1.2/suppliers//products is no route (404) rather than a
// supplier with an empty id.
type routes struct {
	root  routeNode
	all   []*route // in registration order, for Routes
	verbs []string // the methods any route has, sorted, for Allow
}

// maxParams bounds a pattern's parameters, so that a match keeps their
// offsets on the stack.
const maxParams = 8

type routeNode struct {
	literal map[string]*routeNode
	param   *routeNode
	tail    *routeNode        // a last segment {name:*}: the rest of the path, slashes included, maybe empty
	byVerb  map[string]*route // the routes ending here, by method
}

// add registers rt under its pattern; it panics on a malformed pattern or
// a duplicate (method and the same sequence of literals and parameters),
// as registering the API wrong is a programming error.
func (t *routes) add(rt *route) {
	if rt.pattern == "" || rt.pattern[0] != '/' {
		panic("httpapi: pattern must begin with '/': " + rt.pattern)
	}
	n := &t.root
	var names []string
	segs := strings.Split(rt.pattern[1:], "/")
	for i, seg := range segs {
		switch {
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, ":*}") && i == len(segs)-1 && len(seg) > 4:
			name := seg[1 : len(seg)-3]
			if slices.Contains(names, name) || strings.ContainsAny(name, "{}:/") {
				panic("httpapi: bad parameter " + seg + " in " + rt.pattern)
			}
			names = append(names, name)
			if n.tail == nil {
				n.tail = &routeNode{}
			}
			n = n.tail
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && len(seg) > 2 && !strings.ContainsAny(seg[1:len(seg)-1], "{}:/"):
			name := seg[1 : len(seg)-1]
			if slices.Contains(names, name) {
				panic("httpapi: parameter " + name + " twice in " + rt.pattern)
			}
			names = append(names, name)
			if n.param == nil {
				n.param = &routeNode{}
			}
			n = n.param
		case strings.ContainsAny(seg, "{}"):
			panic("httpapi: a segment is either literal or a whole {name}: " + rt.pattern)
		default:
			if n.literal == nil {
				n.literal = map[string]*routeNode{}
			}
			next := n.literal[seg]
			if next == nil {
				next = &routeNode{}
				n.literal[seg] = next
			}
			n = next
		}
	}
	if len(names) > maxParams {
		panic("httpapi: more than 8 parameters in " + rt.pattern)
	}
	if n.byVerb == nil {
		n.byVerb = map[string]*route{}
	}
	if old := n.byVerb[rt.method]; old != nil {
		panic("httpapi: " + rt.method + " " + rt.pattern + " conflicts with " + old.pattern)
	}
	rt.params = names
	n.byVerb[rt.method] = rt
	t.all = append(t.all, rt)
	if !slices.Contains(t.verbs, rt.method) {
		t.verbs = append(t.verbs, rt.method)
		slices.Sort(t.verbs)
	}
}

// paramSpans are a match's parameter values, as offsets into the path.
type paramSpans struct {
	n      int
	lo, hi [maxParams]int
}

// match finds the route of method for path, and the spans of its
// parameters. path is the raw request path; it must begin with '/'.
func (t *routes) match(method, path []byte, ps *paramSpans) *route {
	if len(path) == 0 || path[0] != '/' {
		return nil
	}
	ps.n = 0
	return t.root.match(method, path, 1, ps)
}

// match matches path[at:], the rest of the path after a '/'.
func (n *routeNode) match(method, path []byte, at int, ps *paramSpans) *route {
	end := at
	for end < len(path) && path[end] != '/' {
		end++
	}
	seg := path[at:end]
	last := end == len(path)
	if next := n.literal[string(seg)]; next != nil { // no allocation: map index by converted []byte
		if rt := next.rest(method, path, end, last, ps); rt != nil {
			return rt
		}
	}
	if n.param != nil && len(seg) > 0 {
		k := ps.n
		if k < maxParams {
			ps.lo[k], ps.hi[k], ps.n = at, end, k+1
			if rt := n.param.rest(method, path, end, last, ps); rt != nil {
				return rt
			}
			ps.n = k
		}
	}
	if n.tail != nil && ps.n < maxParams {
		if rt := n.tail.byVerb[string(method)]; rt != nil {
			ps.lo[ps.n], ps.hi[ps.n] = at, len(path)
			ps.n++
			return rt
		}
	}
	return nil
}

// rest goes on below n once its segment matched: the route of method when
// the path ended there, else the match of the next segment.
func (n *routeNode) rest(method, path []byte, end int, last bool, ps *paramSpans) *route {
	if last {
		return n.byVerb[string(method)] // no allocation, as above
	}
	return n.match(method, path, end+1, ps)
}

// allowed lists the methods with a route for path, sorted and joined as an
// Allow header; "" when none has.
func (t *routes) allowed(path []byte) string {
	var methods []string
	var ps paramSpans
	for _, m := range t.verbs {
		if t.match([]byte(m), path, &ps) != nil {
			methods = append(methods, m)
		}
	}
	return strings.Join(methods, ", ")
}

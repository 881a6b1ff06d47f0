package httpapi

import (
	"slices"
	"strings"
)

// HandlePublic registers h for method and the full path pattern without
// credentials: no authentication, no rate limit, no role check, no views
// guard. It is for the API's own reference (query/apidocs: the index, the
// reference pages and the OpenAPI documents), which serves only what is
// built into the binary and reads no store. Request id, panic recovery,
// the access log and metrics apply as to every route. h may write any
// content type (the reference pages are HTML); errors it returns are the
// error object as usual.
func (s *Server) HandlePublic(method, pattern string, h HandlerFunc) {
	if s.started.Load() {
		panic("httpapi: HandlePublic after Serve: register every route first")
	}
	s.routes.add(&route{method: method, pattern: pattern, h: h, m: s.metrics.route(pattern, method), public: true})
}

// Route is one registered route: method and full path pattern
// (/v1.2/suppliers/{supplier_id}).
type Route struct {
	Method, Pattern string
}

// Routes lists every registered route, sorted by pattern then method: what
// the API serves, for the test that holds it to the OpenAPI documents.
func (s *Server) Routes() []Route {
	out := make([]Route, 0, len(s.routes.all))
	for _, rt := range s.routes.all {
		out = append(out, Route{Method: rt.method, Pattern: rt.pattern})
	}
	slices.SortFunc(out, func(a, b Route) int {
		if c := strings.Compare(a.Pattern, b.Pattern); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return out
}

package httpapi

import (
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
)

// Dialect is how the routes of a family that follows another standard
// than ours (query/octo: the OCTO standard) read the caller's credentials
// and write errors. Everything else (request ids, authentication against
// the principals, rate limits, roles, the views guard, metrics, the
// access log) is the same middleware as for every other route.
type Dialect interface {
	// Credentials returns the API key and secret the request carries, nil
	// when it carries none. They may alias the request's header bytes (no
	// copy); they are never logged.
	Credentials(ctx *fasthttp.RequestCtx) (key, secret []byte)
	// WriteError writes the answer of a failed request: err as the
	// handler or the middleware returned it, e as apierror.From mapped it
	// (the status our own APIs would use; 401 for missing or wrong
	// credentials, 429 over the rate limit with Retry-After already set,
	// 503 while the views are rebuilt). reqID is the request id.
	WriteError(ctx *fasthttp.RequestCtx, reqID string, err error, e *apierror.Error)
}

// HandleDialect registers h for method and the full path pattern like
// Handle, its credentials read and its errors written by d.
func (s *Server) HandleDialect(method, pattern string, roles []principals.Role, d Dialect, h HandlerFunc) {
	s.handle(method, pattern, roles, h, routeKind{dialect: d})
}

// DialectPrefix makes d write the errors of requests under prefix that no
// route matched (404, 405) or that fasthttp refused before routing (413,
// 431, 408, a malformed request). prefix ends with "/".
func (s *Server) DialectPrefix(prefix string, d Dialect) {
	if s.started.Load() {
		panic("httpapi: DialectPrefix after Serve")
	}
	s.prefixes = append(s.prefixes, dialectPrefix{prefix: prefix, d: d})
}

type dialectPrefix struct {
	prefix string
	d      Dialect
}

// dialectOf is the dialect of a request: its route's, else its path
// prefix's, else nil (ours).
func (s *Server) dialectOf(ctx *fasthttp.RequestCtx, rt *route) Dialect {
	if rt != nil {
		return rt.dialect
	}
	if len(s.prefixes) == 0 {
		return nil
	}
	path := string(ctx.Path())
	for _, p := range s.prefixes {
		if strings.HasPrefix(path, p.prefix) {
			return p.d
		}
	}
	return nil
}

// credentials are the request's key and secret: the route's dialect's,
// else X-API-Key and X-API-Secret.
func credentials(r *Request, rt *route) (key, secret []byte) {
	if rt != nil && rt.dialect != nil {
		return rt.dialect.Credentials(r.Ctx)
	}
	return r.hdr.key, r.hdr.secret
}

package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
)

// Request is one API request as handlers see it. It is pooled: a handler
// must not keep it, nor Ctx, after returning.
type Request struct {
	// Ctx is the fasthttp request; use it for headers, query args and the
	// raw body. Do not use it as a context.Context (see Context).
	Ctx *fasthttp.RequestCtx
	// ID is the request id: X-Request-ID when the client sent a sane one,
	// else a generated UUIDv4. It is echoed in the response header and in
	// meta.reqId.
	ID string
	// Principal is who is calling, authenticated and role-checked.
	Principal principals.Principal
	// replyID, when set (MirrorReqID), is meta.reqId of the answer.
	replyID string

	s     *Server
	route *route
	start time.Time
	hdr   ourHeaders // read once (headers.go)
	// params are the path parameters' values, in the order of
	// route.params: substrings of one copy of the path (setRoute).
	params [maxParams]string
}

// setRoute records the matched route and its parameters' values. The
// values outlive the request's buffers (a handler may keep an id, in a
// cache key or a singleflight), so they are copied: once, the whole path.
func (r *Request) setRoute(rt *route, path []byte, ps *paramSpans) {
	r.route = rt
	if ps.n == 0 {
		return
	}
	p := string(path)
	for i := range ps.n {
		r.params[i] = p[ps.lo[i]:ps.hi[i]]
	}
}

// Context is the context to pass to domain calls and to derive timeouts
// from. It is cancelled when Shutdown stops waiting for requests in flight.
// Use it rather than Ctx: deriving a context from a fasthttp RequestCtx
// races with the server's shutdown (see Server.base).
func (r *Request) Context() context.Context { return r.s.base }

// Time is when the request started: fasthttp's clock read just before
// the handler (the server's clock in tests). It is a handler's "now",
// without a clock read of its own (~150 ns here, per read).
func (r *Request) Time() time.Time { return r.start }

// Route is the matched route pattern (e.g. /admin/v1/principals/{id}), or
// "unmatched".
func (r *Request) Route() string {
	if r.route == nil {
		return unmatchedRoute
	}
	return r.route.pattern
}

// Param returns the path parameter of the route pattern, e.g. "id".
func (r *Request) Param(name string) string {
	if r.route == nil {
		return ""
	}
	for i, n := range r.route.params {
		if n == name {
			return r.params[i]
		}
	}
	return ""
}

// MirrorReqID makes id the answer's meta.reqId (of a JSON body and of an
// error object) in place of ID: spec doc 2, "on partner responses
// [meta.reqId] must mirror the meta.reqId of the request", and the
// reseller's hold and booking bodies are the partner interface's. The
// X-Request-ID header keeps ID. An id that is not 1 to 128 printable
// ASCII characters is ignored: it would be echoed in every answer.
func (r *Request) MirrorReqID(id string) {
	if saneRequestID([]byte(id)) {
		r.replyID = id
	}
}

// metaID is meta.reqId of the answer: the mirrored id, else ID.
func (r *Request) metaID() string {
	if r.replyID != "" {
		return r.replyID
	}
	return r.ID
}

// DecodeJSON decodes the body into v; see DecodeJSON.
func (r *Request) DecodeJSON(v any) error { return DecodeJSON(r.Ctx.PostBody(), v) }

// Meta is the meta object of response bodies. Embed it in a response type
// (with the tag `json:"meta"`) to add meta.data, and pass a pointer to
// JSON, which fills ReqID:
//
//	type listResponse struct {
//		httpapi.Meta `json:"meta"`
//		Suppliers    []Supplier `json:"suppliers"`
//	}
type Meta struct {
	ReqID string            `json:"reqId"`
	Data  map[string]string `json:"data,omitempty"`
}

func (m *Meta) setReqID(id string) { m.ReqID = id }

// metaCarrier is satisfied by a pointer to any struct embedding Meta (the
// unexported method is promoted through the embedding).
type metaCarrier interface{ setReqID(string) }

// JSON writes v as the JSON response body with the status. meta.reqId is
// always present in an object body:
//   - v embeds Meta (passed as a pointer): its ReqID is filled in;
//   - v encodes to another JSON object: "meta":{"reqId":...} is added as
//     its first member (so v must not have its own top-level "meta");
//   - v encodes to an array or a scalar (the registry's "array of Rule"):
//     written as is, the X-Request-ID header still carries the id.
func (r *Request) JSON(status int, v any) error {
	hasMeta := false
	if m, ok := v.(metaCarrier); ok {
		m.setReqID(r.metaID())
		hasMeta = true
	}
	e := acquireEncoder()
	defer releaseEncoder(e)
	if err := e.enc.Encode(v); err != nil {
		return fmt.Errorf("encode %T response: %w", v, err)
	}
	b := bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'})
	resp := &r.Ctx.Response
	resp.ResetBody()
	resp.SetStatusCode(status)
	resp.Header.SetContentType(contentTypeJSON)
	if hasMeta || len(b) < 2 || b[0] != '{' {
		resp.AppendBody(b)
		return nil
	}
	var id [2 + 6*maxRequestIDLen]byte // worst-case escaped id, on the stack
	resp.AppendBodyString(`{"meta":{"reqId":`)
	resp.AppendBody(jsonwire.AppendASCII(id[:0], r.metaID()))
	if b[1] == '}' {
		resp.AppendBodyString("}}")
	} else {
		resp.AppendBodyString("},")
		resp.AppendBody(b[1:])
	}
	return nil
}

// NoContent answers 204 without a body (DELETE and the like).
func (r *Request) NoContent() error {
	r.Ctx.Response.ResetBody()
	r.Ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// Error writes err as the error object, with the status apierror.From
// gives it. 5xx causes are logged here (the client gets a generic message).
// Handlers usually return the error instead of calling this.
func (r *Request) Error(err error) {
	e := apierror.From(err)
	if e.Status() >= 500 && r.s != nil {
		cause := err
		if e.Cause != nil {
			cause = e.Cause
		}
		r.s.log.LogAttrs(context.Background(), slog.LevelError, "request failed",
			slog.String("reqId", r.ID), slog.String("route", r.Route()), slog.String("code", string(e.Code)), slog.String("err", cause.Error()))
	}
	if r.s != nil {
		if d := r.s.dialectOf(r.Ctx, r.route); d != nil {
			d.WriteError(r.Ctx, r.ID, err, e)
			return
		}
	}
	writeError(r.Ctx, r.metaID(), e)
}

const contentTypeJSON = "application/json"

// writeError writes the error object. Errors are off the hot path, so the
// body goes through encoding/json for correct escaping of messages.
func writeError(ctx *fasthttp.RequestCtx, reqID string, e *apierror.Error) {
	enc := acquireEncoder()
	defer releaseEncoder(enc)
	resp := &ctx.Response
	resp.ResetBody()
	resp.SetStatusCode(e.Status())
	resp.Header.SetContentType(contentTypeJSON)
	if err := enc.enc.Encode(e.Body(reqID)); err != nil {
		// A Body is strings only; this cannot fail. Stay valid JSON anyway.
		resp.SetBodyString(`{"code":"INTERNAL","message":"internal error"}`)
		return
	}
	resp.AppendBody(bytes.TrimSuffix(enc.buf.Bytes(), []byte{'\n'}))
}

// encoder is a pooled json.Encoder with its buffer, so encoding a response
// allocates neither on the hot path.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false) // API JSON, not HTML: keep & < > readable
	return e
}}

func acquireEncoder() *encoder { return encoders.Get().(*encoder) }

func releaseEncoder(e *encoder) {
	if e.buf.Cap() > 64<<10 { // do not keep one huge listing's buffer forever
		return
	}
	e.buf.Reset()
	encoders.Put(e)
}

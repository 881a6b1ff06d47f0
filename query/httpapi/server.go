// Package httpapi is the query tier's HTTP server: one fasthttp listener
// for every API (reseller v1.2/v1.3, channel v1.2, registry v1.1, operator
// v2, admin v1), the route table, and the middleware every request goes
// through:
//
//	request id -> panic recovery -> routing (404/405) -> authentication
//	(401, or 429 for an address over its failed-authentication limit)
//	-> key over its limit (429) -> role check (403) -> views complete?
//	(503) -> handler -> 4xx confirmed against the views (else 503)
//	-> error object, access log, metrics
//
// plus the body size limit (413), enforced by fasthttp while reading. The
// rate limit (ratelimit.go) is a token bucket per authenticated X-API-Key,
// and one per client address for failed authentications.
//
// Every response body is JSON; errors are the error object of
// query/apierror, and every JSON object body carries meta.reqId, equal to
// the X-Request-ID response header.
//
// It must not hold business rules: API packages (query/admin,
// query/registryapi, ...) register handlers that decode a request, call a
// domain package and encode the answer. Handlers return errors and
// apierror.From alone turns them into statuses.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
)

// Base paths of the APIs (ARCHITECTURE.md, "Interfaces and conventions";
// the admin API is ours). Register routes with s.Group(BaseXxx).
const (
	BaseResellerV12 = "/v1.2"
	BaseResellerV13 = "/v1.3"
	BaseChannelV12  = "/channel/v1.2"
	BaseRegistryV11 = "/registry/v1.1"
	BaseOperatorV2  = "/operator/v2"
	BaseAdminV1     = "/admin/v1"
)

// Header names of the API conventions.
const (
	HeaderRequestID = "X-Request-ID"
	HeaderAPIKey    = "X-API-Key"
	HeaderAPISecret = "X-API-Secret"
)

// Authenticator checks credentials; *principals.Store is the one
// implementation. Implementations must be safe for concurrent use and
// should not allocate: it is called on every request.
type Authenticator interface {
	Authenticate(key, secret []byte) (principals.Principal, bool)
}

// Options configures a Server. Zero values take the documented defaults.
type Options struct {
	// Addr is what ListenAndServe listens on (SWITCHBACK_HTTP_ADDR).
	// Default 127.0.0.1:8080.
	Addr string
	// MaxBodyBytes bounds request bodies; larger is 413 PAYLOAD_TOO_LARGE
	// (SWITCHBACK_MAX_BODY_BYTES). Default 1 MiB.
	MaxBodyBytes int
	// Timeouts of the connection. Defaults 30 s, 30 s and 120 s.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Logger receives the access log (at AccessLogLevel), panics and 5xx
	// causes (Error). Default: discard.
	Logger *slog.Logger
	// AccessLogLevel is the level of the one line per request
	// (SWITCHBACK_ACCESS_LOG; the binary's default is debug: a busy API
	// would drown every other line at info). The zero value is Info;
	// AccessLogOff turns the lines off.
	AccessLogLevel slog.Level
	// Registry gets the switchback_query_* metrics. Nil: not registered.
	Registry prometheus.Registerer
	// Principals authenticates X-API-Key / X-API-Secret. Required.
	Principals Authenticator

	// RateLimit is the sustained requests per second allowed to one API
	// key, or to one client address for requests without a key
	// (SWITCHBACK_RATE_LIMIT); over it the answer is 429 RATE_LIMITED with
	// Retry-After. 0 turns limiting off (the zero Options do not limit;
	// the config's default is 5000).
	RateLimit int
	// RateBurst is the bucket size: requests a key may send at once above
	// the sustained rate (SWITCHBACK_RATE_BURST). Default 2 x RateLimit.
	RateBurst int
	// RateLimitKeys bounds the buckets held in memory (keys and addresses
	// together). Default 262144, about 9 MiB at the high-water mark.
	RateLimitKeys int

	// CostlyRateLimit and CostlyRateBurst are the second budget of one
	// key on costly routes (HandleCostly: history scans in ClickHouse),
	// charged besides the general one (SWITCHBACK_HISTORY_RATE_LIMIT,
	// _BURST). 0: DefaultCostlyRateLimit and 2 x the limit; negative: no
	// costly bucket (the concurrency bound stays).
	CostlyRateLimit, CostlyRateBurst int
	// CostlyPerKey and CostlyTotal bound the costly requests in flight,
	// of one key and of all (SWITCHBACK_HISTORY_CONCURRENCY, _TOTAL).
	// Defaults DefaultCostlyPerKey and DefaultCostlyTotal.
	CostlyPerKey, CostlyTotal int

	// Views, when set, guards every route against Redis views that are
	// being rebuilt (views.go). Nil: no guard (tests of other layers).
	Views Views
}

// Server is the API server. Register every route, then Serve or
// ListenAndServe; Shutdown stops it gracefully.
type Server struct {
	opts    Options
	log     *slog.Logger
	auth    Authenticator
	routes  routes
	srv     *fasthttp.Server
	metrics *metrics
	pool    sync.Pool
	started atomic.Bool

	// limiter is nil when Options.RateLimit is 0. now is time.Now but for
	// tests of refill (export_test.go), which must not sleep.
	limiter *limiter
	// costly and gate: the second budget and the concurrency bound of
	// costly routes (costly.go).
	costly *limiter
	gate   *gate
	// now, when set (tests: SetClock), is the clock of the rate limits;
	// else a request starts at fasthttp's ctx.Time.
	now func() time.Time

	// base is the parent of every request's Context. It is a stdlib
	// context rather than the fasthttp RequestCtx: deriving from a
	// RequestCtx (context.WithTimeout(ctx, ...)) starts a goroutine that
	// reads the server's done channel without synchronisation while
	// ShutdownWithContext resets it, a data race in fasthttp v1.74.0. It is
	// cancelled only when Shutdown gives up waiting, so that a graceful
	// shutdown lets requests in flight finish.
	base       context.Context
	cancelBase context.CancelFunc

	// conns lets Shutdown close connections that never sent a request
	// (conns.go).
	conns *conns
	// timeouts are the connections' read, write and idle timeouts, which
	// they keep themselves (deadline.go).
	timeouts *connTimeouts
	// prefixes are the dialects of unrouted requests (dialect.go).
	prefixes []dialectPrefix
}

// New builds a server with no routes but the 404/405 handlers.
func New(opts Options) *Server {
	if opts.Principals == nil {
		panic("httpapi.New: Options.Principals is required")
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:8080"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 30 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 120 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, auth: opts.Principals, metrics: newMetrics(opts.Registry), conns: newConns(),
		timeouts: newConnTimeouts(opts.ReadTimeout, opts.WriteTimeout, opts.IdleTimeout)}
	s.limiter = newLimiter(opts.RateLimit, opts.RateBurst, opts.RateLimitKeys, time.Now())
	if opts.CostlyRateLimit == 0 {
		opts.CostlyRateLimit = DefaultCostlyRateLimit
	}
	s.costly = newLimiter(opts.CostlyRateLimit, opts.CostlyRateBurst, opts.RateLimitKeys, time.Now())
	s.gate = newGate(opts.CostlyPerKey, opts.CostlyTotal)
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.pool.New = func() any { return new(Request) }

	s.srv = &fasthttp.Server{
		Handler:      s.serve,
		ErrorHandler: s.transportError,
		// fasthttp stops reading at this size and calls ErrorHandler with
		// ErrBodyTooLarge, so a huge body never reaches memory; the
		// ErrorHandler makes the answer the JSON error object rather than
		// fasthttp's plain text.
		MaxRequestBodySize: opts.MaxBodyBytes,
		// No ReadTimeout, WriteTimeout, IdleTimeout: the connections keep
		// them, told where requests begin and end by ConnState
		// (deadline.go).
		ConnState:             s.timeouts.state,
		NoDefaultServerHeader: true,
		// A request fasthttp cannot parse (no Host, two Content-Lengths,
		// a bad Transfer-Encoding, a bare CR...) must never put its raw
		// header buffer, X-API-Secret included, into an error or a log line.
		SecureErrorLogMessage: true,
		CloseOnShutdown:       true,
		Logger:                fasthttpLogger{log},
	}
	return s
}

// HandlerFunc handles one routed, authenticated, authorised request. It
// either writes a response (r.JSON, r.NoContent) and returns nil, or
// returns an error, which is written as the error object (apierror.From).
// It must not keep r after it returned: requests are pooled.
type HandlerFunc func(r *Request) error

// route is what a registered handler knows about itself.
type route struct {
	method  string
	pattern string // full path pattern, e.g. /admin/v1/principals/{id}
	roles   []principals.Role
	h       HandlerFunc
	costly  bool // a history scan: its own budget and concurrency bound (costly.go)
	m       *routeMetrics
	limited prometheus.Counter // refused by the rate limit, of the route's group
	// fenced: the handler's store checks the views' epoch itself, in its
	// own pipelines, before it decides anything (catalog.PipelinedFence),
	// so the write needs no marker read of its own before the handler.
	fenced bool
	// dialect, when set, reads the credentials and writes the errors
	// (HandleDialect, dialect.go).
	dialect Dialect
	// public: no credentials, rate limit, role check or views guard
	// (HandlePublic).
	public bool
	params []string // the pattern's parameter names, in order (routes.add)
}

func (rt *route) allows(role principals.Role) bool {
	if len(rt.roles) == 0 {
		return true
	}
	for _, r := range rt.roles {
		if r == role {
			return true
		}
	}
	return false
}

// Handle registers h for method and the full path pattern (literal
// segments and whole-segment parameters: /suppliers/{supplier_id};
// routes.go). roles lists the roles admitted; nil admits every
// authenticated principal. Every route requires credentials.
// Register all routes before Serve; a duplicate route panics.
func (s *Server) Handle(method, pattern string, roles []principals.Role, h HandlerFunc) {
	s.handle(method, pattern, roles, h, routeKind{})
}

// HandleFenced is Handle for a write whose store fences itself against a
// lost view (it reads the views' epoch with its own data and refuses with
// 503 when it changed): the hot writes, which then save the marker read
// the server makes before every other write.
func (s *Server) HandleFenced(method, pattern string, roles []principals.Role, h HandlerFunc) {
	s.handle(method, pattern, roles, h, routeKind{fenced: true})
}

// routeKind is what a route is besides its pattern: fenced (HandleFenced),
// costly (HandleCostly, costly.go), of a dialect (HandleDialect).
type routeKind struct {
	fenced, costly bool
	dialect        Dialect
}

func (s *Server) handle(method, pattern string, roles []principals.Role, h HandlerFunc, kind routeKind) {
	if s.started.Load() {
		panic("httpapi: Handle after Serve: register every route first")
	}
	rt := &route{method: method, pattern: pattern, roles: roles, h: h, costly: kind.costly, m: s.metrics.route(pattern, method),
		limited: s.metrics.limited.WithLabelValues(routeGroup(pattern)), fenced: kind.fenced, dialect: kind.dialect}
	s.routes.add(rt)
}

// Group is the routes under one base path.
type Group struct {
	s    *Server
	base string
}

// Group returns the routes under base, one of the Base* constants (or any
// path without a trailing slash).
func (s *Server) Group(base string) *Group {
	if base == "" || base[0] != '/' || strings.HasSuffix(base, "/") {
		panic("httpapi: a group's base begins with '/' and has no trailing slash: " + base)
	}
	return &Group{s: s, base: base}
}

// Handle registers h for method and base+path; see Server.Handle.
func (g *Group) Handle(method, path string, roles []principals.Role, h HandlerFunc) {
	g.s.Handle(method, g.base+path, roles, h)
}

// HandleFenced registers h for method and base+path; see
// Server.HandleFenced.
func (g *Group) HandleFenced(method, path string, roles []principals.Role, h HandlerFunc) {
	g.s.HandleFenced(method, g.base+path, roles, h)
}

// ListenAndServe listens on Options.Addr and serves until Shutdown.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on SWITCHBACK_HTTP_ADDR %s: %w", s.opts.Addr, err)
	}
	return s.Serve(ln)
}

// Serve serves on ln until Shutdown; it returns nil after a Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.started.Store(true)
	// The timeouts' clock runs until Shutdown is done with the
	// connections (cancelBase).
	go s.timeouts.run(s.base)
	return s.srv.Serve(s.conns.wrap(s.timeouts.wrap(ln)))
}

// Shutdown stops accepting, closes idle connections (and connections that
// never sent a request, conns.go) and waits for requests in flight, until
// ctx ends; then it cancels the requests' contexts so that handlers still
// waiting on a dependency give up.
func (s *Server) Shutdown(ctx context.Context) error {
	stop := make(chan struct{})
	spares := make(chan struct{})
	go func() { defer close(spares); s.conns.closeSparesUntil(stop) }()
	err := s.srv.ShutdownWithContext(ctx)
	close(stop)
	<-spares
	s.cancelBase()
	return err
}

// serve is the outermost handler: request id, recovery, routing, and the
// access log and metrics once the response is known.
func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	r := s.pool.Get().(*Request)
	r.Ctx, r.s = ctx, s
	// fasthttp read the clock just before calling the handler: its time is
	// the request's start, without a clock read of our own.
	if r.start = ctx.Time(); s.now != nil {
		r.start = s.now()
	}
	r.hdr = readHeaders(&ctx.Request.Header)
	setRequestID(r)
	defer s.finish(r)
	path := ctx.Request.URI().PathOriginal()
	var ps paramSpans
	rt := s.routes.match(ctx.Method(), path, &ps)
	if rt == nil {
		if allow := s.routes.allowed(path); allow != "" {
			s.methodNotAllowed(r, allow)
		} else {
			s.notFound(r)
		}
		return
	}
	r.setRoute(rt, path, &ps)
	if !rt.public {
		s.run(r, rt)
	} else if err := rt.h(r); err != nil {
		r.Error(err)
	}
}

// finish recovers a panic into a 500 error object, then logs and counts
// the request and returns r to the pool. It is deferred, so it also runs
// when a handler panics.
func (s *Server) finish(r *Request) {
	if v := recover(); v != nil {
		s.log.LogAttrs(context.Background(), slog.LevelError, "panic in handler",
			slog.Any("panic", v), slog.String("stack", string(debug.Stack())),
			slog.String("reqId", r.ID), slog.String("route", r.Route()), slog.String("method", methodLabel(r.Ctx.Method())))
		ctx := r.Ctx
		ctx.Response.Reset()
		ctx.Response.Header.Set(HeaderRequestID, r.ID)
		e := apierror.New(apierror.Internal, "internal error")
		if d := s.dialectOf(ctx, r.route); d != nil {
			d.WriteError(ctx, r.ID, e, e)
		} else {
			writeError(ctx, r.ID, e)
		}
	}
	ctx := r.Ctx
	status := ctx.Response.StatusCode()
	d := time.Since(r.start)
	var m *routeMetrics
	if r.route != nil {
		m = r.route.m
	} else {
		m = s.metrics.unmatched(ctx.Method())
	}
	m.observe(status, d)
	s.accessLog(r.Ctx.Method(), m.pattern, status, d, r.ID, r.Principal.ID)

	*r = Request{}
	s.pool.Put(r)
}

// AccessLogOff as Options.AccessLogLevel turns the access log off.
const AccessLogOff = slog.Level(100)

// accessLog writes one line per request: never the raw path or query (they
// may carry ids or, from careless clients, secrets), never a header value
// but the request id.
func (s *Server) accessLog(method []byte, route string, status int, d time.Duration, reqID, principal string) {
	lvl := s.opts.AccessLogLevel
	if lvl >= AccessLogOff || !s.log.Enabled(context.Background(), lvl) {
		return
	}
	s.log.LogAttrs(context.Background(), lvl, "request",
		slog.String("method", methodLabel(method)), slog.String("route", route), slog.Int("status", status),
		slog.Duration("dur", d), slog.String("reqId", reqID), slog.String("principal", principal))
}

// run is the per-route middleware: rate limit, authentication, role
// check, the views guard (views.go), handler.
func (s *Server) run(r *Request, rt *route) {
	ctx := r.Ctx
	key, secret := credentials(r, rt)
	// The rate limit (issue 9) has two kinds of bucket. Authenticated
	// requests are charged to their key, and only they: keys are not
	// secret, so charging the key of a failed attempt would let anyone who
	// knows a reseller's key starve that reseller. Failed authentications
	// (missing, unknown, wrong or revoked credentials) are charged to the
	// client address, which is then refused with 429 instead of 401, and
	// never blocks a principal that authenticates from the same address.
	// Both reuse the request's start time rather than reading the clock.
	p, ok := s.auth.Authenticate(key, secret)
	if !ok {
		if s.limiter != nil {
			if ok, wait := s.limiter.failed(ctx.RemoteIP(), r.start); !ok {
				s.rateLimited(r, rt, wait)
				return
			}
		}
		// One answer for missing, unknown, wrong and revoked credentials,
		// so that the response does not tell a prober which keys exist.
		r.Error(apierror.ErrUnauthorized)
		return
	}
	if s.limiter != nil {
		if ok, wait := s.limiter.allowKey(key, r.start); !ok {
			s.rateLimited(r, rt, wait)
			return
		}
	}
	r.Principal = p
	if !rt.allows(p.Role) {
		r.Error(apierror.New(apierror.Forbidden, "role "+string(p.Role)+" may not use this route"))
		return
	}
	if rt.costly {
		release, wait, ok := s.admitCostly(key, r.start)
		if !ok {
			s.rateLimited(r, rt, wait)
			return
		}
		defer release()
	}
	v := s.opts.Views
	if v == nil {
		if err := rt.h(r); err != nil {
			r.Error(err)
		}
		return
	}
	gen, ready := v.Current()
	read := isRead(ctx.Method())
	if !ready || (!read && !rt.fenced && v.Confirm(s.base, gen) != nil) {
		viewsUnavailable(r)
		return
	}
	if err := rt.h(r); err != nil {
		r.Error(err)
	}
	// What the handler answered may rest on a view lost meanwhile.
	status := ctx.Response.StatusCode()
	switch {
	case status >= 400 && status < 500:
		if v.Confirm(s.base, gen) != nil {
			viewsUnavailable(r)
		}
	case read && status < 400:
		if now, ok := v.Current(); now != gen || !ok {
			viewsUnavailable(r)
		}
	}
}

func (s *Server) notFound(r *Request) {
	r.Error(apierror.New(apierror.NotFound, "no route matches this path"))
}

// methodNotAllowed answers a path that has routes, none for the method:
// 405 with the methods it has in Allow and in data.allow.
func (s *Server) methodNotAllowed(r *Request, allow string) {
	r.Ctx.Response.Header.Set("Allow", allow)
	e := apierror.New(apierror.MethodNotAllowed, "method "+methodLabel(r.Ctx.Method())+" is not allowed on this path; allowed: "+allow)
	e.Data = map[string]string{"allow": allow}
	r.Error(e)
}

// transportError answers what fasthttp could not turn into a request: a
// body over the limit, headers over the buffer, a read timeout, a
// malformed request. No handler ran, so request id, log and metrics are
// done here.
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	var e *apierror.Error
	var small *fasthttp.ErrSmallBuffer
	var nerr net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		e = apierror.New(apierror.PayloadTooLarge, "request body exceeds "+strconv.Itoa(s.opts.MaxBodyBytes)+" bytes")
		e.Data = map[string]string{"limit": strconv.Itoa(s.opts.MaxBodyBytes)}
	case errors.As(err, &small):
		e = apierror.New(apierror.HeadersTooLarge, "request headers too large")
	case errors.As(err, &nerr) && nerr.Timeout():
		e = apierror.New(apierror.RequestTimeout, "request not received in time")
	default:
		e = apierror.New(apierror.BadRequest, "malformed HTTP request")
	}
	start := time.Now()
	tr := Request{Ctx: ctx, hdr: readHeaders(&ctx.Request.Header)}
	setRequestID(&tr)
	id := tr.ID
	if d := s.dialectOf(ctx, nil); d != nil {
		d.WriteError(ctx, id, e, e)
	} else {
		writeError(ctx, id, e)
	}
	m := s.metrics.unmatched(ctx.Method())
	status := ctx.Response.StatusCode()
	m.observe(status, time.Since(start))
	s.accessLog(ctx.Method(), m.pattern, status, time.Since(start), id, "")
	// The kind only: fasthttp's error may quote what it read of the
	// request, credentials included.
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "request rejected before routing", slog.String("reqId", id),
		slog.Int("status", status), slog.String("reason", e.Message))
}

// fasthttpLogger sends fasthttp's own messages (accept errors, a
// connection that could not be served) to slog instead of the standard
// logger. Only the message's form and its addresses and numbers are kept:
// an error is replaced by its kind, and any other value by "…", because
// fasthttp's errors may quote the bytes it read (a malformed request's
// header buffer holds X-API-Secret) whatever SecureErrorLogMessage says of
// the paths it covers. A connection that could not be served is the
// client's fault: Debug, so that a flood of garbage cannot fill the log.
type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	safe := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case error:
			safe[i] = transportErrorKind(v)
		case net.Addr, int, int64, uint, uint64, time.Duration:
			safe[i] = v
		default:
			safe[i] = "…"
		}
	}
	level := slog.LevelWarn
	if strings.HasPrefix(format, "error when serving connection") {
		level = slog.LevelDebug
	}
	f.l.Log(context.Background(), level, "fasthttp: "+fmt.Sprintf(format, safe...))
}

// transportErrorKind names a connection-level error without its text.
func transportErrorKind(err error) string {
	var small *fasthttp.ErrSmallBuffer
	var nerr net.Error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return "request body too large"
	case errors.As(err, &small):
		return "request headers too large"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "timeout"
	case errors.Is(err, net.ErrClosed):
		return "connection closed"
	}
	return "malformed request or connection error (details withheld: they may quote the request)"
}

package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
)

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, ...stream.Message) error { return nil }

// readyViews is a views guard whose views are complete: what every
// request pays for the guard on the hot path (one atomic load before the
// handler and one after a found answer, as internal/platform/views.Guard.Current).
type readyViews struct{}

var viewsState atomic.Pointer[[2]uint64]

func init() { viewsState.Store(&[2]uint64{1, 1}) }

func (readyViews) Current() (uint64, bool) {
	s := viewsState.Load()
	return s[0], s[1] == 1
}

func (readyViews) Confirm(context.Context, uint64) error { return nil }

type benchItem struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Vacancies int    `json:"vacancies"`
}

// benchServer is a server with one authenticated GET route returning a
// small JSON object, and the credential to call it.
func benchServer(b *testing.B, logger *slog.Logger) (*Server, string, string) {
	return benchServerWith(b, Options{Logger: logger})
}

// benchServerWith is benchServer with more options (the rate limit).
func benchServerWith(b *testing.B, opts Options) (*Server, string, string) {
	b.Helper()
	store := principals.NewStore(nopPublisher{})
	p, secret, err := store.Create(context.Background(), principals.CreateRequest{Role: principals.RoleReseller, ChannelID: "ch-1"})
	if err != nil {
		b.Fatal(err)
	}
	opts.Registry, opts.Principals = prometheus.NewRegistry(), store
	s := New(opts)
	s.Group(BaseResellerV13).Handle(http.MethodGet, "/suppliers/{supplier_id}", []principals.Role{principals.RoleReseller},
		func(r *Request) error {
			return r.JSON(http.StatusOK, benchItem{ID: r.Param("supplier_id"), Name: "Alpine Tours", Vacancies: 12})
		})
	return s, p.Key, secret
}

// BenchmarkAuthenticatedRoute measures one authenticated GET returning a
// small JSON body:
//   - inmemory: through a fasthttp client over an in-memory listener
//     (allocations of client and server together);
//   - handler: the server's handler alone on a reused RequestCtx (what the
//     query tier adds per request), with the access log formatted as JSON
//     to io.Discard, and with logging disabled;
//   - handler-nolog-ratelimit: the same with the rate limit on, at a rate
//     the loop never reaches, so every request pays the admitting path;
//   - handler-nolog-views: logging disabled, with the Redis views guard
//     (complete views: no Redis round trip for a found answer).
//
// The 429 path is measured by BenchmarkRefused.
func BenchmarkAuthenticatedRoute(b *testing.B) {
	jsonLog := slog.New(slog.NewJSONHandler(io.Discard, nil))

	b.Run("inmemory", func(b *testing.B) {
		s, key, secret := benchServer(b, jsonLog)
		ln := fasthttputil.NewInmemoryListener()
		go func() { _ = s.Serve(ln) }()
		defer func() { _ = s.Shutdown(context.Background()) }()
		c := &fasthttp.HostClient{Addr: "bench", Dial: func(string) (net.Conn, error) { return ln.Dial() }}
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		req.SetRequestURI("http://bench/v1.3/suppliers/sup-1")
		req.Header.Set(HeaderAPIKey, key)
		req.Header.Set(HeaderAPISecret, secret)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := c.Do(req, res); err != nil {
				b.Fatal(err)
			}
			if res.StatusCode() != http.StatusOK {
				b.Fatalf("status %d: %s", res.StatusCode(), res.Body())
			}
		}
	})

	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"handler", Options{Logger: jsonLog}},
		{"handler-nolog", Options{Logger: slog.New(slog.DiscardHandler)}},
		{"handler-nolog-ratelimit", Options{Logger: slog.New(slog.DiscardHandler), RateLimit: 1e9, RateBurst: 1e9}},
		{"handler-nolog-views", Options{Logger: slog.New(slog.DiscardHandler), Views: readyViews{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, key, secret := benchServerWith(b, bc.opts)
			var ctx fasthttp.RequestCtx
			ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
			loopServe(b, s, &ctx, key, secret, http.StatusOK)
		})
	}
}

// BenchmarkRefused compares what the query tier spends per refused
// request: refused by the rate limit (429, before the secret is hashed)
// and, limit off, a wrong secret (401, after it is hashed).
func BenchmarkRefused(b *testing.B) {
	for _, bc := range []struct {
		name   string
		opts   Options
		status int
	}{
		{"rate-limited", Options{RateLimit: 1, RateBurst: 1}, http.StatusTooManyRequests},
		{"bad-secret", Options{}, http.StatusUnauthorized},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.opts.Logger = slog.New(slog.DiscardHandler)
			s, key, secret := benchServerWith(b, bc.opts)
			// A stopped clock: the bucket never refills during the loop.
			stopped := time.Now()
			SetClock(s, func() time.Time { return stopped })
			var ctx fasthttp.RequestCtx
			ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
			ctx.Request.SetRequestURI("/v1.3/suppliers/sup-1")
			ctx.Request.Header.Set(HeaderAPIKey, key)
			s.serve(&ctx) // spends the burst of one
			loopServe(b, s, &ctx, key, secret+"x", bc.status)
		})
	}
}

// loopServe measures s.serve of GET /v1.3/suppliers/sup-1 with key and
// secret on ctx, failing unless it answers want.
func loopServe(b *testing.B, s *Server, ctx *fasthttp.RequestCtx, key, secret string, want int) {
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.SetRequestURI("/v1.3/suppliers/sup-1")
		ctx.Request.Header.Set(HeaderAPIKey, key)
		ctx.Request.Header.Set(HeaderAPISecret, secret)
		s.serve(ctx)
		if st := ctx.Response.StatusCode(); st != want {
			b.Fatalf("status %d, want %d: %s", st, want, ctx.Response.Body())
		}
	}
}

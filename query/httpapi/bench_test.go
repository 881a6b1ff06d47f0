package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/stream"
)

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, ...stream.Message) error { return nil }

type benchItem struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Vacancies int    `json:"vacancies"`
}

// benchServer is a server with one authenticated GET route returning a
// small JSON object, and the credential to call it.
func benchServer(b *testing.B, logger *slog.Logger) (*Server, string, string) {
	b.Helper()
	store := principals.NewStore(nopPublisher{})
	p, secret, err := store.Create(context.Background(), principals.CreateRequest{Role: principals.RoleReseller, ChannelID: "ch-1"})
	if err != nil {
		b.Fatal(err)
	}
	s := New(Options{Logger: logger, Registry: prometheus.NewRegistry(), Principals: store})
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
//     to io.Discard, and with logging disabled.
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
		log  *slog.Logger
	}{
		{"handler", jsonLog},
		{"handler-nolog", slog.New(slog.DiscardHandler)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, key, secret := benchServer(b, bc.log)
			var ctx fasthttp.RequestCtx
			ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.SetRequestURI("/v1.3/suppliers/sup-1")
				ctx.Request.Header.Set(HeaderAPIKey, key)
				ctx.Request.Header.Set(HeaderAPISecret, secret)
				s.serve(&ctx)
				if ctx.Response.StatusCode() != http.StatusOK {
					b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
		})
	}
}

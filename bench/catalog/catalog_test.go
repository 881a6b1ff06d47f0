// Package catalog benchmarks the catalog: operator upserts through the
// HTTP API to Kafka (acks=all) and Redis, and reseller catalog reads over
// fasthttp, next to the fasthttp static-response ceiling measured with the
// same client at the same concurrency in the same run.
//
//	go test -run '^$' -bench . -benchtime 5s ./bench/catalog/
//
// Every request of a sub-benchmark is one b.N iteration spread over
// Concurrency connections; req/s is reported as a metric.
package catalog

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

// Concurrency is the number of client connections (and goroutines), as
// wrk -c64 in ARCHITECTURE.md's ceiling.
const Concurrency = 64

// staticBody is a 200-byte JSON object, the ceiling's response.
var staticBody = []byte(`{"meta":{"reqId":"00000000-0000-4000-8000-000000000000"},"supplier":{"id":"s1","name":"Static","code":"S1","version":1,"partnerId":"p-S1","title":"A static response of two hundred bytes, pad"}}`)

type client struct {
	hc   *fasthttp.HostClient
	cred catalogtest.Cred
}

func newClient(addr string, c catalogtest.Cred) *client {
	return &client{hc: &fasthttp.HostClient{Addr: addr, MaxConns: Concurrency, MaxIdleConnDuration: time.Minute}, cred: c}
}

// run sends b.N requests from Concurrency goroutines and reports req/s.
func (c *client) run(b *testing.B, method string, path func(i int) string, body func(i int) []byte, want int) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < Concurrency; w++ {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				req.Reset()
				req.Header.SetMethod(method)
				req.SetRequestURI("http://" + c.hc.Addr + path(i))
				req.Header.Set(httpapi.HeaderAPIKey, c.cred.Key)
				req.Header.Set(httpapi.HeaderAPISecret, c.cred.Secret)
				if body != nil {
					req.SetBody(body(i))
				}
				if err := c.hc.Do(req, resp); err != nil || resp.StatusCode() != want {
					if failed.Add(1) == 1 {
						firstErr.Store(fmt.Sprintf("%v status %d %s", err, resp.StatusCode(), resp.Body()))
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed; first: %v", n, b.N, firstErr.Load())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

// staticServer is the ceiling: fasthttp answering staticBody, no routing,
// no auth.
func staticServer(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(staticBody)
	}}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// seed creates nSup suppliers of the operator, each with one product of
// three rates, bound to channel A (rates r1 and r2, priceTags [b2b] on
// even suppliers).
func seed(b *testing.B, e *querytest.Env, nSup int) {
	b.Helper()
	for i := range nSup {
		sid := fmt.Sprintf("s%03d", i)
		e.Must(b, 201, "POST", querytest.Ch+"/supplier", e.Operator, catalogtest.SupplierBody(sid, "Supplier "+sid, "C"+sid, "k", "s"))
		e.Must(b, 201, "POST", querytest.Ch+"/suppliers/"+sid+"/products", e.Operator, catalogtest.ProductBody("p1", "Tour", "d"))
		e.Must(b, 200, "POST", querytest.Ch+"/bulk/suppliers/"+sid+"/products/p1/rates", e.Operator,
			`{"rates":[`+catalogtest.RateBody("r1", "A")+`,`+catalogtest.RateBody("r2", "B")+`,`+catalogtest.RateBody("r3", "C")+`]}`)
		tags := ""
		if i%2 == 0 {
			tags = `,"priceTags":["b2b"]`
		}
		e.Must(b, 201, "POST", querytest.Ch+"/suppliers/"+sid+"/products/p1/channels/chan-a", e.Operator, `{"rateIds":["r1","r2"]`+tags+`}`)
	}
}

func BenchmarkResellerReads(b *testing.B) {
	// The API server also serves a fixed 200-byte body on an authenticated
	// route: the cost of routing, request id, auth, access log and
	// metrics, without Redis.
	e := querytest.Start(b, querytest.Options{Quiet: true, Routes: func(s *httpapi.Server) {
		s.Handle("GET", "/v1.2/static", nil, func(r *httpapi.Request) error {
			r.Ctx.SetContentType("application/json")
			r.Ctx.SetBody(staticBody)
			return nil
		})
	}})
	seed(b, e, 20)
	api := strings.TrimPrefix(e.URL, "http://")
	reader := newClient(api, e.Reseller1)
	static := staticServer(b)

	fixed := func(p string) func(int) string { return func(int) string { return p } }
	b.Run("ceiling-fasthttp-static-200B", func(b *testing.B) {
		newClient(static, e.Reseller1).run(b, "GET", fixed("/static"), nil, 200)
	})
	b.Run("httpapi-static-200B-with-auth", func(b *testing.B) {
		reader.run(b, "GET", fixed("/v1.2/static"), nil, 200)
	})
	b.Run("v1.2-supplier", func(b *testing.B) {
		reader.run(b, "GET", func(i int) string { return fmt.Sprintf("/v1.2/suppliers/s%03d", i%20) }, nil, 200)
	})
	b.Run("v1.3-supplier-content", func(b *testing.B) {
		reader.run(b, "GET", func(i int) string { return fmt.Sprintf("/v1.3/suppliers/s%03d?content=true", i%20) }, nil, 200)
	})
	b.Run("v1.2-product", func(b *testing.B) {
		reader.run(b, "GET", func(i int) string { return fmt.Sprintf("/v1.2/suppliers/s%03d/products/p1", i%20) }, nil, 200)
	})
	b.Run("v1.2-rate-untagged", func(b *testing.B) {
		reader.run(b, "GET", func(i int) string { return fmt.Sprintf("/v1.2/suppliers/s%03d/products/p1/rates/r1", 2*(i%10)+1) }, nil, 200)
	})
	b.Run("v1.2-rate-price-tags", func(b *testing.B) {
		reader.run(b, "GET", func(i int) string { return fmt.Sprintf("/v1.2/suppliers/s%03d/products/p1/rates/r1", 2*(i%10)) }, nil, 200)
	})
	b.Run("v1.2-rates-list", func(b *testing.B) {
		reader.run(b, "GET", func(i int) string { return fmt.Sprintf("/v1.2/suppliers/s%03d/products/p1/rates", 2*(i%10)+1) }, nil, 200)
	})
	b.Run("v1.2-suppliers-list-20", func(b *testing.B) {
		reader.run(b, "GET", fixed("/v1.2/suppliers"), nil, 200)
	})
	b.Run("unbound-404", func(b *testing.B) {
		reader.run(b, "GET", fixed("/v1.2/suppliers/nope"), nil, 404)
	})
}

func BenchmarkOperatorUpserts(b *testing.B) {
	e := querytest.Start(b, querytest.Options{Kafka: true, Quiet: true})
	const nSup = Concurrency
	ctx := context.Background()
	opP := catalog.ScopeOf(principals.Principal{ID: e.Operator.ID, Role: principals.RoleOperator})
	for i := range nSup {
		sid := fmt.Sprintf("s%03d", i)
		e.Must(b, 201, "POST", querytest.Ch+"/supplier", e.Operator, catalogtest.SupplierBody(sid, "S", "C"+sid, "k", "s"))
		e.Must(b, 201, "POST", querytest.Ch+"/suppliers/"+sid+"/products", e.Operator, catalogtest.ProductBody("p1", "Tour", "d"))
	}
	api := strings.TrimPrefix(e.URL, "http://")
	writer := newClient(api, e.Operator)
	var gen atomic.Int64

	// One PUT per supplier at a time (each changes the description, so each
	// publishes, applies and bumps the version): 64 suppliers written
	// concurrently, as 64 operators would.
	b.Run("put-product-http", func(b *testing.B) {
		writer.run(b, "PUT", func(i int) string { return fmt.Sprintf("/channel/v1.2/suppliers/s%03d/products/p1", i%nSup) },
			func(int) []byte {
				return []byte(catalogtest.ProductBody("p1", "Tour", fmt.Sprintf("description %d", gen.Add(1))))
			}, 200)
	})
	// One supplier hammered by all connections: its writes serialise on
	// the supplier's lock.
	b.Run("put-product-http-one-supplier", func(b *testing.B) {
		writer.run(b, "PUT", func(int) string { return "/channel/v1.2/suppliers/s000/products/p1" },
			func(int) []byte {
				return []byte(catalogtest.ProductBody("p1", "Tour", fmt.Sprintf("description %d", gen.Add(1))))
			}, 200)
	})
	// Bulk: 100 changed products per request; items/s = req/s x 100.
	b.Run("bulk-100-products-http", func(b *testing.B) {
		writer.run(b, "POST", func(i int) string { return fmt.Sprintf("/channel/v1.2/bulk/suppliers/s%03d/products", i%nSup) },
			func(int) []byte {
				g := gen.Add(1)
				var sb strings.Builder
				sb.WriteString(`{"products":[`)
				for j := range 100 {
					if j > 0 {
						sb.WriteByte(',')
					}
					sb.WriteString(catalogtest.ProductBody(fmt.Sprintf("bulk%03d", j), "Tour", fmt.Sprintf("d %d", g)))
				}
				sb.WriteString(`]}`)
				return []byte(sb.String())
			}, 200)
	})
	// The check that "through to Redis" holds: the last write is readable.
	sup, err := e.Store.Product(ctx, opP, "s000", "p1")
	if err != nil || !strings.HasPrefix(sup.Description, "description ") {
		b.Fatalf("last write not in Redis: %v %q", err, sup.Description)
	}
}

// BenchmarkStoreReads measures the catalog's side of a reseller read (Redis
// round trips and copying), without HTTP, with allocations.
func BenchmarkStoreReads(b *testing.B) {
	e := querytest.Start(b, querytest.Options{Quiet: true})
	seed(b, e, 20)
	ctx := context.Background()
	now := time.Now()
	cases := []struct {
		name string
		read func(dst []byte) ([]byte, error)
	}{
		{"supplier-v12", func(dst []byte) ([]byte, error) {
			return e.Store.AppendSupplier(ctx, dst, catalogtest.ChannelA, "s001", 0, now)
		}},
		{"rate-untagged", func(dst []byte) ([]byte, error) {
			return e.Store.AppendRate(ctx, dst, catalogtest.ChannelA, "s001", "p1", "r1", now)
		}},
		{"rate-price-tags", func(dst []byte) ([]byte, error) {
			return e.Store.AppendRate(ctx, dst, catalogtest.ChannelA, "s000", "p1", "r1", now)
		}},
		{"suppliers-list-20", func(dst []byte) ([]byte, error) {
			return e.Store.AppendSuppliers(ctx, dst, catalogtest.ChannelA, 0, "", "", now)
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 0, 64<<10)
				for pb.Next() {
					var err error
					if buf, err = c.read(buf[:0]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

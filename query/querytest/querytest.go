// Package querytest starts the query tier's catalog API for tests and
// benchmarks: catalogtest's store fixture (redis-server, catalog store,
// test principals and channels) with the fasthttp API server serving the
// channel, admin-channel, operator and reseller routes on 127.0.0.1:0, and
// Do/Must to call it with a test principal's credentials.
//
// It is for tests of the API itself (query/, bench/, cmd/switchback):
// ingest and processor tests use catalogtest alone and start no route.
// Imported by _test.go files and bench/ only.
package querytest

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/query/channel"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/operator"
	"github.com/switchbackhq/switchback/query/reseller"
)

// Paths of the channel interface.
const (
	Ch  = "/channel/v1.2"
	Op  = "/operator/v2"
	V12 = "/v1.2"
	V13 = "/v1.3"
)

// Options of Start.
type Options struct {
	// Kafka starts the embedded broker and publishes to it; else the
	// store publishes to a Recorder.
	Kafka bool
	// RedisURL reuses a running redis-server (benchmarks); empty starts one.
	RedisURL string
	// Quiet drops the logs instead of capturing them (benchmarks).
	Quiet bool
	// Routes registers more routes on the server (benchmarks).
	Routes func(*httpapi.Server)
}

// Env is a running catalog API on catalogtest's store fixture.
type Env struct {
	*catalogtest.Env
	URL string

	client *http.Client
}

// Start starts the store fixture and the API and registers their stop with
// t.Cleanup.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e := &Env{
		Env:    catalogtest.Start(t, catalogtest.Options{Kafka: opts.Kafka, RedisURL: opts.RedisURL, Quiet: opts.Quiet}),
		client: &http.Client{Timeout: 20 * time.Second},
	}
	s := httpapi.New(httpapi.Options{Principals: e.Principals, Logger: e.Logger})
	channel.Register(s, e.Store)
	channel.RegisterAdmin(s, e.Store)
	operator.Register(s, e.Store)
	reseller.Register(s, e.Store)
	if opts.Routes != nil {
		opts.Routes(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	e.URL = "http://" + ln.Addr().String()
	t.Cleanup(func() {
		e.client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return e
}

// Do sends a request and returns status and body.
func (e *Env) Do(t testing.TB, method, path string, c catalogtest.Cred, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", c.Key)
	req.Header.Set("X-API-Secret", c.Secret)
	req.Header.Set("X-Request-ID", "test-req")
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

// Must sends a request and fails the test unless the status is want.
func (e *Env) Must(t testing.TB, want int, method, path string, c catalogtest.Cred, body string) []byte {
	t.Helper()
	status, b := e.Do(t, method, path, c, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, b)
	}
	return b
}

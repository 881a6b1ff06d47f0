// Package querytest starts the query tier's catalog API for tests and
// benchmarks: catalogtest's store fixture (redis-server, catalog store,
// test principals and channels) with the fasthttp API server serving the
// channel, admin-channel, operator and reseller routes on 127.0.0.1:0, and
// Do/Must to call it with a test principal's credentials; and the pieces
// for tests of other routes: Serve (any API server on 127.0.0.1:0), Client,
// Principals, and DecodeError/MustError for the spec's error object.
//
// It is for tests of the API itself (query/, bench/, cmd/switchback):
// ingest and processor tests use catalogtest alone and start no route.
// Imported by _test.go files and bench/ only.
package querytest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
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

// Env is a running catalog API on catalogtest's store fixture, and a
// Client of it.
type Env struct {
	*catalogtest.Env
	*Client
}

// Start starts the store fixture and the API and registers their stop with
// t.Cleanup.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e := &Env{Env: catalogtest.Start(t, catalogtest.Options{Kafka: opts.Kafka, RedisURL: opts.RedisURL, Quiet: opts.Quiet})}
	s := httpapi.New(httpapi.Options{Principals: e.Principals, Logger: e.Logger})
	channel.Register(s, e.Store)
	channel.RegisterAdmin(s, e.Store)
	operator.Register(s, e.Store)
	reseller.Register(s, e.Store)
	if opts.Routes != nil {
		opts.Routes(s)
	}
	e.Client = NewClient(t, Serve(t, s))
	e.Client.Header = map[string]string{"X-Request-ID": "test-req"}
	e.Client.HTTP.Timeout = 20 * time.Second
	return e
}

// Serve serves s on 127.0.0.1:0 until t ends and returns its base URL
// ("http://127.0.0.1:port"). When t ends it shuts s down and fails t if
// Shutdown or Serve fails. Clients made after Serve (NewClient) close
// their idle connections first: t.Cleanup runs last in, first out.
func Serve(t testing.TB, s *httpapi.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		// Shutdown closes only the listeners Serve has registered: a test
		// that sent no request may end before Serve started, and closing
		// ln ends such a late Serve (with nil, as Shutdown does) instead
		// of leaving it running.
		_ = ln.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v after Shutdown, want nil", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// Client calls an API as test principals.
type Client struct {
	// URL is the API's base URL; paths are appended to it.
	URL  string
	HTTP *http.Client
	// Header is set on every request.
	Header map[string]string
}

// NewClient is a Client of url with a 10 s timeout; its idle connections
// are closed when t ends.
func NewClient(t testing.TB, url string) *Client {
	c := &Client{URL: url, HTTP: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(func() { c.HTTP.CloseIdleConnections() })
	return c
}

// Do sends a request with c's credentials (none if c.Key is empty) and
// returns status and body.
func (cl *Client) Do(t testing.TB, method, path string, c catalogtest.Cred, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	res, b := cl.Request(t, method, path, c, rd, nil)
	return res.StatusCode, b
}

// Request sends a request with c's credentials (none if c.Key is empty),
// cl.Header and header, and returns the answer and its body, read.
func (cl *Client) Request(t testing.TB, method, path string, c catalogtest.Cred, body io.Reader, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, cl.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.Key != "" {
		req.Header.Set("X-API-Key", c.Key)
		req.Header.Set("X-API-Secret", c.Secret)
	}
	for _, h := range []map[string]string{cl.Header, header} {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	res, err := cl.HTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// Must sends a request and fails the test unless the status is want.
func (cl *Client) Must(t testing.TB, want int, method, path string, c catalogtest.Cred, body string) []byte {
	t.Helper()
	status, b := cl.Do(t, method, path, c, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, b)
	}
	return b
}

// DecodeError decodes b as the spec's error object and fails t unless it
// is one: a code and a meta.reqId.
func DecodeError(t testing.TB, b []byte) apierror.Body {
	t.Helper()
	var e apierror.Body
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" || e.Meta.ReqID == "" {
		t.Fatalf("not an error object: %s", b)
	}
	return e
}

// MustError checks an answer's status, its error code and data.field (""
// for none), and returns its error object.
func MustError(t testing.TB, status int, b []byte, wantStatus int, code apierror.Code, field string) apierror.Body {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d %s, want %d %s", status, b, wantStatus, code)
	}
	e := DecodeError(t, b)
	if e.Code != code || e.Data["field"] != field {
		t.Fatalf("error %s, want code %s field %q", b, code, field)
	}
	return e
}

// Principal is a fixed test principal for Principals; its secret is
// Key+"-secret-0123456789".
type Principal struct {
	Key     string
	Role    principals.Role
	Channel string
}

// Principals is a principals table (publishing to a catalogtest.Recorder)
// holding ps, and their credentials in the order of ps.
func Principals(t testing.TB, ps ...Principal) (*principals.Store, []catalogtest.Cred) {
	t.Helper()
	store := principals.NewStore(&catalogtest.Recorder{})
	creds := make([]catalogtest.Cred, len(ps))
	for i, p := range ps {
		secret := p.Key + "-secret-0123456789"
		pr, err := store.EnsureFixed(context.Background(), p.Key, secret, p.Role, p.Key, p.Channel)
		if err != nil {
			t.Fatal(err)
		}
		creds[i] = catalogtest.Cred{Key: p.Key, Secret: secret, ID: pr.ID, Principal: pr}
	}
	return store, creds
}

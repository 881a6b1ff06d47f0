package httpapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

// fakeViews is the views guard as the server sees it: a generation, a
// ready flag and what Confirm answers.
type fakeViews struct {
	mu         sync.Mutex
	gen        uint64
	ready      bool
	confirmErr error
	confirms   int
}

func (f *fakeViews) Current() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, f.ready
}

func (f *fakeViews) Confirm(_ context.Context, gen uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confirms++
	if gen != f.gen || !f.ready {
		return errors.New("views changed")
	}
	return f.confirmErr
}

// set changes the views' state (the guard noticed a loss, a rebuild
// finished, or the marker is gone in Redis but not yet noticed).
func (f *fakeViews) set(ready bool, bump bool, confirmErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready, f.confirmErr = ready, confirmErr
	if bump {
		f.gen++
	}
}

// TestServer_ViewsGuard: while the Redis views are being rebuilt every
// route answers 503 with Retry-After (credentials still checked first); a
// 4xx a handler produced is served only once the views are confirmed; a
// read whose views changed while it ran is a 503; a write is confirmed
// before it runs, and its success is never replaced (it happened). A found
// answer costs no Confirm (no Redis round trip).
func TestServer_ViewsGuard(t *testing.T) {
	errGone := errors.New("marker gone")
	tests := []struct {
		name   string
		method string
		path   string
		before func(v *fakeViews) // the views' state before the request
		during func(v *fakeViews) // what happens to the views while the handler runs
		noCred bool
		status int
		code   apierror.Code
		// handled: the handler ran; confirms: Confirm calls
		handled  bool
		confirms int
	}{
		{name: "read while rebuilding", method: "GET", path: "/found", before: func(v *fakeViews) { v.set(false, true, nil) },
			status: 503, code: apierror.Unavailable},
		{name: "write while rebuilding", method: "POST", path: "/created", before: func(v *fakeViews) { v.set(false, true, nil) },
			status: 503, code: apierror.Unavailable},
		{name: "bad credentials while rebuilding are still 401", method: "GET", path: "/found", noCred: true,
			before: func(v *fakeViews) { v.set(false, true, nil) }, status: 401, code: apierror.Unauthorized},
		{name: "found: served, nothing confirmed", method: "GET", path: "/found", status: 200, handled: true},
		{name: "404 confirmed: served", method: "GET", path: "/missing", status: 404, code: apierror.NotFound, handled: true, confirms: 1},
		{name: "404 on a lost view (marker gone, not noticed yet): 503", method: "GET", path: "/missing",
			before: func(v *fakeViews) { v.set(true, false, errGone) }, status: 503, code: apierror.Unavailable, handled: true, confirms: 1},
		{name: "400 on a lost view: 503", method: "GET", path: "/invalid",
			before: func(v *fakeViews) { v.set(true, false, errGone) }, status: 503, code: apierror.Unavailable, handled: true, confirms: 1},
		{name: "read during which the views were lost: 503", method: "GET", path: "/found",
			during: func(v *fakeViews) { v.set(false, true, nil) }, status: 503, code: apierror.Unavailable, handled: true},
		{name: "read during which the views were rebuilt elsewhere: 503", method: "GET", path: "/found",
			during: func(v *fakeViews) { v.set(true, true, nil) }, status: 503, code: apierror.Unavailable, handled: true},
		{name: "write on a lost view is refused before it runs", method: "POST", path: "/created",
			before: func(v *fakeViews) { v.set(true, false, errGone) }, status: 503, code: apierror.Unavailable, confirms: 1},
		{name: "write confirmed, views lost meanwhile: its success stands", method: "POST", path: "/created",
			during: func(v *fakeViews) { v.set(false, true, nil) }, status: 201, handled: true, confirms: 1},
		{name: "write answering 409 on a view lost meanwhile: 503", method: "POST", path: "/conflict",
			during: func(v *fakeViews) { v.set(true, false, errGone) }, status: 503, code: apierror.Unavailable, handled: true, confirms: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &fakeViews{ready: true, gen: 1}
			var handled atomic.Bool
			e := startGuarded(t, v, func(r *httpapi.Request) {
				handled.Store(true)
				if tt.during != nil {
					tt.during(v)
				}
			})
			if tt.before != nil {
				tt.before(v)
			}
			c := &e.reseller
			if tt.noCred {
				c = nil
			}
			r := e.do(t, tt.method, "/v1.3"+tt.path, c, nil, nil)
			if tt.code != "" {
				mustErrorObject(t, r, tt.status, tt.code)
			} else if r.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status == 503 && r.header.Get("Retry-After") != "1" {
				t.Errorf("Retry-After = %q, want 1", r.header.Get("Retry-After"))
			}
			if r.header.Get("X-Request-ID") == "" {
				t.Error("no X-Request-ID on the answer")
			}
			if handled.Load() != tt.handled {
				t.Errorf("handler ran = %v, want %v", handled.Load(), tt.handled)
			}
			v.mu.Lock()
			defer v.mu.Unlock()
			if v.confirms != tt.confirms {
				t.Errorf("Confirm called %d times, want %d", v.confirms, tt.confirms)
			}
		})
	}
}

// startGuarded is a server with the views guard v and routes answering
// 200, 201, 404, 400 and 409; each handler calls hook first.
func startGuarded(t *testing.T, v httpapi.Views, hook func(r *httpapi.Request)) *env {
	t.Helper()
	store := principals.NewStore(&catalogtest.Recorder{})
	p, secret, err := store.Create(context.Background(), principals.CreateRequest{Role: principals.RoleReseller, ChannelID: "ch-1"})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{store: store, reg: prometheus.NewRegistry(), logs: &catalogtest.SyncBuffer{}, reseller: cred{p.Key, secret}}
	s := httpapi.New(httpapi.Options{Logger: slog.New(slog.NewJSONHandler(e.logs, nil)), Registry: e.reg, Principals: store, Views: v})
	g := s.Group(httpapi.BaseResellerV13)
	route := func(method, path string, answer func(r *httpapi.Request) error) {
		g.Handle(method, path, nil, func(r *httpapi.Request) error {
			hook(r)
			return answer(r)
		})
	}
	route(http.MethodGet, "/found", func(r *httpapi.Request) error { return r.JSON(http.StatusOK, map[string]string{"id": "x"}) })
	route(http.MethodGet, "/missing", func(*httpapi.Request) error { return apierror.ErrNotFound })
	route(http.MethodGet, "/invalid", func(*httpapi.Request) error { return apierror.Invalid("channelId", "is not a channel") })
	route(http.MethodPost, "/created", func(r *httpapi.Request) error { return r.JSON(http.StatusCreated, map[string]string{"id": "x"}) })
	route(http.MethodPost, "/conflict", func(*httpapi.Request) error { return apierror.ErrConflict })
	e.api = querytest.NewClient(t, querytest.Serve(t, s))
	e.api.HTTP.Timeout = 5 * time.Second
	return e
}

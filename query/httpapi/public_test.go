package httpapi_test

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
)

// noKeepAlive leaves no idle connection for Shutdown to wait on.
var noKeepAlive = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// newPublic has one public route and one authenticated route.
func newPublic() *httpapi.Server {
	s := httpapi.New(httpapi.Options{Principals: principals.NewStore(&catalogtest.Recorder{}), RateLimit: 1, RateBurst: 1})
	s.HandlePublic(http.MethodGet, "/docs/{family}", func(r *httpapi.Request) error {
		if r.Param("family") == "nope" {
			return apierror.New(apierror.NotFound, "no such family")
		}
		r.Ctx.Response.Header.SetContentType("text/html; charset=utf-8")
		r.Ctx.Response.SetBodyString("<p>" + r.Param("family") + "</p>")
		return nil
	})
	s.Group(httpapi.BaseAdminV1).Handle(http.MethodGet, "/ping", nil, func(r *httpapi.Request) error {
		return r.JSON(http.StatusOK, map[string]bool{"ok": true})
	})
	return s
}

// startPublic serves newPublic.
func startPublic(t *testing.T) string {
	t.Helper()
	return querytest.Serve(t, newPublic())
}

func TestHandlePublic_AnswersWithoutCredentialsOrRateLimit(t *testing.T) {
	url := startPublic(t)
	tests := []struct {
		name, path, ctype string
		status            int
	}{
		{"public route, any number of times", "/docs/reseller", "text/html; charset=utf-8", 200},
		{"public route's own error is the error object", "/docs/nope", "application/json", 404},
		{"authenticated route still refuses", "/admin/v1/ping", "application/json", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Three times: the limit (1 request, burst 1) would refuse the
			// second if public routes were charged to the client address.
			for i := range 3 {
				resp, err := noKeepAlive.Get(url + tt.path)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				want := tt.status
				if tt.status == 401 && i > 0 {
					want = 429 // failed authentications are limited per address
				}
				if resp.StatusCode != want {
					t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, want)
				}
				if got := resp.Header.Get("Content-Type"); want != 429 && got != tt.ctype {
					t.Errorf("Content-Type %q, want %q", got, tt.ctype)
				}
				if resp.Header.Get(httpapi.HeaderRequestID) == "" {
					t.Error("no X-Request-ID")
				}
			}
		})
	}
}

func TestRoutes_ListsEveryRegisteredRouteSorted(t *testing.T) {
	got := newPublic().Routes()
	want := []httpapi.Route{{Method: "GET", Pattern: "/admin/v1/ping"}, {Method: "GET", Pattern: "/docs/{family}"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Routes() = %v, want %v", got, want)
	}
}

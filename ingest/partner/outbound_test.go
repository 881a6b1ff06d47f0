package partner_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/outbound/outboundtest"
	"github.com/switchbackhq/switchback/schemas"
)

// TestOutbound_RefusedTargetsAreNeverConnectedTo: on the default outbound
// policy every partner call (reads, holds, bookings, cancels: GET, POST,
// PUT, DELETE) to a loopback base url is refused, literal or by a name
// resolving there, with no connection made, in the same words whatever
// listens there.
func TestOutbound_RefusedTargetsAreNeverConnectedTo(t *testing.T) {
	srv := outboundtest.NewServer(t, nil)
	port := srv.Port()
	bases := []string{"http://127.0.0.1:" + port, "https://127.0.0.1:" + port, "https://[::1]:" + port, "https://localhost:" + port,
		"https://127.0.0.1:1"}
	if name := outboundtest.LoopbackName(); name != "" {
		bases = append(bases, "https://"+name+":"+port, "https://"+name+":1")
	}
	strict := partner.NewClient(partner.Options{BreakerFailures: 1})
	ctx := context.Background()
	calls := map[string]func(partner.Connection) error{
		"availabilities": func(c partner.Connection) error { _, err := strict.Availabilities(ctx, c, req()); return err },
		"createHold": func(c partner.Connection) error {
			_, err := strict.CreateHold(ctx, c, schemas.Hold{ID: "h1"}, "r")
			return err
		},
		"releaseHold":   func(c partner.Connection) error { return strict.ReleaseHold(ctx, c, "h1", "r") },
		"cancelBooking": func(c partner.Connection) error { return strict.CancelBooking(ctx, c, "b1", "r") },
		"getBooking":    func(c partner.Connection) error { _, err := strict.GetBooking(ctx, c, "b1", "r"); return err },
	}
	want := "partner call: refused by the outbound policy"
	for _, base := range bases {
		for name, call := range calls {
			err := call(partner.Connection{BaseURL: base, APIKey: "k", APISecret: "partner-secret-never-sent"})
			var ce *partner.CallError
			if !errors.As(err, &ce) || ce.Kind != partner.KindRefused || !errors.Is(err, outbound.ErrRefused) || err.Error() != want {
				t.Fatalf("%s %s: %v, want %q", name, base, err, want)
			}
		}
		if strict.BreakerOpen(base) {
			t.Errorf("%s: refusals opened the breaker", base)
		}
	}
	if n := srv.Conns.Load(); n != 0 {
		t.Fatalf("the loopback server accepted %d connections, want 0", n)
	}
	open := partner.NewClient(partner.Options{Outbound: allowLoopback})
	_ = open.ReleaseHold(ctx, partner.Connection{BaseURL: srv.URL, APIKey: "k", APISecret: "s"}, "h1", "r")
	if srv.Requests.Load() != 1 {
		t.Fatalf("with the allow settings the server got %d requests, want 1", srv.Requests.Load())
	}
}

// TestOutbound_RedirectsAreNotFollowed: a partner answering 307 gets
// "answered status 307"; the target is never called.
func TestOutbound_RedirectsAreNotFollowed(t *testing.T) {
	target := outboundtest.NewServer(t, nil)
	redirect := outboundtest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	c := partner.NewClient(partner.Options{Outbound: allowLoopback})
	_, err := c.Availabilities(context.Background(), partner.Connection{BaseURL: redirect.URL, APIKey: "k", APISecret: "s"}, req())
	if err == nil || !strings.Contains(err.Error(), "answered status 307") {
		t.Fatalf("err %v, want the 307 as the answer", err)
	}
	if n := target.Conns.Load(); n != 0 {
		t.Fatalf("the redirect target got %d connections: a redirect was followed", n)
	}
}

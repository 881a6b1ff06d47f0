package bookingsystem_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
	"github.com/switchbackhq/switchback/internal/platform/outbound/outboundtest"
)

// TestOutbound_RefusedTargetsAreNeverConnectedTo: on the default outbound
// policy a booking-system endpoint on loopback is refused, literal or by a
// name resolving there, with no connection made (the listener counts 0),
// whether or not anything listens; the error reads "refused by the
// outbound policy" and the same for every target. The allow settings let
// the same endpoint be reached (the positive control).
func TestOutbound_RefusedTargetsAreNeverConnectedTo(t *testing.T) {
	srv := outboundtest.NewServer(t, nil)
	port := srv.Port()
	closed := outboundtest.NewServer(t, nil)
	closedPort := closed.Port()
	closed.Close()
	endpoints := []string{
		"http://127.0.0.1:" + port + "/v2",
		"https://127.0.0.1:" + port + "/v2",
		"https://[::ffff:127.0.0.1]:" + port + "/v2",
		"https://localhost:" + port + "/v2",
		"http://127.0.0.1:" + closedPort + "/v2",
	}
	if name := outboundtest.LoopbackName(); name != "" {
		// Judged at dial time: the url alone is a public-looking name.
		endpoints = append(endpoints, "https://"+name+":"+port+"/v2", "https://"+name+":"+closedPort+"/v2")
	} else {
		t.Log("no name but localhost maps to loopback in /etc/hosts: the resolved-address case is covered by internal/platform/outbound's tests only")
	}
	strict := bookingsystem.NewClient(bookingsystem.Options{BreakerFailures: 1})
	var texts []string
	for _, ep := range endpoints {
		conn := bookingsystem.Connection{Endpoint: ep, APIKey: "bs-token-never-sent"}
		_, _, err := strict.Suppliers(ctx, conn)
		var ce *bookingsystem.CallError
		if !errors.As(err, &ce) || ce.Kind != bookingsystem.KindRefused || !errors.Is(err, outbound.ErrRefused) || !errors.Is(err, bookingsystem.ErrUnavailable) {
			t.Fatalf("%s: %v, want a refusal of the outbound policy", ep, err)
		}
		if strict.BreakerOpen(conn) {
			t.Errorf("%s: a refusal opened the breaker (nothing was called)", ep)
		}
		texts = append(texts, err.Error())
	}
	for _, tx := range texts {
		if tx != texts[0] || !strings.Contains(tx, "refused by the outbound policy") || strings.Contains(tx, "127.0.0.1") || strings.Contains(tx, port) {
			t.Fatalf("refusals read %q: want one text, the policy's, naming no address", texts)
		}
	}
	if n := srv.Conns.Load(); n != 0 {
		t.Fatalf("the loopback server accepted %d connections, want 0", n)
	}
	open := bookingsystem.NewClient(bookingsystem.Options{Outbound: allowLoopback})
	_, _, err := open.Suppliers(ctx, bookingsystem.Connection{Endpoint: "http://127.0.0.1:" + port + "/v2", APIKey: "k"})
	if srv.Requests.Load() != 1 {
		t.Fatalf("with the allow settings: %v, requests %d, want the server called once", err, srv.Requests.Load())
	}
}

// TestOutbound_RedirectsAreNotFollowed: a booking system answering 307 to
// another address gets "answered status 307"; the target is never called.
func TestOutbound_RedirectsAreNotFollowed(t *testing.T) {
	target := outboundtest.NewServer(t, nil)
	redirect := outboundtest.NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/v2/suppliers", http.StatusTemporaryRedirect)
	}))
	c := bookingsystem.NewClient(bookingsystem.Options{Outbound: allowLoopback})
	_, _, err := c.Suppliers(ctx, bookingsystem.Connection{Endpoint: redirect.URL + "/v2", APIKey: "k"})
	var ce *bookingsystem.CallError
	if !errors.As(err, &ce) || ce.Status != http.StatusTemporaryRedirect || !strings.Contains(err.Error(), "answered status 307") {
		t.Fatalf("err %v, want the 307 as the answer", err)
	}
	if n := target.Conns.Load(); n != 0 {
		t.Fatalf("the redirect target got %d connections: a redirect was followed", n)
	}
}

// TestCallError_SaysNothingOfTheNetwork: an allowed target that cannot be
// reached reads "could not be reached", with neither its address nor the
// system's own words.
func TestCallError_SaysNothingOfTheNetwork(t *testing.T) {
	closed := outboundtest.NewServer(t, nil)
	ep := closed.URL + "/v2"
	closed.Close()
	c := bookingsystem.NewClient(bookingsystem.Options{Outbound: allowLoopback})
	_, _, err := c.Suppliers(ctx, bookingsystem.Connection{Endpoint: ep, APIKey: "k"})
	if err == nil || err.Error() != "booking system call: the booking system could not be reached" {
		t.Fatalf("err %v", err)
	}
}

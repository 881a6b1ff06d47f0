package webhook_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// sink is a loopback HTTP server counting the requests it received.
type sink struct {
	*httptest.Server
	hits atomic.Int64
}

func newSink(t *testing.T, h http.HandlerFunc) *sink {
	t.Helper()
	s := &sink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) port() string {
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return port
}

func ok200(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func TestClient_RefusesNonPublicTargetsUnlessAllowed(t *testing.T) {
	s := newSink(t, ok200)
	port := s.port()
	tests := []struct {
		name string
		host string
		live bool // the sink really listens there: success when allowed
	}{
		{"rfc1918 10/8", "10.1.2.3", false},
		{"rfc1918 172.16/12", "172.16.5.4", false},
		{"rfc1918 192.168/16", "192.168.1.1", false},
		{"loopback v4", "127.0.0.1", true},
		{"loopback v6", "[::1]", false},
		{"cloud metadata", "169.254.169.254", false},
		{"link-local v6", "[fe80::1]", false},
		{"cgnat", "100.64.0.1", false},
		{"unspecified (reaches localhost on Linux)", "0.0.0.0", true},
		{"ipv4-mapped loopback", "[::ffff:127.0.0.1]", false},
		{"ula", "[fd00::1]", false},
		{"multicast", "224.0.0.1", false},
		{"name resolving to loopback", "localhost", true},
	}
	strict := webhook.NewClient(webhook.Options{AllowHTTP: true, Timeout: 2 * time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := "http://" + tt.host + ":" + port + "/hook"
			before := s.hits.Load()
			status, _, err := strict.Post(t.Context(), url, []byte(`{}`))
			if !errors.Is(err, webhook.ErrForbiddenAddress) {
				t.Fatalf("Post = %d, %v; want ErrForbiddenAddress", status, err)
			}
			if strings.Contains(err.Error(), "/hook") {
				t.Errorf("error %q leaks the url", err)
			}
			if s.hits.Load() != before {
				t.Errorf("the refused request reached the sink")
			}
		})
	}
	t.Run("allowed when AllowPrivate", func(t *testing.T) {
		open := webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true, Timeout: 2 * time.Second})
		for _, tt := range tests {
			if !tt.live {
				continue
			}
			status, _, err := open.Post(t.Context(), "http://"+tt.host+":"+port+"/hook", []byte(`{}`))
			if err != nil || status != 200 {
				t.Errorf("%s: Post = %d, %v; want 200", tt.host, status, err)
			}
		}
	})
}

func TestClient_RefusesHTTPUnlessAllowed(t *testing.T) {
	s := newSink(t, ok200)
	strict := webhook.NewClient(webhook.Options{AllowPrivate: true})
	for _, url := range []string{s.URL, "ftp://example.com/x", "//example.com", "https://", "https://user:pa ss@exa mple.com/%zz"} {
		_, _, err := strict.Post(t.Context(), url, []byte(`{}`))
		if !errors.Is(err, webhook.ErrURLNotAllowed) {
			t.Errorf("Post(%q) err = %v, want ErrURLNotAllowed", url, err)
		}
		if err != nil && strings.Contains(err.Error(), "pa ss") {
			t.Errorf("error %q leaks credentials", err)
		}
	}
	if s.hits.Load() != 0 {
		t.Error("an http request was sent")
	}
	open := webhook.NewClient(webhook.Options{AllowPrivate: true, AllowHTTP: true})
	if status, _, err := open.Post(t.Context(), s.URL, []byte(`{}`)); err != nil || status != 200 {
		t.Errorf("with AllowHTTP: %d, %v", status, err)
	}
}

func TestClient_DoesNotFollowRedirects(t *testing.T) {
	target := newSink(t, ok200)
	redirect := newSink(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	})
	c := webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true})
	status, _, err := c.Post(t.Context(), redirect.URL, []byte(`{}`))
	if err != nil || status != http.StatusFound {
		t.Fatalf("Post = %d, %v; want 302 returned as is", status, err)
	}
	if target.hits.Load() != 0 {
		t.Error("redirect was followed")
	}
}

func TestClient_ReadsAtMostMaxResponseBody(t *testing.T) {
	tests := []struct {
		name string
		h    http.HandlerFunc
	}{
		{"large with length", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(4<<20))
			w.WriteHeader(200)
			_, _ = w.Write(make([]byte, 4<<20))
		}},
		{"endless chunked", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			chunk := make([]byte, 32<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSink(t, tt.h)
			c := webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true, MaxResponseBody: 1024, Timeout: 5 * time.Second})
			status, _, err := c.Post(t.Context(), s.URL, []byte(`{}`))
			if err != nil || status != 200 {
				t.Fatalf("Post = %d, %v; want 200 with the body cut", status, err)
			}
		})
	}
}

func TestClient_TimesOut(t *testing.T) {
	release := make(chan struct{})
	s := newSink(t, func(w http.ResponseWriter, _ *http.Request) { <-release })
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	c := webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true, Timeout: 150 * time.Millisecond})
	_, _, err := c.Post(t.Context(), s.URL, []byte(`{}`))
	if !errors.Is(err, fasthttp.ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

func TestClient_ConnectionRefusedIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true})
	if _, _, err := c.Post(t.Context(), "http://"+addr+"/", []byte(`{}`)); err == nil {
		t.Fatal("no error from a closed port")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"120", 2 * time.Minute, true},
		{" 5 ", 5 * time.Second, true},
		{"0", 0, true},
		{"99999999999999999999", time.Duration(1<<63 - 1), true},
		{"Sun, 22 Nov 2026 10:01:30 GMT", 90 * time.Second, true},
		{"Sunday, 22-Nov-26 10:00:10 GMT", 10 * time.Second, true},
		{"Sun Nov 22 10:00:20 2026", 20 * time.Second, true},
		{"Sun, 22 Nov 2026 09:00:00 GMT", 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := webhook.ParseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestClient_ReturnsRetryAfter(t *testing.T) {
	s := newSink(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true})
	status, ra, err := c.Post(t.Context(), s.URL, []byte(`{}`))
	if err != nil || status != 429 || ra != 7*time.Second {
		t.Fatalf("Post = %d, %v, %v; want 429, 7s", status, ra, err)
	}
}

func TestSender_SignedBodyAndHeaders(t *testing.T) {
	type received struct {
		header http.Header
		body   []byte
	}
	got := make(chan received, 2)
	s := newSink(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Clone(), body}
	})
	sender := webhook.NewSender(webhook.NewClient(webhook.Options{AllowHTTP: true, AllowPrivate: true}), nil)
	n := schemas.Notification{ID: "delivery-7", Subscriber: "sub", Type: schemas.TypeRate,
		Payload: json.RawMessage(`{"supplierID":"S","productID":"P","rateID":"R","operation":"updated"}`)}
	target := webhook.Target{URL: s.URL + "/rate", SecurityKey: "rule-key"}

	var tokens []string
	for range 2 {
		res := sender.Send(t.Context(), target, n)
		if !res.Delivered() || res.Status != 200 {
			t.Fatalf("Send = %+v", res)
		}
		r := <-got
		if ok, err := specVerify("rule-key", r.body); err != nil || !ok {
			t.Fatalf("signature does not verify per spec: %v, body %s", err, r.body)
		}
		if err := webhook.VerifyBody("rule-key", r.body); err != nil {
			t.Fatalf("VerifyBody: %v", err)
		}
		if h := r.header.Get(schemas.HeaderDeliveryID); h != "delivery-7" {
			t.Errorf("delivery id header = %q", h)
		}
		if h := r.header.Get(webhook.HeaderNotificationType); h != schemas.TypeRate {
			t.Errorf("type header = %q", h)
		}
		if h := r.header.Get("Content-Type"); h != "application/json" {
			t.Errorf("content type = %q", h)
		}
		var body struct {
			RateID    string            `json:"rateID"`
			Signature schemas.Signature `json:"signature"`
		}
		_ = json.Unmarshal(r.body, &body)
		if body.RateID != "R" {
			t.Errorf("payload field lost: %s", r.body)
		}
		tokens = append(tokens, body.Signature.Token)
	}
	if tokens[0] == tokens[1] {
		t.Error("two sends of one delivery share a token")
	}
}

func TestSender_InvalidPayloadIsPermanent(t *testing.T) {
	sender := webhook.NewSender(webhook.NewClient(webhook.Options{}), nil)
	res := sender.Send(t.Context(), webhook.Target{URL: "https://example.com", SecurityKey: "k"}, schemas.Notification{Payload: json.RawMessage(`"x"`)})
	if res.Delivered() || !res.Permanent() {
		t.Fatalf("Send = %+v; want a permanent failure", res)
	}
}

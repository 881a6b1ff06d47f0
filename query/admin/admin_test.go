package admin

import (
	"fmt"

	"bytes"
	"context"
	"encoding/json"
	"github.com/switchbackhq/switchback/internal/catalog"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// recorder is testharness's in-memory stream.Publisher.
type recorder = testharness.Recorder

type cred struct{ key, secret string }

// knownChannels is the catalog's channel lookup for these tests.
type knownChannels map[string]bool

func (k knownChannels) Channel(_ context.Context, id string) (catalog.Channel, error) {
	if !k[id] {
		return catalog.Channel{}, fmt.Errorf("channel %s: %w", id, catalog.ErrNotFound)
	}
	return catalog.Channel{ID: id}, nil
}

type env struct {
	url    string
	client *http.Client
	store  *principals.Store
	pub    *recorder
	admin  cred
}

func start(t *testing.T) *env {
	t.Helper()
	pub := &recorder{}
	store := principals.NewStore(pub)
	if _, err := store.EnsureFixed(context.Background(), "boot-admin", "boot-admin-secret-0123", principals.RoleAdmin, "Bootstrap", ""); err != nil {
		t.Fatal(err)
	}
	s := httpapi.New(httpapi.Options{Principals: store})
	Register(s, store, knownChannels{"ch-1": true, "ch-9": true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	e := &env{url: "http://" + ln.Addr().String(), client: &http.Client{Timeout: 5 * time.Second}, store: store, pub: pub,
		admin: cred{"boot-admin", "boot-admin-secret-0123"}}
	t.Cleanup(func() {
		e.client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		<-done
	})
	return e
}

func (e *env) do(t *testing.T, method, path string, c cred, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	req.Header.Set("X-API-Key", c.key)
	req.Header.Set("X-API-Secret", c.secret)
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

type created struct {
	ID        string    `json:"id"`
	Role      string    `json:"role"`
	Name      string    `json:"name"`
	ChannelID string    `json:"channelId"`
	Key       string    `json:"key"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
	Meta      struct {
		ReqID string `json:"reqId"`
	} `json:"meta"`
}

func (e *env) create(t *testing.T, body string) created {
	t.Helper()
	status, b := e.do(t, http.MethodPost, "/admin/v1/principals", e.admin, body)
	if status != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", body, status, b)
	}
	var c created
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCreatePrincipal_Answers201WithCredentialThatWorksAtOnce(t *testing.T) {
	e := start(t)
	tests := []struct {
		name, body, role, wantName, wantChannel string
		// adminRoute is the status of GET /admin/v1/principals with the new credential
		adminRoute int
	}{
		{"reseller with channel", `{"role":"reseller","channelId":"ch-9"}`, "reseller", "", "ch-9", http.StatusForbidden},
		{"operator with name", `{"role":"operator","name":"Alpine Tours"}`, "operator", "Alpine Tours", "", http.StatusForbidden},
		{"admin", `{"role":"admin"}`, "admin", "", "", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.create(t, tt.body)
			if c.ID == "" || c.Key == "" || len(c.Secret) != 43 || c.CreatedAt.IsZero() || c.Meta.ReqID == "" {
				t.Errorf("201 body lacks id, key, secret, createdAt or meta.reqId: %+v", c)
			}
			if c.Role != tt.role || c.Name != tt.wantName || c.ChannelID != tt.wantChannel {
				t.Errorf("role/name/channelId = %s/%s/%s, want %s/%s/%s", c.Role, c.Name, c.ChannelID, tt.role, tt.wantName, tt.wantChannel)
			}
			if status, b := e.do(t, http.MethodGet, "/admin/v1/principals", cred{c.Key, c.Secret}, ""); status != tt.adminRoute {
				t.Errorf("new credential on the admin route: %d %s, want %d", status, b, tt.adminRoute)
			}
		})
	}
}

func TestAdmin_CreateListRevokeFlow(t *testing.T) {
	e := start(t)
	c := e.create(t, `{"role":"reseller","channelId":"ch-1","name":"Acme"}`)
	creds := cred{c.Key, c.Secret}

	status, b := e.do(t, http.MethodGet, "/admin/v1/principals", e.admin, "")
	if status != http.StatusOK {
		t.Fatalf("list: %d %s", status, b)
	}
	if bytes.Contains(b, []byte(c.Secret)) || bytes.Contains(b, []byte(`"secret`)) || bytes.Contains(b, []byte("salt")) {
		t.Fatalf("list shows secret material: %s", b)
	}
	var list struct {
		Principals []principals.View `json:"principals"`
		Meta       struct {
			ReqID string `json:"reqId"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	// Listed by creation time, then id: the two can share a millisecond.
	var reseller *principals.View
	for i := range list.Principals {
		if list.Principals[i].ID == c.ID {
			reseller = &list.Principals[i]
		}
	}
	if len(list.Principals) != 2 || reseller == nil || reseller.ChannelID != "ch-1" || list.Meta.ReqID == "" {
		t.Fatalf("list = %s, want the bootstrap admin and the new reseller", b)
	}

	if status, b := e.do(t, http.MethodDelete, "/admin/v1/principals/"+c.ID, e.admin, ""); status != http.StatusNoContent || len(b) != 0 {
		t.Fatalf("revoke: %d %s, want 204 and no body", status, b)
	}
	// The reseller's credential stops working at once...
	if status, _ := e.do(t, http.MethodGet, "/admin/v1/principals", creds, ""); status != http.StatusUnauthorized {
		t.Errorf("revoked credential: %d, want 401", status)
	}
	// ...and the listing shows it revoked.
	_, b = e.do(t, http.MethodGet, "/admin/v1/principals", e.admin, "")
	list.Principals = nil
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	revoked := false
	for _, p := range list.Principals {
		if p.ID == c.ID {
			revoked = p.RevokedAt != nil
		}
	}
	if !revoked {
		t.Errorf("listing does not show the revocation: %s", b)
	}
	// Revoking again is still 204 (idempotent); an unknown id is 404.
	if status, _ := e.do(t, http.MethodDelete, "/admin/v1/principals/"+c.ID, e.admin, ""); status != http.StatusNoContent {
		t.Errorf("second revoke: %d, want 204", status)
	}
	status, b = e.do(t, http.MethodDelete, "/admin/v1/principals/no-such-id", e.admin, "")
	if status != http.StatusNotFound || !bytes.Contains(b, []byte(`"code":"NOT_FOUND"`)) {
		t.Errorf("revoke unknown: %d %s, want 404 NOT_FOUND", status, b)
	}
}

func TestCreatePrincipal_RejectsBadBodiesWith400(t *testing.T) {
	e := start(t)
	tests := []struct {
		name, body string
		code       apierror.Code
		field      string
	}{
		{"empty body", ``, apierror.MalformedJSON, ""},
		{"not JSON", `role=admin`, apierror.MalformedJSON, ""},
		{"missing role", `{}`, apierror.InvalidField, "role"},
		{"unknown role", `{"role":"superuser"}`, apierror.InvalidField, "role"},
		{"reseller without channelId", `{"role":"reseller"}`, apierror.InvalidField, "channelId"},
		{"reseller on an unknown channel", `{"role":"reseller","channelId":"no-such-channel"}`, apierror.InvalidField, "channelId"},
		{"channelId on an operator", `{"role":"operator","channelId":"ch"}`, apierror.InvalidField, "channelId"},
		{"misspelled field", `{"role":"reseller","chanelId":"ch"}`, apierror.InvalidField, "chanelId"},
		{"role of the wrong type", `{"role":1}`, apierror.InvalidField, "role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, b := e.do(t, http.MethodPost, "/admin/v1/principals", e.admin, tt.body)
			var got struct {
				Code string            `json:"code"`
				Data map[string]string `json:"data"`
			}
			_ = json.Unmarshal(b, &got)
			if status != http.StatusBadRequest || got.Code != string(tt.code) || got.Data["field"] != tt.field {
				t.Errorf("%d %s, want 400 %s on field %q", status, b, tt.code, tt.field)
			}
		})
	}
}

func TestCreatePrincipal_BrokerDownIs503AndNothingIsCreated(t *testing.T) {
	e := start(t)
	e.pub.SetFail(true)
	status, b := e.do(t, http.MethodPost, "/admin/v1/principals", e.admin, `{"role":"admin"}`)
	if status != http.StatusServiceUnavailable || !bytes.Contains(b, []byte(`"code":"UNAVAILABLE"`)) || bytes.Contains(b, []byte("broker unreachable")) {
		t.Errorf("%d %s, want 503 UNAVAILABLE without the internal cause", status, b)
	}
	if e.store.Len() != 1 {
		t.Errorf("store has %d principals, want only the bootstrap admin", e.store.Len())
	}
}

// FuzzCreatePrincipalBody: no body makes parsing or validation panic, and
// every rejection is a 400 error object, never a 500.
func FuzzCreatePrincipalBody(f *testing.F) {
	for _, seed := range []string{
		`{"role":"reseller","channelId":"ch-1"}`, `{"role":"operator","name":"Op"}`, `{"role":"admin"}`,
		``, `{`, `[]`, `null`, `{"role":1}`, `{"role":"admin"} x`, `{"role":"reseller","channelId":"a b"}`,
		`{"role":"admin","extra":true}`, `{"name":"\u0000"}`, `{"role":"operator","name":"` + strings.Repeat("n", 300) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	store := principals.NewStore(&recorder{})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseCreate(body)
		if err == nil {
			_, _, err = store.Create(context.Background(), req)
		}
		if err == nil {
			return
		}
		if got := apierror.From(err); got.Status() != http.StatusBadRequest {
			t.Fatalf("body %q: %v mapped to %d %s, want 400", body, err, got.Status(), got.Code)
		}
	})
}

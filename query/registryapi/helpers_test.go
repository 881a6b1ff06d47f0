package registryapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// received is one POST the sink got.
type received struct {
	Path       string
	DeliveryID string
	Body       []byte
}

// sink is a webhook receiver on 127.0.0.1:0 that records what it gets and
// answers status.
type sink struct {
	srv    *httptest.Server
	status atomic.Int64
	mu     sync.Mutex
	got    []received
}

func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{}
	s.status.Store(http.StatusOK)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, received{Path: r.URL.Path, DeliveryID: r.Header.Get(schemas.HeaderDeliveryID), Body: b})
		s.mu.Unlock()
		w.WriteHeader(int(s.status.Load()))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) received() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

// postSender is a minimal Sender for the tests (the dispatcher's webhook
// package is the real one): it signs as spec doc 1 says and POSTs.
type postSender struct{ client *http.Client }

func (p postSender) SendTest(ctx context.Context, rule registry.Rule, n schemas.Notification) (int, error) {
	var body map[string]any
	if err := json.Unmarshal(n.Payload, &body); err != nil {
		return 0, err
	}
	token := rand.Text()
	ts := time.Now().Unix()
	mac := hmac.New(sha256.New, []byte(rule.SecurityKey))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + token))
	body["signature"] = schemas.Signature{Sum: hex.EncodeToString(mac.Sum(nil)), Timestamp: ts, Token: token}
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rule.URL, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(schemas.HeaderDeliveryID, n.ID)
	res, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

type env struct {
	*querytest.Client
	reg  *registry.Registry
	pub  *catalogtest.Recorder
	mr   *miniredis.Miniredis
	sink *sink
	// a and b are two resellers (two subscribers); op is an operator.
	a, b, op catalogtest.Cred
}

type envOptions struct {
	strict   bool // no http://, no private targets
	noSender bool
}

func start(t *testing.T, o envOptions) *env {
	t.Helper()
	store, creds := querytest.Principals(t,
		querytest.Principal{Key: "reseller-a", Role: principals.RoleReseller, Channel: "chan-a"},
		querytest.Principal{Key: "reseller-b", Role: principals.RoleReseller, Channel: "chan-b"},
		querytest.Principal{Key: "operator-x", Role: principals.RoleOperator})
	e := &env{a: creds[0], b: creds[1], op: creds[2]}

	e.mr = miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: e.mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	e.pub = &catalogtest.Recorder{}
	e.reg = registry.New(registry.Options{Redis: rdb, Publisher: e.pub, AllowHTTP: !o.strict, AllowPrivate: !o.strict,
		Secrets: catalogtest.NewKeyring(t)})
	e.sink = newSink(t)

	s := httpapi.New(httpapi.Options{Principals: store})
	var sender Sender
	if !o.noSender {
		sc := &http.Client{Timeout: 5 * time.Second}
		t.Cleanup(sc.CloseIdleConnections)
		sender = postSender{client: sc}
	}
	Register(s, e.reg, sender)
	e.Client = querytest.NewClient(t, querytest.Serve(t, s)+httpapi.BaseRegistryV11)
	return e
}

// wireRule is a Rule as the API renders it.
type wireRule struct {
	ID          string         `json:"id"`
	URL         string         `json:"url"`
	Disabled    bool           `json:"disabled"`
	SecurityKey string         `json:"securityKey"`
	CreatedOn   string         `json:"createdOn"`
	UpdatedOn   string         `json:"updatedOn"`
	Config      map[string]any `json:"config"`
}

func decodeRule(t *testing.T, b []byte) wireRule {
	t.Helper()
	var r wireRule
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not a rule: %s", b)
	}
	return r
}

func decodeRules(t *testing.T, b []byte) []wireRule {
	t.Helper()
	var r []wireRule
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not an array of rules: %s", b)
	}
	return r
}

// expectErr checks status, code and (if not empty) data.field.
func expectErr(t *testing.T, status int, b []byte, wantStatus int, code, field string) apierror.Body {
	t.Helper()
	return querytest.MustError(t, status, b, wantStatus, apierror.Code(code), field)
}

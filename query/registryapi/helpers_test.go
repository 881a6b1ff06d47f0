package registryapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// recorder is an in-memory stream.Publisher standing in for Kafka at the
// seam; fail makes Publish fail as an unreachable broker does.
type recorder struct {
	mu   sync.Mutex
	msgs []stream.Message
	fail bool
}

func (r *recorder) Publish(_ context.Context, msgs ...stream.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("broker unreachable")
	}
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func (r *recorder) setFail(v bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = v
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

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

type cred struct{ key, secret string }

type env struct {
	url    string
	client *http.Client
	reg    *registry.Registry
	pub    *recorder
	mr     *miniredis.Miniredis
	sink   *sink
	// a and b are two resellers (two subscribers); op is an operator.
	a, b, op cred
	aID, bID string
}

type envOptions struct {
	strict   bool // no http://, no private targets
	noSender bool
}

func start(t *testing.T, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	store := principals.NewStore(&recorder{})
	e := &env{
		a:  cred{"reseller-a", "reseller-a-secret-0123"},
		b:  cred{"reseller-b", "reseller-b-secret-0123"},
		op: cred{"operator-x", "operator-x-secret-0123"},
	}
	pa, err := store.EnsureFixed(ctx, e.a.key, e.a.secret, principals.RoleReseller, "A", "chan-a")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := store.EnsureFixed(ctx, e.b.key, e.b.secret, principals.RoleReseller, "B", "chan-b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.EnsureFixed(ctx, e.op.key, e.op.secret, principals.RoleOperator, "Op", ""); err != nil {
		t.Fatal(err)
	}
	e.aID, e.bID = pa.ID, pb.ID

	e.mr = miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: e.mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	e.pub = &recorder{}
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	e.url = "http://" + ln.Addr().String() + httpapi.BaseRegistryV11
	e.client = &http.Client{Timeout: 10 * time.Second}
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
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("X-API-Key", c.key)
		req.Header.Set("X-API-Secret", c.secret)
	}
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
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

type errBody struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Data    map[string]string `json:"data"`
	Meta    struct {
		ReqID string `json:"reqId"`
	} `json:"meta"`
}

func decodeErr(t *testing.T, b []byte) errBody {
	t.Helper()
	var e errBody
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		t.Fatalf("not an error object: %s", b)
	}
	return e
}

// expectErr checks status, code and (if not empty) data.field.
func expectErr(t *testing.T, status int, b []byte, wantStatus int, code, field string) errBody {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d %s, want %d %s", status, b, wantStatus, code)
	}
	e := decodeErr(t, b)
	if e.Code != code || e.Data["field"] != field || e.Meta.ReqID == "" {
		t.Fatalf("error %s, want code %s field %q", b, code, field)
	}
	return e
}

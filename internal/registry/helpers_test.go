package registry

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/stream"
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

func (r *recorder) messages() []stream.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stream.Message(nil), r.msgs...)
}

func (r *recorder) envelopes(t *testing.T) []schemas.Envelope {
	t.Helper()
	var out []schemas.Envelope
	for _, m := range r.messages() {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatalf("record on %s is not an envelope: %v", m.Topic, err)
		}
		out = append(out, env)
	}
	return out
}

type testEnv struct {
	reg *Registry
	pub *recorder
	mr  *miniredis.Miniredis
	rdb *redis.Client
}

// newEnv is a registry over miniredis and a recorder; AllowHTTP and
// AllowPrivate are on unless strict.
func newEnv(t *testing.T, strict bool) *testEnv {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	pub := &recorder{}
	reg := New(Options{Redis: rdb, Publisher: pub, AllowHTTP: !strict, AllowPrivate: !strict, Secrets: newTestKeyring(t)})
	reg.lockWait = 200 * time.Millisecond
	return &testEnv{reg: reg, pub: pub, mr: mr, rdb: rdb}
}

func mustCreate(t *testing.T, r *Registry, sub, typ string, in RuleInput) Rule {
	t.Helper()
	rule, err := r.Create(t.Context(), sub, typ, in)
	if err != nil {
		t.Fatalf("create %s rule for %s: %v", typ, sub, err)
	}
	return rule
}

func ruleIn(url, config string) RuleInput {
	var raw json.RawMessage
	if config != "" {
		raw = json.RawMessage(config)
	}
	return RuleInput{URL: url, Config: raw}
}

func fieldOf(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// newTestKeyring seals securityKeys with a key of the test's own.
func newTestKeyring(t testing.TB) *keyring.Keyring {
	t.Helper()
	k := make([]byte, keyring.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	r, err := keyring.New(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

package registry

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// recorder is testharness's in-memory stream.Publisher.
type recorder = testharness.Recorder

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
	reg := New(Options{Redis: rdb, Publisher: pub, AllowHTTP: !strict, AllowPrivate: !strict, Secrets: testharness.Keyring(t)})
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

package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// TestSecurityKey_IsSealedAtRestAndOpenedForItsReaders: issue 18, secrets
// at rest. The rule's securityKey is in neither its event nor Redis in
// clear; its owner reads it back (the API), the dispatcher's read gets it
// too, an update keeps it, and a follower with the key rebuilds the same.
// Without a key the rule is refused, naming the setting.
func TestSecurityKey_IsSealedAtRestAndOpenedForItsReaders(t *testing.T) {
	e := newEnv(t, false)
	ctx := t.Context()
	rule := mustCreate(t, e.reg, "sub-1", schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
	key := rule.SecurityKey
	if len(key) != 64 {
		t.Fatalf("securityKey %q", key)
	}
	for _, env := range e.pub.Envelopes(t) {
		if strings.Contains(string(env.Data), key) || !strings.Contains(string(env.Data), `"securityKey":"sb:v1:`) {
			t.Fatalf("event %s carries the securityKey in clear (or not sealed): %s", env.Type, env.Data)
		}
	}
	for _, k := range e.mr.Keys() {
		if v, err := e.mr.Get(k); err == nil && strings.Contains(v, key) {
			t.Fatalf("Redis %s holds the key in clear", k)
		}
		fields, _ := e.mr.HKeys(k)
		for _, f := range fields {
			if strings.Contains(e.mr.HGet(k, f), key) {
				t.Fatalf("Redis %s %s holds the key in clear", k, f)
			}
		}
	}
	if got, err := e.reg.Rule(ctx, "sub-1", schemas.TypeSupplier); err != nil || got.SecurityKey != key {
		t.Fatalf("Rule: %v (%v)", got.SecurityKey == key, err)
	}
	if got, _, err := e.reg.RuleWithMetadata(ctx, "sub-1", schemas.TypeSupplier); err != nil || got.SecurityKey != key {
		t.Fatalf("RuleWithMetadata: %v", err)
	}
	in := ruleIn("https://hooks.example.com/changed", "")
	in.ID = rule.ID
	if up, err := e.reg.Update(ctx, "sub-1", schemas.TypeSupplier, in); err != nil || up.SecurityKey != key {
		t.Fatalf("Update kept the key: %v (%v)", up.SecurityKey == key, err)
	}
	// Replayed on an empty view by an instance with the same key.
	e.mr.FlushAll()
	for _, env := range e.pub.Envelopes(t) {
		if err := e.reg.Apply(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := e.reg.Rule(ctx, "sub-1", schemas.TypeSupplier); err != nil || got.SecurityKey != key {
		t.Fatalf("after the replay: %v", err)
	}
	// Another key cannot open it.
	other := New(Options{Redis: e.rdb, Secrets: testharness.Keyring(t)})
	if _, err := other.Rule(ctx, "sub-1", schemas.TypeSupplier); !errors.Is(err, keyring.ErrUnreadable) {
		t.Fatalf("another installation's key: %v", err)
	}

	noKey := New(Options{Redis: e.rdb, Publisher: e.pub})
	_, err := noKey.Create(ctx, "sub-2", schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
	if !errors.Is(err, keyring.ErrNoKey) || !strings.Contains(err.Error(), "SWITCHBACK_SECRETS_KEY") {
		t.Fatalf("create without a key: %v", err)
	}
}

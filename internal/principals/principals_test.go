package principals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// recorder is an in-memory stream.Publisher: it keeps what was published,
// or fails when err is set.
type recorder struct {
	mu   sync.Mutex
	msgs []stream.Message
	err  error
}

func (r *recorder) Publish(_ context.Context, msgs ...stream.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func (r *recorder) envelopes(t *testing.T) []schemas.Envelope {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]schemas.Envelope, 0, len(r.msgs))
	for _, m := range r.msgs {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatalf("published value is not an envelope: %v", err)
		}
		out = append(out, env)
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func mustCreate(t *testing.T, s *Store, req CreateRequest) (Principal, string) {
	t.Helper()
	p, secret, err := s.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	return p, secret
}

func TestCreate_PublishesKeyedEventWithoutSecretThenAuthenticates(t *testing.T) {
	rec := &recorder{}
	s := NewStore(rec)
	p, secret := mustCreate(t, s, CreateRequest{Role: RoleReseller, Name: "Acme", ChannelID: "ch-1"})

	if len(rec.msgs) != 1 {
		t.Fatalf("published %d messages, want 1", len(rec.msgs))
	}
	m := rec.msgs[0]
	if m.Topic != schemas.TopicPrincipals || string(m.Key) != p.ID {
		t.Errorf("published to %s keyed %q, want %s keyed %q", m.Topic, m.Key, schemas.TopicPrincipals, p.ID)
	}
	if bytes.Contains(m.Value, []byte(secret)) {
		t.Error("the published event contains the secret")
	}
	env := rec.envelopes(t)[0]
	if env.Type != EventCreated || env.Version != 1 || env.Key != p.ID || env.ID == "" {
		t.Errorf("envelope = %+v", env)
	}
	if len(secret) != 43 || !strings.HasPrefix(p.Key, "sbk_") {
		t.Errorf("secret %d chars, key %q: want 43 chars and an sbk_ key", len(secret), p.Key)
	}
	got, ok := s.Authenticate([]byte(p.Key), []byte(secret))
	if !ok || got.ID != p.ID || got.Role != RoleReseller || got.ChannelID != "ch-1" {
		t.Fatalf("Authenticate right after Create = %v, %t", got, ok)
	}
}

func TestCreate_RejectsInvalidRequestsNamingTheField(t *testing.T) {
	tests := []struct {
		name  string
		req   CreateRequest
		field string
	}{
		{"missing role", CreateRequest{}, "role"},
		{"unknown role", CreateRequest{Role: "root"}, "role"},
		{"reseller without channel", CreateRequest{Role: RoleReseller}, "channelId"},
		{"operator with channel", CreateRequest{Role: RoleOperator, ChannelID: "ch"}, "channelId"},
		{"admin with channel", CreateRequest{Role: RoleAdmin, ChannelID: "ch"}, "channelId"},
		{"channel with spaces", CreateRequest{Role: RoleReseller, ChannelID: "a b"}, "channelId"},
		{"channel too long", CreateRequest{Role: RoleReseller, ChannelID: strings.Repeat("c", MaxChannelIDLen+1)}, "channelId"},
		{"name too long", CreateRequest{Role: RoleOperator, Name: strings.Repeat("n", MaxNameLen+1)}, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			s := NewStore(rec)
			_, _, err := s.Create(context.Background(), tt.req)
			var fe *FieldError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want ErrInvalid on field %s", err, tt.field)
			}
			if rec.count() != 0 || s.Len() != 0 {
				t.Error("an invalid request published or stored something")
			}
		})
	}
}

func TestCreate_PublishFailureChangesNothing(t *testing.T) {
	rec := &recorder{err: errors.New("broker down")}
	s := NewStore(rec)
	_, _, err := s.Create(context.Background(), CreateRequest{Role: RoleAdmin})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "broker down") {
		t.Fatalf("err = %v, want ErrUnavailable wrapping the broker error", err)
	}
	if s.Len() != 0 {
		t.Error("a principal was stored although the publish failed")
	}
}

func TestStore_WithoutPublisherRefusesWrites(t *testing.T) {
	s := NewStore(nil)
	if _, _, err := s.Create(context.Background(), CreateRequest{Role: RoleAdmin}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestAuthenticate(t *testing.T) {
	s := NewStore(&recorder{})
	live, liveSecret := mustCreate(t, s, CreateRequest{Role: RoleOperator, Name: "Op"})
	gone, goneSecret := mustCreate(t, s, CreateRequest{Role: RoleAdmin})
	if err := s.Revoke(context.Background(), gone.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		key, secret string
		want        bool
	}{
		{"right key and secret", live.Key, liveSecret, true},
		{"wrong secret", live.Key, liveSecret + "x", false},
		{"another principal's secret", live.Key, goneSecret, false},
		{"unknown key", "sbk_nope", liveSecret, false},
		{"revoked principal", gone.Key, goneSecret, false},
		{"empty key", "", liveSecret, false},
		{"empty secret", live.Key, "", false},
		{"secret longer than the bound", live.Key, strings.Repeat("s", MaxSecretLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := s.Authenticate([]byte(tt.key), []byte(tt.secret))
			if ok != tt.want {
				t.Fatalf("Authenticate = %t, want %t", ok, tt.want)
			}
			if ok && p.ID != live.ID {
				t.Errorf("authenticated as %s, want %s", p.ID, live.ID)
			}
			if !ok && p.ID != "" {
				t.Error("a failed authentication returned a principal")
			}
		})
	}
}

func TestAuthenticate_DoesNotAllocate(t *testing.T) {
	s := NewStore(&recorder{})
	p, secret := mustCreate(t, s, CreateRequest{Role: RoleAdmin})
	key, sec := []byte(p.Key), []byte(secret)
	allocs := testing.AllocsPerRun(200, func() {
		if _, ok := s.Authenticate(key, sec); !ok {
			t.Fatal("authentication failed")
		}
	})
	if allocs != 0 {
		t.Errorf("Authenticate allocates %.1f times per call, want 0", allocs)
	}
}

func TestRevoke(t *testing.T) {
	t.Run("unknown id is ErrNotFound", func(t *testing.T) {
		s := NewStore(&recorder{})
		if err := s.Revoke(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("publishes a newer version and keeps the principal listed", func(t *testing.T) {
		rec := &recorder{}
		s := NewStore(rec)
		p, _ := mustCreate(t, s, CreateRequest{Role: RoleAdmin})
		if err := s.Revoke(context.Background(), p.ID); err != nil {
			t.Fatal(err)
		}
		envs := rec.envelopes(t)
		if len(envs) != 2 || envs[1].Type != EventRevoked || envs[1].Version != 2 {
			t.Fatalf("events = %+v, want created v1 then revoked v2", envs)
		}
		got, err := s.Get(p.ID)
		if err != nil || !got.Revoked() || got.Version != 2 {
			t.Fatalf("Get = %v, %v; want revoked at version 2", got, err)
		}
	})
	t.Run("revoking twice publishes once", func(t *testing.T) {
		rec := &recorder{}
		s := NewStore(rec)
		p, _ := mustCreate(t, s, CreateRequest{Role: RoleAdmin})
		for range 2 {
			if err := s.Revoke(context.Background(), p.ID); err != nil {
				t.Fatal(err)
			}
		}
		if rec.count() != 2 {
			t.Errorf("published %d events, want 2 (create, one revoke)", rec.count())
		}
	})
}

// history creates principals and revokes one, returning the events.
func history(t *testing.T) []schemas.Envelope {
	t.Helper()
	rec := &recorder{}
	s := NewStore(rec)
	a, _ := mustCreate(t, s, CreateRequest{Role: RoleAdmin, Name: "A"})
	mustCreate(t, s, CreateRequest{Role: RoleReseller, ChannelID: "ch-1"})
	mustCreate(t, s, CreateRequest{Role: RoleOperator, Name: "Op"})
	if err := s.Revoke(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureFixed(context.Background(), "demo-admin", "demo-admin-secret", RoleAdmin, "Demo", ""); err != nil {
		t.Fatal(err)
	}
	return rec.envelopes(t)
}

func applyAll(t *testing.T, s *Store, envs []schemas.Envelope) {
	t.Helper()
	for _, env := range envs {
		if err := s.Apply(env); err != nil {
			t.Fatalf("Apply(%s v%d): %v", env.Type, env.Version, err)
		}
	}
}

func TestApply_ReplayGivesTheSameTable(t *testing.T) {
	envs := history(t)
	once := NewStore(nil)
	applyAll(t, once, envs)

	// Redelivery: everything twice, plus the whole log again at the end.
	twice := NewStore(nil)
	for _, env := range envs {
		applyAll(t, twice, []schemas.Envelope{env, env})
	}
	applyAll(t, twice, envs)

	if !reflect.DeepEqual(once.List(), twice.List()) {
		t.Fatalf("replaying gave a different table:\n once: %v\ntwice: %v", once.List(), twice.List())
	}
	if once.Len() != 4 {
		t.Errorf("table has %d principals, want 4", once.Len())
	}
}

func TestApply_OlderOrEqualVersionIsIgnored(t *testing.T) {
	envs := history(t)
	var created, revoked schemas.Envelope
	for _, e := range envs {
		switch e.Type {
		case EventCreated:
			if created.Key == "" {
				created = e
			}
		case EventRevoked:
			revoked = e
		}
	}
	if created.Key != revoked.Key {
		t.Fatal("history changed: the first created principal should be the revoked one")
	}
	s := NewStore(nil)
	applyAll(t, s, []schemas.Envelope{revoked, created}) // older arrives late
	p, err := s.Get(revoked.Key)
	if err != nil || !p.Revoked() || p.Version != 2 {
		t.Fatalf("after revoked v2 then created v1: %v, %v; want still revoked v2", p, err)
	}

	// Same version with different content is ignored too: the first wins.
	same := revoked
	var r record
	_ = json.Unmarshal(same.Data, &r)
	r.Name = "changed"
	same.Data, _ = json.Marshal(r)
	applyAll(t, s, []schemas.Envelope{same})
	if p, _ := s.Get(revoked.Key); p.Name == "changed" {
		t.Error("an equal version overwrote the principal")
	}
}

func TestApply_TombstoneRemovesAndOlderRecordDoesNotResurrect(t *testing.T) {
	envs := history(t)
	first := envs[0]
	s := NewStore(nil)
	applyAll(t, s, envs)
	applyAll(t, s, []schemas.Envelope{{Key: first.Key, Version: 3, Deleted: true}})
	if _, err := s.Get(first.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after tombstone Get err = %v, want ErrNotFound", err)
	}
	applyAll(t, s, []schemas.Envelope{first})
	if _, err := s.Get(first.Key); !errors.Is(err, ErrNotFound) {
		t.Error("an older record resurrected a deleted principal")
	}
}

func TestApply_KafkaTombstoneWithoutVersionRemoves(t *testing.T) {
	envs := history(t)
	s := NewStore(nil)
	applyAll(t, s, envs)
	key := envs[0].Key
	applyAll(t, s, []schemas.Envelope{{Key: key, Deleted: true}})
	if _, err := s.Get(key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after a versionless tombstone Get err = %v, want ErrNotFound", err)
	}
	applyAll(t, s, envs) // a replay of the older records does not resurrect it
	if _, err := s.Get(key); !errors.Is(err, ErrNotFound) {
		t.Error("a replayed older record resurrected the principal")
	}
}

func TestApply_RejectsUnusableEvents(t *testing.T) {
	good := history(t)[0]
	tests := []struct {
		name string
		mod  func(e *schemas.Envelope)
	}{
		{"empty key", func(e *schemas.Envelope) { e.Key = "" }},
		{"zero version", func(e *schemas.Envelope) { e.Version = 0 }},
		{"unknown type", func(e *schemas.Envelope) { e.Type = "principal.exploded" }},
		{"data not JSON", func(e *schemas.Envelope) { e.Data = json.RawMessage(`{`) }},
		{"data id differs from key", func(e *schemas.Envelope) { e.Key = "other" }},
		{"short hash", func(e *schemas.Envelope) {
			var r record
			_ = json.Unmarshal(e.Data, &r)
			r.SecretHash = r.SecretHash[:5]
			e.Data, _ = json.Marshal(r)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := good
			tt.mod(&env)
			s := NewStore(nil)
			if err := s.Apply(env); !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("err = %v, want ErrInvalidEvent", err)
			}
			if s.Len() != 0 {
				t.Error("an unusable event changed the table")
			}
		})
	}
}

func TestEnsureFixed(t *testing.T) {
	ctx := context.Background()
	t.Run("does not republish when unchanged, even after a replay", func(t *testing.T) {
		rec := &recorder{}
		s := NewStore(rec)
		p, err := s.EnsureFixed(ctx, "demo-admin", "demo-admin-secret", RoleAdmin, "Demo admin", "")
		if err != nil {
			t.Fatal(err)
		}
		if p.ID != FixedID("demo-admin") || rec.count() != 1 {
			t.Fatalf("first EnsureFixed: id %s, %d events; want %s, 1", p.ID, rec.count(), FixedID("demo-admin"))
		}
		if _, err := s.EnsureFixed(ctx, "demo-admin", "demo-admin-secret", RoleAdmin, "Demo admin", ""); err != nil {
			t.Fatal(err)
		}
		// A restart: a new store rebuilt from the topic, then EnsureFixed.
		restarted := NewStore(rec)
		applyAll(t, restarted, rec.envelopes(t))
		if _, err := restarted.EnsureFixed(ctx, "demo-admin", "demo-admin-secret", RoleAdmin, "Demo admin", ""); err != nil {
			t.Fatal(err)
		}
		if rec.count() != 1 {
			t.Errorf("published %d events, want 1", rec.count())
		}
		if _, ok := restarted.Authenticate([]byte("demo-admin"), []byte("demo-admin-secret")); !ok {
			t.Error("the fixed credential does not authenticate")
		}
	})
	t.Run("a new secret republishes and the old one stops working", func(t *testing.T) {
		rec := &recorder{}
		s := NewStore(rec)
		if _, err := s.EnsureFixed(ctx, "boot", "first-secret-0123", RoleAdmin, "", ""); err != nil {
			t.Fatal(err)
		}
		p, err := s.EnsureFixed(ctx, "boot", "second-secret-0123", RoleAdmin, "", "")
		if err != nil || p.Version != 2 || rec.count() != 2 {
			t.Fatalf("EnsureFixed with a new secret: v%d, %d events, %v; want v2, 2 events", p.Version, rec.count(), err)
		}
		if _, ok := s.Authenticate([]byte("boot"), []byte("first-secret-0123")); ok {
			t.Error("the old secret still works")
		}
		if _, ok := s.Authenticate([]byte("boot"), []byte("second-secret-0123")); !ok {
			t.Error("the new secret does not work")
		}
	})
	t.Run("a revoked fixed principal stays revoked across restarts", func(t *testing.T) {
		rec := &recorder{}
		s := NewStore(rec)
		p, _ := s.EnsureFixed(ctx, "boot", "a-secret-0123456789", RoleAdmin, "", "")
		if err := s.Revoke(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnsureFixed(ctx, "boot", "a-secret-0123456789", RoleAdmin, "", ""); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Authenticate([]byte("boot"), []byte("a-secret-0123456789")); ok {
			t.Error("EnsureFixed undid a revocation")
		}
	})
	t.Run("rejects bad input", func(t *testing.T) {
		s := NewStore(&recorder{})
		for _, c := range []struct{ key, secret, channel string }{
			{"", "secret", ""}, {"has space", "secret", ""}, {"k", "", ""}, {"k", strings.Repeat("s", MaxSecretLen+1), ""},
		} {
			if _, err := s.EnsureFixed(ctx, c.key, c.secret, RoleAdmin, "", c.channel); !errors.Is(err, ErrInvalid) {
				t.Errorf("EnsureFixed(%q, %d-byte secret) err = %v, want ErrInvalid", c.key, len(c.secret), err)
			}
		}
	})
}

func TestPrincipal_RendersWithoutSecretMaterial(t *testing.T) {
	s := NewStore(&recorder{})
	p, secret := mustCreate(t, s, CreateRequest{Role: RoleOperator, Name: "Op"})
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "principal", p)
	js, _ := json.Marshal(p)
	for name, out := range map[string]string{
		"String": p.String(), "%+v": fmt.Sprintf("%+v", p), "JSON": string(js), "slog": logged.String(),
	} {
		for _, bad := range []string{secret, "SecretHash", "Salt", "secretHash", "salt"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s rendering contains %q: %s", name, bad, out)
			}
		}
	}
	if p.OperatorID() != p.ID {
		t.Errorf("OperatorID = %q, want the principal id", p.OperatorID())
	}
}

func TestStore_AuthenticateDuringWritesIsRaceFree(t *testing.T) {
	s := NewStore(&recorder{})
	p, secret := mustCreate(t, s, CreateRequest{Role: RoleAdmin})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				if _, ok := s.Authenticate([]byte(p.Key), []byte(secret)); !ok {
					t.Error("authentication failed during writes")
					return
				}
			}
		}
	}()
	for range 50 {
		mustCreate(t, s, CreateRequest{Role: RoleOperator})
	}
	close(stop)
	wg.Wait()
}

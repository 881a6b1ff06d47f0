package catalogredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// recorder is testharness's in-memory stream.Publisher.
type recorder = testharness.Recorder

var (
	opA   = catalog.ScopeOf(principals.Principal{ID: "op-a", Role: principals.RoleOperator})
	admin = catalog.ScopeOf(principals.Principal{ID: "adm", Role: principals.RoleAdmin})
)

func newStore(t *testing.T) (*Store, *recorder, redis.UniversalClient) {
	t.Helper()
	rdb := testharness.RedisClient(t, 0)
	rec := &recorder{}
	s := NewStore(Options{Redis: rdb, Publisher: rec, Secrets: testharness.Keyring(t)})
	s.lockWait = 300 * time.Millisecond
	return s, rec, rdb
}

func supplierIn(id, name string) catalog.SupplierInput {
	return catalog.SupplierInput{SupplierData: catalog.SupplierData{ID: id, Name: name, Code: "C-" + id},
		Connection: &catalog.ConnectionInput{Kind: catalog.ConnectionBookingSystem, BaseURL: "https://bs.example/v2", Credentials: &catalog.CredentialsInput{BearerToken: "tok-" + id}}}
}

func TestApply_IsIdempotentAndIgnoresOlderVersions(t *testing.T) {
	s, rec, rdb := newStore(t)
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutSupplier(ctx, opA, "s1", supplierIn("s1", "v2")); err != nil {
		t.Fatal(err)
	}
	envs := rec.Envelopes(t)
	if len(envs) != 2 || envs[0].Version != 1 || envs[1].Version != 2 {
		t.Fatalf("events %+v, want versions 1 and 2", envs)
	}
	tests := []struct {
		name    string
		env     schemas.Envelope
		applied bool
	}{
		{"redelivered newest", envs[1], false},
		{"older after newer", envs[0], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, err := s.Apply(ctx, tt.env)
			if err != nil || applied != tt.applied {
				t.Fatalf("Apply: %v %v, want applied=%v", applied, err, tt.applied)
			}
			sup, err := s.Supplier(ctx, opA, "s1")
			if err != nil || sup.Name != "v2" {
				t.Fatalf("supplier %q %v, want v2", sup.Name, err)
			}
		})
	}
	t.Run("replay in order on an empty view converges", func(t *testing.T) {
		if err := testharness.FlushAll(ctx, rdb); err != nil {
			t.Fatal(err)
		}
		for _, env := range []schemas.Envelope{envs[1], envs[0], envs[1]} {
			if _, err := s.Apply(ctx, env); err != nil {
				t.Fatal(err)
			}
		}
		sup, err := s.Supplier(ctx, opA, "s1")
		if err != nil || sup.Name != "v2" || sup.Version != 2 {
			t.Fatalf("supplier %+v %v, want v2 at version 2", sup.SupplierData, err)
		}
	})
}

func TestApply_SameVersionLaterEventWins(t *testing.T) {
	// Two events of one version exist only after a writer read a stale view
	// (a crash between publish and apply); the later one wins everywhere,
	// as it does in the compacted topic.
	s, _, _ := newStore(t)
	ctx := context.Background()
	mk := func(name string, at time.Time) schemas.Envelope {
		sup := &catalog.Supplier{SupplierData: catalog.SupplierData{ID: "s1", Name: name, Code: "C"}, Version: 4, Owner: "op-a"}
		ev := catalog.Event{Kind: schemas.CatalogKindSupplier, SupplierID: "s1", Supplier: sup}
		return schemas.Envelope{ID: name, Type: schemas.CatalogEventType(schemas.CatalogKindSupplier, false), Key: "s1", Version: 4, Time: at, Data: catalogwire.MustJSON(ev)}
	}
	t0 := time.Now()
	early, late := mk("early", t0), mk("late", t0.Add(time.Millisecond))
	for _, env := range []schemas.Envelope{late, early} {
		if _, err := s.Apply(ctx, env); err != nil {
			t.Fatal(err)
		}
	}
	sup, err := s.Supplier(ctx, opA, "s1")
	if err != nil || sup.Name != "late" {
		t.Fatalf("supplier %q %v, want the later event", sup.Name, err)
	}
}

func TestDelete_OlderEventCannotResurrect(t *testing.T) {
	s, rec, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSupplier(ctx, opA, "s1"); err != nil {
		t.Fatal(err)
	}
	envs := rec.Envelopes(t)
	if _, err := s.Apply(ctx, envs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Supplier(ctx, opA, "s1"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("deleted supplier is back: %v", err)
	}
	// Recreating the id continues its versions.
	sup, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "again"))
	if err != nil || sup.Version != 3 {
		t.Fatalf("recreate: version %d %v, want 3", sup.Version, err)
	}
}

func TestCreateSupplier_ConcurrentCreatesOfOneIDGiveOneWinner(t *testing.T) {
	s, _, _ := newStore(t)
	s.lockWait = 5 * time.Second
	ctx := context.Background()
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = s.CreateSupplier(ctx, opA, supplierIn("same", fmt.Sprint(i))) })
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, catalog.ErrConflict):
			conflicts++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("%d created, %d conflicts; want 1 and %d", ok, conflicts, n-1)
	}
}

func TestWrite_PublishFailureChangesNothingAndReleasesTheLock(t *testing.T) {
	s, rec, _ := newStore(t)
	ctx := context.Background()
	rec.SetFail(true)
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("create with the broker down: %v, want ErrUnavailable", err)
	}
	if _, err := s.Supplier(ctx, opA, "s1"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("supplier exists after a failed publish: %v", err)
	}
	rec.SetFail(false)
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
		t.Fatalf("create after the broker is back: %v (lock left behind?)", err)
	}
}

func TestWrite_HeldLockIsUnavailableNotConflict(t *testing.T) {
	s, _, rdb := newStore(t)
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
		t.Fatal(err)
	}
	// A writer that died between reserving and committing leaves its
	// marker; until it expires, writes of that supplier are 503.
	if err := rdb.Set(ctx, s.k.lock("s1"), "dead-writer", lockTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutSupplier(ctx, opA, "s1", supplierIn("s1", "v2")); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("write under a held lock: %v, want ErrUnavailable", err)
	}
	if err := rdb.Del(ctx, s.k.lock("s1")).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutSupplier(ctx, opA, "s1", supplierIn("s1", "v2")); err != nil {
		t.Fatal(err)
	}
}

func TestScope_OperatorSeesOnlyItsSuppliers(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	opB := catalog.ScopeOf(principals.Principal{ID: "op-b", Role: principals.RoleOperator})
	reseller := catalog.ScopeOf(principals.Principal{ID: "r", Role: principals.RoleReseller, ChannelID: "c"})
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    catalog.Scope
		want error
	}{
		{"owner", opA, nil},
		{"admin", admin, nil},
		{"the service", catalog.SystemScope(), nil},
		{"other operator", opB, catalog.ErrNotFound},
		{"reseller", reseller, catalog.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Supplier(ctx, tt.p, "s1")
			if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := s.CreateSupplier(ctx, reseller, supplierIn("s2", "x")); !errors.Is(err, catalog.ErrForbidden) {
		t.Fatalf("reseller create: %v, want ErrForbidden", err)
	}
}

func TestCredentials_AreStoredButNeverRendered(t *testing.T) {
	s, rec, rdb := newStore(t)
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
		t.Fatal(err)
	}
	const secret = "tok-s1"
	sup, err := s.Supplier(ctx, opA, "s1")
	if err != nil || sup.Connection.Credentials.BearerToken != secret {
		t.Fatalf("credentials not stored (or not opened for the clients): %v", err)
	}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	log.Info("supplier", "supplier", sup, "credentials", sup.Connection.Credentials)
	view, _ := json.Marshal(catalogwire.SupplierOf(sup))
	renderings := map[string]string{
		"view":     string(view),
		"%v":       fmt.Sprintf("%v", sup),
		"%+v":      fmt.Sprintf("%+v", sup),
		"%#v":      fmt.Sprintf("%#v", sup),
		"%s":       fmt.Sprintf("%s", sup.Connection),
		"%d":       fmt.Sprintf("%d", sup.Connection.Credentials),
		"%x":       fmt.Sprintf("%x", sup.Connection.Credentials),
		"slog":     logs.String(),
		"reseller": string(catalogwire.RenderV12(&sup)) + string(catalogwire.RenderV13(&sup, true)),
	}
	for name, r := range renderings {
		if strings.Contains(r, secret) || strings.Contains(r, fmt.Sprintf("%x", secret)) {
			t.Errorf("%s rendering leaks the credential: %s", name, r)
		}
	}
	if !strings.Contains(string(view), `"credentials":{"set":true,"kind":"bearerToken"}`) {
		t.Errorf("view does not say credentials are set: %s", view)
	}
	// The topic carries them (the record of how to reach the system),
	// sealed; Redis too (issue 18: secrets at rest).
	if envs := rec.Envelopes(t); strings.Contains(string(envs[0].Data), secret) || !strings.Contains(string(envs[0].Data), `"bearerToken":"sb:v1:`) {
		t.Errorf("event carries the credentials in clear, or not at all: %s", envs[0].Data)
	}
	keys, _ := testharness.Keys(ctx, rdb, "*")
	for _, k := range keys {
		var vals []string
		switch typ, _ := rdb.Type(ctx, k).Result(); typ {
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				vals = append(vals, f, v)
			}
		case "string":
			vals = append(vals, rdb.Get(ctx, k).Val())
		case "set":
			vals = rdb.SMembers(ctx, k).Val()
		case "zset":
			vals = rdb.ZRange(ctx, k, 0, -1).Val()
		}
		if strings.Contains(strings.Join(vals, "\n"), secret) {
			t.Errorf("Redis key %s holds the credential in clear", k)
		}
	}
	// A PUT repeating the same credentials changes nothing (no new
	// version although sealing draws a new nonce).
	before, _ := s.Supplier(ctx, opA, "s1")
	after, err := s.PutSupplier(ctx, opA, "s1", supplierIn("s1", "v1"))
	if err != nil || after.Version != before.Version {
		t.Errorf("PUT of the same body: version %d -> %d (%v), want unchanged", before.Version, after.Version, err)
	}
}

// TestCredentials_WithoutASecretsKeyAreRefused: no key, no credentials
// stored in clear (issue 18): the write is refused naming the setting.
func TestCredentials_WithoutASecretsKeyAreRefused(t *testing.T) {
	s, rec, _ := newStore(t)
	s.secrets = nil
	_, err := s.CreateSupplier(context.Background(), opA, supplierIn("s1", "v1"))
	if !errors.Is(err, keyring.ErrNoKey) || !strings.Contains(err.Error(), "SWITCHBACK_SECRETS_KEY") || strings.Contains(err.Error(), "tok-s1") {
		t.Fatalf("create without a key: %v", err)
	}
	if n := len(rec.Envelopes(t)); n != 0 {
		t.Fatalf("%d events published", n)
	}
}

func TestIndexOpen(t *testing.T) {
	b := &catalog.Binding{Valid: catalog.Validity{From: time.UnixMilli(1000), Until: time.UnixMilli(2000)}}
	v := catalogwire.IndexValue(b)
	tests := []struct {
		name string
		v    string
		now  int64
		want bool
	}{
		{"before from", v, 999, false},
		{"at from", v, 1000, true},
		{"before until", v, 1999, true},
		{"at until", v, 2000, false},
		{"open window", catalogwire.IndexValue(&catalog.Binding{}), 5, true},
		{"garbage", "x:y:{}", 5, false},
		{"empty", "", 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest := catalogwire.IndexOpen(tt.v, tt.now)
			if got != tt.want {
				t.Fatalf("open %v, want %v", got, tt.want)
			}
			if got && !json.Valid([]byte(rest)) {
				t.Fatalf("rest %q is not the binding JSON", rest)
			}
		})
	}
}

func TestFingerprint_IgnoresVersionConnectionAndOwner(t *testing.T) {
	a := &catalog.Supplier{SupplierData: catalog.SupplierData{ID: "s", Name: "n", Code: "c"}, Version: 1, Owner: "x",
		Connection: catalog.Connection{Kind: "partner", Credentials: catalog.Credentials{APIKey: "a"}}}
	b := *a
	b.Version, b.Owner, b.Connection = 9, "y", catalog.Connection{Kind: "octo"}
	if catalog.Fingerprint(a) != catalog.Fingerprint(&b) {
		t.Error("fingerprint depends on what resellers do not see")
	}
	b.Name = "m"
	if catalog.Fingerprint(a) == catalog.Fingerprint(&b) {
		t.Error("fingerprint misses a name change")
	}
}

func TestParseTerms_MatchesTheDecoder(t *testing.T) {
	tests := []catalog.Binding{
		{RateIDs: []string{}, PriceTags: []string{}},
		{RateIDs: []string{"r1"}, PriceTags: []string{}},
		{RateIDs: []string{"a-1", "b.2", "c~3"}, PriceTags: []string{}},
		{RateIDs: []string{"r1"}, PriceTags: []string{"x", `q"uote]`}},
		{RateIDs: []string{}, PriceTags: []string{"b2b"}},
	}
	for _, b := range tests {
		raw := string(catalogwire.MustJSON(&b))
		got, err := parseTerms(raw)
		var want bindingTerms
		_ = json.Unmarshal([]byte(raw), &want)
		if err != nil || fmt.Sprint(got.rateIDs()) != fmt.Sprint(want.RateIDs) || fmt.Sprint(got.PriceTags) != fmt.Sprint(want.PriceTags) {
			t.Errorf("%s: got %+v %v, want %+v", raw, got, err, want)
		}
		for _, rid := range []string{"r1", "a-1", "b.2", "c~3", "r", "1", "r1r1", ""} {
			if g, w := got.binds(rid), want.binds(rid); g != w {
				t.Errorf("%s: binds(%q) = %v, the decoder's terms say %v", raw, rid, g, w)
			}
		}
	}
}

func TestOwnsSupplier(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSupplier(ctx, admin, supplierIn("s2", "v1")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		op, sup string
		want    bool
	}{
		{"op-a", "s1", true},
		{"op-b", "s1", false},
		{"op-a", "s2", false},
		{"", "s2", false},
		{"op-a", "nope", false},
		{"op-a", "bad/id", false},
	}
	for _, tt := range tests {
		got, err := s.OwnsSupplier(ctx, tt.op, tt.sup)
		if err != nil || got != tt.want {
			t.Errorf("OwnsSupplier(%q, %q) = %v %v, want %v", tt.op, tt.sup, got, err, tt.want)
		}
	}
}

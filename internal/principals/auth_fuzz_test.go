package principals

import (
	"bytes"
	"context"
	"testing"
)

// FuzzAuthenticate: the X-API-Key and X-API-Secret headers of every API
// request go to Authenticate. Any pair of byte strings authenticates
// exactly when it is a live principal's own key and secret, and then as
// that principal; a revoked principal never does. Never a panic.
func FuzzAuthenticate(f *testing.F) {
	s := NewStore(&recorder{})
	ctx := context.Background()
	live, err := s.EnsureFixed(ctx, "fuzz-live", "fuzz-live-secret-1", RoleReseller, "Live", "chan-1")
	if err != nil {
		f.Fatal(err)
	}
	gone, err := s.EnsureFixed(ctx, "fuzz-gone", "fuzz-gone-secret-1", RoleOperator, "Gone", "")
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Revoke(ctx, gone.ID); err != nil {
		f.Fatal(err)
	}
	for _, kv := range [][2]string{{"fuzz-live", "fuzz-live-secret-1"}, {"fuzz-live", "fuzz-live-secret-2"}, {"fuzz-gone", "fuzz-gone-secret-1"},
		{"", ""}, {"fuzz-live", ""}, {"fuzz-live\x00", "fuzz-live-secret-1"}, {"FUZZ-LIVE", "fuzz-live-secret-1"}} {
		f.Add([]byte(kv[0]), []byte(kv[1]))
	}
	f.Fuzz(func(t *testing.T, key, secret []byte) {
		p, ok := s.Authenticate(key, secret)
		want := bytes.Equal(key, []byte("fuzz-live")) && bytes.Equal(secret, []byte("fuzz-live-secret-1"))
		if ok != want {
			t.Fatalf("Authenticate(%q, %q) = %v, want %v", key, secret, ok, want)
		}
		if ok && p.ID != live.ID {
			t.Fatalf("authenticated as %s, want %s", p.ID, live.ID)
		}
	})
}

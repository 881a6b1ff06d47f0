package keyring_test

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/keyring"
)

func key(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, keyring.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen_RoundTripsAndHidesThePlaintext(t *testing.T) {
	k, err := keyring.New(key(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "partner-secret-9c4f2a"
	a, err := k.Seal(secret, "supplier/S1/apiSecret")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Seal(secret, "supplier/S1/apiSecret")
	if !keyring.Sealed(a) || strings.Contains(a, secret) || a == b {
		t.Fatalf("sealed %q / %q: want sealed, without the plaintext, a fresh nonce each time", a, b)
	}
	if got, err := k.Open(a, "supplier/S1/apiSecret"); err != nil || got != secret {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if got, _ := k.Seal(a, "x"); got != a {
		t.Fatal("sealing a sealed value sealed it again")
	}
	if got, err := k.Seal("", "x"); err != nil || got != "" {
		t.Fatalf("empty: %q %v", got, err)
	}
}

func TestOpen_RefusesWhatItShouldNotOpen(t *testing.T) {
	cur, old, other := key(t), key(t), key(t)
	k, _ := keyring.New(cur, old)
	sealedByOld, _ := mustRing(t, old).Seal("s3cret", "rule/sub/booking")
	sealedByOther, _ := mustRing(t, other).Seal("s3cret", "rule/sub/booking")
	sealed, _ := k.Seal("s3cret", "rule/sub/booking")
	tampered := sealed[:len(sealed)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(sealed, "AA")]
	tests := []struct {
		name, value, aad string
		want             string
		err              error
	}{
		{"the previous key's", sealedByOld, "rule/sub/booking", "s3cret", nil},
		{"the current key's", sealed, "rule/sub/booking", "s3cret", nil},
		{"moved to another record", sealed, "rule/other/booking", "", keyring.ErrUnreadable},
		{"another installation's key", sealedByOther, "rule/sub/booking", "", keyring.ErrUnreadable},
		{"tampered", tampered, "rule/sub/booking", "", keyring.ErrUnreadable},
		{"truncated", "sb:v1:", "rule/sub/booking", "", keyring.ErrUnreadable},
		{"a record written before sealing", "legacy-plaintext", "rule/sub/booking", "legacy-plaintext", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := k.Open(tt.value, tt.aad)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Fatalf("Open = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatal("the error carries the plaintext")
			}
		})
	}
	if !k.Current(sealed) || k.Current(sealedByOld) {
		t.Fatal("Current: want the current key's value only")
	}
}

func mustRing(t *testing.T, k []byte) *keyring.Keyring {
	t.Helper()
	r, err := keyring.New(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSeal_WithoutAKeyIsRefusedWithTheSettingNamed(t *testing.T) {
	for _, k := range []*keyring.Keyring{nil, mustNoKey(t)} {
		_, err := k.Seal("token", "supplier/S1/bearerToken")
		if !errors.Is(err, keyring.ErrNoKey) || !strings.Contains(err.Error(), "SWITCHBACK_SECRETS_KEY") {
			t.Fatalf("Seal without a key: %v", err)
		}
	}
}

func mustNoKey(t *testing.T) *keyring.Keyring {
	t.Helper()
	k, err := keyring.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParseKey(t *testing.T) {
	k := key(t)
	for _, s := range []string{base64.StdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k), " " + base64.StdEncoding.EncodeToString(k) + "\n"} {
		got, err := keyring.ParseKey(s)
		if err != nil || string(got) != string(k) {
			t.Fatalf("ParseKey(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "not base64 !!", base64.StdEncoding.EncodeToString(k[:16]), "c2hvcnQta2V5LXZhbHVlLWhlcmU="} {
		_, err := keyring.ParseKey(s)
		if err == nil {
			t.Fatalf("ParseKey(%q) accepted", s)
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Fatalf("the error quotes the value: %v", err)
		}
	}
	if d := keyring.DemoKey(); len(d) != keyring.KeySize {
		t.Fatalf("demo key of %d bytes", len(d))
	}
}

// TestOpen_CachedIsFree: the dispatcher opens its rule's securityKey for
// every delivery; after the first, an Open is a map lookup without an
// allocation.
func TestOpen_CachedIsFree(t *testing.T) {
	k := mustRing(t, key(t))
	sealed, _ := k.Seal("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "rule/sub/booking/securityKey")
	if _, err := k.Open(sealed, "rule/sub/booking/securityKey"); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = k.Open(sealed, "rule/sub/booking/securityKey") }); n != 0 {
		t.Fatalf("a cached Open allocates %v times", n)
	}
	if _, err := k.Open(sealed, "rule/other/booking/securityKey"); !errors.Is(err, keyring.ErrUnreadable) {
		t.Fatalf("the cache answered for another record: %v", err)
	}
}

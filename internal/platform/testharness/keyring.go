package testharness

import (
	"crypto/rand"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/keyring"
)

// Keyring is a keyring with a random key of the test's own, for tests
// that seal and open secrets (credentials, securityKeys).
func Keyring(t testing.TB) *keyring.Keyring {
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

package principals

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"

	"github.com/google/uuid"
)

// hashSecretBytes returns SHA-256(salt || secret).
//
// Why a fast hash and not bcrypt/scrypt/argon2: slow password hashes exist
// to make guessing low-entropy, human-chosen passwords expensive. Generated
// API secrets carry 256 random bits, so guessing is infeasible at any hash
// speed, and a deliberately slow hash would only cost tens of milliseconds
// of CPU on every API request (the query tier authenticates each one) and
// hand an attacker a cheap way to burn our CPU with wrong secrets. The
// per-principal random salt still keeps equal secrets from producing equal
// hashes and defeats precomputed tables. Fixed secrets (demo, bootstrap
// admin) are operator-chosen: config requires at least 16 characters for
// the bootstrap secret, and the demo secrets are public by design.
//
// The concatenation is built in a stack buffer (secret is bounded by
// MaxSecretLen by every caller), so hashing does not allocate.
func hashSecretBytes(salt *[saltLen]byte, secret []byte) [sha256.Size]byte {
	var buf [saltLen + MaxSecretLen]byte
	n := copy(buf[:], salt[:])
	n += copy(buf[n:], secret)
	return sha256.Sum256(buf[:n])
}

func hashSecret(salt *[saltLen]byte, secret string) [sha256.Size]byte {
	var buf [MaxSecretLen]byte
	n := copy(buf[:], secret)
	return hashSecretBytes(salt, buf[:n])
}

// newSecret returns a fresh credential: 32 random bytes, base64url without
// padding (43 characters, safe in a header as is).
func newSecret() string {
	var b [secretLen]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+): it crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newKey returns a fresh public key. The sbk_ prefix makes keys
// recognisable to people and to secret scanners; 128 random bits make
// collisions impossible in practice.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "sbk_" + base64.RawURLEncoding.EncodeToString(b[:])
}

func newSalt() [saltLen]byte {
	var s [saltLen]byte
	_, _ = rand.Read(s[:])
	return s
}

// fixedNamespace is the UUIDv5 namespace of fixed principals' ids.
var fixedNamespace = uuid.MustParse("6f1d8a52-3c0e-4b7a-9d1e-5a2c7b9e0f34")

// FixedID is the id EnsureFixed gives the principal with this key: a
// UUIDv5 of the key, so every restart and every instance derives the same
// id, and demo data can name the demo operator as owner before it exists.
func FixedID(key string) string {
	return uuid.NewSHA1(fixedNamespace, []byte(key)).String()
}

// Package keyring seals secrets at rest: the credentials of suppliers'
// partners and booking systems and the securityKeys of notification rules
// are encrypted (AES-256-GCM) before they reach a Kafka topic or Redis,
// and opened only where they are used (the clients' connections, the
// dispatcher's signatures, the rule's owner reading it back).
//
// The key is SWITCHBACK_SECRETS_KEY (base64 of 32 bytes); the previous
// key (SWITCHBACK_SECRETS_KEY_PREVIOUS) keeps older records readable
// while they are rewritten with the current one. A sealed value names its
// key by a short id, so either key opens it without trial. Each value is
// bound to where it belongs (additional data: "supplier/S1/apiSecret"), so
// that a sealed value copied into another record does not open there.
//
// It must not log, print or wrap into an error any plaintext or key.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// prefix marks a sealed value: "sb:v1:<key id>:<base64url(nonce|ciphertext)>".
const prefix = "sb:v1:"

// KeySize is the length of a key: AES-256.
const KeySize = 32

// ErrNoKey: there is no key to seal with. Writes of secrets are refused
// rather than stored in clear (issue 18); the message names the setting.
var ErrNoKey = domainerr.NewNotice("UNAVAILABLE", "this installation has no secrets key (SWITCHBACK_SECRETS_KEY): "+
	"credentials and security keys cannot be stored until its operator sets one")

// ErrUnreadable: a sealed value that neither key opens (another
// installation's key, a key rotated out too early, or a damaged record).
var ErrUnreadable = errors.New("a sealed secret cannot be opened with the configured keys (SWITCHBACK_SECRETS_KEY, _PREVIOUS)")

// maxCache bounds the opened values kept: opening is on the webhook hot
// path (every delivery signs with its rule's securityKey), a map lookup is
// cheaper than a GCM open; past the bound the cache starts again.
const maxCache = 1 << 16

// Keyring seals with the current key and opens with the current or the
// previous one. The zero value and nil seal nothing (ErrNoKey) and open
// only values that are not sealed. Safe for concurrent use.
type Keyring struct {
	cur, prev     cipher.AEAD
	curID, prevID string

	mu    sync.Mutex
	cache map[string]opened // sealed value -> what it opened to, and where
}

type opened struct{ aad, plain string }

// ParseKey decodes a key setting: base64 (standard or URL alphabet, padded
// or not) of exactly KeySize bytes. The error never quotes the value.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("must be %d bytes, base64-encoded; it decodes to %d bytes", KeySize, len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("must be base64 of 32 bytes (e.g. the output of: head -c 32 /dev/urandom | base64)")
}

// DemoKey is the fixed key of demo mode: public (derived from a constant
// in this file), so that `make run` works with no setting. Never for
// production, and said so at start.
func DemoKey() []byte {
	k := sha256.Sum256([]byte("switchback demo mode secrets key: public, never for production"))
	return k[:]
}

// New returns a keyring sealing with current (nil: no key, ErrNoKey on
// Seal) and opening with current or previous (nil: none).
func New(current, previous []byte) (*Keyring, error) {
	k := &Keyring{cache: map[string]opened{}}
	var err error
	if current != nil {
		if k.cur, k.curID, err = aead(current); err != nil {
			return nil, fmt.Errorf("SWITCHBACK_SECRETS_KEY: %w", err)
		}
	}
	if previous != nil {
		if k.prev, k.prevID, err = aead(previous); err != nil {
			return nil, fmt.Errorf("SWITCHBACK_SECRETS_KEY_PREVIOUS: %w", err)
		}
	}
	return k, nil
}

func aead(key []byte) (cipher.AEAD, string, error) {
	if len(key) != KeySize {
		return nil, "", fmt.Errorf("must be %d bytes", KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, "", err
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		return nil, "", err
	}
	id := sha256.Sum256(append([]byte("switchback keyring key id\x00"), key...))
	return g, hex.EncodeToString(id[:4]), nil
}

// CanSeal reports whether the keyring has a current key.
func (k *Keyring) CanSeal() bool { return k != nil && k.cur != nil }

// Sealed reports whether s is a sealed value (of any key).
func Sealed(s string) bool { return strings.HasPrefix(s, prefix) }

// Seal encrypts plaintext bound to aad. "" stays "" (nothing to hide), and
// a value that is sealed already is returned as it is.
func (k *Keyring) Seal(plaintext, aad string) (string, error) {
	if plaintext == "" || Sealed(plaintext) {
		return plaintext, nil
	}
	if !k.CanSeal() {
		return "", ErrNoKey
	}
	nonce := make([]byte, k.cur.NonceSize(), k.cur.NonceSize()+len(plaintext)+k.cur.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: random nonce: %w", err)
	}
	out := k.cur.Seal(nonce, nonce, []byte(plaintext), []byte(aad))
	return prefix + k.curID + ":" + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a sealed value bound to aad with whichever key sealed it.
// A value that is not sealed is returned as it is: records written before
// secrets were sealed stay readable, and are sealed when next written.
func (k *Keyring) Open(s, aad string) (string, error) {
	if !Sealed(s) {
		return s, nil
	}
	if k == nil {
		return "", ErrUnreadable
	}
	k.mu.Lock()
	if o, ok := k.cache[s]; ok && o.aad == aad {
		k.mu.Unlock()
		return o.plain, nil
	}
	k.mu.Unlock()
	id, body, ok := strings.Cut(s[len(prefix):], ":")
	if !ok {
		return "", ErrUnreadable
	}
	var g cipher.AEAD
	switch {
	case k.cur != nil && id == k.curID:
		g = k.cur
	case k.prev != nil && id == k.prevID:
		g = k.prev
	default:
		return "", ErrUnreadable
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < g.NonceSize()+g.Overhead() {
		return "", ErrUnreadable
	}
	plain, err := g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte(aad))
	if err != nil {
		return "", ErrUnreadable
	}
	p := string(plain)
	k.mu.Lock()
	if len(k.cache) >= maxCache {
		clear(k.cache)
	}
	k.cache[s] = opened{aad: aad, plain: p}
	k.mu.Unlock()
	return p, nil
}

// Current reports whether s is sealed with the current key (a value
// sealed with the previous one is rewritten on its record's next write).
func (k *Keyring) Current(s string) bool {
	if !Sealed(s) || !k.CanSeal() {
		return false
	}
	id, _, ok := strings.Cut(s[len(prefix):], ":")
	return ok && id == k.curID
}

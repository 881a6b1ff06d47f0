// Package webhook owns what goes on the wire to a subscriber: the signature
// of spec doc 1 ("Signature object", "Authentication" 1), the signed payload
// body, and an outbound HTTP client that refuses private and non-https
// targets at connect time. The dispatcher and the registry's test endpoints
// both send through it, so neither stage imports the other.
//
// It must not decide whether or when to send (rules, disableAll, throttling,
// retries belong to the dispatcher), and it never logs or returns a webhook
// URL or a security key in an error: URLs may carry credentials.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/switchbackhq/switchback/schemas"
)

// Errors of VerifyBody.
var (
	ErrNoSignature       = errors.New("webhook: body has no usable signature object")
	ErrSignatureMismatch = errors.New("webhook: signature does not match")
)

// tokenBytes is the entropy of a token: 128 bits, so tokens never repeat.
const tokenBytes = 16

// Sign returns the signature sum of spec doc 1, Authentication 1: the
// lowercase hexadecimal HMAC-SHA256, keyed by the rule's securityKey, over
// the decimal text of timestamp immediately followed by token.
func Sign(securityKey string, timestamp int64, token string) string {
	var sum [sha256.Size]byte
	mac := sign(securityKey, timestamp, token, sum[:0])
	return hex.EncodeToString(mac)
}

func sign(securityKey string, timestamp int64, token string, dst []byte) []byte {
	mac := hmac.New(sha256.New, []byte(securityKey))
	var ts [20]byte
	mac.Write(strconv.AppendInt(ts[:0], timestamp, 10))
	_, _ = io.WriteString(mac, token)
	return mac.Sum(dst)
}

// NewSignature signs a fresh token at timestamp (Unix seconds).
func NewSignature(securityKey string, timestamp int64) schemas.Signature {
	token := NewToken()
	return schemas.Signature{Sum: Sign(securityKey, timestamp, token), Timestamp: timestamp, Token: token}
}

// NewToken returns 128 random bits as lowercase hex. A token is generated
// for every send, so that the signed data differs on every attempt even
// within one second ("unique token included in the signed data").
func NewToken() string {
	var b [tokenBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Verify reports whether sig was produced with securityKey. The comparison
// is constant-time. An empty key never verifies.
func Verify(securityKey string, sig schemas.Signature) bool {
	if securityKey == "" {
		return false
	}
	got, err := hex.DecodeString(sig.Sum)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	var buf [sha256.Size]byte
	return hmac.Equal(got, sign(securityKey, sig.Timestamp, sig.Token, buf[:0]))
}

// VerifyBody extracts the "signature" object from a received webhook body
// and verifies it. It returns ErrNoSignature when the body is not a JSON
// object with a signature of the spec's shape, ErrSignatureMismatch when the
// sum is wrong. It checks no freshness: receivers that want replay
// protection compare signature.timestamp with their clock and remember
// tokens (or X-Switchback-Delivery-Id) they have seen.
func VerifyBody(securityKey string, body []byte) error {
	var wire struct {
		Signature *struct {
			Sum       *string         `json:"sum"`
			Timestamp json.RawMessage `json:"timestamp"`
			Token     *string         `json:"token"`
		} `json:"signature"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return fmt.Errorf("%w: %v", ErrNoSignature, err)
	}
	s := wire.Signature
	if s == nil || s.Sum == nil || s.Timestamp == nil || s.Token == nil {
		return ErrNoSignature
	}
	// A JSON number written as an integer (spec: timestamp is a number;
	// json.Number would also take a quoted string).
	ts, err := strconv.ParseInt(string(s.Timestamp), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp is not an integer", ErrNoSignature)
	}
	if !Verify(securityKey, schemas.Signature{Sum: *s.Sum, Timestamp: ts, Token: *s.Token}) {
		return ErrSignatureMismatch
	}
	return nil
}

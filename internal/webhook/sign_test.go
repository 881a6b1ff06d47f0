package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/schemas"
)

// specVerify is the subscriber's check written from spec doc 1,
// Authentication 1, and nothing else: "computing HMAC-SHA256 with the
// rule's securityKey as key over the data formed by the decimal text of
// signature.timestamp immediately followed by signature.token, encoding the
// result as lowercase hexadecimal, and comparing it to signature.sum".
func specVerify(securityKey string, body []byte) (bool, error) {
	want, got, err := specSums(securityKey, body)
	return err == nil && want == got, err
}

// specSums returns the sum the spec's algorithm computes for body's
// signature and the sum the body carries.
func specSums(securityKey string, body []byte) (want, got string, err error) {
	var payload struct {
		Signature struct {
			Sum       string `json:"sum"`
			Timestamp int64  `json:"timestamp"`
			Token     string `json:"token"`
		} `json:"signature"`
	}
	if err := json.Unmarshal(body, &payload); err != nil {
		return "", "", err
	}
	s := payload.Signature
	data := fmt.Sprintf("%d%s", s.Timestamp, s.Token)
	mac := hmac.New(sha256.New, []byte(securityKey))
	mac.Write([]byte(data))
	return hex.EncodeToString(mac.Sum(nil)), s.Sum, nil
}

// specVerifyFoldedHex is specVerify with the sum's hex compared without
// regard to letter case: a receiver decoding the hex gets the same bytes.
func specVerifyFoldedHex(securityKey string, body []byte) (bool, error) {
	want, got, err := specSums(securityKey, body)
	return strings.EqualFold(want, got), err
}

func TestSign_BodyVerifiesWithImplementationFromSpecText(t *testing.T) {
	const key = "c2VjcmV0LWtleS1vZi10aGUtcnVsZQ"
	n := schemas.Notification{ID: "d-1", Type: schemas.TypeSupplier, Payload: json.RawMessage(`{"supplierID":"S1","operation":"updated"}`)}
	sig := webhook.NewSignature(key, 1_700_000_000)
	body, err := webhook.Body(n, sig)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := specVerify(key, body)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("spec verification failed for body %s", body)
	}
	if ok, _ := specVerify("another-key", body); ok {
		t.Fatal("verified with the wrong key")
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sig.Sum) {
		t.Errorf("sum %q is not lowercase hex of 32 bytes", sig.Sum)
	}
}

func TestSign_KnownVector(t *testing.T) {
	// printf '1700000000abc' | openssl dgst -sha256 -hmac key
	const want = "bd2f1af294b8152534265a2dada145799d31c54cb9bab55bf4ea75be1770a0e3"
	if got := webhook.Sign("key", 1700000000, "abc"); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestNewToken_UniqueAndLongEnough(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		tok := webhook.NewToken()
		if len(tok) < 32 {
			t.Fatalf("token %q shorter than 16 bytes of hex", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q repeated", tok)
		}
		seen[tok] = true
	}
}

func TestVerify(t *testing.T) {
	good := webhook.NewSignature("k", 1700000000)
	tests := []struct {
		name string
		key  string
		sig  schemas.Signature
		want bool
	}{
		{"valid", "k", good, true},
		{"uppercase hex still the same MAC", "k", schemas.Signature{Sum: upper(good.Sum), Timestamp: good.Timestamp, Token: good.Token}, true},
		{"wrong key", "k2", good, false},
		{"empty key", "", good, false},
		{"timestamp changed", "k", schemas.Signature{Sum: good.Sum, Timestamp: good.Timestamp + 1, Token: good.Token}, false},
		{"token changed", "k", schemas.Signature{Sum: good.Sum, Timestamp: good.Timestamp, Token: good.Token + "0"}, false},
		{"sum not hex", "k", schemas.Signature{Sum: "zz", Timestamp: good.Timestamp, Token: good.Token}, false},
		{"sum truncated", "k", schemas.Signature{Sum: good.Sum[:62], Timestamp: good.Timestamp, Token: good.Token}, false},
		{"empty sum", "k", schemas.Signature{Timestamp: good.Timestamp, Token: good.Token}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhook.Verify(tt.key, tt.sig); got != tt.want {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestVerifyBody(t *testing.T) {
	sig := webhook.NewSignature("k", 1700000000)
	valid, err := webhook.AppendBody(nil, json.RawMessage(`{"bookingID":"B1","operation":"canceled"}`), sig)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		body    string
		wantErr error
	}{
		{"valid", string(valid), nil},
		{"not json", `nope`, webhook.ErrNoSignature},
		{"no signature", `{"bookingID":"B1"}`, webhook.ErrNoSignature},
		{"signature null", `{"signature":null}`, webhook.ErrNoSignature},
		{"sum missing", fmt.Sprintf(`{"signature":{"timestamp":%d,"token":%q}}`, sig.Timestamp, sig.Token), webhook.ErrNoSignature},
		{"timestamp fractional", fmt.Sprintf(`{"signature":{"sum":%q,"timestamp":1.5,"token":%q}}`, sig.Sum, sig.Token), webhook.ErrNoSignature},
		{"timestamp string", fmt.Sprintf(`{"signature":{"sum":%q,"timestamp":"%d","token":%q}}`, sig.Sum, sig.Timestamp, sig.Token), webhook.ErrNoSignature},
		{"tampered token", fmt.Sprintf(`{"signature":{"sum":%q,"timestamp":%d,"token":"x%s"}}`, sig.Sum, sig.Timestamp, sig.Token), webhook.ErrSignatureMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := webhook.VerifyBody("k", []byte(tt.body))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("VerifyBody = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func FuzzVerifyBody(f *testing.F) {
	sig := webhook.NewSignature("k", 1700000000)
	valid, _ := webhook.AppendBody(nil, json.RawMessage(`{"supplierID":"S"}`), sig)
	f.Add(valid)
	f.Add([]byte(`{"signature":{"sum":"00","timestamp":1,"token":""}}`))
	f.Add([]byte(`{"signature":{"sum":null,"timestamp":1e99,"token":7}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := webhook.VerifyBody("k", body)
		if err == nil {
			// Anything that verifies must verify with the spec's algorithm too.
			// Verify reads the sum's hex in either case (the same MAC bytes;
			// see "uppercase hex still the same MAC"), so the oracle folds case.
			if ok, perr := specVerifyFoldedHex("k", body); perr != nil || !ok {
				t.Fatalf("VerifyBody accepted %q which the spec check rejects (%v)", body, perr)
			}
			return
		}
		if !errors.Is(err, webhook.ErrNoSignature) && !errors.Is(err, webhook.ErrSignatureMismatch) {
			t.Fatalf("unexpected error kind %v", err)
		}
	})
}

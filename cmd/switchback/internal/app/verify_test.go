package app

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"
)

// specSum is written from spec doc 1, Authentication 1, not from our
// signing code: HMAC-SHA256 keyed by the securityKey over the decimal
// timestamp immediately followed by the token, as lowercase hex.
func specSum(key string, ts int64, token string) string {
	m := hmac.New(sha256.New, []byte(key))
	fmt.Fprintf(m, "%d%s", ts, token)
	return hex.EncodeToString(m.Sum(nil))
}

func TestVerify(t *testing.T) {
	const key = "rule-security-key"
	now := time.Now().Unix()
	body := func(sum string, ts int64) string {
		return fmt.Sprintf(`{"supplierID":"s1","operation":"updated","signature":{"sum":%q,"timestamp":%d,"token":"tok-1"}}`, sum, ts)
	}
	tests := []struct {
		name    string
		args    []string
		env     string
		body    string
		wantErr string
	}{
		{"valid, key from env", nil, key, body(specSum(key, now, "tok-1"), now), ""},
		{"valid, key from flag", []string{"--key", key}, "", body(specSum(key, now, "tok-1"), now), ""},
		{"wrong key", nil, "other-key", body(specSum(key, now, "tok-1"), now), "INVALID"},
		{"tampered sum", nil, key, body(strings.Repeat("0", 64), now), "INVALID"},
		{"no signature", nil, key, `{"supplierID":"s1"}`, "INVALID"},
		{"not JSON", nil, key, `garbage`, "INVALID"},
		{"stale with max-age", []string{"--max-age", "1m"}, key, body(specSum(key, now-3600, "tok-1"), now-3600), "old"},
		{"no key at all", nil, "", body(specSum(key, now, "tok-1"), now), "no securityKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Verify(tt.args, func(string) string { return tt.env }, strings.NewReader(tt.body), &out)
			if tt.wantErr == "" {
				if err != nil || !strings.Contains(out.String(), "valid") {
					t.Fatalf("err = %v, out = %q; want valid", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error leaks the key: %v", err)
			}
		})
	}
}

func TestClickhouseClient_OpensTheHistoryDatabaseWithoutThePassword(t *testing.T) {
	tests := []struct {
		url, want string
	}{
		{"clickhouse://127.0.0.1:19000/default", "clickhouse-client --host 127.0.0.1 --port 19000"},
		{"clickhouse://switchback:s3cret@ch.internal:9000/switchback", "clickhouse-client --host ch.internal --port 9000 --user switchback --password <password> --database switchback"},
		{"clickhouse://ch:9440", "clickhouse-client --host ch --port 9440"},
		{"::not a url", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := clickhouseClient(tt.url); got != tt.want {
				t.Errorf("clickhouseClient(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}

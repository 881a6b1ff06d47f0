package httpapi

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestReadHeaders_AsPeek holds the one-pass read to Header.Peek's answers:
// the first of duplicates, any case, empty values, absent headers.
func TestReadHeaders_AsPeek(t *testing.T) {
	tests := []struct {
		name, headers string
	}{
		{"all three", "X-API-Key: k\r\nX-API-Secret: s\r\nX-Request-ID: id-1\r\n"},
		{"none", "Accept: */*\r\n"},
		{"other cases", "x-api-key: k\r\nX-API-SECRET: s\r\nx-request-id: id\r\n"},
		{"duplicates: the first", "X-API-Key: k1\r\nX-API-Key: k2\r\nX-Request-ID: a\r\nX-Request-ID: b\r\n"},
		{"an empty first", "X-API-Secret:\r\nX-API-Secret: s\r\n"},
		{"look-alikes", "X-API-Keys: no\r\nX-APIKey: no\r\nX-Api-Secre: no\r\nX-Request-IE: no\r\n"},
		{"among special headers", "Content-Type: application/json\r\nUser-Agent: ua\r\nCookie: a=b\r\nX-API-Key: k\r\nConnection: close\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			if err := h.Read(bufio.NewReader(strings.NewReader("GET /x HTTP/1.1\r\nHost: h\r\n" + tc.headers + "\r\n"))); err != nil {
				t.Fatal(err)
			}
			got := readHeaders(&h)
			for _, c := range []struct {
				name string
				got  []byte
			}{{HeaderAPIKey, got.key}, {HeaderAPISecret, got.secret}, {HeaderRequestID, got.requestID}} {
				if want := h.Peek(c.name); !bytes.Equal(c.got, want) {
					t.Errorf("%s = %q, Peek says %q", c.name, c.got, want)
				}
			}
		})
	}
}

// BenchmarkReadHeaders compares the one pass with the three Peeks it
// replaced, on the headers wrk sends in bench/reads.
func BenchmarkReadHeaders(b *testing.B) {
	var h fasthttp.RequestHeader
	req := "GET /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-API-Key: demo-reseller\r\nX-API-Secret: demo-reseller-secret\r\n\r\n"
	if err := h.Read(bufio.NewReader(strings.NewReader(req))); err != nil {
		b.Fatal(err)
	}
	b.Run("one pass", func(b *testing.B) {
		for b.Loop() {
			_ = readHeaders(&h)
		}
	})
	b.Run("three Peeks", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = h.Peek(HeaderRequestID), h.Peek(HeaderAPIKey), h.Peek(HeaderAPISecret)
		}
	})
}

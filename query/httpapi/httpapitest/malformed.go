// Package httpapitest holds what tests of the API server and of the
// binary share: raw requests that no HTTP parser should accept as they
// are, each carrying credentials, to prove that no log line or answer
// ever repeats them.
package httpapitest

import (
	"bufio"
	"io"
	"net"
	"strings"
	"time"
)

// Malformed is one raw request.
type Malformed struct {
	Name string
	Raw  string
}

// MalformedRequests are requests of every malformed kind a client can
// send (issue 18: missing Host, duplicate Content-Length, bad
// Transfer-Encoding, bare CR/LF...), each with X-API-Key: key and
// X-API-Secret: secret among its headers. path is an API route that
// exists (a POST route taking a JSON body is best).
func MalformedRequests(path, key, secret string) []Malformed {
	cred := "X-API-Key: " + key + "\r\nX-API-Secret: " + secret + "\r\n"
	big := strings.Repeat("a", 64<<10)
	return []Malformed{
		{"missing Host", "POST " + path + " HTTP/1.1\r\n" + cred + "Content-Length: 2\r\n\r\n{}"},
		{"empty Host", "POST " + path + " HTTP/1.1\r\nHost:\r\n" + cred + "Content-Length: 2\r\n\r\n{}"},
		{"two Hosts", "POST " + path + " HTTP/1.1\r\nHost: a\r\nHost: b\r\n" + cred + "Content-Length: 2\r\n\r\n{}"},
		{"duplicate Content-Length", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"},
		{"negative Content-Length", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Content-Length: -2\r\n\r\n{}"},
		{"non-numeric Content-Length", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Content-Length: 2x\r\n\r\n{}"},
		{"unknown Transfer-Encoding", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Transfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"},
		{"Transfer-Encoding list", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"},
		{"Transfer-Encoding and Content-Length", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n2\r\n{}\r\n0\r\n\r\n"},
		{"bad chunk size", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"},
		{"chunk without its CRLF", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n"},
		{"bare CR in a header", "POST " + path + " HTTP/1.1\r\nHost: x\r\nX-API-Key: " + key + "\rX-API-Secret: " + secret + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"bare CR after the secret", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + "X-API-Key: " + key + "\r\nX-API-Secret: " + secret + "\rX: y\r\nContent-Length: 2\r\n\r\n{}"},
		{"bare LF line endings", "POST " + path + " HTTP/1.1\nHost: x\nX-API-Key: " + key + "\nX-API-Secret: " + secret + "\nContent-Length: 2\n\n{}"},
		{"CR without LF ending the headers", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Content-Length: 2\r\r{}"},
		{"space before the colon", "POST " + path + " HTTP/1.1\r\nHost: x\r\nX-API-Key : " + key + "\r\nX-API-Secret : " + secret + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"obsolete line folding", "POST " + path + " HTTP/1.1\r\nHost: x\r\nX-API-Key: " + key + "\r\nX-API-Secret:\r\n " + secret + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"header without a colon", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "NoColon " + secret + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"NUL in a header value", "POST " + path + " HTTP/1.1\r\nHost: x\r\nX-API-Key: " + key + "\r\nX-API-Secret: " + secret + "\x00\r\nContent-Length: 2\r\n\r\n{}"},
		{"control character in a header name", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "X-\x01Bad: " + secret + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"secret in the request line", "POST " + path + "?" + secret + " HTTP/1.1 " + secret + "\r\nHost: x\r\n" + cred + "\r\n"},
		{"unknown HTTP version", "POST " + path + " HTTP/9.9\r\nHost: x\r\n" + cred + "Content-Length: 2\r\n\r\n{}"},
		{"garbage request line", secret + "\r\n" + cred + "\r\n"},
		{"no request line", cred + "\r\n"},
		{"headers too large", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "X-Big: " + big + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"body too large", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Content-Length: 99999999999\r\n\r\n{}"},
		{"truncated headers", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred},
		{"truncated body", "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + cred + "Content-Length: 20\r\n\r\n{}"},
	}
}

// Send writes raw on a new connection to addr and returns what came back
// before the server closed it or within 2 s (the truncated requests are
// answered, if at all, when the server's read timeout ends; closing our
// write side makes that now).
func Send(addr, raw string) (string, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(raw)); err != nil {
		return "", err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	b, _ := io.ReadAll(bufio.NewReader(conn))
	return string(b), nil
}

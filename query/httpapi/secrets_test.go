package httpapi_test

import (
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/query/httpapi/httpapitest"
)

// TestMalformedRequests_NeverPutCredentialsInALogLineOrAnswer: every kind
// of malformed request (httpapitest.MalformedRequests: missing Host, two
// Content-Lengths, bad Transfer-Encodings, bare CR and LF, line folding,
// oversized headers...) carrying a valid key and secret is answered or
// dropped without its secret in any log line, at debug level, nor in the
// answer. fasthttp quotes the raw header buffer of a request it cannot
// parse unless SecureErrorLogMessage is set (issue 18, finding 2).
func TestMalformedRequests_NeverPutCredentialsInALogLineOrAnswer(t *testing.T) {
	e := start(t)
	addr := strings.TrimPrefix(e.api.URL, "http://")
	cases := httpapitest.MalformedRequests("/v1.3/echo", e.reseller.key, e.reseller.secret)
	answered := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := httpapitest.Send(addr, c.Raw)
			if err != nil {
				t.Fatal(err)
			}
			if got != "" {
				answered++
			}
			if strings.Contains(got, e.reseller.secret) {
				t.Errorf("the answer repeats the secret: %q", got)
			}
		})
	}
	logs := e.logs.String()
	// The requests did reach the server and its logs: the check below is
	// not of an empty text.
	if n := strings.Count(logs, "request rejected before routing"); n < len(cases)/2 {
		t.Fatalf("only %d rejections logged for %d malformed requests (answered %d):\n%s", n, len(cases), answered, logs)
	}
	leaks := 0
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, e.reseller.secret) {
			leaks++
			t.Errorf("log line with the secret: %.300s", line)
		}
	}
	t.Logf("%d malformed requests, %d answered, %d log lines, %d with the secret", len(cases), answered, strings.Count(logs, "\n"), leaks)
}

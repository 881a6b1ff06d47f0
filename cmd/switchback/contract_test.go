package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchbackhq/switchback/internal/contract"
)

// The API contract (schemas/openapi) over the e2e and binary suites: every
// request a test sends to a binary's API, every answer, and every webhook a
// test's sink receives is validated against the OpenAPI documents
// (internal/contract); a violation fails the test that made the exchange.
// http.DefaultTransport is wrapped, so the suites' clients (http.Get,
// http.DefaultClient, clients without a Transport of their own) are
// validated without knowing it; a client with its own Transport wraps it
// with contractTransport.Wrap. Only the API addresses a test watches are
// validated: the ops listener, simulators and sinks pass through.
var (
	contractChecker   *contract.Checker
	contractTransport *contract.Transport
)

func TestMain(m *testing.M) {
	c, err := contract.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "contract: load the OpenAPI documents:", err)
		os.Exit(2)
	}
	contractChecker = c
	contractTransport = c.NewTransport(http.DefaultTransport)
	http.DefaultTransport = contractTransport
	code := m.Run()
	// go test shows a passing package's output only with -v: the summary
	// is also kept in the test output directory (make e2e prints it).
	summary := c.Summary()
	fmt.Print(summary)
	if err := writeTestOutput("contract-summary.txt", []byte(summary)); err != nil {
		fmt.Fprintln(os.Stderr, "contract:", err)
	}
	os.Exit(code)
}

// watchAPI validates every exchange of the test with the API at addr.
func watchAPI(t *testing.T, addr string) {
	t.Helper()
	contractTransport.Watch(t, addr)
}

// testOutputDir is where tests keep what a person may want to look at
// after a run (the contract summary, screenshots): SWITCHBACK_TEST_OUTDIR,
// else bin/test-output of the repository.
func testOutputDir() string {
	if d := os.Getenv("SWITCHBACK_TEST_OUTDIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "bin", "test-output")
}

func writeTestOutput(name string, b []byte) error {
	dir := testOutputDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), b, 0o644)
}

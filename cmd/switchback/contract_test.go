package main

import (
	"flag"
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
	// A known deviation that no exchange of the whole suite matched is
	// stale: the service no longer leaves the contract there, and the
	// entry would hide a regression. Only a run of every test can tell.
	if wholeSuite() {
		for _, d := range c.Unseen() {
			fmt.Fprintln(os.Stderr, "contract: known deviation never seen in the whole suite (delete it from internal/contract/deviations.go):", d)
			code = 1
		}
	}
	os.Exit(code)
}

// wholeSuite reports whether every test of the package ran: no -run,
// -skip or -short.
func wholeSuite() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
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

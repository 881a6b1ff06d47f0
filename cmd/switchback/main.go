// Command switchback is the one binary of Switchback. `switchback run` starts
// every tier in one process; `ingest`, `process`, `query` and `dispatch`
// start one tier each against external Kafka, Redis and ClickHouse. main only
// reads the command line and hands over to cmd/switchback/internal/app, which wires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/platform/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `switchback — distribution hub for tours and activities

Usage: switchback <command> [flags]

Commands:
  run         start every tier in one process (embedded Kafka/Redis/ClickHouse when unset)
  ingest      start the ingest tier against external servers
  process     start the processors against external servers
  query       start the API (query) tier against external servers
  dispatch    start the webhook dispatcher against external servers
  broker      run the embedded Kafka-protocol broker alone (tiers apart on one machine)
  migrate     apply the ClickHouse DDL of schemas/ (needs SWITCHBACK_CLICKHOUSE_URL)
  principals  create, list or revoke API credentials (needs a reachable broker)
  verify      check a received webhook's signature (key in SWITCHBACK_VERIFY_KEY)
  config      print the configuration settings as a Markdown table
  version     print the version

Every command takes the SWITCHBACK_* settings as environment variables or
flags; run 'switchback <command> -h' for the list.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "switchback", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "config":
		fmt.Fprint(stdout, app.SettingsMarkdown())
		return 0
	case "run", "ingest", "process", "query", "dispatch":
		var cfg config.Config
		cfg, err = config.Load("switchback "+cmd, rest, os.Getenv)
		if err == nil {
			err = app.Run(ctx, app.Options{Config: cfg, Command: cmd, Version: version, Stdout: stdout, Stderr: stderr})
		}
	case "broker":
		var cfg config.Config
		cfg, err = config.Load("switchback broker", rest, os.Getenv)
		if err == nil {
			err = app.Broker(ctx, cfg, stdout, stderr)
		}
	case "migrate":
		var cfg config.Config
		cfg, err = config.Load("switchback migrate", rest, os.Getenv)
		if err == nil {
			err = app.Migrate(ctx, cfg, stdout)
		}
	case "principals":
		err = app.Principals(ctx, rest, os.Getenv, stdout)
	case "verify":
		err = app.Verify(rest, os.Getenv, os.Stdin, stdout)
	default:
		fmt.Fprintf(stderr, "switchback: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "switchback:", err)
		return 1
	}
}

// Package warehouse owns Switchback's connection to ClickHouse and the
// schema migrations of the history tables. Every mode (embedded child,
// external server, tests) goes through Open and Migrate here.
//
// It speaks the native protocol only: clickhouse-go's HTTP mode fails on the
// ClickHouse 18.16 that Debian ships, and the DDL it runs is kept to what
// 18.16 and current releases both accept (no DateTime64, TTL,
// LowCardinality, server-side parameters). It does not write history rows:
// the history sink in processors/ does, through the driver.Conn it gets here.
package warehouse

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// codeUnknownDatabase is ClickHouse's UNKNOWN_DATABASE error code.
const codeUnknownDatabase = 81

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open connects to the ClickHouse at rawURL
// (clickhouse://user:password@host:port/database?dial_timeout=5s, the query
// parameters of clickhouse-go's DSN), creates the database if it is missing
// (through the default database, since one cannot connect to a database that
// does not exist yet) and returns a pinged connection.
func Open(ctx context.Context, rawURL string) (driver.Conn, error) {
	opts, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", Redact(rawURL), err)
	}
	err = conn.Ping(ctx)
	if isUnknownDatabase(err) {
		_ = conn.Close()
		if err := createDatabase(ctx, opts); err != nil {
			return nil, fmt.Errorf("create database %s on %s: %w", opts.Auth.Database, Redact(rawURL), err)
		}
		if conn, err = clickhouse.Open(opts); err != nil {
			return nil, fmt.Errorf("open clickhouse %s: %w", Redact(rawURL), err)
		}
		err = conn.Ping(ctx)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("ping clickhouse %s: %w", Redact(rawURL), err)
	}
	return conn, nil
}

// Ping checks that the ClickHouse at rawURL answers on the native protocol,
// with a connection of its own that it closes.
func Ping(ctx context.Context, rawURL string) error {
	opts, err := parseURL(rawURL)
	if err != nil {
		return err
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return fmt.Errorf("open clickhouse %s: %w", Redact(rawURL), err)
	}
	defer conn.Close()
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("ping clickhouse %s: %w", Redact(rawURL), err)
	}
	return nil
}

// Redact returns rawURL with its password replaced, for logs and errors.
// It works on the text rather than through net/url because clickhouse-go
// accepts several hosts (host1:9000,host2:9000) that net/url rejects.
func Redact(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return "(unparsable URL)"
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return rawURL
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return rawURL
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

func parseURL(rawURL string) (*clickhouse.Options, error) {
	if !strings.HasPrefix(rawURL, "clickhouse://") && !strings.HasPrefix(rawURL, "tcp://") {
		return nil, fmt.Errorf("ClickHouse URL %s: scheme must be clickhouse:// (native protocol; the HTTP mode fails on ClickHouse 18.16)", Redact(rawURL))
	}
	// ParseDSN redacts the password from its own errors.
	opts, err := clickhouse.ParseDSN(rawURL)
	if err != nil {
		return nil, fmt.Errorf("ClickHouse URL %s: %w", Redact(rawURL), err)
	}
	opts.Protocol = clickhouse.Native
	for i, a := range opts.Addr {
		if _, _, err := net.SplitHostPort(a); err != nil {
			opts.Addr[i] = net.JoinHostPort(a, "9000")
		}
	}
	if opts.Auth.Database == "" {
		opts.Auth.Database = "default"
	}
	if !identRe.MatchString(opts.Auth.Database) {
		return nil, fmt.Errorf("ClickHouse URL %s: database name %q must match %s", Redact(rawURL), opts.Auth.Database, identRe)
	}
	// clickhouse-go waits 30 s by default; a start-up retry loop and
	// /readyz want to hear sooner that a server is down.
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 5 * time.Second
	}
	return opts, nil
}

func createDatabase(ctx context.Context, opts *clickhouse.Options) error {
	admin := *opts
	admin.Auth.Database = "default"
	conn, err := clickhouse.Open(&admin)
	if err != nil {
		return err
	}
	defer conn.Close()
	// IF NOT EXISTS: several tiers may start at once against one server.
	return conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+opts.Auth.Database+"`")
}

func isUnknownDatabase(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == codeUnknownDatabase
}

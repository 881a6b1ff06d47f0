// Package testharness gives integration tests real servers: redis-server and
// clickhouse-server started through internal/platform/embedded (the code embedded
// mode runs) on free loopback ports, and stopped when the test, or the test
// binary, ends. It is imported by _test.go files only.
//
// When a server is not installed the test is skipped with the reason, unless
// SWITCHBACK_REQUIRE_INTEGRATION=1 (CI), where that is a failure. With
// -short every integration test is skipped.
//
// Redis: one redis-server per test (it starts in milliseconds), so tests
// never see each other's keys.
//
// ClickHouse: one server per test binary when the package's TestMain calls
// testharness.Main, each test getting a database of its own on it; without
// Main, one server per test. A server is shared because clickhouse-server
// is the slow part of a test run (18.16 starts in well under a second here,
// current releases take several); a database per test keeps tests apart.
//
// It also holds the test doubles that several packages' tests need
// (Recorder, FlushingFence), so that each is written once.
package testharness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/switchbackhq/switchback/internal/platform/embedded"
)

// EnvRequireIntegration turns a missing server from a skip into a failure.
const EnvRequireIntegration = "SWITCHBACK_REQUIRE_INTEGRATION"

// Test binaries have no other place to keep what Main shares between tests.
var shared struct {
	enabled bool // set by Main before any test runs

	once sync.Once
	ch   *embedded.ClickHouse
	dir  string
	err  error
}

var dbSeq atomic.Int64

// Main runs the package's tests and then stops the servers shared between
// them. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testharness.Main(m) }
func Main(m *testing.M) {
	shared.enabled = true
	code := m.Run()
	stopSharedCluster()
	if shared.ch != nil {
		if err := shared.ch.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "testharness: stop shared clickhouse-server:", err)
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// RequireIntegration reports whether SWITCHBACK_REQUIRE_INTEGRATION=1.
func RequireIntegration() bool { return os.Getenv(EnvRequireIntegration) == "1" }

// Redis starts a redis-server for this test and returns its redis:// URL.
func Redis(t testing.TB) string {
	t.Helper()
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := embedded.StartRedis(ctx, embedded.RedisOptions{DataDir: t.TempDir(), Logger: Logger(t), RequireServer: true})
	if errors.Is(err, embedded.ErrNotInstalled) {
		missing(t, "redis-server", err)
	}
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("stop redis-server: %v", err)
		}
	})
	return r.URL()
}

// ClickHouse returns the clickhouse:// URL of a database created for this
// test on a running clickhouse-server (shared by the test binary when
// TestMain calls Main). The database is dropped when the test ends.
func ClickHouse(t testing.TB) string {
	t.Helper()
	skipShort(t)
	var ch *embedded.ClickHouse
	if shared.enabled {
		shared.once.Do(func() {
			shared.dir, shared.err = os.MkdirTemp("", "switchback-clickhouse-")
			if shared.err != nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// Logs go to stderr at warn: a shared server outlives any one
			// test's t.Log.
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			shared.ch, shared.err = embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: shared.dir, Logger: log})
		})
		ch = shared.ch
		if shared.err != nil {
			if errors.Is(shared.err, embedded.ErrNotInstalled) {
				missing(t, "clickhouse-server", shared.err)
			}
			t.Fatalf("start shared clickhouse-server: %v", shared.err)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var err error
		ch, err = embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: t.TempDir(), Logger: Logger(t)})
		if errors.Is(err, embedded.ErrNotInstalled) {
			missing(t, "clickhouse-server", err)
		}
		if err != nil {
			t.Fatalf("start clickhouse-server: %v", err)
		}
		t.Cleanup(func() {
			if err := ch.Close(); err != nil {
				t.Errorf("stop clickhouse-server: %v", err)
			}
		})
	}
	db := databaseName(t)
	if err := adminExec(ch.Addr(), "CREATE DATABASE `"+db+"`"); err != nil {
		t.Fatalf("create test database %s: %v", db, err)
	}
	// Registered after the server's own Cleanup, so it runs before it.
	t.Cleanup(func() {
		if err := adminExec(ch.Addr(), "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
			t.Errorf("drop test database %s: %v", db, err)
		}
	})
	return "clickhouse://" + ch.Addr() + "/" + db
}

// Logger is a slog.Logger writing warnings and errors to t.Log, for the
// servers started for one test.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
}

func missing(t testing.TB, what string, err error) {
	t.Helper()
	if RequireIntegration() {
		t.Fatalf("%s is required (%s=1) but not usable: %v", what, EnvRequireIntegration, err)
	}
	t.Skipf("%s not installed (%v); install it to run this integration test (%s=1 makes this a failure)", what, err, EnvRequireIntegration)
}

// databaseName is t_<test name>_<n>: readable in a failing test's logs,
// unique within the binary.
func databaseName(t testing.TB) string {
	var b strings.Builder
	for _, r := range strings.ToLower(t.Name()) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("t_%s_%d", name, dbSeq.Add(1))
}

// adminExec runs one statement on the default database. It uses
// clickhouse-go directly rather than internal/platform/warehouse, whose own tests
// import this package.
func adminExec(addr, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, Protocol: clickhouse.Native, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Exec(ctx, stmt)
}

// SkipIfNotInstalled skips t (fails it under SWITCHBACK_REQUIRE_INTEGRATION=1)
// when err says a server binary is missing, for tests that start servers
// through internal/platform/embedded themselves.
func SkipIfNotInstalled(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, embedded.ErrNotInstalled) {
		missing(t, what, err)
	}
}

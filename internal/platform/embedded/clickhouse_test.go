package embedded_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/embedded"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
)

// These tests start their own servers rather than testharness.ClickHouse's
// shared one: the server's life cycle is what they test.
func startClickHouse(t *testing.T, dir string) *embedded.ClickHouse {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	ch, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: dir, Logger: testharness.Logger(t)})
	testharness.SkipIfNotInstalled(t, "clickhouse-server", err)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("clickhouse-server ready in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _ = ch.Close() })
	return ch
}

func TestStartClickHouse_AnswersNativePingAndCloseLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	ch := startClickHouse(t, dir)
	if !strings.HasPrefix(ch.URL(), "clickhouse://127.0.0.1:") || !strings.HasSuffix(ch.URL(), "/default") {
		t.Fatalf("URL() = %q", ch.URL())
	}
	ctx := context.Background()
	if err := warehouse.Ping(ctx, ch.URL()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	for _, f := range []string{"config.xml", "users.xml", "log/stdout.log", "log/clickhouse-server.log"} {
		if _, err := os.Stat(filepath.Join(dir, "clickhouse", f)); err != nil {
			t.Errorf("want %s under DataDir/clickhouse: %v", f, err)
		}
	}
	pid := ch.PID()
	start := time.Now()
	if err := ch.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("clickhouse-server stopped in %s", time.Since(start).Round(time.Millisecond))
	if alive(pid) {
		t.Fatalf("clickhouse-server pid %d still running after Close", pid)
	}
	for _, addr := range []string{ch.Addr(), ch.HTTPAddr()} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Close", addr)
		}
	}
}

func TestStartClickHouse_CrashedChildIsRestartedOnSameURL(t *testing.T) {
	ch := startClickHouse(t, t.TempDir())
	old := ch.PID()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "clickhouse-server restarted and answering", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return ch.PID() != old && warehouse.Ping(ctx, ch.URL()) == nil
	})
	// The restarted server runs at the lowered priority too.
	checkNice(t, ch.PID(), 15)
}

// TestStartClickHouse_RunsAtALowerCPUPriority: every thread of the
// embedded server runs at nice 15, so that its merges and inserts yield
// the cores to the change path (redis-server, the binary).
func TestStartClickHouse_RunsAtALowerCPUPriority(t *testing.T) {
	ch := startClickHouse(t, t.TempDir())
	checkNice(t, ch.PID(), 15)
}

// checkNice fails unless every thread of pid has the nice value want
// (Linux: /proc/<pid>/task/<tid>/stat, field 19).
func checkNice(t *testing.T, pid, want int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("per-thread nice values are read from /proc")
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, task := range tasks {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/stat")
		if err != nil {
			continue // the thread exited
		}
		fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(fields) < 17 {
			t.Fatalf("thread %s: short stat %q", task.Name(), raw)
		}
		if nice, _ := strconv.Atoi(fields[16]); nice != want {
			t.Errorf("thread %s of clickhouse-server runs at nice %d, want %d", task.Name(), nice, want)
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("read %d threads of clickhouse-server, want its pools too", checked)
	}
}

func TestStartClickHouse_MissingBinaryIsErrNotInstalled(t *testing.T) {
	_, err := embedded.StartClickHouse(context.Background(), embedded.ClickHouseOptions{DataDir: t.TempDir(), Binary: "no-such-clickhouse-server"})
	if !errors.Is(err, embedded.ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
}

// TestStartClickHouse_FixedPortIsKeptAndATakenOneIsNamed: with Port set
// (SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR) the server listens there, so an
// analyst's clickhouse-client command survives restarts; a port already
// taken fails the start with the port in the error.
func TestStartClickHouse_FixedPortIsKeptAndATakenOneIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, err = embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: t.TempDir(), Port: port, Logger: testharness.Logger(t)})
	testharness.SkipIfNotInstalled(t, "clickhouse-server", err)
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("start on a taken port: err = %v, want one naming port %d", err, port)
	}
	l.Close()

	dir := t.TempDir()
	for i := range 2 { // the same port on a restart
		ch, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: dir, Port: port, Logger: testharness.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if want := "127.0.0.1:" + strconv.Itoa(port); ch.Addr() != want {
			t.Errorf("start %d: Addr() = %s, want %s", i+1, ch.Addr(), want)
		}
		if err := warehouse.Ping(ctx, ch.URL()); err != nil {
			t.Errorf("start %d: Ping: %v", i+1, err)
		}
		if err := ch.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

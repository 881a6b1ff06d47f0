package embedded_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/embedded"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

func startRedisServer(t *testing.T, dir string) *embedded.Redis {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := embedded.StartRedis(ctx, embedded.RedisOptions{DataDir: dir, Logger: testharness.Logger(t), RequireServer: true})
	testharness.SkipIfNotInstalled(t, "redis-server", err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func redisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestStartRedis_ChildAnswersPingAndCloseLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	r := startRedisServer(t, dir)
	if r.Kind() != embedded.KindRedisServer {
		t.Fatalf("Kind() = %q, want %q", r.Kind(), embedded.KindRedisServer)
	}
	if !strings.HasPrefix(r.URL(), "redis://127.0.0.1:") || !strings.HasSuffix(r.URL(), "/0") {
		t.Fatalf("URL() = %q", r.URL())
	}
	ctx := context.Background()
	if err := redisClient(t, r.URL()).Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	pid := r.PID()
	if pid <= 0 || !alive(pid) {
		t.Fatalf("PID() = %d, not a running process", pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "redis-server.log")); err != nil {
		t.Errorf("child output should go to a log file under DataDir: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if alive(pid) {
		t.Fatalf("redis-server pid %d still running after Close", pid)
	}
	if c, err := net.DialTimeout("tcp", r.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Close", r.Addr())
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStartRedis_DataSurvivesRestartOnSameDataDir(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	r := startRedisServer(t, dir)
	if err := redisClient(t, r.URL()).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2 := startRedisServer(t, dir)
	got, err := redisClient(t, r2.URL()).Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("GET k after restart = %q, %v; want v (appendonly)", got, err)
	}
}

func TestStartRedis_CrashedChildIsRestartedOnSameURL(t *testing.T) {
	r := startRedisServer(t, t.TempDir())
	c := redisClient(t, r.URL())
	old := r.PID()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll(t, 15*time.Second, "redis-server restarted and answering", func() bool {
		return r.PID() != old && c.Ping(context.Background()).Err() == nil
	})
}

func TestStartRedis_PreferMiniredisExpiresTTLInRealTime(t *testing.T) {
	ctx := context.Background()
	r, err := embedded.StartRedis(ctx, embedded.RedisOptions{PreferMiniredis: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if r.Kind() != embedded.KindMiniredis || r.PID() != 0 {
		t.Fatalf("Kind() = %q, PID() = %d; want miniredis, 0", r.Kind(), r.PID())
	}
	c := redisClient(t, r.URL())
	if err := c.Set(ctx, "hold", "1", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, "hold").Result(); n != 1 {
		t.Fatalf("key gone at once")
	}
	// Without the FastForward ticker miniredis would keep the key forever.
	poll(t, 5*time.Second, "key with 300ms TTL expired", func() bool {
		n, err := c.Exists(ctx, "hold").Result()
		return err == nil && n == 0
	})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", r.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("miniredis still listening after Close")
	}
}

func TestStartRedis_SecondInstanceOnSameDataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	r := startRedisServer(t, dir)
	_, err := embedded.StartRedis(context.Background(), embedded.RedisOptions{DataDir: dir, RequireServer: true})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second StartRedis on %s: err = %v, want already running", dir, err)
	}
	if err := redisClient(t, r.URL()).Ping(context.Background()).Err(); err != nil {
		t.Fatalf("first instance hurt by the refused second one: %v", err)
	}
}

// TestStartRedis_ServerThatWillNotStartFallsBackToMiniredis: an installed
// redis-server that fails (here: its data directory is a file) does not
// stop a one-machine run; a data directory in use by another instance
// still does.
func TestStartRedis_ServerThatWillNotStartFallsBackToMiniredis(t *testing.T) {
	dir := t.TempDir()
	startRedisServer(t, dir) // skips when redis-server is not installed
	if _, err := embedded.StartRedis(context.Background(), embedded.RedisOptions{DataDir: dir}); !errors.Is(err, embedded.ErrDataDirInUse) {
		t.Fatalf("second instance on a data dir in use: err = %v, want ErrDataDirInUse (no fallback)", err)
	}

	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := embedded.StartRedis(context.Background(), embedded.RedisOptions{DataDir: file, RequireServer: true}); err == nil {
		t.Fatal("RequireServer with a broken data dir succeeded")
	}
	r, err := embedded.StartRedis(context.Background(), embedded.RedisOptions{DataDir: file})
	if err != nil {
		t.Fatalf("StartRedis with a broken data dir: %v, want a miniredis fallback", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if r.Kind() != embedded.KindMiniredis {
		t.Fatalf("kind = %q, want %s", r.Kind(), embedded.KindMiniredis)
	}
	if err := redisClient(t, r.URL()).Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStartRedis_StalePidFileIsIgnored(t *testing.T) {
	tests := []struct {
		name string
		pid  string
	}{
		{"garbage", "not a pid"},
		{"dead process", "999999999"},
		// A live process elsewhere (pid reuse): ours runs in another dir.
		{"unrelated live process", strconv.Itoa(os.Getpid())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "redis-server.pid"), []byte(tt.pid), 0o644); err != nil {
				t.Fatal(err)
			}
			r := startRedisServer(t, dir)
			if err := redisClient(t, r.URL()).Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestParentKilled_ChildDiesWithIt runs a copy of this test binary that
// starts a server, kills that copy with SIGKILL (no deferred Close runs) and
// checks that the kernel took the server down too, then that a new start on
// the same DataDir works (stale pid file, ClickHouse's status file).
func TestParentKilled_ChildDiesWithIt(t *testing.T) {
	for _, kind := range []string{"redis", "clickhouse"} {
		t.Run(kind, func(t *testing.T) {
			if testing.Short() {
				t.Skip("integration test")
			}
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "EMBEDDED_HELPER="+kind, "EMBEDDED_HELPER_DIR="+dir)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("helper said nothing: %v", err)
			}
			var pid int
			if _, err := fmt.Sscanf(line, "PID %d", &pid); err != nil {
				if strings.HasPrefix(line, "SKIP") {
					testharness.SkipIfNotInstalled(t, kind, embedded.ErrNotInstalled)
				}
				t.Fatalf("helper: %q", line)
			}
			if !alive(pid) {
				t.Fatalf("server pid %d not running", pid)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			poll(t, 10*time.Second, fmt.Sprintf("%s pid %d gone after its parent was killed", kind, pid), func() bool { return !alive(pid) })

			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var closer interface{ Close() error }
			switch kind {
			case "redis":
				closer, err = embedded.StartRedis(ctx, embedded.RedisOptions{DataDir: dir, RequireServer: true})
			case "clickhouse":
				closer, err = embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: dir})
			}
			if err != nil {
				t.Fatalf("restart on the DataDir of a killed run: %v", err)
			}
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMain turns this test binary into the killed parent of
// TestParentKilled_ChildDiesWithIt when that test runs it as a helper.
func TestMain(m *testing.M) {
	if kind := os.Getenv("EMBEDDED_HELPER"); kind != "" {
		helperMain(kind)
	}
	os.Exit(m.Run())
}

func helperMain(kind string) {
	dir := os.Getenv("EMBEDDED_HELPER_DIR")
	ctx := context.Background()
	var pid int
	var err error
	switch kind {
	case "redis":
		var r *embedded.Redis
		if r, err = embedded.StartRedis(ctx, embedded.RedisOptions{DataDir: dir, RequireServer: true}); err == nil {
			pid = r.PID()
		}
	case "clickhouse":
		var ch *embedded.ClickHouse
		if ch, err = embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: dir}); err == nil {
			pid = ch.PID()
		}
	}
	switch {
	case err != nil && strings.Contains(err.Error(), embedded.ErrNotInstalled.Error()):
		fmt.Println("SKIP", err)
		os.Exit(0)
	case err != nil:
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("PID %d\n", pid)
	select {} // until killed
}

// alive reports whether pid runs; a zombie nobody reaped (the container's
// init may not) counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// poll checks cond until it holds or the deadline passes.
func poll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

func TestCommands_WithoutServers(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"version", []string{"version"}, 0, "switchback dev"},
		{"config table names every setting", []string{"config"}, 0, "SWITCHBACK_EMBEDDED_KAFKA_ADDR"},
		{"no command", nil, 2, ""},
		{"unknown command", []string{"frobnicate"}, 2, ""},
		{"bad setting is named", []string{"run", "--http-addr", "nonsense"}, 1, ""},
		{"migrate needs clickhouse url", []string{"migrate"}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.wantCode, errb.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.wantOut)
			}
		})
	}
	var errb bytes.Buffer
	run([]string{"run", "--http-addr", "nonsense"}, &bytes.Buffer{}, &errb)
	if !strings.Contains(errb.String(), "SWITCHBACK_HTTP_ADDR") {
		t.Errorf("bad setting error does not name it: %q", errb.String())
	}
}

// handedOut are the ports freeAddr gave in this test binary: a port just
// closed may be handed out again by the kernel, and two listeners of one
// process must not be given the same.
var (
	handedOutMu sync.Mutex
	handedOut   = map[string]bool{}
)

func freeAddr(t *testing.T) string {
	t.Helper()
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if !handedOut[addr] {
			handedOut[addr] = true
			return addr
		}
	}
	t.Fatal("no free loopback port")
	return ""
}

// binary is built once per test binary run and shared by the tests that
// drive the real process.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchback-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "switchback")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a running `switchback run` started by a test.
type proc struct {
	cmd            *exec.Cmd
	env            []string
	data           string
	kafka          string
	api, ops       string
	clickhouse     string // the embedded clickhouse-server's native address
	stdout, stderr *lockedBuffer
	exited         chan error
}

// startBinary starts `switchback run` on free loopback ports, its data in a
// temp dir, with env added, and waits until the API answers. It is killed
// at cleanup if the test did not stop it.
func startBinary(t *testing.T, extra ...string) *proc {
	t.Helper()
	bin := buildBinary(t)
	p := &proc{data: filepath.Join(t.TempDir(), "var"), kafka: freeAddr(t), api: freeAddr(t), ops: freeAddr(t), clickhouse: freeAddr(t),
		stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	p.env = append(os.Environ(),
		"SWITCHBACK_DATA_DIR="+p.data,
		"SWITCHBACK_EMBEDDED_KAFKA_ADDR="+p.kafka,
		"SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR="+p.clickhouse,
		"SWITCHBACK_DEMO_SINK_ADDR="+freeAddr(t),
		"SWITCHBACK_DEMO_BOOKINGSYSTEM_ADDR="+freeAddr(t),
		"SWITCHBACK_DEMO_PARTNER_ADDR="+freeAddr(t),
		"SWITCHBACK_HTTP_ADDR="+p.api,
		"SWITCHBACK_OPS_ADDR="+p.ops,
		"SWITCHBACK_DEMO=true",
		"SWITCHBACK_DEMO_DATA=false", // tests bring their own data; the demo test turns it on
	)
	p.env = append(p.env, extra...)
	watchAPI(t, p.api)
	launch(t, bin, p)
	return p
}

// restartBinary starts `switchback run` again with old's environment: the
// same data directory and ports, as a user running it twice.
func restartBinary(t *testing.T, old *proc) *proc {
	t.Helper()
	p := &proc{data: old.data, kafka: old.kafka, api: old.api, ops: old.ops, clickhouse: old.clickhouse, env: old.env,
		stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	launch(t, buildBinary(t), p)
	return p
}

// launch starts the binary for p and waits until the API answers; it is
// killed at cleanup if the test did not stop it.
func launch(t *testing.T, bin string, p *proc) {
	t.Helper()
	p.cmd = exec.Command(bin, "run")
	p.cmd.Env = p.env
	spawn(t, p.cmd, p.stdout, p.stderr, p.exited)
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("switchback stderr (tail):\n%s", tail(p.stderr.String(), 8000))
			keepLog(t, "run", p.stderr.String())
		}
	})
	waitAPI(t, "switchback", p.api, 90*time.Second, p.exited, p.stderr)
}

// spawn starts cmd with its output in stdout and stderr; its exit goes to
// exited.
func spawn(t *testing.T, cmd *exec.Cmd, stdout, stderr io.Writer, exited chan<- error) {
	t.Helper()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { exited <- cmd.Wait() }()
}

// waitAPI polls the API listener at addr until it answers (any status)
// and fails the test when within passes first or the process serving it
// exits (exited; nil when the caller watches the process itself).
func waitAPI(t *testing.T, what, addr string, within time.Duration, exited <-chan error, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get("http://" + addr + "/v1.2/nothing")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s API not up within %s: %v\n%s", what, within, err, log)
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited before serving: %v\n%s", what, err, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGINT and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("did not stop within 60s of SIGINT\n%s", p.stderr.String())
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestBinary_RunStartsServesAndStopsCleanly is `make run` as a user sees it:
// the built binary on embedded defaults answers /healthz, its broker lists
// the topics, the principals command works against it, and SIGINT stops it
// with every child server gone.
func TestBinary_RunStartsServesAndStopsCleanly(t *testing.T) {
	p := startBinary(t)
	resp, err := http.Get("http://" + p.ops + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if !strings.Contains(p.stdout.String(), "demo-reseller-secret") || !strings.Contains(p.stdout.String(), p.api) {
		t.Errorf("banner lacks listeners or demo credentials:\n%s", p.stdout.String())
	}

	if kcat, err := exec.LookPath("kcat"); err == nil || lookKafkacat(&kcat) {
		out, err := exec.Command(kcat, "-L", "-b", p.kafka, "-m", "5").CombinedOutput()
		if err != nil {
			t.Fatalf("kcat -L: %v\n%s", err, out)
		}
		for _, topic := range schemas.TopicNames() {
			if !strings.Contains(string(out), `"`+topic+`"`) {
				t.Errorf("kcat -L does not list %s", topic)
			}
		}
	} else {
		t.Log("kcat not installed; topic listing checked by the stream tests only")
	}

	// A live scrape passes promtool's metric lint (CI installs promtool).
	if promtool, err := exec.LookPath("promtool"); err == nil {
		scrape := p.metrics(t)
		if !bytes.Contains(scrape, []byte("switchback_build_info")) || !bytes.Contains(scrape, []byte("switchback_query_requests_total")) || !bytes.Contains(scrape, []byte("switchback_dispatcher_backlog_limit")) {
			t.Errorf("scrape lacks the stage metrics:\n%.2000s", scrape)
		}
		check := exec.Command(promtool, "check", "metrics")
		check.Stdin = bytes.NewReader(scrape)
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on a live scrape: %v\n%s", err, out)
		}
	} else if os.Getenv("SWITCHBACK_REQUIRE_INTEGRATION") == "1" {
		t.Errorf("promtool not installed (Debian package prometheus) and SWITCHBACK_REQUIRE_INTEGRATION=1: live scrape not linted")
	} else {
		t.Log("promtool not installed; live scrape not linted")
	}

	// The embedded broker of `run` takes principals from this process
	// only (issue 18): the CLI, another process, is refused at once with
	// the broker's authorization error and creates nothing; it reads.
	pc := exec.Command(buildBinary(t), "principals", "create", "--role", "operator", "--name", "CLI operator")
	pc.Env = p.env
	out, err := pc.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Topic Authorization Failed") || strings.Contains(string(out), "secret:") {
		t.Fatalf("principals create against run's embedded broker: %v\n%s; want refused", err, out)
	}
	// The API, served by the process itself, creates them.
	admin := client{t, "http://" + p.api, "demo-admin", "demo-admin-secret"}
	if status, got, _ := admin.do("POST", "/admin/v1/principals", `{"role":"operator","name":"API operator"}`); status != 201 {
		t.Fatalf("create a principal through the API: %d %v", status, got)
	}
	pl := exec.Command(buildBinary(t), "principals", "list")
	pl.Env = p.env
	out, err = pl.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "API operator") || strings.Contains(string(out), "CLI operator") || strings.Contains(string(out), "demo-admin-secret") {
		t.Fatalf("principals list: %v\n%s", err, out)
	}

	p.stop(t)
	if left := processesUnder(t, p.data); len(left) > 0 {
		t.Errorf("processes left running after stop: %v", left)
	}
}

func lookKafkacat(path *string) bool {
	p, err := exec.LookPath("kafkacat")
	if err != nil {
		return false
	}
	*path = p
	return true
}

// processesUnder lists live processes whose command line mentions dir: the
// child servers keep their config and data there.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var left []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("/proc", e.Name(), "cmdline")); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cl := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cl, dir) {
			left = append(left, e.Name()+": "+cl)
		}
	}
	return left
}

// lockedBuffer is written by exec's copying goroutine while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The README's configuration table is the output of `switchback config`;
// this keeps the two from drifting apart.
func TestREADME_ConfigurationTableMatchesTheCode(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run([]string{"config"}, &out, &bytes.Buffer{}); code != 0 {
		t.Fatal("switchback config failed")
	}
	if !bytes.Contains(readme, bytes.TrimSpace(out.Bytes())) {
		t.Errorf("README.md's configuration table differs from `switchback config`; regenerate it:\n%s", out.String())
	}
}

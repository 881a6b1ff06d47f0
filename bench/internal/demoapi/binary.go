package demoapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Binary is a switchback binary started by a load run, as `make run`
// starts it, every port a free loopback one and its data in Dir.
type Binary struct {
	Cmd      *exec.Cmd
	API, Ops string // http://host:port of the API, host:port of the ops listener
	Log      string // path of its stderr
	client   *http.Client
}

// StartBinary starts `bin run` with the demo principals (and the demo's
// data when demoData), free ports and env added (NAME=value), and waits
// until its API answers.
func StartBinary(bin, dir string, demoData bool, env ...string) (*Binary, error) {
	var addrs [7]string
	for i := range addrs {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(), "SWITCHBACK_DATA_DIR="+filepath.Join(dir, "var"), "SWITCHBACK_HTTP_ADDR="+addrs[0],
		"SWITCHBACK_OPS_ADDR="+addrs[1], "SWITCHBACK_EMBEDDED_KAFKA_ADDR="+addrs[2], "SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR="+addrs[3],
		"SWITCHBACK_DEMO_SINK_ADDR="+addrs[4], "SWITCHBACK_DEMO_BOOKINGSYSTEM_ADDR="+addrs[5], "SWITCHBACK_DEMO_PARTNER_ADDR="+addrs[6],
		"SWITCHBACK_DEMO=true", fmt.Sprintf("SWITCHBACK_DEMO_DATA=%v", demoData),
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true",
		"SWITCHBACK_OUTBOUND_ALLOW_HTTP=true", "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE=true",
		"SWITCHBACK_LOG_LEVEL=warn")
	cmd.Env = append(cmd.Env, env...)
	logPath := filepath.Join(dir, "switchback.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = io.Discard, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	b := &Binary{Cmd: cmd, API: "http://" + addrs[0], Ops: addrs[1], Log: logPath, client: &http.Client{Timeout: 60 * time.Second}}
	for deadline := time.Now().Add(120 * time.Second); ; {
		if _, _, err := b.Call(Operator, "GET", "/channel/v1.2/suppliers", ""); err == nil {
			return b, nil
		}
		if time.Now().After(deadline) {
			b.Stop()
			return nil, fmt.Errorf("switchback did not start; log in %s", logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Call sends one request to the binary's API as who.
func (b *Binary) Call(who Cred, method, path, body string) (int, []byte, error) {
	return Call(b.client, b.API, who, method, path, body)
}

// Stop interrupts the binary and waits for it (a minute at most, then
// kills it).
func (b *Binary) Stop() {
	_ = b.Cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = b.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = b.Cmd.Process.Kill()
		<-done
	}
}

// Warnings returns the binary's WARN and ERROR log lines so far (at most n).
func (b *Binary) Warnings(n int) []string {
	f, err := os.Open(b.Log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && len(out) < n {
		if l := sc.Text(); strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// Pid is the binary's process id.
func (b *Binary) Pid() int { return b.Cmd.Process.Pid }

var errNoProfile = errors.New("no profile")

// Profile fetches a CPU profile of d from the binary's ops listener.
func (b *Binary) Profile(d time.Duration) ([]byte, error) {
	secs := max(int(d.Seconds()), 1)
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.Ops, secs))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: status %d", errNoProfile, resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

package main

// Helpers of the dependency faults (issue 9): a TCP proxy that can cut a
// dependency off, a redis-server the test can kill and start again, and
// the process figures read from a binary's /metrics.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// faultProxy forwards TCP connections from a loopback port to target.
// cut closes every connection and refuses new ones (accepted, then closed
// at once: a dependency that is down); mend forwards again.
type faultProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
			p.mu.Lock()
			delete(p.conns, dst)
			delete(p.conns, src)
			p.mu.Unlock()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// cut takes the dependency down: open connections are closed, new ones
// refused.
func (p *faultProxy) cut() {
	p.mu.Lock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

// mend brings it back.
func (p *faultProxy) mend() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// redisProc is a redis-server the test owns: it can be killed and started
// again on the same port and directory (its append-only file as a real
// deployment's: fsync every second).
type redisProc struct {
	t    *testing.T
	path string
	dir  string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedisProc(t *testing.T) *redisProc {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("SWITCHBACK_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("redis-server not installed: %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
	r := &redisProc{t: t, path: path, dir: t.TempDir(), addr: freeAddr(t)}
	r.start()
	t.Cleanup(func() { r.kill() })
	return r
}

func (r *redisProc) url() string { return "redis://" + r.addr + "/0" }

func (r *redisProc) start() {
	r.t.Helper()
	host, port, _ := net.SplitHostPort(r.addr)
	r.cmd = exec.Command(r.path, "--bind", host, "--port", port, "--dir", r.dir, "--appendonly", "yes",
		"--appendfsync", "everysec", "--save", "", "--daemonize", "no", "--logfile", filepath.Join(r.dir, "redis.log"))
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(r.cmd, r.done)
	c := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s not answering within 30s", r.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *redisProc) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

func (r *redisProc) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.addr})
}

// procFigures are what a process's /metrics says of its own resources
// (the Go and process collectors of the Prometheus client).
type procFigures struct {
	RSS, HeapInuse, Goroutines, FDs float64
}

// metrics reads /metrics of the binary's ops listener as text.
func (p *proc) metrics(t *testing.T) []byte {
	t.Helper()
	resp, err := http.Get("http://" + p.ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return raw
}

// readyDep is one dependency as /readyz reports it.
type readyDep struct{ Status, Mode, Kind string }

// readyz reads the binary's /readyz: its HTTP status (0 when it did not
// answer) and its dependencies by name.
func (p *proc) readyz() (int, map[string]readyDep, error) {
	resp, err := http.Get("http://" + p.ops + "/readyz")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var rz struct {
		Dependencies map[string]readyDep `json:"dependencies"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rz); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, rz.Dependencies, nil
}

// scrape reads /metrics of the ops listener at ops and returns every
// sample without labels by name, and the sum over labels of the others.
func scrape(ops string) (map[string]float64, error) {
	resp, err := http.Get("http://" + ops + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("/metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name := line[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			out[name] = v // the full series, labels included
			name = name[:i]
		}
		out[name] += v
	}
	return out, sc.Err()
}

func figuresOf(ops string) (procFigures, error) {
	m, err := scrape(ops)
	if err != nil {
		return procFigures{}, err
	}
	return procFigures{RSS: m["process_resident_memory_bytes"], HeapInuse: m["go_memstats_heap_inuse_bytes"],
		Goroutines: m["go_goroutines"], FDs: m["process_open_fds"]}, nil
}

// settledFigures samples a process's figures a few times after the load
// stopped and returns the lowest of each: goroutines of requests just
// answered and garbage not yet collected come and go; growth is what stays.
func settledFigures(t *testing.T, ops string) procFigures {
	t.Helper()
	var best procFigures
	for i := range 5 {
		f, err := figuresOf(ops)
		if err != nil {
			t.Fatalf("scrape %s: %v", ops, err)
		}
		if i == 0 {
			best = f
		} else {
			best.RSS, best.HeapInuse = min(best.RSS, f.RSS), min(best.HeapInuse, f.HeapInuse)
			best.Goroutines, best.FDs = min(best.Goroutines, f.Goroutines), min(best.FDs, f.FDs)
		}
		time.Sleep(time.Second)
	}
	return best
}

// stableFigures is settledFigures once two in a row agree (goroutines
// within 5, fds within 2), at most 6 tries: a baseline taken while the
// process is still starting would charge its start-up to the fault.
func stableFigures(t *testing.T, ops string) procFigures {
	t.Helper()
	prev := settledFigures(t, ops)
	for range 5 {
		cur := settledFigures(t, ops)
		if cur.Goroutines-prev.Goroutines <= 5 && cur.FDs-prev.FDs <= 2 {
			return cur
		}
		prev = cur
	}
	return prev
}

// growth checks that after is within tolerance of before: goroutines and
// open fds by count, memory by ratio. It returns what grew past it.
func growth(before, after procFigures, goroutines, fds float64, memRatio float64) []string {
	var out []string
	if after.Goroutines > before.Goroutines+goroutines {
		out = append(out, fmt.Sprintf("goroutines %.0f -> %.0f (tolerance +%.0f)", before.Goroutines, after.Goroutines, goroutines))
	}
	if after.FDs > before.FDs+fds {
		out = append(out, fmt.Sprintf("open fds %.0f -> %.0f (tolerance +%.0f)", before.FDs, after.FDs, fds))
	}
	if after.HeapInuse > before.HeapInuse*memRatio {
		out = append(out, fmt.Sprintf("heap in use %.1f -> %.1f MiB (tolerance x%.2f)", before.HeapInuse/(1<<20), after.HeapInuse/(1<<20), memRatio))
	}
	return out
}

func (f procFigures) String() string {
	return fmt.Sprintf("rss_mib=%.1f heap_inuse_mib=%.1f goroutines=%.0f fds=%.0f", f.RSS/(1<<20), f.HeapInuse/(1<<20), f.Goroutines, f.FDs)
}

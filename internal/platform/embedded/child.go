// Package embedded owns the servers that Switchback runs as children of its
// own process: redis-server (or in-process miniredis when no redis-server is
// installed) and clickhouse-server. Embedded mode (`switchback run` without
// SWITCHBACK_REDIS_URL / SWITCHBACK_CLICKHOUSE_URL) and the integration test
// harness use the same code, so what the tests prove is what `make run` does.
//
// A child listens on loopback only, keeps its data and its logs under the
// DataDir it is given (never on our stdout), is restarted if it dies after it
// was ready, and dies with us: Close stops it (SIGTERM, then SIGKILL) and
// waits for it, and on Linux the kernel kills it if our process is killed
// (Pdeathsig), so a kill -9 of switchback leaves no orphan holding ports or
// data files.
//
// The package starts and stops servers; it does not decide what to do when
// one is missing (the caller parks history when ClickHouse is absent) and it
// holds no clients for callers to share.
package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
)

// ErrNotInstalled reports that the server binary is not on this machine.
var ErrNotInstalled = errors.New("server binary not installed")

// ErrDataDirInUse is a data directory that a live server of another
// switchback instance uses: never fall back past it (two instances on one
// data directory would not see each other's data).
var ErrDataDirInUse = errors.New("another switchback instance uses this data directory")

// childSpec says how to run one supervised server.
type childSpec struct {
	name        string   // what logs call it: "redis-server"
	path        string   // absolute path of the binary
	args        []string // arguments after argv[0]
	env         []string // extra environment on top of ours
	dir         string   // working directory; also how a stale orphan is recognised
	logPath     string   // the child's stdout and stderr
	pidPath     string   // written by us, removed on Close
	stopTimeout time.Duration
	log         *slog.Logger
	// nice, when > 0, lowers the child's CPU priority (lowerPriority) right
	// after each start: for a server whose work can wait while the
	// latency path of the process needs the cores.
	nice int
}

// child is one supervised server process. Before markReady an exit is a
// failed start (the supervisor ends and the caller reports it); after it an
// exit is a crash and the supervisor restarts the server with the same
// arguments, so clients holding its URL reconnect to the same port.
type child struct {
	spec childSpec

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the current process has been reaped
	ready  bool

	stop     chan struct{} // closed by close
	stopOnce sync.Once
	done     chan struct{} // closed when the supervisor returns
	closeErr error
}

// startChild clears a stale pid file, starts the process and its supervisor.
func startChild(spec childSpec) (*child, error) {
	if err := reapStale(spec); err != nil {
		return nil, err
	}
	c := &child{spec: spec, stop: make(chan struct{}), done: make(chan struct{})}
	exited, err := c.launch()
	if err != nil {
		return nil, err
	}
	go c.supervise(exited)
	return c, nil
}

// launch starts one process. It holds mu across the stop check and Start so
// that close never misses a process started concurrently with it.
func (c *child) launch() (chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stop:
		return nil, errors.New("stopping")
	default:
	}
	logf, err := os.OpenFile(c.spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", c.spec.name, err)
	}
	// The child gets its own descriptor on exec; ours can go right away.
	defer logf.Close()
	cmd := exec.Command(c.spec.path, c.spec.args...)
	cmd.Dir = c.spec.dir
	cmd.Env = append(os.Environ(), c.spec.env...)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.spec.name, err)
	}
	if err := os.WriteFile(c.spec.pidPath, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		c.spec.log.Warn("cannot write pid file", "path", c.spec.pidPath, "err", err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		c.spec.log.Debug("child exited", "pid", cmd.Process.Pid, "status", exitStatus(err))
		close(exited)
	}()
	c.cmd, c.exited = cmd, exited
	c.renice()
	c.spec.log.Info("child started", "binary", c.spec.path, "pid", cmd.Process.Pid, "log", c.spec.logPath)
	return exited, nil
}

// renice applies spec.nice to every thread the current process has. Threads
// it starts later inherit their creator's value, so once right after the
// start covers the pools a server starts as it initializes, and once more
// after it is ready (markReady) catches any started before the first.
// The caller holds mu.
func (c *child) renice() {
	if c.spec.nice <= 0 || c.cmd == nil || c.cmd.Process == nil {
		return
	}
	if err := lowerPriority(c.cmd.Process.Pid, c.spec.nice); err != nil {
		c.spec.log.Warn("could not lower the child's CPU priority (it competes with the latency path)", "nice", c.spec.nice, "error", err)
	}
}

// supervise waits for the current process and restarts it after a crash,
// with a backoff that resets once a process stayed up for a minute.
func (c *child) supervise(exited chan struct{}) {
	defer close(c.done)
	restart := backoff.New(250*time.Millisecond, 30*time.Second)
	startedAt := time.Now()
	for {
		select {
		case <-exited:
		case <-c.stop:
			return // close signals and reaps the process itself
		}
		select {
		case <-c.stop:
			return
		default:
		}
		c.mu.Lock()
		ready, cmd := c.ready, c.cmd
		c.mu.Unlock()
		if !ready {
			return // a failed start: the caller reports it with the log tail
		}
		if time.Since(startedAt) > time.Minute {
			restart.Reset()
		}
		delay := restart.Next()
		c.spec.log.Error("child exited unexpectedly; restarting",
			"pid", cmd.Process.Pid, "status", cmd.ProcessState.String(), "restart_in", delay, "log", c.spec.logPath)
		for {
			select {
			case <-c.stop:
				return
			case <-time.After(delay):
			}
			next, err := c.launch()
			if err == nil {
				exited, startedAt = next, time.Now()
				break
			}
			delay = restart.Next()
			c.spec.log.Error("child restart failed", "err", err, "retry_in", delay)
		}
	}
}

// markReady turns later exits from start failures into crashes to restart,
// and lowers the priority of the threads the server started while it came up.
func (c *child) markReady() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ready = true
	c.renice()
}

// pid is the current process id (it changes when the child is restarted).
func (c *child) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// close stops the supervisor, then the process: SIGTERM so the server can
// flush (Redis fsyncs its append-only file, ClickHouse finishes its parts),
// SIGKILL after stopTimeout. It returns once the process has been reaped.
func (c *child) close() error {
	c.stopOnce.Do(func() {
		close(c.stop)
		c.mu.Lock()
		cmd, exited := c.cmd, c.exited
		c.mu.Unlock()
		if cmd != nil {
			select {
			case <-exited:
			default:
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(c.spec.stopTimeout):
					c.spec.log.Warn("child did not stop after SIGTERM; killing", "pid", cmd.Process.Pid, "timeout", c.spec.stopTimeout)
					_ = cmd.Process.Kill()
					<-exited
					c.closeErr = fmt.Errorf("%s (pid %d) ignored SIGTERM for %s and was killed", c.spec.name, cmd.Process.Pid, c.spec.stopTimeout)
				}
			}
		}
		<-c.done
		_ = os.Remove(c.spec.pidPath)
		c.spec.log.Info("child stopped", "name", c.spec.name)
	})
	return c.closeErr
}

// waitReady polls probe until it succeeds, the process exits, ctx ends or
// timeout passes. Errors carry the tail of the child's logs, which is where
// the reason a server did not start is written.
func (c *child) waitReady(ctx context.Context, timeout time.Duration, probe func(ctx context.Context) error, logs ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	poll := backoff.New(20*time.Millisecond, 250*time.Millisecond)
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		last = probe(pctx)
		pcancel()
		if last == nil {
			c.markReady()
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited during start-up: %s", c.spec.name, logTail(logs...))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last probe: %v): %s", c.spec.name, timeout, last, logTail(logs...))
		case <-time.After(poll.Next()):
		}
	}
}

// reapStale handles the pid file a previous run left behind. Pdeathsig makes
// orphans rare, but not impossible (another OS, a parent that died between
// fork and prctl), and a second server on the same data directory would
// corrupt it. A live process whose working directory is ours and whose
// parent is init is our orphan: it is killed. One with a live parent belongs
// to another running instance: that is an error, not something to kill.
func reapStale(spec childSpec) error {
	b, err := os.ReadFile(spec.pidPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !processAlive(pid) || !sameDir(pid, spec.dir) {
		spec.log.Info("removing stale pid file from an unclean stop", "path", spec.pidPath)
		return os.Remove(spec.pidPath)
	}
	if ppid := parentPID(pid); ppid != 1 {
		return fmt.Errorf("%s (pid %d, parent %d) is already running on %s: %w", spec.name, pid, ppid, spec.dir, ErrDataDirInUse)
	}
	spec.log.Warn("killing orphaned child of a previous run", "pid", pid, "dir", spec.dir)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("orphaned %s (pid %d) survived SIGKILL", spec.name, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return os.Remove(spec.pidPath)
}

// processAlive reports whether pid runs. A zombie (killed, not yet reaped by
// a parent that does not reap) counts as dead: it holds no ports or files.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// Field 3 follows the parenthesised command name, which may hold spaces.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

func parentPID(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return -1
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// sameDir reports whether pid runs in dir, which is how our children are
// told apart from an unrelated process that reused the pid.
func sameDir(pid int, dir string) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return false
	}
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	return cwd == want
}

// logTail returns the last lines of the given log files, for error messages.
func logTail(paths ...string) string {
	var parts []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		const max = 2048
		if st, err := f.Stat(); err == nil && st.Size() > max {
			_, _ = f.Seek(st.Size()-max, io.SeekStart)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		if s := strings.TrimSpace(strings.Join(lines, " | ")); s != "" {
			parts = append(parts, filepath.Base(p)+": "+s)
		}
	}
	if len(parts) == 0 {
		return "no log output"
	}
	return strings.Join(parts, "; ")
}

func exitStatus(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// freePort asks the kernel for a free loopback port. Another process can take
// it before the child binds it; starters retry with new ports when the
// child's log says the address was in use (addrInUse).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// addrInUse reports whether a start failure was a lost race for a port.
func addrInUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ddress already in use")
}

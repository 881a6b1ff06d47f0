package testharness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisNode is one redis-server a test started (a cluster node, a
// Sentinel-managed server or a sentinel).
type RedisNode struct {
	Addr string
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Kill stops the node with SIGKILL (a crash: no shutdown, no save) and
// waits for it to exit.
func (n *RedisNode) Kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Alive reports whether the process still runs.
func (n *RedisNode) Alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.done:
		return false
	default:
		return n.cmd != nil
	}
}

// RedisCluster is a Redis Cluster of redis-server processes on free
// loopback ports: Masters masters, each with one replica.
type RedisCluster struct {
	Nodes []*RedisNode
	// Timeout is the cluster-node-timeout: how long a master may be
	// unreachable before its replica is promoted.
	Timeout time.Duration
}

// URL is the cluster's seed URL in SWITCHBACK_REDIS_URL's cluster form.
func (c *RedisCluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr
	for i, n := range c.Nodes[1:] {
		if i == 0 {
			u += "?addr=" + n.Addr
		} else {
			u += "&addr=" + n.Addr
		}
	}
	return u
}

// Client is a cluster client for the test's own checks, closed at the end.
func (c *RedisCluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 64})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Masters are the nodes that are masters now (by CLUSTER NODES as one live
// node sees it).
func (c *RedisCluster) Masters(ctx context.Context) ([]*RedisNode, error) {
	for _, n := range c.Nodes {
		if !n.Alive() {
			continue
		}
		out, err := nodeCmd(ctx, n.Addr, "CLUSTER", "NODES")
		if err != nil {
			continue
		}
		var ms []*RedisNode
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			// A master serving slots: right after the cluster's creation a
			// replica-to-be may still say master, without slots.
			if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			for _, m := range c.Nodes {
				if m.Addr == addr {
					ms = append(ms, m)
				}
			}
		}
		return ms, nil
	}
	return nil, errors.New("no live node")
}

// StartRedisCluster starts masters masters and as many replicas
// (redis-server, cluster mode, no persistence) on free loopback ports,
// creates the cluster with redis-cli --cluster create, waits until every
// node says cluster_state:ok, and stops every node when the test ends. The
// node timeout is 1 s (a dead master's replica is promoted in about two).
func StartRedisCluster(t testing.TB, masters int) *RedisCluster {
	t.Helper()
	skipShort(t)
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, tool, err)
		}
	}
	c := &RedisCluster{Timeout: time.Second}
	for range 2 * masters {
		n := startRedisNode(t, []string{"--cluster-enabled", "yes", "--cluster-node-timeout", strconv.Itoa(int(c.Timeout.Milliseconds())),
			"--cluster-config-file", "nodes.conf", "--cluster-require-full-coverage", "no"}, true)
		c.Nodes = append(c.Nodes, n)
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	// A replica that never synced cannot be promoted: wait for every
	// replica's link to its master.
	for _, n := range c.Nodes {
		for {
			info, err := nodeCmd(ctx, n.Addr, "INFO", "replication")
			if err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("replica %s never synced: %s", n.Addr, info)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return c
}

// WaitOK waits until every live node says cluster_state:ok and agrees on
// the masters (every slot served).
func (c *RedisCluster) WaitOK(ctx context.Context) error {
	for {
		ok := true
		for _, n := range c.Nodes {
			if !n.Alive() {
				continue
			}
			out, err := nodeCmd(ctx, n.Addr, "CLUSTER", "INFO")
			if err != nil || !strings.Contains(out, "cluster_state:ok") || !strings.Contains(out, "cluster_slots_ok:16384") {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Redis Cluster did not become ok: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitFailover waits until the live nodes no longer count dead among the
// masters, as many masters as before serve every slot, and the cluster is
// ok again.
func (c *RedisCluster) WaitFailover(ctx context.Context, dead *RedisNode, masters int) error {
	for {
		ms, err := c.Masters(ctx)
		if err == nil && len(ms) == masters {
			gone := true
			for _, m := range ms {
				if m == dead {
					gone = false
				}
			}
			if gone {
				return c.WaitOK(ctx)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no replica took over from %s: %w", dead.Addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// RedisSentinel is a master, one replica and three sentinels (quorum 2)
// watching it under MasterName.
type RedisSentinel struct {
	MasterName string
	Servers    []*RedisNode // [0] the first master, [1] its replica
	Sentinels  []*RedisNode
	// DownAfter is the sentinels' down-after-milliseconds.
	DownAfter time.Duration
}

// SentinelAddrs are the sentinels' host:port, comma-separated (as
// SWITCHBACK_REDIS_SENTINEL_ADDRS).
func (s *RedisSentinel) SentinelAddrs() string {
	a := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		a[i] = n.Addr
	}
	return strings.Join(a, ",")
}

// Master asks a sentinel for the master's address.
func (s *RedisSentinel) Master(ctx context.Context) (string, error) {
	for _, n := range s.Sentinels {
		out, err := nodeCmd(ctx, n.Addr, "SENTINEL", "get-master-addr-by-name", s.MasterName)
		if err == nil {
			f := strings.Fields(out)
			if len(f) == 2 {
				return net.JoinHostPort(f[0], f[1]), nil
			}
		}
	}
	return "", errors.New("no sentinel names the master")
}

// StartRedisSentinel starts the servers and sentinels on free loopback
// ports, waits until the replica is in sync and every sentinel knows the
// others, and stops them when the test ends.
func StartRedisSentinel(t testing.TB) *RedisSentinel {
	t.Helper()
	skipShort(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing(t, "redis-server", err)
	}
	s := &RedisSentinel{MasterName: "switchback", DownAfter: time.Second}
	master := startRedisNode(t, nil, false)
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := startRedisNode(t, []string{"--replicaof", host, port}, false)
	s.Servers = []*RedisNode{master, replica}
	for range 3 {
		n := startRedisNode(t, nil, false, "sentinel monitor "+s.MasterName+" "+host+" "+port+" 2",
			"sentinel down-after-milliseconds "+s.MasterName+" "+strconv.Itoa(int(s.DownAfter.Milliseconds())),
			"sentinel failover-timeout "+s.MasterName+" 5000",
			"sentinel parallel-syncs "+s.MasterName+" 1")
		s.Sentinels = append(s.Sentinels, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		info, _ := nodeCmd(ctx, replica.Addr, "INFO", "replication")
		known := 0
		for _, n := range s.Sentinels {
			out, _ := nodeCmd(ctx, n.Addr, "SENTINEL", "master", s.MasterName)
			if strings.Contains(out, "num-other-sentinels\n2") && strings.Contains(out, "num-slaves\n1") {
				known++
			}
		}
		if strings.Contains(info, "master_link_status:up") && known == len(s.Sentinels) {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the sentinels did not settle: %s", info)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startRedisNode starts one redis-server (a sentinel when sentinel lines
// are given) on a free loopback port, stopped when the test ends.
func startRedisNode(t testing.TB, args []string, cluster bool, sentinel ...string) *RedisNode {
	t.Helper()
	var lastErr error
	for range 5 {
		port, err := freeLoopbackPort()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		conf := filepath.Join(dir, "redis.conf")
		lines := []string{"bind 127.0.0.1", "port " + strconv.Itoa(port), "dir " + dir, `save ""`, "appendonly no",
			"daemonize no", "protected-mode no", "repl-diskless-sync-delay 0", "logfile " + filepath.Join(dir, "redis.log")}
		if cluster {
			bus, err := freeLoopbackPort()
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, "cluster-port "+strconv.Itoa(bus))
		}
		lines = append(lines, sentinel...)
		if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmdArgs := append([]string{conf}, args...)
		if len(sentinel) > 0 {
			cmdArgs = append(cmdArgs, "--sentinel")
		}
		cmd := exec.Command("redis-server", cmdArgs...)
		cmd.SysProcAttr = childAttr()
		if err := startOnSpawner(cmd); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		n := &RedisNode{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(n.done) }()
		t.Cleanup(n.Kill)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lastErr = waitPing(ctx, n)
		cancel()
		if lastErr == nil {
			return n
		}
		n.Kill()
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		lastErr = fmt.Errorf("%w\n%s", lastErr, log)
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

func waitPing(ctx context.Context, n *RedisNode) error {
	for {
		if !n.Alive() {
			return errors.New("redis-server exited")
		}
		if out, err := nodeCmd(ctx, n.Addr, "PING"); err == nil && out == "PONG" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nodeCmd runs one command on one server (no cluster redirection) and
// returns its answer as text.
func nodeCmd(ctx context.Context, addr string, args ...any) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return "", err
	}
	return flatten(v), nil
}

func flatten(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = flatten(e)
		}
		return strings.Join(parts, "\n")
	case map[any]any:
		var parts []string
		for k, e := range x {
			parts = append(parts, flatten(k), flatten(e))
		}
		return strings.Join(parts, "\n")
	default:
		return fmt.Sprint(x)
	}
}

func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr is a loopback address nothing listens on (for now: another
// process may take the port before the test does).
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// spawner starts the servers from one goroutine locked to its OS thread
// for the life of the test binary: Pdeathsig fires when the thread that
// forked the child exits, and the Go runtime may retire the threads of
// other goroutines.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func startOnSpawner(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the binary
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd, done}
	return <-done
}

// childAttr kills the server with the test binary (a crashed test leaves
// no server holding ports).
func childAttr() *syscall.SysProcAttr { return sysProcAttr() }

// EnvTestRedis chooses the Redis the store tests run on: unset or "single"
// a redis-server per test, "cluster" a Redis Cluster (3 masters, 3
// replicas) shared by the test binary and emptied (FLUSHALL on every
// master) at the start of every test that asks for it.
const EnvTestRedis = "SWITCHBACK_TEST_REDIS"

// ClusterMode reports whether SWITCHBACK_TEST_REDIS=cluster.
func ClusterMode() bool { return os.Getenv(EnvTestRedis) == "cluster" }

var sharedCluster struct {
	mu sync.Mutex
	c  *RedisCluster
	t  *sharedTB
}

// RedisClient is a client of the Redis this test runs on
// (SWITCHBACK_TEST_REDIS): a *redis.Client of a redis-server of its own, or
// a *redis.ClusterClient of the binary's shared cluster, emptied for it.
// poolSize 0 keeps go-redis's default. Closed when the test ends.
func RedisClient(t testing.TB, poolSize int) redis.UniversalClient {
	t.Helper()
	if !ClusterMode() {
		opts, err := redis.ParseURL(Redis(t))
		if err != nil {
			t.Fatal(err)
		}
		opts.PoolSize = poolSize
		c := redis.NewClient(opts)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	url := SharedRedisClusterURL(t)
	opts, err := redis.ParseClusterURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.PoolSize = poolSize
	c := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// SharedRedisClusterURL is the seed URL of the test binary's shared
// cluster (started on first use, killed with the binary: Pdeathsig, and
// by Main), emptied for this test.
func SharedRedisClusterURL(t testing.TB) string {
	t.Helper()
	skipShort(t)
	sharedCluster.mu.Lock()
	defer sharedCluster.mu.Unlock()
	if sharedCluster.c == nil {
		tb := &sharedTB{TB: t}
		sharedCluster.t = tb
		func() {
			defer func() {
				if r := recover(); r != nil && r != errSharedFatal {
					panic(r)
				}
			}()
			sharedCluster.c = StartRedisCluster(tb, 3)
		}()
		if tb.failed != "" {
			sharedCluster.c = nil
			t.Fatalf("start the shared Redis Cluster: %s", tb.failed)
		}
	}
	c := sharedCluster.c
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ms, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := nodeCmd(ctx, m.Addr, "FLUSHALL", "SYNC"); err != nil {
			t.Fatalf("empty the shared cluster: %v", err)
		}
	}
	return c.URL()
}

// stopSharedCluster stops the shared cluster's nodes (Main).
func stopSharedCluster() {
	sharedCluster.mu.Lock()
	defer sharedCluster.mu.Unlock()
	if sharedCluster.t != nil {
		sharedCluster.t.runCleanups()
	}
	sharedCluster.c = nil
}

var errSharedFatal = errors.New("shared cluster start failed")

// sharedTB runs StartRedisCluster outside any one test: its cleanups run at
// stopSharedCluster (or never: the nodes die with the binary), its
// failures are reported to the test that started it.
type sharedTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failed   string
}

func (s *sharedTB) Helper() {}
func (s *sharedTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}
func (s *sharedTB) TempDir() string {
	d, err := os.MkdirTemp("", "switchback-redis-cluster-")
	if err != nil {
		s.Fatalf("temp dir: %v", err)
	}
	s.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}
func (s *sharedTB) Fatalf(format string, args ...any) {
	s.failed = fmt.Sprintf(format, args...)
	panic(errSharedFatal)
}
func (s *sharedTB) Fatal(args ...any) { s.Fatalf("%s", fmt.Sprint(args...)) }
func (s *sharedTB) Skipf(format string, args ...any) {
	s.Fatalf("skipped: "+format, args...)
}
func (s *sharedTB) runCleanups() {
	s.mu.Lock()
	fs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// FlushAll empties every master (the replicas follow), so that a test
// using the cluster after another sees none of its keys.
func (c *RedisCluster) FlushAll(ctx context.Context) error {
	ms, err := c.Masters(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if _, err := nodeCmd(ctx, m.Addr, "FLUSHALL", "SYNC"); err != nil {
			return fmt.Errorf("flush %s: %w", m.Addr, err)
		}
	}
	return nil
}

// FlushAll empties what rdb reaches: FLUSHALL on one server, on every
// master of a cluster (a cluster client's FLUSHALL reaches one node).
func FlushAll(ctx context.Context, rdb redis.UniversalClient) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() })
	}
	return rdb.FlushAll(ctx).Err()
}

// Keys lists the keys matching pattern on one server, or on every master
// of a cluster.
func Keys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return rdb.Keys(ctx, pattern).Result()
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		ks, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, ks...)
		mu.Unlock()
		return err
	})
	return all, err
}

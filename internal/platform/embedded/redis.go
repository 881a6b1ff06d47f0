package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Kinds of embedded Redis, as Redis.Kind reports them.
const (
	KindRedisServer = "redis-server"
	KindMiniredis   = "miniredis"
)

const (
	redisStartTimeout = 15 * time.Second
	redisStopTimeout  = 10 * time.Second
	// miniredisTick is how often miniredis' clock is advanced. Keys expire at
	// most this late, which nothing in Switchback can tell apart from Redis'
	// own lazy expiry.
	miniredisTick = 100 * time.Millisecond
)

// RedisOptions configure StartRedis.
type RedisOptions struct {
	// DataDir holds redis-server's append-only file and its log. Required
	// for redis-server; unused by miniredis (which keeps nothing).
	DataDir string
	// Addr is the listen address; "" picks a free loopback port.
	Addr string
	// Logger receives start/stop/crash events; nil discards them.
	Logger *slog.Logger
	// PreferMiniredis skips redis-server even when it is installed.
	PreferMiniredis bool
	// RequireServer makes a missing redis-server an ErrNotInstalled error
	// instead of a fall back to miniredis (the test harness wants a real one).
	RequireServer bool
}

// Redis is a running embedded Redis: a redis-server child or miniredis.
type Redis struct {
	kind string
	addr string

	child *child // redis-server

	mini     *miniredis.Miniredis
	tickStop chan struct{}
	tickDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// StartRedis starts redis-server as a supervised child when it is on PATH
// (and not PreferMiniredis), else miniredis in process, and returns once the
// server answers PING. ctx bounds the start only: the server runs until
// Close.
func StartRedis(ctx context.Context, opts RedisOptions) (*Redis, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !opts.PreferMiniredis {
		path, err := exec.LookPath("redis-server")
		switch {
		case err == nil:
			r, serr := startRedisServer(ctx, path, opts, log)
			if serr == nil || opts.RequireServer || ctx.Err() != nil || errors.Is(serr, ErrDataDirInUse) {
				return r, serr
			}
			// An installed redis-server that will not start (a broken
			// package, an unwritable data dir) must not stop a one-machine
			// run: the same fallback as when it is not installed.
			log.Warn("redis-server did not start; using in-process miniredis (no persistence)", "error", serr)
			return startMiniredis(opts, log)
		case opts.RequireServer:
			return nil, fmt.Errorf("redis-server: %w", ErrNotInstalled)
		}
		log.Info("redis-server not on PATH; using in-process miniredis (no persistence)")
	}
	if opts.RequireServer {
		return nil, errors.New("RequireServer contradicts PreferMiniredis")
	}
	return startMiniredis(opts, log)
}

func startRedisServer(ctx context.Context, path string, opts RedisOptions, log *slog.Logger) (*Redis, error) {
	if opts.DataDir == "" {
		return nil, errors.New("redis-server needs a DataDir")
	}
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redis data dir: %w", err)
	}
	for attempt := 1; ; attempt++ {
		host, port := "127.0.0.1", 0
		if opts.Addr != "" {
			h, p, err := net.SplitHostPort(opts.Addr)
			if err != nil {
				return nil, fmt.Errorf("redis addr %q: %w", opts.Addr, err)
			}
			if port, err = strconv.Atoi(p); err != nil {
				return nil, fmt.Errorf("redis addr %q: bad port", opts.Addr)
			}
			if h != "" {
				host = h
			}
		}
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		r, err := startRedisServerOnce(ctx, path, dir, host, port, log)
		if err == nil || opts.Addr != "" || !addrInUse(err) || attempt == 3 {
			return r, err
		}
		log.Info("redis port taken before redis-server bound it; retrying", "port", port)
	}
}

func startRedisServerOnce(ctx context.Context, path, dir, host string, port int, log *slog.Logger) (*Redis, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	logPath := filepath.Join(dir, "redis-server.log")
	spec := childSpec{
		name: "redis-server",
		path: path,
		// Arguments rather than a config file: nothing of the system's
		// /etc/redis applies. The append-only file makes the view survive a
		// restart of ./var (it is rebuilt from Kafka anyway); RDB snapshots
		// are off so a fork never doubles our memory.
		args: []string{
			"--bind", host,
			"--port", strconv.Itoa(port),
			"--dir", dir,
			"--appendonly", "yes",
			"--save", "",
			"--daemonize", "no",
			"--protected-mode", "yes",
			"--logfile", "",
		},
		dir:         dir,
		logPath:     logPath,
		pidPath:     filepath.Join(dir, "redis-server.pid"),
		stopTimeout: redisStopTimeout,
		log:         log.With("child", "redis-server", "addr", addr),
	}
	c, err := startChild(spec)
	if err != nil {
		return nil, err
	}
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	defer client.Close()
	// PING also fails with LOADING while the append-only file is replayed,
	// so ready means the data is there too.
	if err := c.waitReady(ctx, redisStartTimeout, func(ctx context.Context) error {
		return client.Ping(ctx).Err()
	}, logPath); err != nil {
		_ = c.close()
		return nil, err
	}
	return &Redis{kind: KindRedisServer, addr: addr, child: c}, nil
}

func startMiniredis(opts RedisOptions, log *slog.Logger) (*Redis, error) {
	m := miniredis.NewMiniRedis()
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("miniredis on %s: %w", addr, err)
	}
	r := &Redis{kind: KindMiniredis, addr: m.Addr(), mini: m, tickStop: make(chan struct{}), tickDone: make(chan struct{})}
	// miniredis never expires keys by itself: its clock only moves when told.
	// The ticker moves it with the wall clock so TTLs (holds, cache entries)
	// expire in real time as they do on redis-server.
	go func() {
		defer close(r.tickDone)
		t := time.NewTicker(miniredisTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-r.tickStop:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	log.Info("miniredis started", "addr", r.addr)
	return r, nil
}

// URL is the redis:// URL of database 0.
func (r *Redis) URL() string { return "redis://" + r.addr + "/0" }

// Addr is host:port.
func (r *Redis) Addr() string { return r.addr }

// Kind is KindRedisServer or KindMiniredis.
func (r *Redis) Kind() string { return r.kind }

// PID is the redis-server child's current process id, 0 for miniredis.
func (r *Redis) PID() int {
	if r.child == nil {
		return 0
	}
	return r.child.pid()
}

// Close stops the server and waits until it is gone. It is safe to call more
// than once.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		if r.child != nil {
			r.closeErr = r.child.close()
			return
		}
		close(r.tickStop)
		<-r.tickDone
		r.mini.Close()
	})
	return r.closeErr
}

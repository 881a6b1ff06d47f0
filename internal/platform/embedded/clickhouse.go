package embedded

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

const (
	// clickhouseStartTimeout: 18.16 answers in well under a second on an
	// empty directory, but replaying many parts after an unclean stop, or a
	// current ClickHouse on a slow disk, takes far longer.
	clickhouseStartTimeout = 60 * time.Second
	clickhouseStopTimeout  = 30 * time.Second
	// clickhouseNice is the embedded ClickHouse's CPU priority (nice 15).
	// On one machine its inserts and background merges compete with the
	// change path for the cores; history can wait, a webhook's latency
	// cannot (bench/RESULTS.md, issue 17, eighth session: in four of six
	// alternating pairs at 2,000 changes/s the reniced run had the lower
	// p99; the runs vary too much to prove more).
	clickhouseNice = 15
)

// ClickHouseOptions configure StartClickHouse.
type ClickHouseOptions struct {
	// DataDir gets a clickhouse/ directory with the generated config, the
	// data and the server's logs.
	DataDir string
	// Logger receives start/stop/crash events; nil discards them.
	Logger *slog.Logger
	// Binary is clickhouse-server or the multi-call clickhouse binary; ""
	// looks up clickhouse-server, then clickhouse, on PATH and in the sbin
	// directories where Debian installs the server.
	Binary string
	// Port is the native protocol's port on 127.0.0.1; 0 picks a free one
	// at every start. A fixed port (SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR)
	// lets analysts keep one clickhouse-client command.
	Port int
}

// ClickHouse is a running clickhouse-server child.
type ClickHouse struct {
	addr     string // native protocol
	httpAddr string
	child    *child
}

// StartClickHouse writes a config under DataDir/clickhouse/ with free
// loopback ports, starts clickhouse-server as a supervised child and returns
// once a native-protocol ping succeeds. It returns an error wrapping
// ErrNotInstalled when no binary is found. ctx bounds the start only.
func StartClickHouse(ctx context.Context, opts ClickHouseOptions) (*ClickHouse, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path, args, err := clickhouseBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	if opts.DataDir == "" {
		return nil, errors.New("clickhouse-server needs a DataDir")
	}
	root, err := filepath.Abs(filepath.Join(opts.DataDir, "clickhouse"))
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"data", "log"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, fmt.Errorf("clickhouse data dir: %w", err)
		}
	}
	if opts.Port != 0 {
		// Say which port is taken, rather than a child's log line.
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port)))
		if err != nil {
			return nil, fmt.Errorf("native port %d: %w", opts.Port, err)
		}
		l.Close()
	}
	for attempt := 1; ; attempt++ {
		ch, err := startClickHouseOnce(ctx, path, args, root, opts.Port, log)
		if err == nil || !addrInUse(err) || attempt == 3 {
			return ch, err
		}
		log.Info("clickhouse port taken before the server bound it; retrying")
	}
}

// clickhouseBinary finds the server and the arguments that select it.
func clickhouseBinary(binary string) (string, []string, error) {
	if binary != "" {
		p, err := exec.LookPath(binary)
		if err != nil {
			return "", nil, fmt.Errorf("clickhouse binary %q: %w (%v)", binary, ErrNotInstalled, err)
		}
		return p, serverArgs(p), nil
	}
	// Debian puts clickhouse-server in /usr/sbin, which is not on the PATH
	// of ordinary users.
	candidates := []string{"clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/local/sbin/clickhouse-server", "clickhouse"}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p, serverArgs(p), nil
		}
	}
	return "", nil, fmt.Errorf("clickhouse-server: %w", ErrNotInstalled)
}

// serverArgs: the multi-call binary of current releases needs the "server"
// subcommand; clickhouse-server (a symlink to it, or 18.16's own binary)
// does not.
func serverArgs(path string) []string {
	if filepath.Base(path) == "clickhouse" {
		return []string{"server"}
	}
	return nil
}

func startClickHouseOnce(ctx context.Context, path string, args []string, root string, tcpPort int, log *slog.Logger) (*ClickHouse, error) {
	if tcpPort == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		tcpPort = p
	}
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := clickhouseConfig{
		Root:      root,
		TCPPort:   tcpPort,
		HTTPPort:  httpPort,
		UsersPath: filepath.Join(root, "users.xml"),
	}
	configPath := filepath.Join(root, "config.xml")
	if err := writeTemplate(configPath, clickhouseConfigTmpl, cfg); err != nil {
		return nil, err
	}
	if err := writeTemplate(cfg.UsersPath, clickhouseUsersTmpl, cfg); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tcpPort))
	stdoutLog := filepath.Join(root, "log", "stdout.log")
	errLog := filepath.Join(root, "log", "clickhouse-server.err.log")
	spec := childSpec{
		name: "clickhouse-server",
		path: path,
		args: append(args, "--config-file="+configPath),
		// The watchdog of current releases forks the real server off a
		// monitoring parent; Pdeathsig would then kill only the monitor.
		env:         []string{"CLICKHOUSE_WATCHDOG_ENABLE=0"},
		dir:         root,
		logPath:     stdoutLog,
		pidPath:     filepath.Join(root, "clickhouse-server.pid"),
		stopTimeout: clickhouseStopTimeout,
		log:         log.With("child", "clickhouse-server", "addr", addr),
		nice:        clickhouseNice,
	}
	c, err := startChild(spec)
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, clickhouseStartTimeout, func(ctx context.Context) error {
		return pingClickHouse(ctx, addr)
	}, stdoutLog, errLog); err != nil {
		_ = c.close()
		return nil, err
	}
	return &ClickHouse{addr: addr, httpAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)), child: c}, nil
}

// pingClickHouse is a native-protocol handshake and ping: the same path the
// warehouse client takes, so ready means usable.
func pingClickHouse(ctx context.Context, addr string) error {
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Protocol:    clickhouse.Native,
		Auth:        clickhouse.Auth{Database: "default", Username: "default"},
		DialTimeout: time.Second,
	})
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Ping(ctx)
}

// URL is the clickhouse:// (native protocol) URL of the default database.
func (c *ClickHouse) URL() string { return "clickhouse://" + c.addr + "/default" }

// Addr is the native protocol's host:port.
func (c *ClickHouse) Addr() string { return c.addr }

// HTTPAddr is the HTTP interface's host:port, for analysts' tools (our
// client does not use it: clickhouse-go's HTTP mode fails on 18.16).
func (c *ClickHouse) HTTPAddr() string { return c.httpAddr }

// PID is the server's current process id.
func (c *ClickHouse) PID() int { return c.child.pid() }

// Close stops the server and waits until it is gone. It is safe to call more
// than once.
func (c *ClickHouse) Close() error { return c.child.close() }

type clickhouseConfig struct {
	Root      string
	TCPPort   int
	HTTPPort  int
	UsersPath string
}

// The config is written from scratch rather than copied from
// /etc/clickhouse-server so that nothing of the system's (ports, paths under
// /var/lib, remote_servers, ZooKeeper includes) leaks in, and so it runs on
// 18.16 and current releases alike: only keys both know. No
// interserver_http_port (only replication uses it), no mysql/postgres ports.
// UTC so toYYYYMM partitions do not depend on the machine's zone. Caches are
// small: this is one developer's history, not a cluster.
var clickhouseConfigTmpl = template.Must(template.New("config").Funcs(template.FuncMap{"x": xmlEscape}).Parse(`<?xml version="1.0"?>
<!-- Written by switchback at every start (the ports change); edits are lost. -->
<yandex>
    <logger>
        <level>information</level>
        <log>{{x .Root}}/log/clickhouse-server.log</log>
        <errorlog>{{x .Root}}/log/clickhouse-server.err.log</errorlog>
        <size>50M</size>
        <count>3</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>{{.TCPPort}}</tcp_port>
    <http_port>{{.HTTPPort}}</http_port>
    <path>{{x .Root}}/data/</path>
    <tmp_path>{{x .Root}}/data/tmp/</tmp_path>
    <user_files_path>{{x .Root}}/data/user_files/</user_files_path>
    <format_schema_path>{{x .Root}}/data/format_schemas/</format_schema_path>
    <users_config>{{x .UsersPath}}</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
    <mlock_executable>false</mlock_executable>
</yandex>
`))

// One passwordless user reachable from loopback only: the server listens on
// 127.0.0.1 and is private to this process's machine.
var clickhouseUsersTmpl = template.Must(template.New("users").Parse(`<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>2000000000</max_memory_usage>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
</yandex>
`))

func writeTemplate(path string, t *template.Template, data any) error {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func xmlEscape(s string) (string, error) {
	var b strings.Builder
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return "", err
	}
	return b.String(), nil
}

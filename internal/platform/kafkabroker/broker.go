// Package kafkabroker owns the embedded, in-process Kafka-protocol broker
// (github.com/twmb/franz-go/pkg/kfake) that embedded mode runs instead of an
// external cluster: one broker node on a loopback address, with its log and
// group offsets persisted under a data directory so that they survive
// restarts. It is for development only (the demo, tests, the tiers apart
// on one machine): it refuses any address but loopback, and it has no
// authentication of its own; protected topics (the principals topic) are
// written only by trusted connections (guard.go). It only serves the
// protocol; it must not create topics (the stages create theirs
// explicitly, see schemas.Topics).
package kafkabroker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
)

// DefaultAddr is where the broker listens when Options.Addr is empty.
const DefaultAddr = "127.0.0.1:0"

// lockFile is taken with an exclusive lock for the life of the broker: kfake
// appends to its logs without any cross-process coordination, so two
// processes on one DataDir would interleave writes and corrupt it.
const lockFile = ".switchback-broker.lock"

// Options configure Start.
type Options struct {
	// Addr is the host:port to listen on, e.g. 127.0.0.1:19092. Port 0 picks
	// a free port (read it back with Broker.Addr). Empty means DefaultAddr.
	// The listener address is what the broker advertises in metadata, so it
	// must be an address clients can dial (not 0.0.0.0).
	Addr string
	// DataDir is where topics, records and group offsets persist across
	// restarts. Empty keeps everything in memory (tests, throwaway runs).
	DataDir string
	// SyncWrites fsyncs every produced batch. Without it a produced record
	// survives a crash of the process (it is in the page cache) but not a
	// crash of the machine, as with Kafka's default flush settings.
	SyncWrites bool
	// Logger receives the broker's own logs; nil discards them.
	Logger *slog.Logger
	// Protected topics are written only by trusted connections (guard.go):
	// in Switchback the principals topic, the log of record of API
	// credentials. Empty: no topic is protected (tests of the broker).
	Protected []string
	// Trust says which connections are trusted with the protected topics:
	// TrustProcess (switchback run) or TrustUser (switchback broker).
	Trust Trust
}

// Broker is a running embedded broker.
type Broker struct {
	cluster *kfake.Cluster
	addr    string
	ln      *listener
	unlock  func()
	keeper  *sessionKeeper

	closeOnce sync.Once
}

// Start starts the broker and returns once it accepts connections. Persisted
// state in DataDir, if any, is loaded first.
func Start(ctx context.Context, opts Options) (*Broker, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start kafka broker: %w", err)
	}
	addr := opts.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("start kafka broker: bad address %q: %w", addr, err)
	}
	if !Loopback(host) {
		return nil, fmt.Errorf("start kafka broker: %s is not a loopback address: the embedded broker is for development only, "+
			"has no authentication and listens on this machine only (run a Kafka cluster for anything else)", addr)
	}
	var ln *listener
	var g *guard
	if len(opts.Protected) > 0 {
		if g, err = newGuard(opts.Protected, opts.Trust); err != nil {
			// Not Linux: a development tool keeps working, and says so.
			g = nil
			if opts.Logger != nil {
				opts.Logger.Warn("embedded kafka broker: protected topics are not guarded on this system", "topics", opts.Protected, "err", err)
			}
		}
	}

	kopts := []kfake.Opt{
		// One node: partition leadership never moves, and nothing is
		// replicated in-process for no benefit.
		kfake.NumBrokers(1),
		// kfake's own listener always binds 127.0.0.1; a listen function
		// is the only way to honour the configured host.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			var lc net.ListenConfig
			tcp, err := lc.Listen(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if g != nil {
				tcp = guardedListener{Listener: tcp, g: g}
			}
			ln = newListener(tcp)
			return ln, nil
		}),
		kfake.ClusterID("switchback-embedded"),
		// No AllowAutoTopicCreation: an auto-created topic gets default
		// settings (not compacted) and, per our measurements, can be lost
		// on a crash; every topic is created explicitly at start.
	}

	unlock := func() {}
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o750); err != nil {
			return nil, fmt.Errorf("start kafka broker: create data dir: %w", err)
		}
		var err error
		unlock, err = lockDir(filepath.Join(opts.DataDir, lockFile))
		if err != nil {
			return nil, fmt.Errorf("start kafka broker: data dir %s: %w", opts.DataDir, err)
		}
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
		if opts.SyncWrites {
			kopts = append(kopts, kfake.SyncWrites())
		}
	}
	if opts.Logger != nil {
		kopts = append(kopts, kfake.WithLogger(slogAdapter{opts.Logger}))
	}

	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("start kafka broker on %s: %w", addr, err)
	}
	addrs := cluster.ListenAddrs()
	if len(addrs) != 1 {
		cluster.Close()
		unlock()
		return nil, fmt.Errorf("start kafka broker: expected one listener, got %d", len(addrs))
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &Broker{cluster: cluster, addr: addrs[0], ln: ln, unlock: unlock}
	b.keeper = startSessionKeeper(cluster, b.addr, logger)
	if opts.Logger != nil {
		opts.Logger.Info("embedded kafka broker started", "addr", b.addr, "dataDir", opts.DataDir)
	}
	return b, nil
}

// Loopback reports whether host (a name or an address literal) is this
// machine's loopback: localhost, 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Addr is the host:port clients bootstrap from.
func (b *Broker) Addr() string { return b.addr }

// Dial connects a client of this process to the broker without the network
// (inprocess.go) when address is the broker's, and over TCP otherwise. It
// is a stream.Dial.
func (b *Broker) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	if address != b.addr || b.ln == nil {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
	return b.ln.dial(ctx)
}

// Close stops the broker. With a DataDir it first handles offset commits
// already received and writes its state, so that a later Start on the same
// directory sees every acknowledged record and committed offset. Close is
// idempotent.
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		b.keeper.stop()
		b.cluster.Close()
		b.unlock()
	})
}

// ErrDataDirLocked means another broker (this or another process) is using
// the data directory.
var ErrDataDirLocked = errors.New("data dir is in use by another broker")

// slogAdapter maps kfake's levels onto slog. kfake logs every request at
// Info, which is debug detail for us.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Logf(level kfake.LogLevel, msg string, args ...any) {
	var sl slog.Level
	switch level {
	case kfake.LogLevelError:
		sl = slog.LevelError
	case kfake.LogLevelWarn:
		sl = slog.LevelWarn
	case kfake.LogLevelInfo:
		sl = slog.LevelDebug
	default:
		sl = slog.LevelDebug - 4
	}
	// Check first: formatting every request log line is not free.
	if !a.l.Enabled(context.Background(), sl) {
		return
	}
	a.l.Log(context.Background(), sl, fmt.Sprintf(msg, args...), "component", "kfake")
}

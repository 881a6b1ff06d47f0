// Package app wires Switchback's tiers: it reads no environment itself (the
// Config comes from cmd/), starts the embedded or external dependencies,
// builds each tier from the stage packages, and stops everything in order on
// shutdown. It holds no business logic; that lives in the stage packages.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/platform/config"
	"github.com/switchbackhq/switchback/internal/platform/ops"
)

// Tier names, as the subcommands spell them.
const (
	TierIngest   = "ingest"
	TierProcess  = "process"
	TierQuery    = "query"
	TierDispatch = "dispatch"
)

// Options selects what Run starts.
type Options struct {
	Config  config.Config
	Command string // run, ingest, process, query, dispatch
	Version string
	Stdout  io.Writer // the start banner
	Stderr  io.Writer // logs
	// Ready, when set, is called once every tier is up (tests use it).
	Ready func(Endpoints)
}

// Endpoints are the addresses a started process listens on.
type Endpoints struct {
	HTTP  string
	Ops   string
	Kafka []string
	Redis string
	// DemoSink is the demo's webhook sink, DemoBookingSystem its simulated
	// booking system (demo data only).
	DemoSink, DemoBookingSystem string
}

// tiersOf maps a command to the tiers it runs.
func tiersOf(cmd string) ([]string, error) {
	switch cmd {
	case "run":
		return []string{TierIngest, TierProcess, TierQuery, TierDispatch}, nil
	case TierIngest, TierProcess, TierQuery, TierDispatch:
		return []string{cmd}, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}

// needsClickHouse reports whether any of the tiers writes or reads history.
func needsClickHouse(tiers []string) bool {
	for _, t := range tiers {
		if t == TierProcess || t == TierQuery {
			return true
		}
	}
	return false
}

// Run starts the tiers of opts.Command and blocks until ctx is cancelled
// (SIGINT/SIGTERM), then stops them gracefully within ShutdownTimeout.
func Run(ctx context.Context, opts Options) error {
	cfg := opts.Config
	tiers, err := tiersOf(opts.Command)
	if err != nil {
		return err
	}
	// A single tier is one of several processes sharing the servers: it must
	// not start private embedded ones, which the others could not reach.
	if opts.Command != "run" {
		if cfg.EmbeddedKafka() {
			return errors.New("invalid SWITCHBACK_KAFKA_BROKERS: a single tier needs external Kafka (use 'switchback run' for one process)")
		}
		if cfg.EmbeddedRedis() {
			return errors.New("invalid SWITCHBACK_REDIS_URL: a single tier needs external Redis (use 'switchback run' for one process)")
		}
	}
	log := newLogger(cfg, opts.Stderr).With("process", opts.Command)
	reg := prometheus.NewRegistry()
	ready := ops.NewReadiness(reg)
	buildInfo(reg, opts.Version)
	tierInfo(reg, tiers)

	// The ops listener comes up first so that /healthz answers while the
	// dependencies are still being reached, and /readyz says which are not.
	opsSrv := ops.NewServer(cfg.OpsAddr, reg, ready, log)
	opsLn, err := opsSrv.Listen()
	if err != nil {
		return fmt.Errorf("ops listener on SWITCHBACK_OPS_ADDR %s: %w", cfg.OpsAddr, err)
	}
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		if err := opsSrv.Serve(opsLn); err != nil {
			log.Error("ops listener stopped", "err", err)
		}
	}()
	rctx, stopRefresh := context.WithCancel(ctx)
	bg.Add(1)
	go func() {
		defer bg.Done()
		ready.Refresh(rctx, ops.DefaultRefresh)
	}()
	defer func() {
		stopRefresh()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = opsSrv.Shutdown(sctx)
		bg.Wait()
	}()

	// Closers run in reverse order of start on the way out.
	var closers closeStack
	defer func() {
		closers.closeAll(log, cfg.ShutdownTimeout)
	}()

	deps, err := startDeps(ctx, cfg, opts.Command == "run", needsClickHouse(tiers), log, reg, ready, &closers)
	if err != nil {
		if ctx.Err() != nil {
			log.Info("stopped before the dependencies were reached")
			return nil
		}
		return err
	}

	t, err := startTiers(ctx, cfg, tiers, deps, log, reg, &closers)
	if err != nil {
		return err
	}
	ep := Endpoints{HTTP: t.httpAddr, Ops: opsLn.Addr().String(), Kafka: deps.brokers, Redis: deps.redisAddr}
	if cfg.Demo && cfg.DemoData && opts.Command == "run" && t.httpAddr != "" {
		d, err := startDemo(cfg, t.httpAddr, log, reg, &closers)
		if err != nil {
			return err
		}
		ep.DemoSink = d.SinkURL()
		ep.DemoBookingSystem = d.BookingSystemURL()
	}
	printBanner(opts.Stdout, cfg, opts, tiers, deps, ep)
	log.Info("started", "tiers", strings.Join(tiers, ","), "http", ep.HTTP, "ops", ep.Ops)
	if opts.Ready != nil {
		opts.Ready(ep)
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down: stop accepting, finish in-flight work, commit offsets, flush producers, stop servers")
	case err := <-t.failed:
		log.Error("a tier failed; shutting down", "err", err)
		return err
	}
	return nil
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	if w == nil {
		w = os.Stderr
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	hopts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, hopts))
	}
	return slog.New(slog.NewTextHandler(w, hopts))
}

func buildInfo(reg prometheus.Registerer, version string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "switchback_build_info",
		Help:        "Always 1; the version label tells which build runs.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	g.Set(1)
	reg.MustRegister(g)
}

// tierInfo exports switchback_tier_info{tier} = 1 for each tier this
// process runs, from its start: `switchback run` exports all four, a
// single tier one. The alert SwitchbackTierMissing asks it which tiers are
// scraped, so that it holds for one `run` job and for the tiers apart
// alike, whatever the scrape jobs are called.
func tierInfo(reg prometheus.Registerer, tiers []string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchback_tier_info",
		Help: "Always 1, one series per tier this process runs (ingest, process, query, dispatch).",
	}, []string{"tier"})
	for _, t := range tiers {
		g.WithLabelValues(t).Set(1)
	}
	reg.MustRegister(g)
}

// closeStack runs registered stop functions in reverse order.
type closeStack struct {
	mu  sync.Mutex
	fns []namedCloser
}

type namedCloser struct {
	name string
	fn   func(ctx context.Context) error
}

func (c *closeStack) push(name string, fn func(ctx context.Context) error) {
	c.mu.Lock()
	c.fns = append(c.fns, namedCloser{name, fn})
	c.mu.Unlock()
}

// pushLast adds fn to run after every other closer.
func (c *closeStack) pushLast(name string, fn func(ctx context.Context) error) {
	c.mu.Lock()
	c.fns = append([]namedCloser{{name, fn}}, c.fns...)
	c.mu.Unlock()
}

func (c *closeStack) closeAll(log *slog.Logger, timeout time.Duration) {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i := len(fns) - 1; i >= 0; i-- {
		start := time.Now()
		if err := fns[i].fn(ctx); err != nil {
			log.Warn("stop failed", "part", fns[i].name, "err", err)
			continue
		}
		log.Debug("stopped", "part", fns[i].name, "took", time.Since(start).Round(time.Millisecond))
	}
}

// dataPath returns a folder under the data dir, created if missing.
func dataPath(cfg config.Config, name string) (string, error) {
	p := filepath.Join(cfg.DataDir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("SWITCHBACK_DATA_DIR %s: %w", cfg.DataDir, err)
	}
	return p, nil
}

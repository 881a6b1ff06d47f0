// Package ops owns the operations listener that SREs and orchestrators use:
// /metrics (Prometheus), /healthz (the process is up), /readyz (every
// dependency reachable, with details per dependency) and /debug/pprof/
// (Go's profiler, so a slow tier can be profiled where it runs). It serves no API
// traffic and must never expose secrets: dependency details carry modes and
// redacted addresses only.
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Mode says where a dependency lives.
type Mode string

const (
	ModeEmbedded Mode = "embedded"
	ModeExternal Mode = "external"
	// ModeParked is ClickHouse in embedded mode without a clickhouse-server
	// binary: history stays on its topic until a ClickHouse is configured.
	ModeParked Mode = "parked"
)

// Status is the reachability of one dependency.
type Status string

const (
	StatusUp      Status = "up"
	StatusDown    Status = "down"
	StatusParked  Status = "parked"
	StatusPending Status = "starting"
	// StatusRebuilding is a dependency that answers but whose data is
	// being rebuilt (the Redis views after a FLUSHALL): not ready.
	StatusRebuilding Status = "rebuilding"
)

// ErrRebuilding, wrapped in a check's error, reports the dependency as
// rebuilding rather than down.
var ErrRebuilding = errors.New("rebuilding")

// CheckFunc probes one dependency. It must honour ctx's deadline.
type CheckFunc func(ctx context.Context) error

// Component is what /readyz reports for one dependency.
type Component struct {
	Status   Status `json:"status"`
	Mode     Mode   `json:"mode"`
	Kind     string `json:"kind,omitempty"`
	Address  string `json:"address,omitempty"`
	Error    string `json:"error,omitempty"`
	Required bool   `json:"required"`
}

// Readiness tracks the dependencies of this process.
type Readiness struct {
	mu     sync.Mutex
	comps  map[string]*component
	gauge  *prometheus.GaugeVec
	timout time.Duration
}

type component struct {
	Component
	check CheckFunc
}

// NewReadiness registers switchback_ops_dependency_up{dependency} on reg.
func NewReadiness(reg prometheus.Registerer) *Readiness {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchback_ops_dependency_up",
		Help: "1 when the dependency answered its last readiness probe (parked counts as 1), else 0.",
	}, []string{"dependency"})
	reg.MustRegister(g)
	return &Readiness{comps: map[string]*component{}, gauge: g, timout: 2 * time.Second}
}

// Set declares or replaces a dependency. A nil check with ModeParked reports
// it as parked; a nil check otherwise reports it as starting until Set is
// called again with a check.
func (r *Readiness) Set(name string, c Component, check CheckFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if check == nil {
		if c.Mode == ModeParked {
			c.Status = StatusParked
		} else if c.Status == "" {
			c.Status = StatusPending
		}
	}
	r.comps[name] = &component{Component: c, check: check}
	// The series exists from the moment the dependency is declared (0
	// while starting), so that dashboards and SwitchbackDependencyDown see
	// a dependency that never came up, not no data.
	v := 0.0
	if c.Status == StatusParked || c.Status == StatusUp {
		v = 1
	}
	r.gauge.WithLabelValues(name).Set(v)
}

// DefaultRefresh is how often Refresh probes the dependencies.
const DefaultRefresh = 10 * time.Second

// Refresh probes every dependency every interval until ctx ends, so that
// switchback_ops_dependency_up is current whether or not an orchestrator
// calls /readyz (`switchback run` on a laptop has none).
func (r *Readiness) Refresh(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultRefresh
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Report(ctx)
		}
	}
}

// Report probes every dependency (concurrently, each bounded by a timeout)
// and returns whether all required ones are up, with details.
func (r *Readiness) Report(ctx context.Context) (bool, map[string]Component) {
	r.mu.Lock()
	names := make([]string, 0, len(r.comps))
	snap := make(map[string]component, len(r.comps))
	for n, c := range r.comps {
		names = append(names, n)
		snap[n] = *c
	}
	r.mu.Unlock()
	sort.Strings(names)

	out := make(map[string]Component, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		c := snap[n]
		if c.check == nil {
			mu.Lock()
			out[n] = c.Component
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, r.timout)
			defer cancel()
			res := c.Component
			if err := c.check(cctx); err != nil {
				res.Status = StatusDown
				if errors.Is(err, ErrRebuilding) {
					res.Status = StatusRebuilding
				}
				res.Error = err.Error()
			} else {
				res.Status = StatusUp
				res.Error = ""
			}
			mu.Lock()
			out[n] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	ready := true
	for n, c := range out {
		up := c.Status == StatusUp || c.Status == StatusParked
		if c.Required && !up {
			ready = false
		}
		v := 0.0
		if up {
			v = 1
		}
		r.gauge.WithLabelValues(n).Set(v)
	}
	return ready, out
}

// Server is the ops listener.
type Server struct {
	srv *http.Server
	log *slog.Logger
}

// NewServer builds the ops listener. gatherer is the registry that /metrics
// exposes (Go and process collectors are added to reg here).
func NewServer(addr string, reg *prometheus.Registry, ready *Readiness, log *slog.Logger) *Server {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
		ok, comps := ready.Report(req.Context())
		body := struct {
			Status       string               `json:"status"`
			Dependencies map[string]Component `json:"dependencies"`
		}{Status: "ready", Dependencies: comps}
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			body.Status = "not ready"
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body)
	})
	// The profiler on the ops listener (internal by default, like the
	// metrics): registered on this mux explicitly, not DefaultServeMux.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return &Server{
		srv: &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		log: log,
	}
}

// Listen binds the listener so that a bad address fails at start, not later.
func (s *Server) Listen() (net.Listener, error) {
	return net.Listen("tcp", s.srv.Addr)
}

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the listener, letting in-flight scrapes finish.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

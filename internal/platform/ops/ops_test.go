package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestReadiness_Report(t *testing.T) {
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("dial tcp: connection refused") }
	tests := []struct {
		name      string
		set       func(r *Readiness)
		wantReady bool
		want      map[string]Status
	}{
		{
			name: "all up",
			set: func(r *Readiness) {
				r.Set("kafka", Component{Mode: ModeEmbedded, Required: true}, up)
				r.Set("redis", Component{Mode: ModeExternal, Required: true}, up)
			},
			wantReady: true,
			want:      map[string]Status{"kafka": StatusUp, "redis": StatusUp},
		},
		{
			name: "required down makes not ready",
			set: func(r *Readiness) {
				r.Set("kafka", Component{Mode: ModeExternal, Required: true}, down)
				r.Set("redis", Component{Mode: ModeExternal, Required: true}, up)
			},
			wantReady: false,
			want:      map[string]Status{"kafka": StatusDown, "redis": StatusUp},
		},
		{
			name: "parked clickhouse is ready and reported as parked",
			set: func(r *Readiness) {
				r.Set("kafka", Component{Mode: ModeEmbedded, Required: true}, up)
				r.Set("clickhouse", Component{Mode: ModeParked, Required: true}, nil)
			},
			wantReady: true,
			want:      map[string]Status{"kafka": StatusUp, "clickhouse": StatusParked},
		},
		{
			name: "optional down keeps ready",
			set: func(r *Readiness) {
				r.Set("clickhouse", Component{Mode: ModeExternal}, down)
			},
			wantReady: true,
			want:      map[string]Status{"clickhouse": StatusDown},
		},
		{
			name: "views rebuilding are reported as rebuilding, not ready",
			set: func(r *Readiness) {
				r.Set("redis", Component{Mode: ModeExternal, Required: true}, up)
				r.Set("views", Component{Kind: "views", Required: true}, func(context.Context) error {
					return fmt.Errorf("views %w from Kafka: catalog", ErrRebuilding)
				})
			},
			wantReady: false,
			want:      map[string]Status{"redis": StatusUp, "views": StatusRebuilding},
		},
		{
			name: "required dependency still starting is not ready",
			set: func(r *Readiness) {
				r.Set("redis", Component{Mode: ModeExternal, Required: true}, nil)
			},
			wantReady: false,
			want:      map[string]Status{"redis": StatusPending},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReadiness(prometheus.NewRegistry())
			tt.set(r)
			ready, comps := r.Report(context.Background())
			if ready != tt.wantReady {
				t.Fatalf("ready = %v, want %v (%+v)", ready, tt.wantReady, comps)
			}
			for name, st := range tt.want {
				if comps[name].Status != st {
					t.Errorf("%s status = %q, want %q", name, comps[name].Status, st)
				}
			}
		})
	}
}

func TestServer_Endpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	ready := NewReadiness(reg)
	ready.Set("kafka", Component{Mode: ModeExternal, Required: true}, func(context.Context) error { return errors.New("refused") })
	s := NewServer("127.0.0.1:0", reg, ready, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	base := "http://" + ln.Addr().String()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d, want 200", code)
	}
	code, body := get("/readyz")
	if code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d, want 503", code)
	}
	var rep struct {
		Status       string               `json:"status"`
		Dependencies map[string]Component `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("readyz body %q: %v", body, err)
	}
	if rep.Dependencies["kafka"].Status != StatusDown || rep.Dependencies["kafka"].Error == "" {
		t.Errorf("kafka = %+v, want down with error", rep.Dependencies["kafka"])
	}
	code, body = get("/metrics")
	if code != 200 || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, `switchback_ops_dependency_up{dependency="kafka"} 0`) {
		t.Errorf("/metrics = %d, missing go or dependency metrics:\n%.500s", code, body)
	}
}

// gaugeValue reads switchback_ops_dependency_up{dependency=dep} from reg;
// ok is false when the series does not exist.
func gaugeValue(t *testing.T, reg *prometheus.Registry, dep string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchback_ops_dependency_up" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "dependency" && l.GetValue() == dep {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

func TestReadiness_GaugeExistsFromSetAndRefreshKeepsItCurrent(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewReadiness(reg)
	r.Set("redis", Component{Mode: ModeExternal, Required: true}, nil)
	r.Set("clickhouse", Component{Mode: ModeParked}, nil)
	tests := []struct {
		dep  string
		want float64
	}{
		{"redis", 0},      // starting: declared, not up
		{"clickhouse", 1}, // parked counts as up
	}
	for _, tt := range tests {
		if got, ok := gaugeValue(t, reg, tt.dep); !ok || got != tt.want {
			t.Errorf("after Set, %s gauge = %v (exists %v), want %v", tt.dep, got, ok, tt.want)
		}
	}

	// Nobody calls /readyz: Refresh alone brings the gauge to 1 once the
	// check answers.
	r.Set("redis", Component{Mode: ModeExternal, Required: true}, func(context.Context) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Refresh(ctx, time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, _ := gaugeValue(t, reg, "redis"); got == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Refresh did not set the redis gauge to 1 within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}

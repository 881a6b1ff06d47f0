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

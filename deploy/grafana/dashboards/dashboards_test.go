// Package dashboards holds the Grafana dashboards (JSON, provisioned by
// ../provisioning/dashboards/switchback.yaml). This test keeps them honest:
// valid JSON on the provisioned datasource, PromQL that Prometheus parses
// (through promtool, when installed), and only metrics and labels that the
// code declares (deploy/internal/metricsource).
package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/deploy/internal/metricsource"
)

type dashboard struct {
	UID         string  `json:"uid"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Panels      []panel `json:"panels"`
}

type panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	Targets    []struct {
		Expr       string     `json:"expr"`
		Datasource datasource `json:"datasource"`
	} `json:"targets"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// The datasource uid of ../provisioning/datasources/prometheus.yaml.
const datasourceUID = "prometheus"

func load(t *testing.T) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	out := map[string]dashboard{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = d
	}
	return out
}

func TestDashboards_AreProvisionable(t *testing.T) {
	uids := map[string]string{}
	for file, d := range load(t) {
		t.Run(file, func(t *testing.T) {
			if want := strings.TrimSuffix(file, ".json"); d.UID != want {
				t.Errorf("uid %q, want the file name %q", d.UID, want)
			}
			if other, dup := uids[d.UID]; dup {
				t.Errorf("uid %q also used by %s", d.UID, other)
			}
			uids[d.UID] = file
			if !strings.HasPrefix(d.Title, "Switchback / ") {
				t.Errorf("title %q: want the 'Switchback / ' prefix", d.Title)
			}
			ids := map[int]bool{}
			for _, p := range d.Panels {
				if ids[p.ID] {
					t.Errorf("panel id %d used twice", p.ID)
				}
				ids[p.ID] = true
				if p.Type == "row" {
					continue
				}
				if p.Datasource.UID != datasourceUID || len(p.Targets) == 0 {
					t.Errorf("panel %q: datasource %+v with %d targets", p.Title, p.Datasource, len(p.Targets))
				}
				for _, tg := range p.Targets {
					if tg.Expr == "" || tg.Datasource.UID != datasourceUID {
						t.Errorf("panel %q: target %+v", p.Title, tg)
					}
				}
			}
		})
	}
}

// TestDashboards_UseDeclaredMetrics: every switchback_* metric a panel
// queries is declared by the code, and every label it groups or filters by
// is carried by one of the query's metrics. There is no "to come"
// allowance: a panel for a stage that does not exist yet is added with
// that stage.
func TestDashboards_UseDeclaredMetrics(t *testing.T) {
	declared, err := metricsource.Declared("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) == 0 {
		t.Fatal("no switchback_* metric declared in the sources: the scanner is broken")
	}
	for file, d := range load(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, problem := range metricsource.Check(tg.Expr, declared) {
					t.Errorf("%s, panel %q: %s\n\t%s", file, p.Title, problem, tg.Expr)
				}
			}
		}
	}
}

// TestDashboards_QueriesParse runs every panel query through promtool as a
// recording rule, with Grafana's $__rate_interval replaced by a duration.
func TestDashboards_QueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboards\n    rules:\n")
	n := 0
	for file, d := range load(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				n++
				expr := strings.ReplaceAll(tg.Expr, "$__rate_interval", "5m")
				q, _ := json.Marshal(expr) // a JSON string is a valid YAML string
				fmt.Fprintf(&b, "      - record: dashboard:%s:%d\n        expr: %s\n", strings.TrimSuffix(file, ".json")[len("switchback-"):], n, q)
			}
		}
	}
	rules := filepath.Join(t.TempDir(), "dashboards.yml")
	if err := os.WriteFile(rules, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the dashboards' %d queries: %v\n%s", n, err, out)
	}
}

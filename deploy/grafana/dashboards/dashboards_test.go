// Package dashboards holds the Grafana dashboards (JSON, provisioned by
// ../provisioning/dashboards/switchback.yaml). This test keeps them honest:
// valid JSON on the datasource variable, job and instance variables that
// every switchback_* selector honours, PromQL that Prometheus parses
// (through promtool, when installed), and only metrics and labels that the
// code declares (deploy/internal/metricsource). That every query answers
// without error on the metrics of a running binary, through a real
// Prometheus, is TestBinary_DashboardsAndAlertsOnARealPrometheus
// (cmd/switchback).
package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/deploy/internal/metricsource"
)

type dashboard struct {
	UID         string  `json:"uid"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Panels      []panel `json:"panels"`
	Templating  struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type variable struct {
	Type       string     `json:"type"`
	Name       string     `json:"name"`
	Query      string     `json:"query"`
	Datasource datasource `json:"datasource"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
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

// Panels name the datasource through the dashboard variable, whose
// default is the uid of ../provisioning/datasources/prometheus.yaml: a
// Grafana with another Prometheus datasource picks it from the variable.
const (
	datasourceUID         = "${datasource}"
	provisionedDatasource = "prometheus"
)

// wantVariables are the variables every dashboard has, with the query
// each runs (Grafana's label_values over the build info gauge, which every
// process exports).
var wantVariables = map[string]string{
	"datasource": "prometheus",
	"job":        "label_values(switchback_build_info, job)",
	"instance":   `label_values(switchback_build_info{job=~"$job"}, instance)`,
}

// selectorOf finds each switchback_* metric with its selector.
var selectorOf = regexp.MustCompile(`\b(switchback_[a-z0-9_]+|up)(\{[^{}]*\})?`)

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
			vars := map[string]variable{}
			for _, v := range d.Templating.List {
				vars[v.Name] = v
			}
			for name, query := range wantVariables {
				v, ok := vars[name]
				switch {
				case !ok:
					t.Errorf("no dashboard variable %q", name)
				case v.Query != query:
					t.Errorf("variable %q queries %q, want %q", name, v.Query, query)
				case name == "datasource" && (v.Type != "datasource" || v.Current.Value != provisionedDatasource):
					t.Errorf("variable datasource: type %q, default %v; want a datasource variable defaulting to %q", v.Type, v.Current.Value, provisionedDatasource)
				case name != "datasource" && v.Datasource.UID != datasourceUID:
					t.Errorf("variable %q on datasource %+v, want %q", name, v.Datasource, datasourceUID)
				}
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
					// Every series selected is narrowed by the job and
					// instance variables, so that the dashboard shows one
					// deployment, tier or process when asked.
					for _, m := range selectorOf.FindAllStringSubmatch(tg.Expr, -1) {
						if !strings.Contains(m[2], `job=~"$job"`) || !strings.Contains(m[2], `instance=~"$instance"`) {
							t.Errorf("panel %q: %s%s lacks job=~\"$job\" and instance=~\"$instance\"", p.Title, m[1], m[2])
						}
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
				expr := strings.NewReplacer("$__rate_interval", "5m", "$job", ".+", "$instance", ".+").Replace(tg.Expr)
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

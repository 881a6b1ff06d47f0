// Package prometheus holds the Prometheus configuration of deploy/ (no Go
// code: prometheus.yml, alerts.yml and alerts_test.yml). These tests keep
// the alert rules honest: every alert is explained in docs/runbook.md under
// its name and links there, every rule queries metrics and labels that the
// code declares, and promtool accepts the rules and passes their unit tests.
package prometheus

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/deploy/internal/metricsource"
)

type rule struct {
	alert, expr, description, runbookURL string
}

// runbook is where every alert's runbook_url points: its section of
// docs/runbook.md, by the anchor GitHub gives the heading.
const runbook = "https://github.com/switchbackhq/switchback/blob/main/docs/runbook.md"

var (
	alertLine = regexp.MustCompile(`^\s*- alert:\s*(\S+)\s*$`)
	keyLine   = regexp.MustCompile(`^(\s*)(expr|description|runbook_url):\s*(.*)$`)
)

// alerts reads the alert rules of alerts.yml: name, expression and
// description (inline or a folded block). alerts.yml is small and written
// by hand in one shape; promtool (TestRules_Promtool) validates it as YAML.
func alerts(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []rule
	for i := 0; i < len(lines); i++ {
		if m := alertLine.FindStringSubmatch(lines[i]); m != nil {
			out = append(out, rule{alert: m[1]})
			continue
		}
		m := keyLine.FindStringSubmatch(lines[i])
		if m == nil || len(out) == 0 {
			continue
		}
		value := strings.TrimSpace(m[3])
		if value == ">-" || value == ">" || value == "|" || value == "|-" {
			var parts []string
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > len(m[1])) {
				i++
				if s := strings.TrimSpace(lines[i]); s != "" {
					parts = append(parts, s)
				}
			}
			value = strings.Join(parts, " ")
		} else {
			value = strings.Trim(value, `"'`)
		}
		switch m[2] {
		case "expr":
			out[len(out)-1].expr = value
		case "description":
			out[len(out)-1].description = value
		default:
			out[len(out)-1].runbookURL = value
		}
	}
	if len(out) == 0 {
		t.Fatal("no alert found in alerts.yml")
	}
	return out
}

// runbookSections lists the "## " headings of docs/runbook.md.
func runbookSections(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			out[strings.TrimSpace(h)] = true
		}
	}
	return out
}

func TestAlerts_EveryAlertHasARunbookSection(t *testing.T) {
	sections := runbookSections(t)
	names := map[string]bool{}
	for _, r := range alerts(t) {
		t.Run(r.alert, func(t *testing.T) {
			if names[r.alert] {
				t.Errorf("alert %s defined twice", r.alert)
			}
			names[r.alert] = true
			if !sections[r.alert] {
				t.Errorf("docs/runbook.md has no section \"## %s\"", r.alert)
			}
			if r.expr == "" || r.description == "" {
				t.Errorf("expr %q, description %q: both are required", r.expr, r.description)
			}
			// Alertmanager, Grafana and PagerDuty link runbook_url: the
			// alert's own section (GitHub's anchor of "## <alert>").
			if want := runbook + "#" + strings.ToLower(r.alert); r.runbookURL != want {
				t.Errorf("runbook_url %q, want %q", r.runbookURL, want)
			}
			// The tier alerts link their section; the foundation ones say
			// what to check inline and the runbook has them by name.
			if strings.Contains(r.description, "docs/runbook.md") && !strings.Contains(r.description, "docs/runbook.md#"+strings.ToLower(r.alert)) {
				t.Errorf("description links the runbook, but not at #%s: %q", strings.ToLower(r.alert), r.description)
			}
		})
	}
	// And no section for an alert that no longer exists.
	for s := range sections {
		if strings.HasPrefix(s, "Switchback") && !names[s] {
			t.Errorf("docs/runbook.md has a section %q for an alert alerts.yml does not define", s)
		}
	}
}

func TestAlerts_UseDeclaredMetrics(t *testing.T) {
	declared, err := metricsource.Declared("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range alerts(t) {
		for _, problem := range metricsource.Check(r.expr, declared) {
			t.Errorf("%s: %s\n\t%s", r.alert, problem, r.expr)
		}
	}
}

// TestRules_Promtool runs what .ci/run runs: the rules load and their unit
// tests (alerts_test.yml) pass. Without promtool (Debian package
// prometheus) it skips, unless SWITCHBACK_REQUIRE_INTEGRATION=1.
func TestRules_Promtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("SWITCHBACK_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("promtool not installed (Debian package prometheus) and SWITCHBACK_REQUIRE_INTEGRATION=1: %v", err)
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "config", "run.yml"},
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// graphLink is the link to Prometheus's graph page with queries, encoded
// as scripts/observe.sh encodes them (every byte but A-Z a-z 0-9 . ~ _ -
// as %XX).
func graphLink(base string, queries []string) string {
	enc := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(".~_-", c) >= 0 {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	}
	parts := make([]string, len(queries))
	for i, q := range queries {
		parts[i] = fmt.Sprintf("g%d.expr=%s&g%d.tab=0&g%d.range_input=15m", i, enc(q), i, i)
	}
	return base + "/graph?" + strings.Join(parts, "&")
}

// TestObserve_RunbookLinksEveryKeyQuery: docs/runbook.md's link to the key
// queries of `make observe` and its table of them say what
// run-queries.txt says (that the queries answer with data on the demo is
// TestBinary_DashboardsAndAlertsOnARealPrometheus), and each query uses
// only declared metrics.
func TestObserve_RunbookLinksEveryKeyQuery(t *testing.T) {
	b, err := os.ReadFile("run-queries.txt")
	if err != nil {
		t.Fatal(err)
	}
	declared, err := metricsource.Declared("../..")
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	doc, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		title, q, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("run-queries.txt: no tab in %q", l)
		}
		queries = append(queries, q)
		row := fmt.Sprintf("| %s | `%s` |", title, strings.ReplaceAll(q, "|", `\|`))
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/runbook.md lacks the row %s", row)
		}
		for _, problem := range metricsource.Check(q, declared) {
			t.Errorf("%s: %s", title, problem)
		}
	}
	if len(queries) == 0 {
		t.Fatal("run-queries.txt has no query")
	}
	if link := graphLink("http://127.0.0.1:9091", queries); !strings.Contains(string(doc), "("+link+")") {
		t.Errorf("docs/runbook.md does not link the key queries of run-queries.txt; want\n%s", link)
	}
}

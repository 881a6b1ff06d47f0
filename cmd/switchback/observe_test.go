package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The Prometheus job of deploy/prometheus/run.yml (make observe).
const runJob = "switchback-run"

// emptyWhenHealthy are the dashboard queries that answer no series on a
// healthy demo, by design: they select failures that did not happen or
// waits that are not pending. Each must still evaluate without error on
// metrics that exist; any other query must return data. Keyed by
// "<dashboard file> / <panel title> / <target index>".
var emptyWhenHealthy = map[string]string{
	"switchback-query.json / Server errors/s by route and status (5xx) / 0": "no request answered 5xx; a 5xx series exists only once a route answered one (statuses are not known in advance)",
}

// TestBinary_DashboardsAndAlertsOnARealPrometheus is what an SRE sees
// pointing Grafana at `switchback run`: the binary runs the demo, `make
// observe`'s script starts a real Prometheus scraping its ops listener
// (deploy/prometheus/run.yml) and evaluating deploy/prometheus/alerts.yml;
// after the demo has run for a while, every query of every dashboard of
// deploy/grafana/dashboards (over the whole run, as a Grafana panel asks
// it, with the job and instance variables set to this process), every
// link make observe printed and every alert expression is evaluated
// through Prometheus's HTTP API. None may fail, none may select a metric
// that does not exist, every dashboard query but the few listed in
// emptyWhenHealthy and every key query must return data, every alert rule
// must be healthy and none pending or firing (SwitchbackTierMissing
// included: one `run` job runs every tier).
//
// It needs the Debian packages prometheus and clickhouse-server (the
// history panels read the sink's metrics); without them it skips, unless
// SWITCHBACK_REQUIRE_INTEGRATION=1 (CI), where that fails.
func TestBinary_DashboardsAndAlertsOnARealPrometheus(t *testing.T) {
	requireTool(t, "prometheus", "Debian package prometheus")
	requireTool(t, "clickhouse-server", "Debian package clickhouse-server")

	p := startBinary(t, "SWITCHBACK_DEMO_DATA=true", "SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true")
	prom, links := startPrometheus(t, p.ops)
	started := time.Now()

	// Traffic the demo does not make: a refused credential (a 4xx for the
	// client-error panels) next to the demo's own 2xx.
	for _, secret := range []string{"demo-reseller-secret", "wrong-secret"} {
		req, _ := http.NewRequest("GET", "http://"+p.api+"/v1.2/suppliers", nil)
		req.Header.Set("X-API-Key", "demo-reseller")
		req.Header.Set("X-API-Secret", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	// Drive: the demo changes something every 3 s; wait until every
	// notification type reached its sink (the whole pipeline has run) and
	// Prometheus has a minute of samples.
	waitDemoEveryType(t, p, 90*time.Second)
	for time.Since(started) < 75*time.Second {
		time.Sleep(time.Second)
	}
	prom.waitTargetUp(t)

	names := prom.metricNames(t)
	start, end := started, time.Now()
	// Grafana's $__rate_interval is at least four scrape intervals (5 s in
	// run.yml).
	vars := map[string]string{"$job": runJob, "$instance": p.ops, "$__rate_interval": "30s"}

	// Dashboards.
	dashboards := loadDashboards(t)
	var evaluated, withData int
	var empty []string
	for _, d := range dashboards {
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			values := prom.labelValues(t, v.Query, vars)
			want := vars["$"+v.Name]
			if !contains(values, want) {
				t.Errorf("%s: variable %s (%s) offers %v, not this process's %q", d.file, v.Name, v.Query, values, want)
			}
		}
		for _, pn := range d.Panels {
			for i, tg := range pn.Targets {
				key := fmt.Sprintf("%s / %s / %d", d.file, pn.Title, i)
				expr := substitute(tg.Expr, vars)
				evaluated++
				for _, m := range missingMetrics(expr, names) {
					t.Errorf("%s: metric %s does not exist on the scraped binary\n\t%s", key, m, expr)
				}
				series := prom.queryRange(t, key, expr, start, end)
				_, allowed := emptyWhenHealthy[key]
				switch {
				case series > 0 && allowed:
					withData++
					t.Logf("%s: listed in emptyWhenHealthy but returned %d series", key, series)
				case series > 0:
					withData++
				case allowed:
					empty = append(empty, key)
				default:
					t.Errorf("%s: no data after %s of the demo\n\t%s", key, time.Since(started).Round(time.Second), expr)
				}
			}
		}
	}
	for key := range emptyWhenHealthy {
		if !strings.Contains(strings.Join(allTargets(dashboards), "\n"), key) {
			t.Errorf("emptyWhenHealthy lists %q, which is no dashboard query", key)
		}
	}

	// The links make observe printed: one per key query of
	// deploy/prometheus/run-queries.txt, and one with all of them.
	keyQueries := 0
	for _, link := range links {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatalf("make observe printed a link that does not parse: %s: %v", link, err)
		}
		for k, v := range u.Query() {
			if !strings.HasSuffix(k, ".expr") || len(links) > 1 && link == links[len(links)-1] {
				continue
			}
			keyQueries++
			for _, m := range missingMetrics(v[0], names) {
				t.Errorf("make observe link %s: metric %s does not exist\n\t%s", k, m, v[0])
			}
			if prom.queryRange(t, "make observe link", v[0], start, end) == 0 {
				t.Errorf("make observe link: no data\n\t%s", v[0])
			}
		}
	}
	if want := len(keyQueryLines(t)); keyQueries != want || len(links) != want+1 {
		t.Errorf("make observe printed %d links with %d queries, want one per key query (%d) and one with all", len(links), keyQueries, want)
	}

	// Alerts: Prometheus loaded alerts.yml and evaluates it every 5 s.
	rules := prom.alertRules(t)
	if want := strings.Count(readFile(t, "../../deploy/prometheus/alerts.yml"), "- alert: "); len(rules) != want {
		t.Errorf("Prometheus loaded %d alert rules, alerts.yml has %d", len(rules), want)
	}
	for _, r := range rules {
		if r.Health != "ok" || r.LastError != "" {
			t.Errorf("alert %s: health %q, error %q", r.Name, r.Health, r.LastError)
		}
		if r.State != "inactive" {
			t.Errorf("alert %s is %s on a healthy `switchback run`: %+v", r.Name, r.State, r.Alerts)
		}
		for _, m := range missingMetrics(r.Query, names) {
			t.Errorf("alert %s: metric %s does not exist on the scraped binary\n\t%s", r.Name, m, r.Query)
		}
		prom.queryInstant(t, "alert "+r.Name, r.Query, end)
	}
	sort.Strings(empty)
	t.Logf("after %s of the demo: %d dashboard queries of %d dashboards evaluated over the run (range, 1 s step): %d returned data, %d empty by design %v; %d alert rules healthy and evaluated: none pending or firing; %d key queries of make observe's links with data; %d metric names scraped",
		time.Since(started).Round(time.Second), evaluated, len(dashboards), withData, len(empty), empty, len(rules), keyQueries, len(names))
	p.stop(t)
}

// requireTool finds a program on PATH, or skips (fails under
// SWITCHBACK_REQUIRE_INTEGRATION=1).
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real servers")
	}
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("SWITCHBACK_REQUIRE_INTEGRATION") == "1" {
		t.Fatalf("%s not installed (%s) and SWITCHBACK_REQUIRE_INTEGRATION=1", name, pkg)
	}
	t.Skipf("%s not installed (%s)", name, pkg)
	return ""
}

func waitDemoEveryType(t *testing.T, p *proc, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	series := regexp.MustCompile(`switchback_demo_sink_received_total\{type="([a-z-]+)",verified="true"\} [1-9]`)
	for {
		raw := p.metrics(t)
		if n := len(series.FindAllString(string(raw), -1)); n >= 7 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo sink has not verified every notification type within %s", within)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// promServer is a running Prometheus started by a test.
type promServer struct {
	base string
}

// startPrometheus runs `make observe`'s script (scripts/observe.sh: a
// Prometheus on deploy/prometheus/run.yml and alerts.yml, scraping target)
// on a free port with its data in a temp dir; it is stopped at cleanup.
// It returns the links to the key queries that the script printed.
func startPrometheus(t *testing.T, target string) (*promServer, []string) {
	t.Helper()
	addr := freeAddr(t)
	var out lockedBuffer
	cmd := exec.Command("bash", "../../scripts/observe.sh")
	cmd.Env = append(os.Environ(), "PROMETHEUS_ADDR="+addr, "SWITCHBACK_OPS_ADDR="+target, "SWITCHBACK_DATA_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the script exec'd prometheus: same process
		<-exited
		if t.Failed() {
			t.Logf("make observe output:\n%s", tail(out.String(), 4000))
		}
	})
	p := &promServer{base: "http://" + addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("make observe exited: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within 30 s\n%s", out.String())
		}
	}
	var links []string
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.Index(l, p.base+"/graph?"); i >= 0 {
			links = append(links, strings.TrimSpace(l[i:]))
		}
	}
	return p, links
}

// api calls a Prometheus API path and decodes its data; an error status
// or any warning fails the test.
func (p *promServer) api(t *testing.T, what, path string, q url.Values, data any) {
	t.Helper()
	resp, err := http.Get(p.base + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %s answered %d, not JSON: %v", what, path, resp.StatusCode, err)
	}
	if body.Status != "success" || len(body.Warnings) > 0 {
		t.Errorf("%s: Prometheus answered %d %s %s: %s %v\n\t%s", what, resp.StatusCode, body.Status, body.ErrorType, body.Error, body.Warnings, q.Get("query"))
		return
	}
	if data != nil {
		if err := json.Unmarshal(body.Data, data); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// queryRange evaluates expr over [start, end] at a 1 s step, as a Grafana
// panel does, and returns how many series came back.
func (p *promServer) queryRange(t *testing.T, what, expr string, start, end time.Time) int {
	t.Helper()
	var data struct {
		Result []json.RawMessage `json:"result"`
	}
	p.api(t, what, "/api/v1/query_range", url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {"1"}}, &data)
	return len(data.Result)
}

func (p *promServer) queryInstant(t *testing.T, what, expr string, at time.Time) {
	t.Helper()
	p.api(t, what, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(at)}}, nil)
}

func (p *promServer) metricNames(t *testing.T) map[string]bool {
	t.Helper()
	var names []string
	p.api(t, "metric names", "/api/v1/label/__name__/values", nil, &names)
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	if !out["switchback_build_info"] {
		t.Fatalf("Prometheus has scraped no switchback metric: %v", names)
	}
	return out
}

// labelValues answers a Grafana variable query label_values(selector,
// label) through the series API, as Grafana's Prometheus datasource does.
func (p *promServer) labelValues(t *testing.T, query string, vars map[string]string) []string {
	t.Helper()
	m := regexp.MustCompile(`^label_values\((.+),\s*([a-z_]+)\)$`).FindStringSubmatch(query)
	if m == nil {
		t.Fatalf("variable query %q is not label_values(selector, label)", query)
	}
	var values []string
	p.api(t, "variable "+query, "/api/v1/label/"+m[2]+"/values", url.Values{"match[]": {substitute(m[1], vars)}}, &values)
	return values
}

func (p *promServer) waitTargetUp(t *testing.T) {
	t.Helper()
	var data struct {
		ActiveTargets []struct {
			Labels    map[string]string `json:"labels"`
			Health    string            `json:"health"`
			LastError string            `json:"lastError"`
		} `json:"activeTargets"`
	}
	p.api(t, "targets", "/api/v1/targets", nil, &data)
	if len(data.ActiveTargets) != 1 || data.ActiveTargets[0].Health != "up" || data.ActiveTargets[0].Labels["job"] != runJob {
		t.Fatalf("want one healthy %s target, got %+v", runJob, data.ActiveTargets)
	}
}

type alertRule struct {
	Name      string            `json:"name"`
	Query     string            `json:"query"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
	State     string            `json:"state"`
	Alerts    []json.RawMessage `json:"alerts"`
}

func (p *promServer) alertRules(t *testing.T) []alertRule {
	t.Helper()
	var data struct {
		Groups []struct {
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	p.api(t, "rules", "/api/v1/rules", url.Values{"type": {"alert"}}, &data)
	var out []alertRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// keyQueryLines are the queries of deploy/prometheus/run-queries.txt.
func keyQueryLines(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(readFile(t, "../../deploy/prometheus/run-queries.txt"), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		_, q, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("run-queries.txt: line without a tab: %q", l)
		}
		out = append(out, q)
	}
	return out
}

func unix(at time.Time) string { return fmt.Sprintf("%.3f", float64(at.UnixMilli())/1000) }

var (
	metricName = regexp.MustCompile(`\bswitchback_[a-z0-9_]+`)
	upSelector = regexp.MustCompile(`\bup\{`)
)

// missingMetrics lists the metric names expr selects that Prometheus has
// never scraped.
func missingMetrics(expr string, names map[string]bool) []string {
	var out []string
	refs := metricName.FindAllString(expr, -1)
	if upSelector.MatchString(expr) {
		refs = append(refs, "up")
	}
	for _, n := range refs {
		if !names[n] {
			out = append(out, n)
		}
	}
	return out
}

func substitute(expr string, vars map[string]string) string {
	// Longest first: $__rate_interval before any shorter variable.
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		expr = strings.ReplaceAll(expr, k, vars[k])
	}
	return expr
}

type grafanaDashboard struct {
	file       string
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func loadDashboards(t *testing.T) []grafanaDashboard {
	t.Helper()
	files, err := filepath.Glob("../../deploy/grafana/dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	var out []grafanaDashboard
	for _, f := range files {
		var d grafanaDashboard
		if err := json.Unmarshal([]byte(readFile(t, f)), &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d.file = filepath.Base(f)
		out = append(out, d)
	}
	return out
}

func allTargets(ds []grafanaDashboard) []string {
	var out []string
	for _, d := range ds {
		for _, pn := range d.Panels {
			for i := range pn.Targets {
				out = append(out, fmt.Sprintf("%s / %s / %d", d.file, pn.Title, i))
			}
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

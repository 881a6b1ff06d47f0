package metricsource

import (
	"slices"
	"strings"
	"testing"
)

func TestDeclared_FindsVecLabelsConstLabelsAndHistograms(t *testing.T) {
	got, err := Declared("../../..")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		labels    []string
		histogram bool
	}{
		{"switchback_availability_cache_total", []string{"result"}, false},
		{"switchback_ingest_partner_seconds", []string{"op"}, true},
		{"switchback_ingest_partner_breaker_open", []string{"kind"}, false}, // ConstLabels
		{"switchback_history_pending_events", nil, false},
		{"switchback_stream_lag_messages", []string{"group", "partition", "topic"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := got[tt.name]
			if !ok {
				t.Fatalf("not found among %d declared metrics", len(got))
			}
			if !slices.Equal(m.Labels, tt.labels) || m.Histogram != tt.histogram {
				t.Errorf("labels %v histogram %v, want %v %v (%s)", m.Labels, m.Histogram, tt.labels, tt.histogram, m.File)
			}
		})
	}
}

func TestCheck_FlagsUnknownMetricsAndLabels(t *testing.T) {
	declared := map[string]Metric{
		"switchback_x_total":   {Name: "switchback_x_total", Labels: []string{"result"}},
		"switchback_x_seconds": {Name: "switchback_x_seconds", Labels: []string{"op"}, Histogram: true},
		"switchback_x_open":    {Name: "switchback_x_open", Labels: []string{"kind"}},
	}
	tests := []struct {
		name string
		expr string
		want []string // substrings of the problems, in order
	}{
		{"ok", `sum by (result) (rate(switchback_x_total{result="hit"}[5m]))`, nil},
		{"histogram suffixes and le", `histogram_quantile(0.95, sum by (le, op) (rate(switchback_x_seconds_bucket[5m])))`, nil},
		{"count of a histogram", `sum by (job, op) (rate(switchback_x_seconds_count[5m]))`, nil},
		{"unknown metric", `sum(rate(switchback_cache_hits_total[5m]))`, []string{"switchback_cache_hits_total is not declared"}},
		{"label the metric lacks", `max by (job, system) (switchback_x_open) > 0`, []string{`label "system"`}},
		{"matcher the metric lacks", `switchback_x_total{outcome="ok"}`, []string{`label "outcome"`}},
		{"le without buckets", `sum by (le) (switchback_x_total)`, []string{`label "le"`}},
		{"_bucket of a counter", `switchback_x_total_bucket`, []string{"not declared"}},
		{"label_replace makes a label", `sum by (class) (label_replace(switchback_x_total, "class", "${1}", "result", "(.).*"))`, nil},
		{"label_replace over a selector with quoted values", `sum by (class) (label_replace(sum by (result) (switchback_x_total{job=~"$job"}), "class", "${1}", "result", "(.).*"))`, nil},
		{"other exporters unchecked", `count by (job) (up{job=~"switchback-.*"} == 1)`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.expr, declared)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want it to mention %q", got[i], w)
				}
			}
		})
	}
}

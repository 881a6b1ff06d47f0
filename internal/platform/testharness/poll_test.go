package testharness

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricValue_ReadsTheSeriesWithTheLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"topic", "group"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h_seconds", Help: "h"})
	reg.MustRegister(c, g, h)
	c.WithLabelValues("a", "x").Add(2)
	c.WithLabelValues("b", "x").Add(5)
	g.Set(7)
	h.Observe(1)
	h.Observe(3)
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"counter series by every label", "c_total", map[string]string{"topic": "b", "group": "x"}, 5},
		{"counter series by some labels", "c_total", map[string]string{"topic": "a"}, 2},
		{"no such series", "c_total", map[string]string{"topic": "z"}, 0},
		{"gauge", "g", nil, 7},
		{"histogram: its count", "h_seconds", nil, 2},
		{"no such metric", "missing", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MetricValue(t, reg, tt.metric, tt.labels); got != tt.want {
				t.Fatalf("MetricValue(%s, %v) = %v, want %v", tt.metric, tt.labels, got, tt.want)
			}
		})
	}
}

// recordingTB is a testing.TB whose Fatalf records instead of stopping.
type recordingTB struct {
	testing.TB
	failed string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failed = format
}

func TestEventually_ReturnsOnceTheConditionHoldsAndFailsAtTheDeadline(t *testing.T) {
	calls := 0
	Eventually(t, time.Minute, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}

	rec := &recordingTB{TB: t}
	n := 0
	// Fatalf does not stop this TB, so cond stops the loop after the
	// deadline has passed once.
	Eventually(rec, 0, "never", func() bool { n++; return n > 1 })
	if rec.failed == "" {
		t.Fatal("Eventually past its deadline did not fail the test")
	}
}

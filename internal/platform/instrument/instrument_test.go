package instrument_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchbackhq/switchback/internal/platform/instrument"
)

func newCounter(help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_test_total", Help: help}, []string{"result"})
}

// TestRegister_SecondIdenticalCollectorCountsIntoTheFirst: two parts of
// one process registering the same metric share its series; a nil
// registry registers nothing; a conflicting definition panics.
func TestRegister_SecondIdenticalCollectorCountsIntoTheFirst(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := instrument.Register(reg, newCounter("Tests."))
	b := instrument.Register(reg, newCounter("Tests."))
	if a != b {
		t.Fatal("the second registration did not return the registered collector")
	}
	a.WithLabelValues("ok").Inc()
	b.WithLabelValues("ok").Inc()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got float64
	for _, f := range fams {
		if f.GetName() == "switchback_test_total" {
			for _, m := range f.GetMetric() {
				got += counterValue(m)
			}
		}
	}
	if got != 2 {
		t.Fatalf("exposed count = %v, want 2 (both users counted)", got)
	}

	c := newCounter("Tests.")
	if instrument.Register(nil, c) != c {
		t.Fatal("a nil registry must return the collector itself")
	}

	defer func() {
		if recover() == nil {
			t.Fatal("a conflicting definition did not panic")
		}
	}()
	instrument.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchback_test_total", Help: "Other."}))
}

func counterValue(m *dto.Metric) float64 { return m.GetCounter().GetValue() }

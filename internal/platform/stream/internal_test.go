package stream

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

func TestTruncate_CutsLongErrorsOnARuneBoundary(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantLen int // in bytes, before the ellipsis
	}{
		{"short stays", "boom", 4},
		{"exactly the limit stays", strings.Repeat("a", maxErrorText), maxErrorText},
		{"long ascii is cut", strings.Repeat("a", 5000), maxErrorText},
		// 3-byte runes: the limit falls inside one, which must not be split.
		{"multibyte is not split", strings.Repeat("€", 1000), maxErrorText - maxErrorText%3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := truncate(tt.in)
			body := strings.TrimSuffix(got, "…")
			if len(body) != tt.wantLen {
				t.Errorf("len = %d, want %d", len(body), tt.wantLen)
			}
			if !utf8.ValidString(got) {
				t.Error("result is not valid UTF-8")
			}
		})
	}
}

func TestNewMetrics_SameRegistryTwiceSharesTheCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := NewMetrics(reg)
	b := NewMetrics(reg) // must not panic: every tier builds its own in `switchback run`
	a.observeProduced("t", 2)
	b.observeProduced("t", 3)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "switchback_stream_produced_total" {
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got != 5 {
				t.Fatalf("produced_total = %v, want 5", got)
			}
			return
		}
	}
	t.Fatal("switchback_stream_produced_total not registered")
}

func TestMetrics_NilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.observeConsumed("t", "g", 0, 3, time.Time{})
	m.observeHandler("t", "g", 0.1, true)
	m.observeDeadLettered("t", "g")
	m.observeProduced("t", 1)
	m.observeProduceErrors("t", 1)
	m.observePublish(0.1)
	m.declareConsumer([]string{"t"}, "g")
	m.DeclareTopics([]string{"t"})
}

func TestMetrics_RecordAgeIsNowMinusTheRecordsTimestamp(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.observeConsumed("t", "g", 0, 0, time.Now().Add(-3*time.Second))
	m.observeConsumed("t", "g", 0, 0, time.Time{}) // no timestamp: not an age
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchback_stream_record_age_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() < 3 || h.GetSampleSum() > 60 {
			t.Fatalf("record age: %d samples, sum %v s; want one of about 3 s", h.GetSampleCount(), h.GetSampleSum())
		}
		return
	}
	t.Fatal("switchback_stream_record_age_seconds not registered")
}

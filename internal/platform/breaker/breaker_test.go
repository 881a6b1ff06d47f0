package breaker

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestBreaker_OpensHalfOpensAndCloses(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "open"})
	s := NewSet(3, 10*time.Second, g)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := s.Get("a")
	steps := []struct {
		name      string
		at        time.Duration
		failed    bool
		wantAllow bool
		wantOpen  bool
	}{
		{"1st failure", 0, true, true, false},
		{"2nd failure", 0, true, true, false},
		{"3rd failure opens", 0, true, true, true},
		{"refused while open", time.Second, false, false, true},
		{"trial after the cooldown fails: open again", 11 * time.Second, true, true, true},
		{"refused again", 12 * time.Second, false, false, true},
		{"trial succeeds: closed", 22 * time.Second, false, true, false},
	}
	for _, st := range steps {
		allowed := b.Allow(t0.Add(st.at))
		if allowed != st.wantAllow {
			t.Fatalf("%s: allow = %v, want %v", st.name, allowed, st.wantAllow)
		}
		if allowed {
			b.Done(t0.Add(st.at), st.failed)
		}
		if s.Open("a") != st.wantOpen {
			t.Fatalf("%s: open = %v, want %v", st.name, s.Open("a"), st.wantOpen)
		}
		want := 0.0
		if st.wantOpen {
			want = 1
		}
		var m dto.Metric
		if err := g.Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetGauge().GetValue(); got != want {
			t.Fatalf("%s: gauge = %v, want %v", st.name, got, want)
		}
	}
	if s.Open("b") {
		t.Fatal("another system's breaker is open")
	}
}

func TestBreaker_OneTrialAtATime(t *testing.T) {
	s := NewSet(1, time.Second, nil)
	b := s.Get("a")
	t0 := time.Now()
	b.Allow(t0)
	b.Done(t0, true)
	if !b.Allow(t0.Add(2*time.Second)) || b.Allow(t0.Add(2*time.Second)) {
		t.Fatal("half-open must let exactly one trial through")
	}
}

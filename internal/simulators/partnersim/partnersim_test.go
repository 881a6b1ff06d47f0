package partnersim

import (
	"testing"
	"time"
)

func TestWindows_StableWithinAnEpochAndMovingAcrossEpochs(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	cfg := New(Config{ChangeRate: 1, ChangeEvery: time.Minute}).cfg
	a := Windows(cfg, "S", "P", "R", t0, t0.Add(72*time.Hour), t0)
	b := Windows(cfg, "S", "P", "R", t0, t0.Add(72*time.Hour), t0.Add(59*time.Second))
	if len(a) != 9 || len(b) != 9 {
		t.Fatalf("windows = %d, %d; want 3 a day over 3 days", len(a), len(b))
	}
	moved := 0
	c := Windows(cfg, "S", "P", "R", t0, t0.Add(72*time.Hour), t0.Add(5*time.Minute))
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("window %d changed within an epoch", i)
		}
		if a[i].ID != c[i].ID || !a[i].Start.Equal(c[i].Start) {
			t.Fatalf("window %d identity changed", i)
		}
		if a[i].Capacity != c[i].Capacity {
			moved++
		}
		if a[i].Capacity < 0 || a[i].Capacity > cfg.MaxCapacity {
			t.Fatalf("capacity %d out of range", a[i].Capacity)
		}
	}
	if moved == 0 {
		t.Fatal("no capacity moved across epochs with ChangeRate 1")
	}
	still := Windows(New(Config{}).cfg, "S", "P", "R", t0, t0.Add(72*time.Hour), t0.Add(time.Hour))
	base := Windows(New(Config{}).cfg, "S", "P", "R", t0, t0.Add(72*time.Hour), t0)
	for i := range still {
		if still[i] != base[i] {
			t.Fatal("capacities moved with ChangeRate 0")
		}
	}
}

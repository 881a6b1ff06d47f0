package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoff_NextDoublesUpToTheMaximum(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi time.Duration
		want   []time.Duration
	}{
		{"doubles then caps", 100 * time.Millisecond, 500 * time.Millisecond,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
		{"max not a power of two of min", 50 * time.Millisecond, 5 * time.Second,
			[]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second}},
		{"zero min is a millisecond", 0, 3 * time.Millisecond,
			[]time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}},
		{"max below min is min", time.Second, time.Millisecond,
			[]time.Duration{time.Second, time.Second}},
		{"sub-millisecond min is kept", time.Microsecond, 4 * time.Microsecond,
			[]time.Duration{time.Microsecond, 2 * time.Microsecond, 4 * time.Microsecond, 4 * time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.lo, tt.hi)
			for i, want := range tt.want {
				if got := b.Next(); got != want {
					t.Fatalf("delay %d = %s, want %s", i+1, got, want)
				}
			}
		})
	}
}

func TestBackoff_ResetStartsOverAtTheMinimum(t *testing.T) {
	b := New(10*time.Millisecond, time.Second)
	b.Next()
	b.Next()
	b.Reset()
	if got := b.Next(); got != 10*time.Millisecond {
		t.Fatalf("after Reset: %s, want 10ms", got)
	}
}

func TestBackoff_WaitReturnsWhenCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := New(time.Hour, time.Hour)
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended ctx = %v, want context.Canceled", err)
	}
	// The delay was used: the next one doubled (capped at the maximum).
	if got := b.Next(); got != time.Hour {
		t.Fatalf("next delay %s, want 1h", got)
	}
}

func TestSleep_ReturnsNilAfterTheDelay(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
}

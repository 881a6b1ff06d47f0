package testharness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Eventually polls cond every 10 ms until it holds, and fails the test
// with what it waited for once timeout has passed. Tests wait for async
// work this way, never with a fixed sleep (STYLE.md).
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RunInBackground runs run on its own goroutine with a context that stop
// cancels. stop waits for run to return, at most within, and answers run's
// error (or that it did not stop); it is idempotent, and the test's cleanup
// calls it and reports an error there, so a test may stop a worker early
// (a crash, a restart) and still have it checked.
func RunInBackground(t testing.TB, name string, within time.Duration, run func(context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(within):
				runErr = fmt.Errorf("%s did not stop within %v", name, within)
			}
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
	return stop
}

// MetricValue is the value of the first series of metric name in reg
// whose labels include labels: a gauge's value, a histogram's sample
// count or a counter's value; 0 when there is none.
func MetricValue(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

package flight_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/flight"
)

func TestGroup_ConcurrentCallersOfOneKeyShareOneRun(t *testing.T) {
	var g flight.Group[int]
	var runs atomic.Int32
	release := make(chan struct{})
	first, started := g.Do("k", func() (int, error) {
		runs.Add(1)
		<-release
		return 42, nil
	})
	if !started {
		t.Fatal("the first caller did not start the call")
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, started := g.Do("k", func() (int, error) { runs.Add(1); return 0, nil })
			if started || c != first {
				t.Error("a caller during the flight started a call of its own")
			}
		}()
	}
	wg.Wait()
	close(release)
	if v, err := first.Result(); v != 42 || err != nil {
		t.Fatalf("Result = %d, %v; want 42, nil", v, err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("fn ran %d times, want 1", n)
	}
}

func TestGroup_AKeyRunsAgainOnceItsCallEnded(t *testing.T) {
	var g flight.Group[string]
	c1, _ := g.Do("k", func() (string, error) { return "a", nil })
	<-c1.Done()
	c2, started := g.Do("k", func() (string, error) { return "", errors.New("b") })
	if !started || c2 == c1 {
		t.Fatal("a call after the first ended did not start anew")
	}
	if _, err := c2.Result(); err == nil || err.Error() != "b" {
		t.Fatalf("second call's error = %v, want b", err)
	}
}

func TestGroup_APanicIsOneFailedCall(t *testing.T) {
	var g flight.Group[int]
	c, _ := g.Do("k", func() (int, error) { panic("boom") })
	if _, err := c.Result(); err == nil {
		t.Fatal("a panicking fn returned no error")
	}
	c2, started := g.Do("k", func() (int, error) { return 7, nil })
	if v, err := c2.Result(); !started || v != 7 || err != nil {
		t.Fatalf("the key after a panic: started=%v, %d, %v", started, v, err)
	}
}

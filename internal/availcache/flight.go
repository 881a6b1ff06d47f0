package availcache

import (
	"fmt"
	"sync"
)

// flights is a minimal singleflight: the first caller of a key runs fn in
// its own goroutine, every caller of the key until it ends gets its result
// on a channel, so a caller can stop waiting (deadline) while fn carries
// on. Not golang.org/x/sync's DoChan (a dependency of the module): a panic
// in its fn is re-raised on a goroutine of its own and ends the process,
// where a refresh that panics must be one failed read.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

type flight struct {
	done chan struct{}
	err  error
}

// do returns the channel closed when the key's flight ends and the flight
// (read err after done). started is true for the caller that started it.
func (f *flights) do(key string, fn func() error) (fl *flight, started bool) {
	f.mu.Lock()
	if f.m == nil {
		f.m = map[string]*flight{}
	}
	if fl, ok := f.m[key]; ok {
		f.mu.Unlock()
		return fl, false
	}
	fl = &flight{done: make(chan struct{})}
	f.m[key] = fl
	f.mu.Unlock()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				fl.err = fmt.Errorf("availability refresh panicked: %v", r)
			}
			f.mu.Lock()
			delete(f.m, key)
			f.mu.Unlock()
			close(fl.done)
		}()
		fl.err = fn()
	}()
	return fl, true
}

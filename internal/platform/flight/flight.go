// Package flight runs one call per key at a time for all who ask meanwhile
// (a singleflight), the one Switchback uses: the availability cache's
// partner refreshes and the supplier-booking router's unit reads.
//
// It differs from golang.org/x/sync/singleflight on two points both users
// need: a panic in fn is one failed call (x/sync's DoChan re-raises it on
// a goroutine of its own, which ends the process), and fn runs on its own
// goroutine, so a caller can stop waiting (its deadline) while fn carries
// on for the others. fn must therefore bound itself (its own context).
package flight

import (
	"fmt"
	"sync"
)

// Group is a set of keyed calls. The zero value is ready to use.
type Group[V any] struct {
	mu sync.Mutex
	m  map[string]*Call[V]
}

// Call is one run of fn: read Val and Err once Done is closed.
type Call[V any] struct {
	done chan struct{}
	val  V
	err  error
}

// Done is closed when the call has ended.
func (c *Call[V]) Done() <-chan struct{} { return c.done }

// Result is the call's value and error; it waits for the call to end.
func (c *Call[V]) Result() (V, error) {
	<-c.done
	return c.val, c.err
}

// Do returns key's call in flight, starting fn for it if there is none;
// started is true for the caller that started it.
func (g *Group[V]) Do(key string, fn func() (V, error)) (c *Call[V], started bool) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*Call[V]{}
	}
	if c, ok := g.m[key]; ok {
		g.mu.Unlock()
		return c, false
	}
	c = &Call[V]{done: make(chan struct{})}
	g.m[key] = c
	g.mu.Unlock()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				var zero V
				c.val, c.err = zero, fmt.Errorf("flight %q panicked: %v", key, r)
			}
			g.mu.Lock()
			delete(g.m, key)
			g.mu.Unlock()
			close(c.done)
		}()
		c.val, c.err = fn()
	}()
	return c, true
}

// Package breaker is the circuit breaker of Switchback's clients of remote
// systems (partners, booking systems): one per remote system, opened by
// consecutive failures, half-open after a cooldown. It decides nothing
// about what a failure is: the client says so.
package breaker

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type state int

const (
	closed state = iota
	open
	halfOpen
)

// Set holds one Breaker per remote system, by the key the client chooses
// (a partner's base URL, a booking system's scheme and host).
type Set struct {
	failures int
	cooldown time.Duration
	gauge    prometheus.Gauge // breakers not closed; nil: none

	mu sync.Mutex
	m  map[string]*Breaker
}

// NewSet returns a set whose breakers open after failures consecutive
// failures for cooldown; gauge (optional) counts the breakers not closed.
func NewSet(failures int, cooldown time.Duration, gauge prometheus.Gauge) *Set {
	return &Set{failures: failures, cooldown: cooldown, gauge: gauge, m: map[string]*Breaker{}}
}

// Get returns the breaker of key, made on first use.
func (s *Set) Get(key string) *Breaker {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.m[key]
	if b == nil {
		b = &Breaker{set: s}
		s.m[key] = b
	}
	return b
}

// Open reports whether the breaker of key is open or half-open.
func (s *Set) Open(key string) bool {
	b := s.Get(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != closed
}

// Breaker is a consecutive-failures circuit breaker: failures in a row
// open it for the cooldown; then one trial call is let through
// (half-open) and its outcome closes or reopens it. Calls refused while
// open or while the trial runs fail fast, so a dead system costs no
// timeouts.
type Breaker struct {
	set *Set

	mu        sync.Mutex
	state     state
	count     int
	openUntil time.Time
	trial     bool // a half-open trial call is in flight
}

// Allow reports whether a call may go out now.
func (b *Breaker) Allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case closed:
		return true
	case open:
		if now.Before(b.openUntil) {
			return false
		}
		b.state, b.trial = halfOpen, true
		return true
	default: // half-open: one trial at a time
		if b.trial {
			return false
		}
		b.trial = true
		return true
	}
}

// Done records the outcome of a call that Allow let through.
func (b *Breaker) Done(now time.Time, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.state
	switch {
	case !failed:
		b.state, b.count, b.trial = closed, 0, false
	case b.state == halfOpen:
		b.state, b.openUntil, b.trial = open, now.Add(b.set.cooldown), false
	default:
		b.count++
		if b.count >= b.set.failures && b.state == closed {
			b.state, b.openUntil = open, now.Add(b.set.cooldown)
		}
	}
	if g := b.set.gauge; g != nil {
		switch {
		case was == closed && b.state != closed:
			g.Inc()
		case was != closed && b.state == closed:
			g.Dec()
		}
	}
}

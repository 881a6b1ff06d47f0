package bookingsystem

// The breaker is copied from ingest/partner/breaker.go: that package is not
// ours to edit, and a shared package for 70 lines is not worth a seam yet.

import (
	"sync"
	"time"
)

type breakerState int

const (
	stateClosed breakerState = iota
	stateOpen
	stateHalfOpen
)

// breaker is a consecutive-failures circuit breaker: failures in a row
// open it for cooldown; then one trial call is let through (half-open)
// and its outcome closes or reopens it. Calls refused while open or while
// the trial runs fail fast, so a dead booking system costs no timeouts.
type breaker struct {
	failures int
	cooldown time.Duration

	mu        sync.Mutex
	state     breakerState
	count     int
	openUntil time.Time
	trial     bool // a half-open trial call is in flight
}

func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case stateClosed:
		return true
	case stateOpen:
		if now.Before(b.openUntil) {
			return false
		}
		b.state, b.trial = stateHalfOpen, true
		return true
	default: // half-open: one trial at a time
		if b.trial {
			return false
		}
		b.trial = true
		return true
	}
}

func (b *breaker) done(now time.Time, failed bool, m *metrics) {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.state
	switch {
	case !failed:
		b.state, b.count, b.trial = stateClosed, 0, false
	case b.state == stateHalfOpen:
		b.state, b.openUntil, b.trial = stateOpen, now.Add(b.cooldown), false
	default:
		b.count++
		if b.count >= b.failures && b.state == stateClosed {
			b.state, b.openUntil = stateOpen, now.Add(b.cooldown)
		}
	}
	switch {
	case was == stateClosed && b.state != stateClosed:
		m.open.Inc()
	case was != stateClosed && b.state == stateClosed:
		m.open.Dec()
	}
}

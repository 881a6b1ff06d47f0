// Package instrument holds the one rule every stage follows to expose its
// Prometheus metrics on the process's registry. `switchback run` builds
// every tier on one registry, and a part may be built more than once in a
// process (two consumers of a processor, a scheduler and a worker sharing
// a metric, tests): the second registration of an identical collector
// must count into the first, not be lost and not fail the start.
//
// It must not define metrics itself: each package owns its names, which
// the dashboards and alerts of deploy/ are checked against.
package instrument

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns it; when an identical
// collector is registered already, it returns that one, so that both
// users count into the series the registry exposes. A nil reg registers
// nothing and returns c. A conflicting definition (same name, other help,
// labels or type) panics: a programming error, found at start.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(fmt.Sprintf("instrument: register: %v", err))
	}
	return c
}

package bookingsim

import (
	"net/http"
	"strings"
	"sync"
)

// Fault makes chosen requests fail, deterministically (Config.ErrorRate
// fails at random): of the requests with Method whose path ends with
// PathSuffix, the first Skip are served, the next Times fail (0: every
// one after Skip), the rest are served again. A failing request is
// answered Status (default 500) with an error body; with Lost it is
// served first and only its answer is replaced (the change is made, the
// caller never learns it: a lost answer).
//
// Tests use it to break a multi-call operation half way (the second
// createBooking of a hold, the second confirmation of an OCTO hold...).
type Fault struct {
	Method     string // "" matches any
	PathSuffix string // "" matches any
	Skip       int
	Times      int
	Status     int
	Lost       bool
}

// faults is the armed faults and how many requests each has seen.
type faults struct {
	mu   sync.Mutex
	list []*armedFault
}

type armedFault struct {
	Fault
	seen int
}

// InjectFault arms f; faults armed earlier are checked first.
func (s *Server) InjectFault(f Fault) {
	if f.Status == 0 {
		f.Status = http.StatusInternalServerError
	}
	s.faults.mu.Lock()
	s.faults.list = append(s.faults.list, &armedFault{Fault: f})
	s.faults.mu.Unlock()
}

// ClearFaults disarms every fault.
func (s *Server) ClearFaults() {
	s.faults.mu.Lock()
	s.faults.list = nil
	s.faults.mu.Unlock()
}

// fault is the fault r triggers, if any; every matching fault counts r.
func (s *Server) fault(r *http.Request) (Fault, bool) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	var hit *armedFault
	for _, f := range s.faults.list {
		if (f.Method != "" && f.Method != r.Method) || !strings.HasSuffix(r.URL.Path, f.PathSuffix) {
			continue
		}
		f.seen++
		if hit == nil && f.seen > f.Skip && (f.Times == 0 || f.seen <= f.Skip+f.Times) {
			hit = f
		}
	}
	if hit == nil {
		return Fault{}, false
	}
	return hit.Fault, true
}

// discard is a ResponseWriter that drops the answer (a Lost fault).
type discard struct{ h http.Header }

func (d *discard) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

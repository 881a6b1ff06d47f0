package bookingsim

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault makes chosen requests fail, deterministically (Config.ErrorRate
// fails at random): of the requests with Method whose path ends with
// PathSuffix (and whose body holds BodyContains), the first Skip are
// served, the next Times fail (0: every one after Skip), the rest are
// served again. A failing request is answered Status (default 500) with
// an error body; with Lost it is served first and only its answer is
// replaced (the change is made, the caller never learns it: a lost
// answer). With Delay the request is served first and its answer held
// back that long (or until the caller gives up): a slow answer, the real
// one when Status is 0, else the failure.
//
// Tests use it to break a multi-call operation half way (the second
// createBooking of a hold, the second confirmation of an OCTO hold...);
// BodyContains picks one call among concurrent ones (a hold's item by its
// option id).
type Fault struct {
	Method       string // "" matches any
	PathSuffix   string // "" matches any
	BodyContains string // "" matches any
	Skip         int
	Times        int
	Status       int
	Lost         bool
	Delay        time.Duration
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
	if f.Status == 0 && f.Delay == 0 {
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
// A fault that looks into bodies reads r's body and puts it back.
func (s *Server) fault(r *http.Request) (Fault, bool) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	var body []byte
	read := false
	var hit *armedFault
	for _, f := range s.faults.list {
		if (f.Method != "" && f.Method != r.Method) || !strings.HasSuffix(r.URL.Path, f.PathSuffix) {
			continue
		}
		if f.BodyContains != "" {
			if !read && r.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
				r.Body = io.NopCloser(bytes.NewReader(body))
				read = true
			}
			if !bytes.Contains(body, []byte(f.BodyContains)) {
				continue
			}
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

// held is a ResponseWriter that keeps the answer (a Lost or Delay fault):
// sent later, or never.
type held struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (d *held) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (d *held) Write(b []byte) (int, error) { return d.body.Write(b) }
func (d *held) WriteHeader(status int)      { d.status = status }

// send writes the kept answer to w.
func (d *held) send(w http.ResponseWriter) {
	for k, v := range d.h {
		w.Header()[k] = v
	}
	if d.status != 0 {
		w.WriteHeader(d.status)
	}
	_, _ = w.Write(d.body.Bytes())
}

package testharness

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// ErrBrokerUnreachable is what a failing Recorder's Publish returns.
var ErrBrokerUnreachable = errors.New("broker unreachable")

// Recorder is an in-memory stream.Publisher standing in for Kafka at the
// seam; SetFail makes Publish fail as an unreachable broker does. The zero
// value records. Safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	msgs []stream.Message
	fail bool
}

// Publish records msgs, or returns ErrBrokerUnreachable (recording
// nothing) while SetFail(true) holds.
func (r *Recorder) Publish(_ context.Context, msgs ...stream.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return ErrBrokerUnreachable
	}
	r.msgs = append(r.msgs, msgs...)
	return nil
}

// SetFail makes Publish fail (true) or succeed.
func (r *Recorder) SetFail(v bool) { r.mu.Lock(); r.fail = v; r.mu.Unlock() }

// Messages returns a copy of what was published.
func (r *Recorder) Messages() []stream.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stream.Message(nil), r.msgs...)
}

// Reset forgets what was published.
func (r *Recorder) Reset() { r.mu.Lock(); r.msgs = nil; r.mu.Unlock() }

// Envelopes decodes the recorded messages; a record that is not an
// envelope fails t.
func (r *Recorder) Envelopes(t testing.TB) []schemas.Envelope {
	t.Helper()
	var out []schemas.Envelope
	for _, m := range r.Messages() {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			t.Fatalf("record on %s is not an envelope: %v", m.Topic, err)
		}
		out = append(out, env)
	}
	return out
}

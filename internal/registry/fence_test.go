package registry

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// flushingFence is the views' epoch as a write sees it: each call takes
// the next answer ("" = lost), and the first call can run lose.
type flushingFence struct {
	mu      sync.Mutex
	answers []string
	lose    func()
}

func (f *flushingFence) Epoch(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	if f.lose != nil {
		f.lose()
		f.lose = nil
	}
	return e, nil
}

// TestWrite_FencedAgainstLostViews: after a FLUSHALL the slot of an
// existing rule reads as empty, and a create would publish a second rule
// of the type (with a new securityKey) over the first, in the log of
// record: refused (503) while the views are rebuilt, and when they were
// lost between the reservation and the publish. The slot is released.
func TestWrite_FencedAgainstLostViews(t *testing.T) {
	tests := []struct {
		name    string
		answers []string
		flush   bool
		want    error
	}{
		{"views complete: the second rule of a type is 409", []string{"e1"}, false, ErrConflict},
		{"views being rebuilt: refused", []string{""}, false, ErrUnavailable},
		{"views lost after the epoch read: refused before the publish", []string{"e1", ""}, true, ErrUnavailable},
		{"views lost and rebuilt meanwhile: refused", []string{"e1", "e2"}, true, ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			mustCreate(t, e.reg, "sub", "availability", ruleIn("https://hooks.example/a", ""))
			published := len(e.pub.messages())
			f := &flushingFence{answers: tt.answers}
			if tt.flush {
				f.lose = e.mr.FlushAll
			}
			e.reg.fence = f
			_, err := e.reg.Create(t.Context(), "sub", "availability", ruleIn("https://hooks.example/b", ""))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Create = %v, want %v", err, tt.want)
			}
			if n := len(e.pub.messages()); n != published {
				t.Fatalf("%d events published, want none", n-published)
			}
			if tt.flush {
				if n, _ := e.rdb.Exists(t.Context(), e.reg.keys.lock("sub", "availability")).Result(); n != 0 {
					t.Fatal("the slot's marker was left behind")
				}
			}
		})
	}
}

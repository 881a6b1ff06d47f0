package catalog

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// flushingFence is the views' epoch as a write sees it: each call takes
// the next answer ("" = lost), and the first call can run lose (the
// FLUSHALL lands right after the write read the epoch).
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

// TestWrite_FencedAgainstLostViews: a catalog write never publishes what
// it decided on a lost view. After a FLUSHALL the supplier reads as
// absent, and a create would publish version 1 over the existing one, in
// the log of record: refused (503) while the views are rebuilt, and when
// they were lost between the write's reads and its publish.
func TestWrite_FencedAgainstLostViews(t *testing.T) {
	tests := []struct {
		name    string
		answers []string
		flush   bool
		wantErr bool
	}{
		{"views complete: decided on the view (409)", []string{"e1"}, false, false},
		{"views being rebuilt: refused before the lock", []string{""}, false, true},
		{"views lost after the lock's epoch read: refused before the publish", []string{"e1", ""}, true, true},
		{"views lost and rebuilt meanwhile: refused", []string{"e1", "e2"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rec, rdb := newStore(t)
			ctx := context.Background()
			if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
				t.Fatal(err)
			}
			published := len(rec.envelopes(t))
			f := &flushingFence{answers: tt.answers}
			if tt.flush {
				f.lose = func() { _ = testharness.FlushAll(ctx, rdb) }
			}
			s.fence = f
			_, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "again"))
			switch {
			case tt.wantErr && !errors.Is(err, ErrUnavailable):
				t.Fatalf("CreateSupplier = %v, want ErrUnavailable", err)
			case !tt.wantErr && !errors.Is(err, ErrConflict):
				t.Fatalf("CreateSupplier = %v, want the 409 of an existing supplier", err)
			}
			if n := len(rec.envelopes(t)); n != published {
				t.Fatalf("%d events published, want none", n-published)
			}
			// The lock was released: the next write goes through.
			s.fence = &flushingFence{answers: []string{"e3"}}
			if _, err := s.CreateSupplier(ctx, opA, supplierIn("s2", "other")); err != nil {
				t.Fatalf("next write: %v", err)
			}
		})
	}
}

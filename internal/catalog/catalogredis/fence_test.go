package catalogredis

import (
	"context"
	"errors"
	"testing"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// TestWrite_FencedAgainstLostViews: a catalog write never publishes what
// it decided on a lost view. After a FLUSHALL the supplier reads as
// absent, and a create would publish version 1 over the existing one, in
// the log of record: refused (503) while the views are rebuilt, and when
// they were lost between the write's reads and its publish; on complete
// views it is the 409 of an existing supplier.
func TestWrite_FencedAgainstLostViews(t *testing.T) {
	for _, tt := range testharness.FenceCases() {
		t.Run(tt.Name, func(t *testing.T) {
			s, rec, rdb := newStore(t)
			ctx := context.Background()
			if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "v1")); err != nil {
				t.Fatal(err)
			}
			published := len(rec.Envelopes(t))
			var lose func()
			if tt.Flush {
				lose = func() { _ = testharness.FlushAll(ctx, rdb) }
			}
			s.fence = testharness.NewFlushingFence(tt.Answers, lose)
			_, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "again"))
			switch {
			case tt.Refused && !errors.Is(err, catalog.ErrUnavailable):
				t.Fatalf("CreateSupplier = %v, want ErrUnavailable", err)
			case !tt.Refused && !errors.Is(err, catalog.ErrConflict):
				t.Fatalf("CreateSupplier = %v, want the 409 of an existing supplier", err)
			}
			if n := len(rec.Envelopes(t)); n != published {
				t.Fatalf("%d events published, want none", n-published)
			}
			// The lock was released: the next write goes through.
			s.fence = testharness.NewFlushingFence([]string{"e3"}, nil)
			if _, err := s.CreateSupplier(ctx, opA, supplierIn("s2", "other")); err != nil {
				t.Fatalf("next write: %v", err)
			}
		})
	}
}

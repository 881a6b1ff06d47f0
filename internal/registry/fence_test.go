package registry

import (
	"errors"
	"testing"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// TestWrite_FencedAgainstLostViews: after a FLUSHALL the slot of an
// existing rule reads as empty, and a create would publish a second rule
// of the type (with a new securityKey) over the first, in the log of
// record: refused (503) while the views are rebuilt, and when they were
// lost between the reservation and the publish; on complete views the
// second rule of a type is 409. The slot is released.
func TestWrite_FencedAgainstLostViews(t *testing.T) {
	for _, tt := range testharness.FenceCases() {
		t.Run(tt.Name, func(t *testing.T) {
			e := newEnv(t, false)
			mustCreate(t, e.reg, "sub", "availability", ruleIn("https://hooks.example/a", ""))
			published := len(e.pub.Messages())
			var lose func()
			if tt.Flush {
				lose = e.mr.FlushAll
			}
			e.reg.fence = testharness.NewFlushingFence(tt.Answers, lose)
			_, err := e.reg.Create(t.Context(), "sub", "availability", ruleIn("https://hooks.example/b", ""))
			want := ErrConflict
			if tt.Refused {
				want = ErrUnavailable
			}
			if !errors.Is(err, want) {
				t.Fatalf("Create = %v, want %v", err, want)
			}
			if n := len(e.pub.Messages()); n != published {
				t.Fatalf("%d events published, want none", n-published)
			}
			if tt.Flush {
				if n, _ := e.rdb.Exists(t.Context(), e.reg.keys.lock("sub", "availability")).Result(); n != 0 {
					t.Fatal("the slot's marker was left behind")
				}
			}
		})
	}
}

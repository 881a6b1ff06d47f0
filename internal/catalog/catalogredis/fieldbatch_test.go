package catalogredis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/redisbatch"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// TestApplyBatch_LeavesTheViewAsOneEventAtATime pins the grouped apply
// (one applyFields call per version hash) to Apply's rules event by event:
// a supplier's suppliers, product, rates and availabilities, then the same
// events again, older ones after newer, and more fields of one hash than
// one call holds, give the same view and the same "applied" answers.
func TestApplyBatch_LeavesTheViewAsOneEventAtATime(t *testing.T) {
	s, rec, rdb := newStore(t)
	ctx := context.Background()
	seedRates(t, s, redisbatch.MaxPerCall+10)
	for i := range redisbatch.MaxPerCall + 10 {
		if _, err := s.PutAvailabilities(ctx, opA, "s1", "p1", fmt.Sprintf("r%d", i), window(i%5)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := s.PutAvailabilities(ctx, opA, "s1", "p1", "r0", window(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PutSupplier(ctx, opA, "s1", supplierIn("s1", "Renamed")); err != nil {
		t.Fatal(err)
	}
	envs := rec.Envelopes(t)
	// Everything, then everything again, then newest first.
	batch := slices.Concat(envs, envs)
	for i := len(envs) - 1; i >= 0; i-- {
		batch = append(batch, envs[i])
	}

	// The writes applied their events: both replays start from nothing.
	if err := testharness.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	var want []bool
	for _, env := range batch {
		ok, err := s.Apply(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ok)
	}
	wantView := dumpCatalog(t, rdb)
	if err := testharness.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	got, err := s.ApplyBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("event %d of %d (%s v%d): applied %v batched, %v one at a time", i, len(batch), batch[i].Key, batch[i].Version, got[i], want[i])
			}
		}
		t.Fatalf("%d answers batched, %d one at a time", len(got), len(want))
	}
	if n := countTrue(got); n != len(envs) {
		t.Fatalf("%d events applied, want each of the %d once", n, len(envs))
	}
	if gotView := dumpCatalog(t, rdb); !maps.Equal(gotView, wantView) {
		for _, k := range slices.Sorted(maps.Keys(wantView)) {
			if gotView[k] != wantView[k] {
				t.Errorf("%s is %.80q batched, %.80q one at a time", k, gotView[k], wantView[k])
			}
		}
		t.Fatalf("the views differ (%d keys batched, %d one at a time)", len(gotView), len(wantView))
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// dumpCatalog is every key of the view and its value.
func dumpCatalog(t *testing.T, rdb redis.UniversalClient) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := testharness.Keys(ctx, rdb, "*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "string":
			out[k], err = rdb.Get(ctx, k).Result()
		case "hash":
			var h map[string]string
			h, err = rdb.HGetAll(ctx, k).Result()
			out[k] = fmt.Sprint(h)
		case "set":
			var m []string
			m, err = rdb.SMembers(ctx, k).Result()
			slices.Sort(m)
			out[k] = fmt.Sprint(m)
		default:
			out[k] = typ
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// claimBackends runs a claim test on miniredis and on a real redis-server
// (Lua engines differ: miniredis interprets gopher-lua).
func claimBackends(t *testing.T, test func(t *testing.T, v *view)) {
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		test(t, &view{rdb: rdb, prefix: "p:", doneTTL: time.Minute})
	})
	t.Run("redis-server", func(t *testing.T) {
		test(t, &view{rdb: testharness.RedisClient(t, 8), prefix: "p:", doneTTL: time.Minute})
	})
}

// scheduleHeads enqueues one pending delivery per entity, n entities of
// each source, all due at at; ids are <src>-<i>.
func scheduleHeads(t testing.TB, v *view, sub string, at time.Time, perSource map[string]int) {
	t.Helper()
	var recs []schemas.ScheduledDelivery
	for _, src := range slices.Sorted(maps.Keys(perSource)) {
		for i := range perSource[src] {
			id := fmt.Sprintf("%s-%d", src, i)
			recs = append(recs, schemas.ScheduledDelivery{Attempt: 1, At: at, Notification: schemas.Notification{
				ID: id, Subscriber: sub, Type: "availability", EntityKey: src + "/" + id, Supplier: src,
				Payload: json.RawMessage(`{}`), CreatedAt: at,
			}})
		}
	}
	if err := v.enqueue(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// claimedSources is the source of each claimed delivery, in claim order.
func claimedSources(t *testing.T, v *view, sub string, now time.Time, limit int) []string {
	t.Helper()
	got, err := v.claim(context.Background(), sub, now, now.Add(time.Minute), limit)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(got))
	for i, r := range got {
		out[i] = r.Notification.Supplier
	}
	return out
}

// TestClaim_SharesAmongSourcesLeastRecentlyServedFirst pins the claim's
// fairness within a subscriber: each claim gives every due source an
// equal share of its limit, and the sources served longest ago go first,
// so that single claims go round the sources.
func TestClaim_SharesAmongSourcesLeastRecentlyServedFirst(t *testing.T) {
	claimBackends(t, func(t *testing.T, v *view) {
		sub := "sub"
		t0 := time.Now().Truncate(time.Millisecond)
		scheduleHeads(t, v, sub, t0, map[string]int{"A": 6, "B": 1, "C": 4})
		now := t0.Add(time.Second)

		steps := []struct {
			limit int
			want  []string
		}{
			// Nothing served yet: one each, in the order of their earliest due.
			{3, []string{"A", "B", "C"}},
			// B has nothing left; A and C split 4.
			{4, []string{"A", "A", "C", "C"}},
			// A was served before C: one at a time goes to A first...
			{1, []string{"A"}},
			// ... then to C, served longer ago than A now.
			{1, []string{"C"}},
			// Only A has due heads: all of them, however the limit splits.
			{10, []string{"A", "A"}},
			// Everything is claimed (leased for a minute): nothing is due.
			{10, []string{}},
		}
		for i, st := range steps {
			if got := claimedSources(t, v, sub, now, st.limit); !slices.Equal(got, st.want) {
				t.Fatalf("claim %d (limit %d) took from %v, want %v", i+1, st.limit, got, st.want)
			}
		}
		// A lease that ran out (its instance died) makes the head due again.
		if got := claimedSources(t, v, sub, now.Add(2*time.Minute), 100); len(got) != 11 {
			t.Fatalf("after the leases ran out, claim took %d heads, want all 11", len(got))
		}

		// A source that took its whole share goes round again for what the
		// others left, and counts as served at its last turn.
		sub2 := "sub2"
		scheduleHeads(t, v, sub2, t0, map[string]int{"A": 5, "C": 1})
		if got, want := claimedSources(t, v, sub2, now, 5), []string{"A", "A", "C", "A", "A"}; !slices.Equal(got, want) {
			t.Fatalf("sub2 claim took from %v, want %v", got, want)
		}
		scheduleHeads(t, v, sub2, t0, map[string]int{"C": 2}) // C-0 is known: only C-1 is new
		if got, want := claimedSources(t, v, sub2, now, 1), []string{"C"}; !slices.Equal(got, want) {
			t.Fatalf("sub2 claim after A's second turn took from %v, want %v", got, want)
		}
	})
}

// TestClaim_TakesAChainsNextOnlyAfterItsHeadCompleted: a claimed head's
// entity sends nothing more until the head is complete; then the next of
// the chain is due at once.
func TestClaim_TakesAChainsNextOnlyAfterItsHeadCompleted(t *testing.T) {
	claimBackends(t, func(t *testing.T, v *view) {
		ctx := context.Background()
		sub := "sub"
		t0 := time.Now().Truncate(time.Millisecond)
		var recs []schemas.ScheduledDelivery
		for i := range 3 {
			recs = append(recs, schemas.ScheduledDelivery{Attempt: 1, At: t0.Add(time.Duration(i) * time.Microsecond), Notification: schemas.Notification{
				ID: fmt.Sprintf("n%d", i), Subscriber: sub, Type: "availability", EntityKey: "A/rate-1", Supplier: "A",
				Payload: json.RawMessage(`{}`), CreatedAt: t0,
			}})
		}
		if err := v.enqueue(ctx, recs); err != nil {
			t.Fatal(err)
		}
		now := t0.Add(time.Second)
		for i := range 3 {
			got, err := v.claim(ctx, sub, now, now.Add(time.Minute), 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Notification.ID != recs[i].Notification.ID {
				t.Fatalf("claim %d took %v, want only %s", i+1, got, recs[i].Notification.ID)
			}
			if again, err := v.claim(ctx, sub, now, now.Add(time.Minute), 10); err != nil || len(again) != 0 {
				t.Fatalf("claim before %s completed took %v (%v), want nothing", recs[i].Notification.ID, again, err)
			}
			if err := v.apply(ctx, []change{{rec: got[0], kind: changeComplete, outcome: schemas.OutcomeDelivered}}, nil, now); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// BenchmarkClaim is one lane's claim of 64 heads from a subscriber with
// 100 sources of 40 due entities each (the shape of bench/e2elatency's
// default load), on a redis-server. The leases end at once, so every
// claim finds the same work due.
func BenchmarkClaim(b *testing.B) {
	rdb := testharness.RedisClient(b, 8)
	v := &view{rdb: rdb, prefix: "p:", doneTTL: time.Minute}
	ctx := context.Background()
	sub := "sub"
	perSource := make(map[string]int, 100)
	for s := range 100 {
		perSource[fmt.Sprintf("sup%03d", s)] = 40
	}
	scheduleHeads(b, v, sub, time.Now().Add(-time.Hour).Truncate(time.Millisecond), perSource)
	now := time.Now()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := v.claim(ctx, sub, now, now, 64)
		if err != nil || len(got) != 64 {
			b.Fatalf("claimed %d (%v), want 64", len(got), err)
		}
	}
	b.StopTimer()
	// The script's own time in Redis (the rest of ns/op is the round trip
	// and decoding the records).
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:"); ok {
			for _, f := range strings.Split(strings.TrimSpace(rest), ",") {
				if v, ok := strings.CutPrefix(f, "usec_per_call="); ok {
					if us, err := strconv.ParseFloat(v, 64); err == nil {
						b.ReportMetric(us*1000, "redis-ns/op")
					}
				}
			}
		}
	}
}

package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/redisbatch"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// batchStep is one write of the schedule: an enqueue or an apply.
type batchStep struct {
	enqueue []schemas.ScheduledDelivery
	apply   []change
	claim   string // else: claim up to 100 heads of this subscriber
}

// TestView_BatchedWritesLeaveTheScheduleAsOneByOne pins the batch scripts
// (one call per subscriber per batch) to what writing each entry in a call
// of its own leaves: the same records, chains, due heads, sources, served
// stamps, counts, outcomes and ready index. The steps mix subscribers,
// chains, entries without an entity, replays, a duplicate inside one
// batch, changes of deliveries already gone, an unclaim of a delivery that
// is not a head, and one subscriber's batch longer than a call holds.
func TestView_BatchedWritesLeaveTheScheduleAsOneByOne(t *testing.T) {
	claimBackends(t, func(t *testing.T, base *view) {
		ctx := context.Background()
		t0 := time.Now().Truncate(time.Millisecond)
		now := t0.Add(time.Second)
		rec := func(id, sub, entity, supplier string, at time.Duration, replay bool) schemas.ScheduledDelivery {
			n := schemas.Notification{ID: id, Subscriber: sub, Type: "availability", EntityKey: entity, Supplier: supplier,
				Payload: json.RawMessage(`{}`), CreatedAt: t0}
			if replay {
				n.Source = sourceReplay
			}
			return schemas.ScheduledDelivery{Attempt: 1, At: t0.Add(at), Notification: n}
		}
		e1 := []schemas.ScheduledDelivery{rec("e1-0", "s1", "A/r1", "A", 0, false), rec("e1-1", "s1", "A/r1", "A", 1, false), rec("e1-2", "s1", "A/r1", "A", 2, false)}
		e2 := rec("e2-0", "s1", "B/r2", "B", 3, false)
		x := rec("x-0", "s1", "", "", 4, false)
		rp := rec("rp-0", "s1", "A/r9", "A", 5, true)
		other := []schemas.ScheduledDelivery{rec("o-0", "s2", "C/r1", "C", 0, false), rec("o-1", "s2", "C/r1", "C", 1, false)}
		first := slices.Concat(e1, []schemas.ScheduledDelivery{e2, other[0], x, e1[0], rp, other[1]})
		var long []schemas.ScheduledDelivery
		for i := range redisbatch.MaxPerCall + 44 {
			long = append(long, rec(fmt.Sprintf("l-%d", i), "s3", fmt.Sprintf("D/r%d", i%7), "D", 0, false))
		}
		retried := e2
		retried.Attempt, retried.At = 2, now.Add(time.Minute)
		steps := []batchStep{
			{enqueue: first},
			{enqueue: long},
			{claim: "s1"},
			{apply: []change{
				{rec: e1[0], kind: changeComplete, outcome: schemas.OutcomeDelivered},
				{rec: retried, kind: changeReschedule},
				{rec: x, kind: changeUnclaim, next: now.Add(time.Second)},
				{rec: e1[2], kind: changeUnclaim, next: now}, // not a head: kept where it is
				{rec: rp, kind: changeComplete, outcome: schemas.OutcomeDelivered},
				{rec: other[0], kind: changeComplete, outcome: schemas.OutcomeFailed},
				{rec: e1[0], kind: changeComplete, outcome: schemas.OutcomeDelivered}, // gone already
				{rec: long[3], kind: changeComplete, outcome: schemas.OutcomeDelivered},
			}},
			// e1-0 is done: only its replay is taken again.
			{enqueue: []schemas.ScheduledDelivery{e1[0], rec("e1-0", "s1", "A/r1", "A", 0, true), rec("new", "s2", "C/r1", "C", 0, false)}},
			{claim: "s1"},
			{apply: []change{{rec: e1[1], kind: changeComplete, outcome: schemas.OutcomeDelivered}}},
		}
		batched := &view{rdb: base.rdb, prefix: "batch:", doneTTL: base.doneTTL}
		single := &view{rdb: base.rdb, prefix: "single:", doneTTL: base.doneTTL}
		for i, st := range steps {
			switch {
			case st.claim != "":
				for _, v := range []*view{batched, single} {
					if _, err := v.claim(ctx, st.claim, now, now.Add(time.Minute), 100); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			case st.enqueue != nil:
				if err := batched.enqueue(ctx, st.enqueue); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				for _, r := range st.enqueue {
					if err := single.enqueue(ctx, []schemas.ScheduledDelivery{r}); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			default:
				if err := batched.apply(ctx, st.apply, nil, now); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				for _, c := range st.apply {
					if err := single.apply(ctx, []change{c}, nil, now); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
			}
			got, want := dumpView(t, batched), dumpView(t, single)
			if !maps.Equal(got, want) {
				for _, k := range slices.Sorted(maps.Keys(want)) {
					if got[k] != want[k] {
						t.Errorf("step %d: %s is %q batched, %q one by one", i, k, got[k], want[k])
					}
				}
				for _, k := range slices.Sorted(maps.Keys(got)) {
					if _, ok := want[k]; !ok {
						t.Errorf("step %d: %s is %q batched, absent one by one", i, k, got[k])
					}
				}
				t.FailNow()
			}
		}
		// And what the steps leave is what they mean, not only the same twice.
		d := dumpView(t, batched)
		for k, want := range map[string]string{
			"{s1}:pending":    "4", // e1-1 was completed, e1-2, e2-0 (retried), x-0 and e1-0's replay are left
			"{s1}:replays":    "1",
			"{s1}:chain:A/r1": "[e1-2 e1-0]",
			"{s2}:pending":    "2",
			"{s3}:pending":    fmt.Sprint(redisbatch.MaxPerCall + 43),
			"{s1}:done:e1-1":  "delivered",
			"{s2}:done:o-0":   "failed",
		} {
			if d[k] != want {
				t.Errorf("%s = %q, want %q", k, d[k], want)
			}
		}
	})
}

// dumpView is every key of v's schedule (prefix cut) and its value, but
// the change counters (seq), which count calls.
func dumpView(t *testing.T, v *view) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := testharness.Keys(ctx, v.rdb, v.prefix+"*") // every master of a cluster
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		name := strings.TrimPrefix(k, v.prefix)
		if strings.HasSuffix(name, ":seq") {
			continue
		}
		typ, err := v.rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var val any
		switch typ {
		case "string":
			val, err = v.rdb.Get(ctx, k).Result()
		case "list":
			val, err = v.rdb.LRange(ctx, k, 0, -1).Result()
		case "zset":
			val, err = v.rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "hash":
			var h map[string]string
			h, err = v.rdb.HGetAll(ctx, k).Result()
			val = fmt.Sprint(h) // fmt sorts map keys
		default:
			t.Fatalf("%s: unexpected type %s", k, typ)
		}
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if s, ok := val.(string); ok {
			out[name] = s
		} else {
			out[name] = fmt.Sprint(val)
		}
	}
	return out
}

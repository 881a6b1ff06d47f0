package catalogredis

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// countScripts counts the scripts a client sends, alone or in pipelines.
type countScripts struct{ n *atomic.Int64 }

func (countScripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c countScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}
func (c countScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}
func (c countScripts) count(cmd redis.Cmder) {
	if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
		c.n.Add(1)
	}
}

// TestApplyRecords_SendsNoSetTheViewHolds: the records a writer applied
// are read back without sending their sets (no script call), answered not
// applied, as the script answers; on a view that lost them they are
// applied and give the view the writer left; an older record after a
// newer one is not sent.
func TestApplyRecords_SendsNoSetTheViewHolds(t *testing.T) {
	s, rec, rdb := newStore(t)
	ctx := context.Background()
	seedRates(t, s, 3)
	for i, rid := range []string{"r0", "r1", "r2", "r0"} { // r0 twice: versions 1 and 2
		if _, err := s.PutAvailabilities(ctx, opA, "s1", "p1", rid, window(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []stream.Message
	for _, m := range rec.Messages() {
		if m.Topic == schemas.TopicAvailability {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) != 4 {
		t.Fatalf("%d availability records, want 4", len(msgs))
	}
	want := map[string]string{}
	for _, rid := range []string{"r0", "r1", "r2"} {
		want[rid] = rdb.HGet(ctx, s.k.avail("s1", "p1"), rid).Val()
	}
	var scripts atomic.Int64
	rdb.AddHook(countScripts{&scripts})

	applied, err := s.ApplyRecords(ctx, msgs)
	if err != nil || !reflect.DeepEqual(applied, []bool{false, false, false, false}) || scripts.Load() != 0 {
		t.Fatalf("records the writer applied: applied %v (%v), %d scripts sent; want none applied, none sent", applied, err, scripts.Load())
	}

	if err := testharness.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	applied, err = s.ApplyRecords(ctx, msgs)
	if err != nil || !reflect.DeepEqual(applied, []bool{true, true, true, true}) || scripts.Load() == 0 {
		t.Fatalf("on a lost view: applied %v (%v), %d scripts; want all applied", applied, err, scripts.Load())
	}
	for rid, w := range want {
		if got := rdb.HGet(ctx, s.k.avail("s1", "p1"), rid).Val(); got != w {
			t.Errorf("%s rebuilt as %s, the writer left %s", rid, got, w)
		}
	}

	scripts.Store(0)
	applied, err = s.ApplyRecords(ctx, []stream.Message{msgs[3], msgs[0]}) // r0 v2, then r0 v1
	if err != nil || !reflect.DeepEqual(applied, []bool{false, false}) || scripts.Load() != 0 {
		t.Fatalf("held and older: applied %v (%v), %d scripts; want none", applied, err, scripts.Load())
	}
}

// TestNewerThan_IsTheScriptsRule: newerThan answers as newerLua does on
// Redis for every stored value the script can read (those it cannot read
// make the script fail; newerThan answers true, so the script decides).
func TestNewerThan_IsTheScriptsRule(t *testing.T) {
	_, _, rdb := newStore(t)
	ctx := context.Background()
	tests := []struct {
		cur      string
		v, t     int64
		want     bool
		readable bool // by the script's pattern
	}{
		{"5:100", 5, 100, false, true},
		{"5:100", 5, 101, true, true},
		{"5:100", 5, 99, false, true},
		{"5:100", 6, 0, true, true},
		{"5:100", 4, 999, false, true},
		{"12:1764150000000000", 12, 1764150000000001, true, true},
		{"12:1764150000000000", 11, 1764159999999999, false, true},
		{"garbage", 1, 1, true, false},
		{"+5:100", 1, 1, true, false},
		{"5:", 1, 1, true, false},
		{":5", 9, 9, true, false},
	}
	for i, tt := range tests {
		if got := newerThan(tt.cur, tt.v, tt.t); got != tt.want {
			t.Errorf("newerThan(%q, %d, %d) = %v, want %v", tt.cur, tt.v, tt.t, got, tt.want)
		}
		if !tt.readable {
			continue
		}
		versions, hash, field := "{t}:versions", "{t}:hash", fmt.Sprintf("f%d", i)
		if err := rdb.HSet(ctx, versions, field, tt.cur).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := applyFieldScript.Run(ctx, rdb, []string{versions, hash}, field, tt.v, tt.t, "0", field, "x").Int()
		if err != nil || (n == 1) != tt.want {
			t.Errorf("the script on stored %q, %d:%d: %d (%v), newerThan %v", tt.cur, tt.v, tt.t, n, err, tt.want)
		}
	}
}

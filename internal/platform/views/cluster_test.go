package views_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/views"
)

func TestSlot_MatchesTheClusterSpecification(t *testing.T) {
	tests := []struct {
		key  string
		slot int
	}{
		// Values from CLUSTER KEYSLOT of redis-server 7.0.
		{"foo", 12182},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"foo{}{bar}", 8363},
		{"foo{{bar}}zap", 4015},
		{"foo{bar}{zap}", 5061},
		{"", 0},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := views.Slot(tt.key); got != tt.slot {
				t.Fatalf("Slot(%q) = %d, want %d", tt.key, got, tt.slot)
			}
		})
	}
}

// TestGuard_OnACluster_ALostShardIsSeenAndRebuilt runs the guard on a real
// Redis Cluster (3 masters, 3 replicas) with a view that writes a key into
// every shard: a FLUSHALL of one master, or the kill of one master (its
// replica promoted), loses that shard's part while the other shards' keys
// and markers stay. The guard must see it, rebuild, and publish a new
// epoch; the view's keys are then all back.
func TestGuard_OnACluster_ALostShardIsSeenAndRebuilt(t *testing.T) {
	tests := []struct {
		name string
		lose func(t *testing.T, ctx context.Context, c *testharness.RedisCluster, master *testharness.RedisNode)
	}{
		{"flush of one master", func(t *testing.T, ctx context.Context, c *testharness.RedisCluster, m *testharness.RedisNode) {
			n := redis.NewClient(&redis.Options{Addr: m.Addr})
			defer n.Close()
			if err := n.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"kill of one master, its replica promoted", func(t *testing.T, ctx context.Context, c *testharness.RedisCluster, m *testharness.RedisNode) {
			m.Kill()
			if err := c.WaitFailover(ctx, m, 3); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testharness.StartRedisCluster(t, 3)
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			g := views.New(views.Options{PollInterval: 50 * time.Millisecond, Logger: testharness.Logger(t)})
			opts, err := redis.ParseClusterURL(c.URL())
			if err != nil {
				t.Fatal(err)
			}
			opts.ClusterStateReloadInterval = time.Second // as cmd/switchback/internal/app
			opts.NewClient = func(o *redis.Options) *redis.Client {
				o.OnConnect = g.OnConnectNode(o.Addr)
				return redis.NewClient(o)
			}
			cc := redis.NewClusterClient(opts)
			t.Cleanup(func() { _ = cc.Close() })
			g.Bind(cc)
			if g.Key() != "" {
				t.Fatalf("Key() = %q on a cluster, want \"\" (no one marker)", g.Key())
			}
			// One key per shard: tags "a".."z" cover every shard of three.
			var keys []string
			for r := 'a'; r <= 'z'; r++ {
				keys = append(keys, "view:{"+string(r)+"}")
			}
			v := newTopicView("")
			g.Register(views.View{Name: "spread", Rebuild: func(ctx context.Context) error {
				v.runs.Add(1)
				for _, k := range keys {
					if err := cc.HSet(ctx, k, v.records).Err(); err != nil {
						return err
					}
				}
				return nil
			}})
			if err := g.Start(ctx); err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- g.Run(runCtx) }()
			t.Cleanup(func() { stop(); <-done })
			e1, err := g.Epoch(ctx)
			if err != nil || e1 == "" || strings.Count(e1, ",") != 2 {
				t.Fatalf("epoch after start %q %v, want three markers", e1, err)
			}
			if !g.Ready() {
				t.Fatal("not ready after Start")
			}
			runs := v.runs.Load()

			ms, err := c.Masters(ctx)
			if err != nil || len(ms) != 3 {
				t.Fatalf("masters %v %v", ms, err)
			}
			lostAt := time.Now()
			tt.lose(t, ctx, c, ms[1])
			t.Logf("lost after %v", time.Since(lostAt))

			for {
				e, err := g.Epoch(ctx)
				if err == nil && e != "" && e != e1 && g.Ready() && v.runs.Load() > runs {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the guard never rebuilt after the loss: epoch %q (was %q) %v, ready %v, rebuilds %d", e, e1, err, g.Ready(), v.runs.Load()-runs)
				case <-time.After(20 * time.Millisecond):
				}
			}
			t.Logf("rebuilt %v after the loss", time.Since(lostAt))
			for _, k := range keys {
				if n, err := cc.HLen(ctx, k).Result(); err != nil || n != int64(len(v.records)) {
					t.Fatalf("%s has %d fields after the rebuild (%v), want %d", k, n, err, len(v.records))
				}
			}
		})
	}
}

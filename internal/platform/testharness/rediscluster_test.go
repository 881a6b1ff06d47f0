package testharness

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartRedisCluster_ServesEverySlotAndPromotesAReplica(t *testing.T) {
	c := StartRedisCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cc := c.Client(t)
	for i := range 100 {
		k := "k" + string(rune('a'+i%26)) + string(rune('0'+i/26))
		if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	ms, err := c.Masters(ctx)
	if err != nil || len(ms) != 3 {
		t.Fatalf("masters %v %v", ms, err)
	}
	ms[0].Kill()
	if err := c.WaitFailover(ctx, ms[0], 3); err != nil {
		t.Fatal(err)
	}
	after, err := c.Masters(ctx)
	if err != nil || len(after) != 3 {
		t.Fatalf("masters after the kill: %v %v", after, err)
	}
	for _, m := range after {
		if m == ms[0] {
			t.Fatalf("the killed master %s is still a master", m.Addr)
		}
	}
}

func TestStartRedisSentinel_NamesAPromotedReplicaAfterTheMasterDies(t *testing.T) {
	s := StartRedisSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := s.Master(ctx)
	if err != nil || m != s.Servers[0].Addr {
		t.Fatalf("master %q %v, want %s", m, err, s.Servers[0].Addr)
	}
	s.Servers[0].Kill()
	for {
		m, err = s.Master(ctx)
		if err == nil && m == s.Servers[1].Addr {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the sentinels never promoted the replica: master %q %v", m, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestRedisClient_IsOfTheClusterWithSWITCHBACK_TEST_REDIS(t *testing.T) {
	tests := []struct {
		env     string
		cluster bool
	}{
		{"single", false},
		{"cluster", true},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(EnvTestRedis, tt.env)
			rdb := RedisClient(t, 0)
			_, isCluster := rdb.(*redis.ClusterClient)
			if isCluster != tt.cluster {
				t.Fatalf("RedisClient is %T, want a cluster client: %v", rdb, tt.cluster)
			}
			if err := rdb.Set(t.Context(), "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// TestReliability_RedisClusterMasterKilledUnderLoad is issue 24's fault
// test: `switchback run` on a real Redis Cluster (3 masters, 3 replicas,
// cluster-node-timeout 1 s), under the loads and reads of the other Redis
// fault tests. The master serving the catalog's slot (the view every read
// of the oracle but the rule passes through) is killed with SIGKILL; its
// replica is promoted by the cluster. Every read answered meanwhile must be
// correct or a clean 503, every notification of the changes made must
// reach the sink, and the times are logged: failover_after (the kill to
// the cluster serving every slot again) and recovered_after (the kill to
// /readyz ready and a reseller read answering 200 again: the views rebuilt
// from Kafka, as the promoted replica is another server run whose data may
// lack the last writes).
func TestReliability_RedisClusterMasterKilledUnderLoad(t *testing.T) {
	form := reliabilityForm(t)
	c := testharness.StartRedisCluster(t, 3)
	redisFaultsOn(t, form, "cluster", []string{"SWITCHBACK_REDIS_MODE=cluster", "SWITCHBACK_REDIS_URL=" + c.URL()},
		[]runFault{{"redis-cluster-master-killed", func(p *proc) string {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cc := c.Client(t)
			node, err := cc.MasterForKey(ctx, "switchback:{catalog}:suppliers")
			if err != nil {
				t.Fatal(err)
			}
			var victim *testharness.RedisNode
			for _, n := range c.Nodes {
				if n.Addr == node.Options().Addr {
					victim = n
				}
			}
			if victim == nil {
				t.Fatalf("the catalog's master %s is none of the cluster's nodes", node.Options().Addr)
			}
			killed := time.Now()
			victim.Kill()
			if err := c.WaitFailover(ctx, victim, 3); err != nil {
				t.Fatal(err)
			}
			failover := time.Since(killed)
			recovered := waitServing(t, ctx, p)
			return fmt.Sprintf("killed=%s failover_after=%s recovered_after=%s", victim.Addr, failover.Round(10*time.Millisecond), time.Since(killed).Round(10*time.Millisecond)) +
				fmt.Sprintf(" serving_after_failover=%s", recovered.Round(10*time.Millisecond))
		}}})
}

// TestReliability_RedisSentinelMasterKilledUnderLoad is the same with a
// Sentinel-managed master (one replica, three sentinels, quorum 2,
// down-after-milliseconds 1 s): SWITCHBACK_REDIS_MODE=sentinel; the master
// is killed; the sentinels promote the replica and go-redis's failover
// client follows them.
func TestReliability_RedisSentinelMasterKilledUnderLoad(t *testing.T) {
	form := reliabilityForm(t)
	s := testharness.StartRedisSentinel(t)
	redisFaultsOn(t, form, "sentinel", []string{"SWITCHBACK_REDIS_MODE=sentinel", "SWITCHBACK_REDIS_SENTINEL_MASTER=" + s.MasterName,
		"SWITCHBACK_REDIS_SENTINEL_ADDRS=" + s.SentinelAddrs()},
		[]runFault{{"redis-sentinel-master-killed", func(p *proc) string {
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			killed := time.Now()
			s.Servers[0].Kill()
			for {
				if m, err := s.Master(ctx); err == nil && m == s.Servers[1].Addr {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatal("the sentinels never promoted the replica")
				case <-time.After(20 * time.Millisecond):
				}
			}
			failover := time.Since(killed)
			recovered := waitServing(t, ctx, p)
			return fmt.Sprintf("failover_after=%s recovered_after=%s serving_after_failover=%s", failover.Round(10*time.Millisecond),
				time.Since(killed).Round(10*time.Millisecond), recovered.Round(10*time.Millisecond))
		}}})
}

// waitServing waits until /readyz says ready and a reseller's read of the
// suppliers answers 200, and returns how long that took.
func waitServing(t *testing.T, ctx context.Context, p *proc) time.Duration {
	t.Helper()
	start := time.Now()
	reseller := api{"http://" + p.api, "demo-reseller", "demo-reseller-secret"}
	for {
		resp, err := http.Get("http://" + p.ops + "/readyz")
		ready := err == nil && resp.StatusCode == 200
		if err == nil {
			resp.Body.Close()
		}
		if ready {
			if status, _, err := reseller.call("GET", "/v1.2/suppliers", ""); err == nil && status == 200 {
				return time.Since(start)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not serving again within the deadline (readyz: redis %q, views %q)", readyzStatus(p, "redis"), readyzStatus(p, "views"))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

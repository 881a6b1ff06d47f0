package main

import (
	"context"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// TestE2E_OnRedisCluster_TheSingleRedisWalkPasses runs the single-Redis
// end-to-end walk again with `switchback run` on a real Redis Cluster (3
// masters, 3 replicas, redis-server from Debian) and the embedded broker:
// SWITCHBACK_REDIS_MODE=cluster with the cluster's seed URL, inherited by
// every binary the walk starts. The walk is the single-Redis tests
// themselves, unchanged: the catalog and its binding notifications, the
// availability cache, holds, bookings, cancels and tickets with their
// webhooks, and the demo's notifications of every type verified at the
// sink. The cluster is emptied between them (each starts a broker of its
// own, so keys of another's run would be a view of other topics).
func TestE2E_OnRedisCluster_TheSingleRedisWalkPasses(t *testing.T) {
	c := testharness.StartRedisCluster(t, 3)
	t.Setenv("SWITCHBACK_REDIS_MODE", "cluster")
	t.Setenv("SWITCHBACK_REDIS_URL", c.URL())
	walk := []struct {
		name string
		run  func(*testing.T)
	}{
		{"catalog and binding notifications", TestE2E_CatalogBindingsNotifySubscribers},
		{"availability through the cache", TestE2E_AvailabilityReadsGoThroughTheCache},
		{"holds, bookings, cancels and tickets", TestE2E_HoldBookCancelAndTicketsAddedWebhooks},
		{"every notification type at the sink", TestBinary_DemoShowsEveryNotificationTypeWithin30s},
	}
	for _, w := range walk {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.FlushAll(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Run(w.name, w.run)
		// The binary did run on the cluster: the views guard left one
		// marker per shard (three masters).
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		markers, err := testharness.Keys(ctx, c.Client(t), "sb:views:epoch:{*}")
		cancel()
		if err != nil || len(markers) != 3 {
			t.Fatalf("%s: views markers on the cluster %v (%v), want one per shard", w.name, markers, err)
		}
	}
}

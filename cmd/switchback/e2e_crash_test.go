package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// TestE2E_DispatcherKilledMidRunLosesNothing: notifications are being
// delivered (spaced by a throttleDelay so that the run lasts) when the
// process is killed with SIGKILL; after a restart on the same data
// directory every notification reaches the sink at least once, and every
// POST the sink saw carries the delivery id of one of them (a duplicate is
// the same delivery again, never a new one).
func TestE2E_DispatcherKilledMidRunLosesNothing(t *testing.T) {
	d := startDemo(t)
	p, sk, reseller := d.p, d.sk, d.reseller
	subscriber := principals.FixedID("demo-reseller")
	if status, body, _ := reseller.do("POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, sk.url+"/kill")); status != 201 {
		t.Fatalf("create rule: %d %v", status, body)
	}
	if status, body, _ := reseller.do("PUT", "/registry/v1.1/metadata", `{"throttleDelay":"40ms"}`); status != 200 {
		t.Fatalf("set throttleDelay: %d %v", status, body)
	}

	const n = 60
	want := map[string]bool{}
	var ns []schemas.Notification
	for i := range n {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		want[id] = true
		ns = append(ns, supplierNotification(id, subscriber, fmt.Sprintf("sup-%d", i)))
	}
	publish(t, p.kafka, ns...)
	sk.waitFor(t, "/kill", 10, 30*time.Second)

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	before := len(sk.on("/kill"))
	if before >= n {
		t.Fatalf("all %d delivered before the kill: the test did not kill mid-run", before)
	}

	q := restartBinary(t, p)
	deadline := time.Now().Add(60 * time.Second)
	for {
		seen := map[string]int{}
		for _, r := range sk.on("/kill") {
			if !want[r.deliveryID] {
				t.Fatalf("the sink got a delivery id that was never published: %q", r.deliveryID)
			}
			seen[r.deliveryID]++
		}
		if len(seen) == n {
			dups := len(sk.on("/kill")) - n
			t.Logf("killed after %d POSTs; after the restart all %d delivered, %d duplicates (same delivery ids)", before, n, dups)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart %d of %d notifications delivered (lost: %d)", len(seen), n, n-len(seen))
		}
		time.Sleep(50 * time.Millisecond)
	}
	q.stop(t)
}

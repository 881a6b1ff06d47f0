package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// TestReliability_BrokerRestartedUnderLoad is issue 9's "broker restart":
// with the tiers apart (`switchback broker`, a real redis-server, ingest,
// process ×2, query and dispatch), the broker process is stopped under the
// steady load of the other fault tests, kept down for a few seconds and
// started again on the same port and log directory: with SIGKILL, and in
// the long form also with a clean stop (SIGINT), three times each. Every
// tier's producers and consumers must reconnect by themselves (no tier is
// restarted) and carry on: both loads make changes after the restart, and
// every notification of the changes made reached the sink at least once
// (by delivery id), none twice under two ids.
//
// The broker here is the embedded Kafka-protocol broker (kfake) run as its
// own process, which the tiers reach as an external broker
// (SWITCHBACK_KAFKA_BROKERS): the same client code as against a Kafka
// cluster. The broker inside `switchback run` restarts with its process:
// that is TestReliability_ProcessKilledUnderLoad. No Kafka distribution is
// installed here, so a restart of a real Kafka broker is not tested.
func TestReliability_BrokerRestartedUnderLoad(t *testing.T) {
	form := reliabilityForm(t)
	rounds := byForm(form, 1, 3)
	down := byForm(form, 3*time.Second, 10*time.Second)
	redisURL := testharness.Redis(t)
	began := time.Now()
	c, fl := clusterUnderLoad(t, form, redisURL)
	sk, l, pl := fl.sk, fl.l, fl.pl
	fl.start()
	pushKeys, crKeys := fl.pushKeys, fl.crKeys
	type phase struct {
		fault string
		sig   os.Signal
	}
	var phases []phase
	kinds := []phase{{"broker-kill", syscall.SIGKILL}, {"broker-restart", syscall.SIGINT}}
	if form == "short" {
		kinds = kinds[:1] // the clean restart in the long form only
	}
	for r := range rounds {
		for _, ph := range kinds {
			if rounds > 1 {
				ph.fault += fmt.Sprintf("#%d", r+1)
			}
			phases = append(phases, ph)
		}
	}
	for i, ph := range phases {
		l.setPhase(ph.fault)
		l.waitCount(t, ph.fault, pushKeys, 5, 60*time.Second)
		l.waitCount(t, ph.fault, crKeys, 2, 60*time.Second)
		stopped := time.Now()
		if err := c.broker.cmd.Process.Signal(ph.sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.broker.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: broker did not exit within 30s of %v", ph.fault, ph.sig)
		}
		before := l.count(ph.fault, "")
		time.Sleep(down)
		during := l.count(ph.fault, "") - before
		c.startBroker()
		// No tier is restarted: they reconnect. Both loads make changes
		// again.
		l.waitCount(t, ph.fault, pushKeys, l.count(ph.fault, pushKeys)+5, 120*time.Second)
		l.waitCount(t, ph.fault, crKeys, l.count(ph.fault, crKeys)+2, 120*time.Second)
		resumed := time.Since(stopped).Round(100 * time.Millisecond)
		next := ""
		if i+1 < len(phases) {
			next = phases[i+1].fault
		}
		caught, tl := fl.endPhase(t, ph.fault, next, 120*time.Second)
		relLog(t, ph.fault, tl, fmt.Sprintf("mode=tiers-apart signal=%v down=%s changes_while_down=%d loads_resumed_after=%s all_delivered_after=%s",
			ph.sig, down, during, resumed, caught))
		checkTally(t, ph.fault, tl)
	}
	for name, p := range c.procs {
		select {
		case err := <-p.exited:
			t.Errorf("tier %s exited while the broker was restarted: %v", name, err)
		default:
		}
	}
	fl.checkTotal(t, "broker-restart:total", fmt.Sprintf("mode=tiers-apart form=%s restarts=%d put_retries=%d posts=%d duration=%s",
		form, len(phases), pl.failed(), len(sk.on("/av")), time.Since(began).Round(time.Second)))
}

package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

// TestReliability_EachTierKilledUnderLoad is issue 9's first fault with
// the tiers run apart (`switchback broker`, a real redis-server, ingest,
// process ×2, query and dispatch): under a steady load of availability
// changes, each of process (one of two), dispatch, ingest and query in
// turn is killed with SIGKILL, left down for a while and started again.
// Two loads run throughout: an operator pushing availabilities through
// the query tier (every 150 ms), and a partner whose inventory changes
// followed by a change notification that the ingest tier works. Every
// change takes one window under the rule's vacanciesUnder, so each is
// exactly one notification; after each fault every notification of the
// changes made so far reached the sink at least once (by delivery id),
// and no change got a second delivery id. The short form kills each tier
// once, the long form three times over.
func TestReliability_EachTierKilledUnderLoad(t *testing.T) {
	form := reliabilityForm(t)
	rounds := byForm(form, 1, 3)
	redisURL := testharness.Redis(t)
	began := time.Now()
	c, fl := clusterUnderLoad(t, form, redisURL)
	sk, l, pl := fl.sk, fl.l, fl.pl
	t.Logf("cluster up and warm in %s", time.Since(began).Round(100*time.Millisecond))
	fl.start()
	pushKeys, crKeys := fl.pushKeys, fl.crKeys
	type phase struct{ fault, tier string }
	var phases []phase
	for r := range rounds {
		for _, ph := range []phase{
			{"tier-kill:process", "process-1"},
			{"tier-kill:dispatch", "dispatch"},
			{"tier-kill:ingest", "ingest"},
			{"tier-kill:query", "query"},
		} {
			if only := os.Getenv("RELIABILITY_ONLY"); only != "" && only != ph.tier {
				continue
			}
			if rounds > 1 {
				ph.fault += fmt.Sprintf("#%d", r+1)
			}
			phases = append(phases, ph)
		}
	}
	for i, ph := range phases {
		l.setPhase(ph.fault)
		// The kill comes in the middle of the steady load.
		l.waitCount(t, ph.fault, pushKeys, 5, 30*time.Second)
		l.waitCount(t, ph.fault, crKeys, 2, 30*time.Second)
		killed := time.Now()
		c.kill(ph.tier)
		before := l.count(ph.fault, "")
		time.Sleep(2 * time.Second) // down for a while, the load going on
		during := l.count(ph.fault, "") - before
		c.start(ph.tier)
		c.ready(ph.tier)
		if ph.tier == "query" {
			c.waitAPI()
		}
		down := time.Since(killed).Round(100 * time.Millisecond)
		// Producers and consumers carried on: both loads make changes
		// after the restart.
		after := l.count(ph.fault, pushKeys)
		l.waitCount(t, ph.fault, pushKeys, after+5, 60*time.Second)
		afterCR := l.count(ph.fault, crKeys)
		l.waitCount(t, ph.fault, crKeys, afterCR+2, 180*time.Second)
		next := ""
		if i+1 < len(phases) {
			next = phases[i+1].fault
		}
		caught, tl := fl.endPhase(t, ph.fault, next, 90*time.Second)
		relLog(t, ph.fault, tl, fmt.Sprintf("mode=tiers-apart down=%s changes_while_down=%d all_delivered_after=%s", down, during, caught))
		checkTally(t, ph.fault, tl)
	}

	fl.checkTotal(t, "tier-kill:total", fmt.Sprintf("mode=tiers-apart form=%s kills=%d put_retries=%d posts=%d duration=%s", form, len(phases), pl.failed(), len(sk.on("/av")), time.Since(began).Round(time.Second)))
}

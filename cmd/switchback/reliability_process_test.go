package main

import (
	"fmt"
	"testing"
	"time"
)

// TestReliability_ProcessKilledUnderLoad is issue 9's first fault with the
// single process (`switchback run`: the embedded broker, redis-server and
// clickhouse-server children, every tier): under a steady load of
// availability changes the process is killed with SIGKILL (its children
// die with it), then started again on the same data directory and ports,
// several times. Two loads run throughout, as in the tiers-apart test: an
// operator pushing availabilities (every 150 ms) and a partner whose
// inventory changes followed by a change notification. Every change is
// exactly one notification; after the last restart every notification of
// the changes made reached the sink at least once (by delivery id), and no
// change got a second delivery id.
func TestReliability_ProcessKilledUnderLoad(t *testing.T) {
	form := reliabilityForm(t)
	kills := byForm(form, 2, 5)
	began := time.Now()
	p := startBinary(t, relEnv()...)
	fl := warmLoads(t, form, "http://"+p.api)
	sk, l, pl, cl := fl.sk, fl.l, fl.pl, fl.cl
	fl.start()
	pushKeys, crKeys := fl.pushKeys, fl.crKeys
	var downs []string
	for i := range kills {
		phase := fmt.Sprintf("process-kill-%d", i+1)
		l.setPhase(phase)
		l.waitCount(t, phase, pushKeys, 5, 30*time.Second)
		l.waitCount(t, phase, crKeys, 2, 60*time.Second)
		killed := time.Now()
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		p = restartBinary(t, p)
		downs = append(downs, time.Since(killed).Round(100*time.Millisecond).String())
		// The loads carry on after the restart.
		l.waitCount(t, phase, pushKeys, l.count(phase, pushKeys)+5, 90*time.Second)
		l.waitCount(t, phase, crKeys, l.count(phase, crKeys)+2, 120*time.Second)
	}
	l.setPhase("final")
	pl.halt(t)
	cl.halt(t)
	caught := waitDelivered(sk, "/av", l, 120*time.Second)

	for i := range kills {
		phase := fmt.Sprintf("process-kill-%d", i+1)
		tl, _ := account(sk, "/av", l, l.of(phase))
		relLog(t, "process-kill", tl, fmt.Sprintf("mode=single-process kill=%d/%d down=%s", i+1, kills, downs[i]))
		checkTally(t, phase, tl)
	}
	fl.checkTotal(t, "process-kill:total", fmt.Sprintf("mode=single-process form=%s kills=%d put_retries=%d posts=%d all_delivered_after=%s duration=%s",
		form, kills, pl.failed(), len(sk.on("/av")), caught, time.Since(began).Round(time.Second)))
	p.stop(t)
}

package bookingsync

import (
	"strings"
	"testing"

	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// TestNoCredentialInErrorsLogsOrMetrics: a hostile booking system that
// echoes our Authorization header in its error bodies gets it shown
// nowhere: not in errors, failure texts, logs or metrics (whose labels
// carry no ids either).
func TestNoCredentialInErrorsLogsOrMetrics(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{EchoSecretsInErrors: true}})
	e.seed(t)
	e.sim.Update(func(c *bookingsim.Config) { c.ErrorRate = 1 })
	sch := e.schedule(3)
	sy := e.syncer(sch)
	var texts []string
	if _, err := e.sync(t, sy, 2); err == nil {
		t.Fatal("a booking system failing every call synchronized")
	} else {
		texts = append(texts, err.Error())
	}
	if _, err := sy.RefreshProduct(ctx, sid, "S1-P1", e.clock.today(0), e.clock.today(1)); err != nil {
		texts = append(texts, err.Error())
	}
	rr, err := NewScheduler(SchedulerOptions{Syncer: sy, Registerer: e.reg}).Round(ctx)
	if err != nil || rr.Failed == 0 {
		t.Fatalf("%+v %v", rr, err)
	}
	for _, s := range texts {
		noSecret(t, "error", s)
	}
	noSecret(t, "logs", e.Logs.String())
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				noSecret(t, "metric "+mf.GetName(), v)
				if strings.Contains(v, "S1") {
					t.Errorf("metric %s has an id as label: %s=%s", mf.GetName(), l.GetName(), v)
				}
			}
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// readOracle reads, over and over while a fault runs, answers whose truth
// the test knows, and sorts every answer into correct, a clean 503, or
// wrong (anything else: a 404 for what exists, a 200 with other data, a
// 500).
type readOracle struct {
	reads []oracleRead

	mu      sync.Mutex
	correct int
	clean   int
	wrong   int
	samples []string
	// unavailable are a few of the 503 answers, to say which reads they were.
	unavailable []string
	stop        chan struct{}
	done        chan struct{}
}

type oracleRead struct {
	name   string
	who    api
	path   string
	verify func(body []byte) error
}

func (o *readOracle) start() {
	o.stop, o.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(o.done)
		for i := 0; ; i++ {
			select {
			case <-o.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			r := o.reads[i%len(o.reads)]
			status, raw, err := r.who.call("GET", r.path, "")
			if err != nil {
				continue // the API itself unreachable is not an answer
			}
			o.mu.Lock()
			switch {
			case status == 200 && r.verify(raw) == nil:
				o.correct++
			case status == 503 && strings.Contains(string(raw), `"code":"UNAVAILABLE"`):
				o.clean++
				if len(o.unavailable) < 5 {
					o.unavailable = append(o.unavailable, fmt.Sprintf("%s: %.200s", r.name, raw))
				}
			default:
				o.wrong++
				if len(o.samples) < 10 {
					why := fmt.Sprintf("status %d", status)
					if status == 200 {
						why = r.verify(raw).Error()
					}
					o.samples = append(o.samples, fmt.Sprintf("%s: %s: %.200s", r.name, why, raw))
				}
			}
			o.mu.Unlock()
		}
	}()
}

// halt stops the reads and returns the counts since start.
func (o *readOracle) halt() (correct, clean, wrong int, samples []string) {
	close(o.stop)
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	correct, clean, wrong, samples = o.correct, o.clean, o.wrong, o.samples
	samples = append(samples, o.unavailable...)
	o.correct, o.clean, o.wrong, o.samples, o.unavailable = 0, 0, 0, nil, nil
	return
}

func containsAll(wants ...string) func([]byte) error {
	return func(body []byte) error {
		for _, w := range wants {
			if !strings.Contains(string(body), w) {
				return fmt.Errorf("answer lacks %s", w)
			}
		}
		return nil
	}
}

// TestReliability_RedisRestartedUnderLoad is issue 9's "Redis restarted
// under load": the binary (`switchback run`) uses a redis-server the test
// owns (append-only file, fsync every second, as deployed). Under the
// steady loads of the other fault tests (operator pushes, change
// notifications), and while reads whose answers the test knows run all the
// time (a reseller's product, the availabilities of a partner supplier
// whose partner never changes, the reseller's rule, an operator's finished
// change notification), Redis is killed with SIGKILL and started again
// after a few seconds on the same port and files, once (short form) or
// three times (long form). After each restart the loads carry on, every
// notification of the changes made reaches the sink (by delivery id), and
// every read answered during and after it was correct or a clean 503
// UNAVAILABLE.
func TestReliability_RedisRestartedUnderLoad(t *testing.T) {
	form := reliabilityForm(t)
	down := byForm(form, 3*time.Second, 20*time.Second)
	var faults []redisFault
	for i := range byForm(form, 1, 3) {
		name := "redis-restart"
		if form == "long" {
			name += fmt.Sprintf("#%d", i+1)
		}
		faults = append(faults, redisFault{name, func(rp *redisProc) { rp.kill(); time.Sleep(down); rp.start() }})
	}
	redisFaults(t, form, faults)
}

// TestReliability_RedisFlushedUnderLoad is the same with FLUSHALL: the
// views (catalog, registry, change notifications, bookings, the
// availability cache, the dispatcher's schedule) are gone at once and
// must be rebuilt from the topics while the process serves, reads
// answering correctly or 503 meanwhile (internal/platform/views: the guard notices
// the missing marker and rebuilds every view; before it, the catalog and
// registry views were rebuilt at start only: R1, docs/reliability.md).
func TestReliability_RedisFlushedUnderLoad(t *testing.T) {
	form := reliabilityForm(t)
	redisFaults(t, form, []redisFault{{"redis-flush", func(rp *redisProc) {
		c := rp.client()
		defer c.Close()
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
	}}})
}

type redisFault struct {
	name string
	do   func(*redisProc)
}

func redisFaults(t *testing.T, form string, faults []redisFault) {
	t.Helper()
	rp := startRedisProc(t)
	var run []runFault
	for _, f := range faults {
		run = append(run, runFault{f.name, func(*proc) string { f.do(rp); return "" }})
	}
	redisFaultsOn(t, form, "single", []string{"SWITCHBACK_REDIS_URL=" + rp.url()}, run)
}

// runFault is one fault of redisFaultsOn: do returns figures to log
// (key=value ...).
type runFault struct {
	name string
	do   func(p *proc) string
}

// redisFaultsOn runs the Redis fault tests' loads, reads and accounting
// with the binary on the Redis that env names (mode: single, cluster,
// sentinel; logged).
func redisFaultsOn(t *testing.T, form, mode string, env []string, faults []runFault) {
	t.Helper()
	settle := byForm(form, 10*time.Second, 60*time.Second)
	p := startBinary(t, append(relEnv(), env...)...)
	base := "http://" + p.api
	op := api{base, "demo-operator", "demo-operator-secret"}
	reseller := api{base, "demo-reseller", "demo-reseller-secret"}
	fl := warmLoads(t, form, base)
	sk, l := fl.sk, fl.l
	var rules []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(reseller.must(t, "GET", "/registry/v1.1/availability", "", 200), &rules); err != nil || len(rules) != 1 {
		t.Fatalf("the reseller's availability rules: %v %v", rules, err)
	}
	ruleID := rules[0].ID
	// A partner supplier whose partner never changes: its availability
	// reads (the catalog's binding, then the cache or the partner) have
	// one right answer.
	stable := newPartner(t, newPlan("sup-rel-stable", "prod-rel-stable", []string{"rate-z"}, 4))
	setupPartner(t, op, stable)
	ws, _ := stable.p.window(0)
	_, we := stable.p.window(3)
	var crs struct {
		Notifications []struct {
			ID string `json:"id"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(op.must(t, "GET", "/operator/v2/notifications?status=SUCCEEDED&limit=1", "", 200), &crs)
	if len(crs.Notifications) == 0 {
		t.Fatal("no finished change notification to read back")
	}
	crID := crs.Notifications[0].ID
	pushPath := "/v1.2/suppliers/" + fl.pushSupplier + "/products/" + fl.pushProduct

	oracle := &readOracle{reads: []oracleRead{
		{"reseller product", reseller, pushPath, containsAll(`"` + fl.pushProduct + `"`)},
		{"stable availabilities", reseller, fmt.Sprintf("/v1.2/suppliers/%s/products/%s/availabilities?start=%s&end=%s", stable.p.sid, stable.p.pid,
			ws.Format(time.RFC3339), we.Format(time.RFC3339)), func(body []byte) error {
			var got struct {
				Availabilities struct {
					ByRate map[string]struct {
						Availability []struct {
							Capacity int `json:"capacity"`
						} `json:"availability"`
					} `json:"byRate"`
				} `json:"availabilities"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				return err
			}
			list := got.Availabilities.ByRate["rate-z"].Availability
			if len(list) != stable.p.perRate {
				return fmt.Errorf("%d windows, want %d", len(list), stable.p.perRate)
			}
			for _, a := range list {
				if a.Capacity != relBaseCap {
					return fmt.Errorf("capacity %d, want %d", a.Capacity, relBaseCap)
				}
			}
			return nil
		}},
		{"reseller rule", reseller, "/registry/v1.1/availability", containsAll(`"` + ruleID + `"`)},
		{"finished change notification", op, "/operator/v2/notifications/" + crID, containsAll(`"SUCCEEDED"`, crID)},
	}}
	// The oracle is right before any fault.
	oracle.start()
	time.Sleep(time.Second)
	if c, cl5, w, s := oracle.halt(); w > 0 || cl5 > 0 || c == 0 {
		t.Fatalf("reads before any fault: %d correct, %d 503, %d wrong: %v", c, cl5, w, s)
	}

	fl.start()
	pushKeys, crKeys := fl.pushKeys, fl.crKeys
	for i, f := range faults {
		l.setPhase(f.name)
		l.waitCount(t, f.name, pushKeys, 5, 60*time.Second)
		l.waitCount(t, f.name, crKeys, 2, 60*time.Second)
		oracle.start()
		figures := f.do(p)
		// The loads carry on; the reads go on for a while after. A load
		// that stops (a write answered wrong) fails the test, after the
		// figures of the phase are logged.
		stopped := l.tryCount(f.name, pushKeys, l.count(f.name, pushKeys)+5, 120*time.Second)
		if stopped == nil {
			stopped = l.tryCount(f.name, crKeys, l.count(f.name, crKeys)+2, 120*time.Second)
		}
		time.Sleep(settle)
		correct, clean, wrong, samples := oracle.halt()
		if stopped != nil {
			tl, _ := account(sk, "/av", l, l.of(f.name))
			relLog(t, f.name, tl, fmt.Sprintf("mode=single-process redis=%s reads_correct=%d reads_503=%d reads_wrong=%d loads_stopped=true %s", mode, correct, clean, wrong, figures))
			t.Fatalf("%s: %v; reads: %d wrong, e.g.:\n%s", f.name, stopped, wrong, strings.Join(samples, "\n"))
		}
		next := ""
		if i+1 < len(faults) {
			next = faults[i+1].name
		}
		caught, tl := fl.endPhase(t, f.name, next, 120*time.Second)
		relLog(t, f.name, tl, fmt.Sprintf("mode=single-process redis=%s reads_correct=%d reads_503=%d reads_wrong=%d all_delivered_after=%s %s", mode, correct, clean, wrong, caught, figures))
		checkTally(t, f.name, tl)
		if wrong > 0 {
			t.Errorf("%s: %d reads answered wrong (neither correct nor a clean 503), e.g.:\n%s", f.name, wrong, strings.Join(samples, "\n"))
		}
		if correct == 0 {
			t.Errorf("%s: no read answered correctly during or after the fault", f.name)
		}
	}
	p.stop(t)
}

package main

// Helpers of the reliability tests (issue 9, "Faults"): a steady load of
// availability changes whose notifications are known in advance, the
// accounting of what reached the sink, and the tiers run apart with each
// one killable and restartable.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/cmd/switchback/internal/app"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
)

// Rule of the subscriber in every reliability test (spec doc 1,
// availability): a window starting inside 14 days whose vacancies become
// fewer than 5 is news. Every change of the load takes one window from
// relBaseCap to relChangedCap, so each change is exactly one notification.
const (
	relLookAheadDays  = 14
	relVacanciesUnder = 5
	relBaseCap        = 10
	relChangedCap     = 2
	relSlotEvery      = 30 * time.Minute
	relSlotLength     = 20 * time.Minute
)

// envReliability selects the form of the fault tests (issue 9). They
// start several processes, kill them and wait for recovery, so plain `go
// test` and `make test` skip them: SWITCHBACK_RELIABILITY=short runs the
// short forms (CI: .ci/run), =long the long ones (`make reliability`).
const envReliability = "SWITCHBACK_RELIABILITY"

// reliabilityForm returns "short" or "long", or skips the test when no
// form was asked for.
func reliabilityForm(t *testing.T) string {
	t.Helper()
	switch v := os.Getenv(envReliability); v {
	case "short", "long":
		return v
	case "":
		t.Skipf("fault test: set %s=short or =long (make reliability) to run it", envReliability)
	default:
		t.Fatalf("%s=%q: want short or long", envReliability, v)
	}
	return ""
}

// byForm picks the short or the long value of a fault test's parameter.
func byForm[T any](form string, short, long T) T {
	if form == "long" {
		return long
	}
	return short
}

// relEnv are the settings of every binary the reliability tests start:
// loopback webhooks, the demo principals without demo data, and short
// timings so that a fault is recovered from in seconds.
func relEnv() []string {
	return []string{
		"SWITCHBACK_WEBHOOK_ALLOW_HTTP=true", "SWITCHBACK_WEBHOOK_ALLOW_PRIVATE=true",
		"SWITCHBACK_DEMO=true", "SWITCHBACK_DEMO_DATA=false",
		"SWITCHBACK_DISPATCH_RETRY_SCHEDULE=300ms,500ms,1s,1s,2s,2s,2s,2s,2s,2s,2s,2s,2s,2s,2s,2s,2s,2s,2s,2s",
		"SWITCHBACK_WEBHOOK_TIMEOUT=3s",
		"SWITCHBACK_SHUTDOWN_TIMEOUT=5s",
		"SWITCHBACK_SYNC_INTERVAL=0",
	}
}

// api calls the binary's API and reports transport errors instead of
// failing the test: the reliability tests call it while tiers are down.
type api struct {
	base, key, secret string
}

var relHTTP = &http.Client{Timeout: 15 * time.Second}

func (a api) call(method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", a.key)
	req.Header.Set("X-API-Secret", a.secret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := relHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// must is call for the setup steps, which run while everything is up.
func (a api) must(t *testing.T, method, path, body string, want int) []byte {
	t.Helper()
	status, raw, err := a.call(method, path, body)
	if err != nil || status != want {
		t.Fatalf("%s %s: %d %v %s, want %d", method, path, status, err, raw, want)
	}
	return raw
}

// plan is the windows of one product's rates that the load changes, one
// window per change: change i is rate i%len(rates), window i/len(rates).
type plan struct {
	sid, pid string
	rates    []string
	first    time.Time
	perRate  int
}

func newPlan(sid, pid string, rates []string, perRate int) plan {
	// Two hours ahead, so that every window is still ahead when it is
	// diffed (a window already started is not news, spec doc 1).
	first := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	p := plan{sid: sid, pid: pid, rates: rates, first: first, perRate: perRate}
	// Every window must stay inside the rule's maxLookAheadDays for the
	// whole test, or its change would not be news.
	if _, last := p.window(perRate - 1); last.After(time.Now().AddDate(0, 0, relLookAheadDays-1)) {
		panic(fmt.Sprintf("plan %s: %d windows per rate reach past the rule's look-ahead", pid, perRate))
	}
	return p
}

func (p plan) capacity() int { return len(p.rates) * p.perRate }

// loadPlans are the plans of the two loads sized for the form: the push
// load makes up to ~6.7 changes a second (one every 150 ms), the change
// notification load up to ~3; a load whose plan is used up stops, and a
// test waiting for more changes then fails saying so. Short: 1,600 and
// 600 changes (4 and 3 minutes); long: 6,400 and 1,600 (16 and 9 minutes).
func loadPlans(form, push, cr string) (plan, plan) {
	rateIDs := func(prefix string, n int) []string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("%s-%02d", prefix, i)
		}
		return ids
	}
	if form == "long" {
		return newPlan("sup-"+push, "prod-"+push, rateIDs("rate", 16), 400), newPlan("sup-"+cr, "prod-"+cr, rateIDs("rate", 4), 400)
	}
	return newPlan("sup-"+push, "prod-"+push, rateIDs("rate", 8), 200), newPlan("sup-"+cr, "prod-"+cr, rateIDs("rate", 2), 300)
}

func (p plan) change(i int) (rate string, slot int) { return p.rates[i%len(p.rates)], i / len(p.rates) }

func (p plan) window(slot int) (time.Time, time.Time) {
	s := p.first.Add(time.Duration(slot) * relSlotEvery)
	return s, s.Add(relSlotLength)
}

// key names a change and the notification it must produce: the payload of
// an availability notification names supplier, product, rate and window.
func (p plan) key(rate string, slot int) string {
	s, _ := p.window(slot)
	return notificationKey(p.sid, p.pid, rate, s.Format(time.RFC3339))
}

func notificationKey(sid, pid, rid, start string) string {
	return sid + "/" + pid + "/" + rid + "@" + start
}

// body is the PUT availabilities body of a rate with the given capacities.
func (p plan) body(caps []int) string {
	var b strings.Builder
	b.WriteString(`{"availabilities":[`)
	for j, c := range caps {
		if j > 0 {
			b.WriteByte(',')
		}
		s, e := p.window(j)
		fmt.Fprintf(&b, `{"id":"w%04d","start":%q,"end":%q,"capacity":%d}`, j, s.Format(time.RFC3339), e.Format(time.RFC3339), c)
	}
	b.WriteString(`]}`)
	return b.String()
}

// ledger is the changes a test made, each with the phase it was made in:
// what should exist at the sink, decided from the changes, not from what
// arrived.
type ledger struct {
	mu      sync.Mutex
	phase   string
	changes []change
	keys    map[string]bool
	// stopped are the loads that ended on their own (their plan used up,
	// or a change that could not be made), with why: a test waiting for
	// more changes fails at once instead of waiting out its deadline.
	stopped []string
}

type change struct {
	key, phase string
	at         time.Time
}

func newLedger(phase string) *ledger { return &ledger{phase: phase, keys: map[string]bool{}} }

func (l *ledger) setPhase(p string) { l.mu.Lock(); l.phase = p; l.mu.Unlock() }

// loadStopped records that a load ended on its own.
func (l *ledger) loadStopped(load, why string) {
	l.mu.Lock()
	l.stopped = append(l.stopped, load+": "+why)
	l.mu.Unlock()
}

func (l *ledger) stoppedLoads() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.stopped...)
}

func (l *ledger) add(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, change{key: key, phase: l.phase, at: time.Now()})
	l.keys[key] = true
}

func (l *ledger) all() []change {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]change(nil), l.changes...)
}

func (l *ledger) of(phase string) []change {
	var out []change
	for _, c := range l.all() {
		if c.phase == phase {
			out = append(out, c)
		}
	}
	return out
}

// count is how many changes of the phase were made of the product named
// by prefix ("sid/pid"; "" counts every change).
func (l *ledger) count(phase, prefix string) int {
	n := 0
	for _, c := range l.of(phase) {
		if strings.HasPrefix(c.key, prefix) {
			n++
		}
	}
	return n
}

// tryCount is waitCount returning what went wrong instead of failing.
func (l *ledger) tryCount(phase, prefix string, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for l.count(phase, prefix) < n {
		if stopped := l.stoppedLoads(); len(stopped) > 0 {
			return fmt.Errorf("phase %s: %d changes of %q made, want %d, but a load stopped: %s", phase, l.count(phase, prefix), prefix, n, strings.Join(stopped, "; "))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("phase %s: %d changes of %q made within %s, want %d", phase, l.count(phase, prefix), prefix, within, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// waitCount polls until the phase has at least n changes of prefix.
func (l *ledger) waitCount(t *testing.T, phase, prefix string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for l.count(phase, prefix) < n {
		if stopped := l.stoppedLoads(); len(stopped) > 0 {
			t.Fatalf("phase %s: %d changes of %q made, want %d, but a load stopped: %s", phase, l.count(phase, prefix), prefix, n, strings.Join(stopped, "; "))
		}
		if time.Now().After(deadline) {
			t.Fatalf("phase %s: %d changes of %q made within %s, want %d", phase, l.count(phase, prefix), prefix, within, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (l *ledger) known(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys[key]
}

// tally is what the sink received for a set of changes.
type tally struct {
	changes, expected, delivered, lost, duplicates, unexpected int
	lostKeys                                                   []string
}

// account counts, by delivery id, the POSTs the sink got on path for the
// changes: delivered are the changes with at least one delivery id,
// duplicates the POSTs beyond the first of an id, unexpected the distinct
// ids beyond the first of a change. strangers are the distinct ids whose
// payload names no change of the ledger at all.
func account(sk *sink, path string, l *ledger, changes []change) (tally, []string) {
	idsByKey := map[string]map[string]int{}
	var strangers []string
	seenStranger := map[string]bool{}
	for _, r := range sk.on(path) {
		k := receivedKey(r)
		if !l.known(k) {
			if !seenStranger[r.deliveryID] {
				seenStranger[r.deliveryID] = true
				strangers = append(strangers, fmt.Sprintf("%s (%s)", r.deliveryID, k))
			}
			continue
		}
		if idsByKey[k] == nil {
			idsByKey[k] = map[string]int{}
		}
		idsByKey[k][r.deliveryID]++
	}
	var t tally
	t.changes, t.expected = len(changes), len(changes)
	for _, c := range changes {
		ids := idsByKey[c.key]
		if len(ids) == 0 {
			t.lost++
			t.lostKeys = append(t.lostKeys, c.key)
			continue
		}
		t.delivered++
		t.unexpected += len(ids) - 1
		for _, n := range ids {
			t.duplicates += n - 1
		}
	}
	return t, strangers
}

func receivedKey(r received) string {
	s := func(k string) string { v, _ := r.body[k].(string); return v }
	return notificationKey(s("supplierID"), s("productID"), s("rateID"), s("start"))
}

// waitDelivered polls until every change of the ledger made so far has a
// delivery at the sink, or within passes; it returns how long that took.
func waitDelivered(sk *sink, path string, l *ledger, within time.Duration) time.Duration {
	start := time.Now()
	changes := l.all()
	for time.Since(start) < within {
		if t, _ := account(sk, path, l, changes); t.lost == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start).Round(100 * time.Millisecond)
}

// pushLoad is an operator changing one availability window at a time
// through PUT .../rates/{rate}/availabilities, every interval. A PUT that
// fails (the API tier is down, a dependency answered 503) is sent again
// with the same body until it is accepted: the full set is idempotent, so
// a first attempt that did land and its repetition make one change. A
// change is entered in the ledger once it is accepted.
type pushLoad struct {
	op       api
	p        plan
	l        *ledger
	interval time.Duration
	caps     map[string][]int

	run loadRun

	mu       sync.Mutex
	failures int
}

func newPushLoad(op api, p plan, l *ledger, interval time.Duration) *pushLoad {
	caps := map[string][]int{}
	for _, r := range p.rates {
		c := make([]int, p.perRate)
		for j := range c {
			c[j] = relBaseCap
		}
		caps[r] = c
	}
	return &pushLoad{op: op, p: p, l: l, interval: interval, caps: caps}
}

func (pl *pushLoad) path(rate string) string {
	return "/channel/v1.2/suppliers/" + pl.p.sid + "/products/" + pl.p.pid + "/rates/" + rate + "/availabilities"
}

// baseline pushes every rate's windows at relBaseCap: the first set of a
// rate is a baseline, no news (processors/availchange Diff).
func (pl *pushLoad) baseline(t *testing.T) {
	t.Helper()
	for _, r := range pl.p.rates {
		pl.op.must(t, "PUT", pl.path(r), pl.p.body(pl.caps[r]), 200)
	}
}

// one makes change i and waits until it is accepted (or until giveUp).
func (pl *pushLoad) one(i int, giveUp time.Time) error {
	rate, slot := pl.p.change(i)
	pl.caps[rate][slot] = relChangedCap
	body := pl.p.body(pl.caps[rate])
	for {
		status, raw, err := pl.op.call("PUT", pl.path(rate), body)
		if err == nil && status == 200 {
			pl.l.add(pl.p.key(rate, slot))
			return nil
		}
		pl.mu.Lock()
		pl.failures++
		pl.mu.Unlock()
		if err == nil && status != 503 && status != 500 && status != 502 && status != 504 {
			return fmt.Errorf("change %d: PUT answered %d %s", i, status, raw)
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("change %d not accepted before the deadline: %d %v", i, status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start runs the load in the background from change `from` on.
func (pl *pushLoad) start(from int) {
	pl.run.start("push load", pl.l, pl.interval, from, pl.p.capacity(), pl.one)
}

// halt stops the load and fails the test if a change could not be made.
func (pl *pushLoad) halt(t *testing.T) {
	t.Helper()
	pl.run.halt(t)
}

// loadRun is the background loop of a load: change i every interval, from
// change `from` until the plan is used up, halt is called or a change
// fails (the ledger is told why the load stopped).
type loadRun struct {
	name string
	mu   sync.Mutex
	errs []string
	stop chan struct{}
	done chan struct{}
}

func (r *loadRun) start(name string, l *ledger, interval time.Duration, from, capacity int, one func(i int, giveUp time.Time) error) {
	r.name = name
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := from; i < capacity; i++ {
			select {
			case <-r.stop:
				return
			case <-tick.C:
			}
			// A change under way is finished even when stop comes: an
			// abandoned change would leave it unknown whether it was made.
			if err := one(i, time.Now().Add(90*time.Second)); err != nil {
				r.mu.Lock()
				r.errs = append(r.errs, err.Error())
				r.mu.Unlock()
				l.loadStopped(name, err.Error())
				return
			}
		}
		l.loadStopped(name, fmt.Sprintf("its plan of %d changes is used up (make the plan larger)", capacity))
	}()
}

// halt stops the loop and fails the test if a change could not be made.
func (r *loadRun) halt(t *testing.T) {
	t.Helper()
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		t.Errorf("%s: %s", r.name, strings.Join(r.errs, "; "))
	}
}

func (pl *pushLoad) failed() int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.failures
}

// setupPush creates a supplier (never called: its availability is pushed),
// a product with the plan's rates all bound to the demo channel, and pushes
// the baseline.
func setupPush(t *testing.T, op api, p plan) {
	t.Helper()
	setupPlan(t, op, p, catalogtest.SupplierBody(p.sid, "Reliability Tours", "RT", "k", "s"), catalogtest.ProductBody(p.pid, "Harbour tour", "A tour"))
}

// setupPlan creates the plan's supplier (body supplier), product (body
// product) and rates, the rates bound to the demo channel.
func setupPlan(t *testing.T, op api, p plan, supplier, product string) {
	t.Helper()
	op.must(t, "POST", "/channel/v1.2/suppliers", supplier, 201)
	op.must(t, "POST", "/channel/v1.2/suppliers/"+p.sid+"/products", product, 201)
	base := "/channel/v1.2/suppliers/" + p.sid + "/products/" + p.pid
	for _, r := range p.rates {
		op.must(t, "POST", base+"/rates", catalogtest.RateBody(r, "Rate "+r), 201)
	}
	ids, _ := json.Marshal(p.rates)
	op.must(t, "POST", base+"/channels/"+app.DemoChannelID, fmt.Sprintf(`{"rateIds":%s}`, ids), 201)
}

// createAvailabilityRule registers the demo reseller's availability rule
// at sink path.
func createAvailabilityRule(t *testing.T, reseller api, url string) {
	t.Helper()
	reseller.must(t, "POST", "/registry/v1.1/availability",
		fmt.Sprintf(`{"url":%q,"config":{"maxLookAheadDays":%d,"vacanciesUnder":%d}}`, url, relLookAheadDays, relVacanciesUnder), 201)
}

// partner is a partner (spec doc 2, GET .../availabilities) whose
// inventory the test sets: the windows of a plan at capacities it holds.
type partner struct {
	p     plan
	mu    sync.Mutex
	caps  map[string][]int
	calls int
	srv   *httptest.Server
}

func newPartner(t *testing.T, p plan) *partner {
	return newPartnerWith(t, p, nil)
}

// newPartnerWith is newPartner whose server runs wrap(the partner) when
// wrap is not nil: a test's faults in front of it.
func newPartnerWith(t *testing.T, p plan, wrap func(http.Handler) http.Handler) *partner {
	pt := &partner{p: p, caps: map[string][]int{}}
	for _, r := range p.rates {
		c := make([]int, p.perRate)
		for j := range c {
			c[j] = relBaseCap
		}
		pt.caps[r] = c
	}
	var h http.Handler = http.HandlerFunc(pt.serve)
	if wrap != nil {
		h = wrap(h)
	}
	pt.srv = httptest.NewServer(h)
	t.Cleanup(pt.srv.Close)
	return pt
}

func (pt *partner) set(rate string, slot, capacity int) {
	pt.mu.Lock()
	pt.caps[rate][slot] = capacity
	pt.mu.Unlock()
}

func (pt *partner) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method != http.MethodGet || len(parts) != 5 || parts[0] != "suppliers" || parts[1] != pt.p.sid || parts[3] != pt.p.pid || parts[4] != "availabilities" {
		http.Error(w, `{"code":"NOT_FOUND","message":"no such route","meta":{"reqId":""}}`, http.StatusNotFound)
		return
	}
	start, err1 := time.Parse(time.RFC3339, r.URL.Query().Get("start"))
	end, err2 := time.Parse(time.RFC3339, r.URL.Query().Get("end"))
	if err1 != nil || err2 != nil {
		http.Error(w, `{"code":"BAD_REQUEST","message":"start and end","meta":{"reqId":""}}`, http.StatusBadRequest)
		return
	}
	type window struct {
		ID       string    `json:"id"`
		Start    time.Time `json:"start"`
		End      time.Time `json:"end"`
		Capacity int       `json:"capacity"`
	}
	type list struct {
		Availability []window `json:"availability"`
	}
	pt.mu.Lock()
	pt.calls++
	byRate := map[string]list{}
	for _, rid := range pt.p.rates {
		if q := r.URL.Query().Get("rate_id"); q != "" && q != rid {
			continue
		}
		l := list{Availability: []window{}}
		for j, c := range pt.caps[rid] {
			s, e := pt.p.window(j)
			if s.Before(end) && e.After(start) {
				l.Availability = append(l.Availability, window{ID: fmt.Sprintf("%s-w%04d", rid, j), Start: s, End: e, Capacity: c})
			}
		}
		byRate[rid] = l
	}
	pt.mu.Unlock()
	now := time.Now().UTC()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"availabilities": map[string]any{"byRate": byRate, "productId": pt.p.pid,
			"retrieved": now.Format(time.RFC3339Nano), "expires": now.Add(10 * time.Minute).Format(time.RFC3339Nano)},
		"meta": map[string]string{"reqId": r.Header.Get("X-Request-ID")},
	})
}

// changeRequestLoad is an operator whose partner's inventory changes one
// window at a time, each followed by a change notification (spec doc 3,
// POST /operator/v2/notifications) that the ingest tier works: the
// refresh reads the partner and the availability processor diffs the
// snapshot. The next change waits until the request SUCCEEDED, so every
// snapshot carries exactly one change and one notification.
type changeRequestLoad struct {
	op       api
	pt       *partner
	l        *ledger
	interval time.Duration
	run      loadRun
}

func (cl *changeRequestLoad) query() string {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	return fmt.Sprintf("/operator/v2/notifications?supplierId=%s&productId=%s&startDate=%s&endDate=%s", cl.pt.p.sid, cl.pt.p.pid,
		today.Format(time.DateOnly), today.AddDate(0, 0, relLookAheadDays).Format(time.DateOnly))
}

// request posts change notifications until one SUCCEEDED (or giveUp).
func (cl *changeRequestLoad) request(giveUp time.Time) error {
	for time.Now().Before(giveUp) {
		status, raw, err := cl.op.call("POST", cl.query(), "")
		if err != nil || status != 201 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		var created struct {
			Notification struct{ ID string } `json:"notification"`
		}
		if err := json.Unmarshal(raw, &created); err != nil || created.Notification.ID == "" {
			return fmt.Errorf("change notification created without an id: %s", raw)
		}
		if cl.finished(created.Notification.ID, giveUp) == "SUCCEEDED" {
			return nil
		}
		time.Sleep(200 * time.Millisecond) // FAILED: ask again
	}
	return fmt.Errorf("no change notification SUCCEEDED before the deadline")
}

// finished polls the request until it is finished and returns its status
// ("" at giveUp).
func (cl *changeRequestLoad) finished(id string, giveUp time.Time) string {
	for time.Now().Before(giveUp) {
		status, raw, err := cl.op.call("GET", "/operator/v2/notifications/"+id, "")
		if err == nil && status == 200 {
			var got struct {
				Notification struct{ Status string } `json:"notification"`
			}
			_ = json.Unmarshal(raw, &got)
			switch s := got.Notification.Status; s {
			case "SUCCEEDED", "FAILED", "PARTIAL_FAILURE":
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ""
}

// one makes change i at the partner and has it refreshed.
func (cl *changeRequestLoad) one(i int, giveUp time.Time) error {
	rate, slot := cl.pt.p.change(i)
	cl.pt.set(rate, slot, relChangedCap)
	if err := cl.request(giveUp); err != nil {
		return fmt.Errorf("change %d: %w", i, err)
	}
	cl.l.add(cl.pt.p.key(rate, slot))
	return nil
}

func (cl *changeRequestLoad) start(from int) {
	cl.run.start("change notification load", cl.l, cl.interval, from, cl.pt.p.capacity(), cl.one)
}

func (cl *changeRequestLoad) halt(t *testing.T) {
	t.Helper()
	cl.run.halt(t)
}

// setupPartner creates a partner supplier at pt's server with the plan's
// product and rates bound to the demo channel.
func setupPartner(t *testing.T, op api, pt *partner) {
	t.Helper()
	p := pt.p
	setupPlan(t, op, p, partnerSupplier(p.sid, "Partner Tours", "PT", "pk", "ps", pt.srv.URL), catalogtest.ProductBody(p.pid, "Ridge walk", "A walk"))
}

// cluster is the tiers run apart as separate processes (`switchback
// broker`, then ingest, process ×2, query and dispatch) against one Redis,
// each one killable and restartable with the same settings.
type cluster struct {
	t         *testing.T
	kafka     string
	brokerDir string
	api       string
	common    []string
	broker    *tierProc
	procs     map[string]*tierProc
	commands  map[string]string
}

// clusterUnderLoad starts the tiers apart on the Redis at redisURL and
// warms both loads on them (not started).
func clusterUnderLoad(t *testing.T, form, redisURL string) (*cluster, *faultLoads) {
	t.Helper()
	c := startCluster(t, redisURL)
	return c, warmLoads(t, form, "http://"+c.api)
}

func startCluster(t *testing.T, redisURL string, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, kafka: freeAddr(t), brokerDir: filepath.Join(t.TempDir(), "var"), api: freeAddr(t),
		procs: map[string]*tierProc{}, commands: map[string]string{}}
	c.common = append(append([]string{"SWITCHBACK_KAFKA_BROKERS=" + c.kafka, "SWITCHBACK_REDIS_URL=" + redisURL}, relEnv()...), extra...)
	watchAPI(t, c.api)
	c.startBroker()
	for _, tier := range []struct{ name, command string }{
		{"ingest", "ingest"}, {"process-1", "process"}, {"process-2", "process"}, {"query", "query"}, {"dispatch", "dispatch"},
	} {
		c.commands[tier.name] = tier.command
		c.start(tier.name)
	}
	for name := range c.procs {
		c.ready(name)
	}
	c.waitAPI()
	return c
}

func (c *cluster) startBroker() {
	c.t.Helper()
	c.broker = startTier(c.t, "broker", "broker", "SWITCHBACK_EMBEDDED_KAFKA_ADDR="+c.kafka, "SWITCHBACK_DATA_DIR="+c.brokerDir)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(c.broker.stdout.String(), "Kafka-protocol broker on") {
		select {
		case err := <-c.broker.exited:
			c.t.Fatalf("broker exited: %v\n%s", err, c.broker.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("broker not up within 60s\n%s", c.broker.stderr.String())
		}
	}
}

// start starts the named tier (again) without waiting for it.
func (c *cluster) start(name string) {
	c.t.Helper()
	env := c.common
	if c.commands[name] == "query" {
		env = append(append([]string{}, c.common...), "SWITCHBACK_HTTP_ADDR="+c.api)
	}
	c.procs[name] = startTier(c.t, name, c.commands[name], env...)
}

func (c *cluster) ready(name string) {
	c.t.Helper()
	p := c.procs[name]
	p.waitHealthy(c.t, "http://"+p.ops+"/readyz")
}

// kill sends SIGKILL to the named tier (or "broker") and waits until it
// is gone.
func (c *cluster) kill(name string) {
	c.t.Helper()
	p := c.broker
	if name != "broker" {
		p = c.procs[name]
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill %s: %v", name, err)
	}
	<-p.exited
}

// waitAPI polls until the query tier's API listener answers.
func (c *cluster) waitAPI() {
	c.t.Helper()
	q := c.procs["query"]
	waitAPI(c.t, "query tier", c.api, 60*time.Second, nil, q.stderr)
}

// relLog prints the one-line, greppable figures of a fault
// ("RELIABILITY fault=... lost=..."), which docs/reliability.md collects.
func relLog(t *testing.T, fault string, tl tally, extra ...string) {
	t.Helper()
	line := fmt.Sprintf("RELIABILITY fault=%s changes=%d expected=%d delivered=%d lost=%d duplicates=%d unexpected=%d",
		fault, tl.changes, tl.expected, tl.delivered, tl.lost, tl.duplicates, tl.unexpected)
	if len(extra) > 0 {
		line += " " + strings.Join(extra, " ")
	}
	t.Log(line)
}

// checkTally fails the test on a lost or unexpected notification.
func checkTally(t *testing.T, fault string, tl tally) {
	t.Helper()
	if tl.lost > 0 {
		keys := tl.lostKeys
		sort.Strings(keys)
		if len(keys) > 10 {
			keys = keys[:10]
		}
		t.Errorf("%s: %d of %d notifications lost, e.g. %v", fault, tl.lost, tl.expected, keys)
	}
	if tl.unexpected > 0 {
		t.Errorf("%s: %d unexpected notifications (a second delivery id for one change)", fault, tl.unexpected)
	}
}

// faultLoads are the two loads of the loss-counting fault tests and the
// ledger of the changes they make.
type faultLoads struct {
	sk *sink
	l  *ledger
	pl *pushLoad
	cl *changeRequestLoad
	// pushKeys and crKeys are the ledger's key prefixes of each load's
	// changes.
	pushKeys, crKeys string
	// The push load's supplier and product, for reads with a known answer.
	pushSupplier, pushProduct string
}

// warmLoads sets up both loads against the API at base (the reseller's
// availability rule pointing at a new sink, the operator's push supplier,
// the partner supplier), then runs one change of each through the whole
// pipeline and fails the test unless both were delivered: a fault is
// measured on a pipeline known to work. The loads are not started.
func warmLoads(t *testing.T, form, base string) *faultLoads {
	t.Helper()
	sk := newSink(t)
	op := api{base, "demo-operator", "demo-operator-secret"}
	createAvailabilityRule(t, api{base, "demo-reseller", "demo-reseller-secret"}, sk.url+"/av")
	push, crPlan := loadPlans(form, "rel-push", "rel-cr")
	setupPush(t, op, push)
	pt := newPartner(t, crPlan)
	setupPartner(t, op, pt)

	l := newLedger("warmup")
	pl := newPushLoad(op, push, l, 150*time.Millisecond)
	pl.baseline(t)
	cl := &changeRequestLoad{op: op, pt: pt, l: l, interval: 300 * time.Millisecond}
	if err := cl.request(time.Now().Add(60 * time.Second)); err != nil { // the partner's baseline
		t.Fatal(err)
	}
	if err := pl.one(0, time.Now().Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := cl.one(0, time.Now().Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitDelivered(sk, "/av", l, 60*time.Second)
	if tl, _ := account(sk, "/av", l, l.all()); tl.lost > 0 {
		t.Fatalf("warm-up: %d of %d notifications not delivered with everything up", tl.lost, tl.expected)
	}
	return &faultLoads{sk: sk, l: l, pl: pl, cl: cl, pushKeys: push.sid + "/", crKeys: pt.p.sid + "/", pushSupplier: push.sid, pushProduct: push.pid}
}

// start starts both loads from their second change (warmLoads made the
// first).
func (fl *faultLoads) start() {
	fl.pl.start(1)
	fl.cl.start(1)
}

// endPhase moves the ledger on to phase next (halting both loads when
// there is none: "final"), waits until every change made was delivered
// and returns how long that took and the tally of phase.
func (fl *faultLoads) endPhase(t *testing.T, phase, next string, within time.Duration) (time.Duration, tally) {
	t.Helper()
	if next == "" {
		next = "final"
	}
	fl.l.setPhase(next)
	if next == "final" {
		fl.pl.halt(t)
		fl.cl.halt(t)
	}
	caught := waitDelivered(fl.sk, "/av", fl.l, within)
	tl, _ := account(fl.sk, "/av", fl.l, fl.l.of(phase))
	return caught, tl
}

// checkTotal logs the tally of every change made under fault (with
// detail) and fails the test on a loss, a duplicate or a delivery id for
// no change made.
func (fl *faultLoads) checkTotal(t *testing.T, fault, detail string) {
	t.Helper()
	tl, strangers := account(fl.sk, "/av", fl.l, fl.l.all())
	relLog(t, fault, tl, detail)
	checkTally(t, "total", tl)
	if len(strangers) > 0 {
		t.Errorf("delivery ids for no change made: %v", strangers)
	}
}

package bookingsync

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

// TestDayInterval_ByStatuses: doc 3 rule 8 per status, and a day's
// interval is the most urgent of its slots'.
func TestDayInterval_ByStatuses(t *testing.T) {
	tests := []struct {
		name     string
		statuses []string
		want     time.Duration
	}{
		{"FREESALE at most once per week", []string{"FREESALE"}, 7 * 24 * time.Hour},
		{"AVAILABLE every 12 hours", []string{"AVAILABLE"}, 12 * time.Hour},
		{"LIMITED at least hourly", []string{"LIMITED"}, 50 * time.Minute},
		{"SOLD_OUT at most hourly", []string{"SOLD_OUT"}, time.Hour},
		{"CLOSED at most once per 12 hours", []string{"CLOSED"}, 12 * time.Hour},
		{"no availability (never bookable dates are omitted)", nil, 7 * 24 * time.Hour},
		{"LIMITED beside CLOSED: the LIMITED slot decides", []string{"CLOSED", "LIMITED", "CLOSED"}, 50 * time.Minute},
		{"SOLD_OUT beside AVAILABLE", []string{"AVAILABLE", "SOLD_OUT"}, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DayInterval(tt.statuses); got != tt.want {
				t.Fatalf("DayInterval(%v) = %v, want %v", tt.statuses, got, tt.want)
			}
		})
	}
	// The rules' bounds hold: "at least hourly" is under the hour, "at
	// most" ones never under theirs.
	if LimitedInterval >= time.Hour || SoldOutInterval < time.Hour || ClosedInterval < 12*time.Hour || FreesaleInterval < 7*24*time.Hour {
		t.Fatal("an interval breaks doc 3 rule 8")
	}
}

// TestDueRuns: only due days are read, contiguous ones in one read.
func TestDueRuns(t *testing.T) {
	now := t0
	h := DayRange{"2026-11-22", "2026-11-27"}
	past, future := now.Add(-time.Minute), now.Add(time.Minute)
	tests := []struct {
		name string
		days map[string]time.Time
		want string
	}{
		{"never read: the whole horizon in one read", nil, "[{2026-11-22 2026-11-27}]"},
		{"nothing due", map[string]time.Time{"2026-11-22": future, "2026-11-23": future, "2026-11-24": future, "2026-11-25": future, "2026-11-26": future}, "[]"},
		{"two runs around a day not due", map[string]time.Time{"2026-11-22": past, "2026-11-23": now, "2026-11-24": future, "2026-11-25": past, "2026-11-26": future},
			"[{2026-11-22 2026-11-24} {2026-11-25 2026-11-26}]"},
		{"the day that entered the horizon", map[string]time.Time{"2026-11-22": future, "2026-11-23": future, "2026-11-24": future, "2026-11-25": future},
			"[{2026-11-26 2026-11-27}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(dueRuns(tt.days, h, now)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestSchedule_ClaimIsExclusiveAndLeased: a due item is claimed once;
// a claim not followed by a record (the process died) comes back when
// its lease ends.
func TestSchedule_ClaimIsExclusiveAndLeased(t *testing.T) {
	e := start(t, envOptions{})
	a, b := e.schedule(3), e.schedule(3)
	it := Item{sid, "S1-P1", "S1-P1-O1"}
	if _, err := a.Add(ctx, it); err != nil {
		t.Fatal(err)
	}
	c1, err := a.Claim(ctx, t0, time.Minute, 10)
	if err != nil || len(c1) != 1 || c1[0].Item != it || !c1[0].Due.IsZero() {
		t.Fatalf("first claim %+v %v", c1, err)
	}
	if c2, _ := b.Claim(ctx, t0.Add(59*time.Second), time.Minute, 10); len(c2) != 0 {
		t.Fatalf("claimed twice within the lease: %+v", c2)
	}
	if c3, _ := b.Claim(ctx, t0.Add(61*time.Second), time.Minute, 10); len(c3) != 1 {
		t.Fatalf("not claimable after the lease: %+v", c3)
	}
}

// statusesByDay rewrites a START_TIME option's answers: each local date's
// slots take the listed statuses in turn; a date listed with none loses
// its slots (doc 3 rule 1: never-bookable dates are omitted).
func statusesByDay(option string, days map[string][]string) rewriteFunc {
	return func(r *http.Request, body any) any {
		if r.URL.Query().Get("optionId") != option {
			return body
		}
		var out []any
		seen := map[string]int{}
		for _, x := range body.([]any) {
			a := x.(map[string]any)
			d := a["localDateTimeStart"].(string)[:10]
			sts, ok := days[d]
			if ok && len(sts) == 0 {
				continue
			}
			if ok {
				st := sts[seen[d]%len(sts)]
				seen[d]++
				a["status"] = st
				switch st {
				case "LIMITED":
					a["vacancies"] = 2
				case "AVAILABLE":
					a["vacancies"] = 15
				case "SOLD_OUT":
					a["vacancies"] = 0
				}
			}
			out = append(out, a)
		}
		if out == nil {
			out = []any{}
		}
		return out
	}
}

// TestRefresh_RecordsEachDayNextDueByItsStatuses: after a refresh, each
// day read is next due by the statuses seen on it (doc 3 rule 8); a day
// of the horizon never read keeps the option due now.
func TestRefresh_RecordsEachDayNextDueByItsStatuses(t *testing.T) {
	e := start(t, envOptions{})
	c := e.clock
	e.setRewrite(statusesByDay("S1-P1-O1", map[string][]string{
		c.today(0): {"LIMITED"}, c.today(1): {"AVAILABLE"}, c.today(2): {"SOLD_OUT"}, c.today(3): {"CLOSED"},
		c.today(4): {"CLOSED", "LIMITED", "CLOSED"}, c.today(5): {},
	}))
	sch := e.schedule(8)
	sy := e.syncer(sch)
	for _, pid := range []string{"S1-P1", "S1-P2"} {
		if out, err := sy.RefreshProduct(ctx, sid, pid, c.today(0), c.today(6)); err != nil || len(out.Failures) != 0 {
			t.Fatalf("%s: %+v %v", pid, out, err)
		}
	}
	limited, _ := sch.Days(ctx, Item{sid, "S1-P1", "S1-P1-O1"})
	freesale, _ := sch.Days(ctx, Item{sid, "S1-P2", "S1-P2-O1"})
	tests := []struct {
		name string
		got  time.Time
		want time.Duration
	}{
		{"LIMITED day: within the hour", limited[c.today(0)], 50 * time.Minute},
		{"AVAILABLE day: 12 hours", limited[c.today(1)], 12 * time.Hour},
		{"SOLD_OUT day: not before an hour", limited[c.today(2)], time.Hour},
		{"CLOSED day: not before 12 hours", limited[c.today(3)], 12 * time.Hour},
		{"CLOSED and LIMITED day: within the hour", limited[c.today(4)], 50 * time.Minute},
		{"day without availability: a week", limited[c.today(5)], 7 * 24 * time.Hour},
		{"FREESALE day: not before a week", freesale[c.today(0)], 7 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.got.Equal(c.now().Add(tt.want)) {
				t.Fatalf("next due %v, want now + %v", tt.got, tt.want)
			}
		})
	}
	if _, ok := limited[c.today(6)]; ok {
		t.Fatal("a day outside the refresh was recorded")
	}
	if next, on, _ := sch.Next(ctx, Item{sid, "S1-P1", "S1-P1-O1"}); !on || !next.IsZero() {
		t.Fatalf("days 6 and 7 of the horizon were never read: the option must be due now (%v %v)", next, on)
	}
}

// read is one day of an option read by the booking system at a time.
type read struct {
	option, day string
	at          time.Time
}

// reads are the days read by the GET availability calls of cs, at the
// clock's time.
func reads(cs []call, at time.Time) []read {
	var out []read
	for _, c := range availabilityCalls(cs) {
		for _, d := range (DayRange{c.Query["localDateStart"], c.Query["localDateEnd"]}).days() {
			out = append(out, read{c.Query["optionId"], d, at})
		}
	}
	return out
}

// TestScheduler_LimitedDaysHourlyFreesaleDaysWeekly drives the clock over
// a day in 10-minute rounds, then past a week: a LIMITED day is read at
// least hourly (never sooner than LimitedInterval), a FREESALE day not
// again within the week, and again once the week is over (doc 3 rule 8).
func TestScheduler_LimitedDaysHourlyFreesaleDaysWeekly(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: 2, OptionsPerProduct: 1}})
	e.seed(t)
	e.setRewrite(func(r *http.Request, body any) any {
		if r.URL.Query().Get("optionId") == "S1-P1-O1" {
			return mapAvailabilities(body, func(a map[string]any) { a["status"], a["vacancies"] = "LIMITED", 2 })
		}
		return body
	})
	sch := e.schedule(10)
	sc := NewScheduler(SchedulerOptions{Syncer: e.syncer(sch), Registerer: e.reg})
	var all []read
	round := func() {
		t.Helper()
		if _, err := sc.Round(ctx); err != nil {
			t.Fatal(err)
		}
		all = append(all, reads(e.takeCalls(), e.clock.now())...)
	}
	for range 24 * 6 {
		round()
		e.clock.add(10 * time.Minute)
	}
	byDay := map[string][]time.Time{}
	for _, r := range all {
		byDay[r.option+" "+r.day] = append(byDay[r.option+" "+r.day], r.at)
	}
	for _, d := range []string{"2026-11-25", "2026-11-30"} { // in the horizon the whole day
		ts := byDay["S1-P1-O1 "+d]
		t.Logf("LIMITED day %s: %d reads in 24 h", d, len(ts))
		if len(ts) < 24 {
			t.Fatalf("LIMITED day %s read %d times in 24 h, want at least 24", d, len(ts))
		}
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap > time.Hour || gap < LimitedInterval {
				t.Fatalf("LIMITED day %s: %v between reads %d and %d", d, gap, i-1, i)
			}
		}
	}
	for key, ts := range byDay {
		if key[:8] == "S1-P2-O1" && len(ts) != 1 {
			t.Fatalf("FREESALE day %s read %d times within a week: %v", key, len(ts), ts)
		}
	}
	if n := len(byDay["S1-P2-O1 2026-11-30"]); n != 1 {
		t.Fatalf("FREESALE day read %d times", n)
	}
	// Just short of a week after the first read: only days never read.
	e.clock.set(t0.Add(7*24*time.Hour - time.Minute))
	all = nil
	round()
	for _, r := range all {
		if r.option == "S1-P2-O1" && r.day <= "2026-12-01" {
			t.Fatalf("FREESALE day %s read again before the week was over", r.day)
		}
	}
	e.clock.set(t0.Add(7*24*time.Hour + time.Minute))
	all = nil
	round()
	again := false
	for _, r := range all {
		if r.option == "S1-P2-O1" && r.day == "2026-11-30" {
			again = true
		}
	}
	if !again {
		t.Fatalf("FREESALE day 2026-11-30 not read again after a week: %+v", all)
	}
}

// TestScheduler_TwoSchedulersOneRefresh: two processes' schedulers on one
// Redis: every due option is refreshed by exactly one of them.
func TestScheduler_TwoSchedulersOneRefresh(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{Latency: 20 * time.Millisecond}})
	e.seed(t)
	var scs []*Scheduler
	for range 2 {
		scs = append(scs, NewScheduler(SchedulerOptions{Syncer: e.syncer(e.schedule(5)), Batch: 3, Concurrency: 2}))
	}
	if _, err := scs[0].Discover(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	claimed := 0
	for _, sc := range scs {
		wg.Go(func() {
			for {
				rr, err := sc.Round(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				claimed += rr.Claimed
				mu.Unlock()
				if rr.Claimed == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	perOption := map[string]int{}
	for _, c := range availabilityCalls(e.takeCalls()) {
		perOption[c.Query["optionId"]]++
	}
	if claimed != 8 || len(perOption) != 8 {
		t.Fatalf("claimed %d, options read %v; want 8 each", claimed, perOption)
	}
	for o, n := range perOption {
		if n != 1 {
			t.Fatalf("option %s read %d times", o, n)
		}
	}
}

// TestScheduler_RebuildsAfterRedisFlush: the schedule is derivable; with
// its keys gone, discovery puts every option back due and one round reads
// each option's horizon once and records it.
func TestScheduler_RebuildsAfterRedisFlush(t *testing.T) {
	e := start(t, envOptions{})
	e.seed(t)
	sch := e.schedule(5)
	sc := NewScheduler(SchedulerOptions{Syncer: e.syncer(sch)})
	if rr, err := sc.Round(ctx); err != nil || rr.Discovered != 8 || rr.Refreshed != 8 {
		t.Fatalf("first round %+v %v", rr, err)
	}
	e.takeCalls()
	keys, _ := testharness.Keys(ctx, e.Redis, "sb:{bookingsync}:*")
	if len(keys) == 0 {
		t.Fatal("no schedule keys")
	}
	e.Redis.Del(ctx, keys...)
	e.clock.add(time.Minute)
	sc = NewScheduler(SchedulerOptions{Syncer: e.syncer(sch)}) // a restarted process
	rr, err := sc.Round(ctx)
	if err != nil || rr.Discovered != 8 || rr.Claimed != 8 || rr.Refreshed != 8 {
		t.Fatalf("round after the flush %+v %v", rr, err)
	}
	calls := availabilityCalls(e.takeCalls())
	if len(calls) != 8 || calls[0].Query["localDateStart"] != e.clock.today(0) || calls[0].Query["localDateEnd"] != e.clock.today(5) {
		t.Fatalf("calls after the flush: %+v", calls)
	}
	if n, _ := sch.DueCount(ctx, e.clock.now()); n != 0 {
		t.Fatalf("%d options still due after one round", n)
	}
}

// TestScheduler_FullSyncLeavesNothingDue: a full synchronization records
// the days it read, so the scheduler does not read them again at once.
func TestScheduler_FullSyncLeavesNothingDue(t *testing.T) {
	e := start(t, envOptions{})
	sch := e.schedule(5)
	sy := e.syncer(sch)
	if _, err := e.sync(t, sy, 5); err != nil {
		t.Fatal(err)
	}
	e.takeCalls()
	rr, err := NewScheduler(SchedulerOptions{Syncer: sy}).Round(ctx)
	if err != nil || rr.Discovered != 0 || rr.Claimed != 0 || len(e.takeCalls()) != 0 {
		t.Fatalf("%+v %v", rr, err)
	}
}

// TestScheduler_FailedReadsAreRetriedByKind: a booking system that fails
// (5xx) is asked again after RetryInterval; one that refuses the read
// (400/404) after RefusedInterval.
func TestScheduler_FailedReadsAreRetriedByKind(t *testing.T) {
	tests := []struct {
		status int
		want   time.Duration
	}{
		{500, RetryInterval},
		{503, RetryInterval},
		{400, RefusedInterval},
		{404, RefusedInterval},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: 1}})
			e.seed(t)
			e.setFault(func(r *http.Request) int {
				if r.URL.Query().Get("optionId") == "S1-P1-O2" {
					return tt.status
				}
				return 0
			})
			sch := e.schedule(3)
			rr, err := NewScheduler(SchedulerOptions{Syncer: e.syncer(sch)}).Round(ctx)
			if err != nil || rr.Refreshed != 1 || rr.Failed != 1 {
				t.Fatalf("%+v %v", rr, err)
			}
			next, _, _ := sch.Next(ctx, Item{sid, "S1-P1", "S1-P1-O2"})
			if !next.Equal(e.clock.now().Add(tt.want)) {
				t.Fatalf("next due %v, want now + %v", next, tt.want)
			}
		})
	}
}

// TestScheduler_ForgetsGoneOptions: an option whose rate was deleted, or
// whose supplier is no longer a booking system's, leaves the schedule.
func TestScheduler_ForgetsGoneOptions(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: 1}})
	e.seed(t)
	sch := e.schedule(3)
	sc := NewScheduler(SchedulerOptions{Syncer: e.syncer(sch)})
	if _, err := sc.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.DeleteRate(ctx, catalog.SystemScope(), sid, "S1-P1", "S1-P1-O2"); err != nil {
		t.Fatal(err)
	}
	e.clock.add(8 * 24 * time.Hour) // everything due
	rr, err := sc.Round(ctx)
	if err != nil || rr.Forgotten != 1 || rr.Refreshed != 1 {
		t.Fatalf("%+v %v", rr, err)
	}
	if _, on, _ := sch.Next(ctx, Item{sid, "S1-P1", "S1-P1-O2"}); on {
		t.Fatal("the deleted option is still on the schedule")
	}
}

// TestScheduler_RunRoundsUntilCancelled: Run refreshes without being
// driven and returns ctx's error when it ends.
func TestScheduler_RunRoundsUntilCancelled(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: 1}})
	e.seed(t)
	sch := e.schedule(3)
	sc := NewScheduler(SchedulerOptions{Syncer: e.syncer(sch), Every: 10 * time.Millisecond, Registerer: e.reg})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sc.Run(rctx) }()
	it := Item{sid, "S1-P1", "S1-P1-O1"}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if next, on, _ := sch.Next(ctx, it); on && !next.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run refreshed nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	if got := counter(t, sc.m.claimed); got < 2 {
		t.Fatalf("claimed metric %v", got)
	}
	noSecret(t, "logs", e.Logs.String())
}

// TestRefresh_DaysAreTheProductsLocalDates: an option's days are local
// dates of its product; the read asks for them and the record keeps them.
func TestRefresh_DaysAreTheProductsLocalDates(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{TimeZone: "Pacific/Auckland", ProductsPerSupplier: 1, OptionsPerProduct: 1}})
	e.seed(t)
	e.clock.set(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)) // 01:00 on the 23rd in Auckland
	sch := e.schedule(2)
	if _, err := NewScheduler(SchedulerOptions{Syncer: e.syncer(sch)}).Round(ctx); err != nil {
		t.Fatal(err)
	}
	calls := availabilityCalls(e.takeCalls())
	if len(calls) != 1 || calls[0].Query["localDateStart"] != "2026-11-23" || calls[0].Query["localDateEnd"] != "2026-11-25" {
		t.Fatalf("calls %+v", calls)
	}
	days, _ := sch.Days(ctx, Item{sid, "S1-P1", "S1-P1-O1"})
	var ds []string
	for d := range days {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	if fmt.Sprint(ds) != "[2026-11-23 2026-11-24]" {
		t.Fatalf("recorded days %v", ds)
	}
}

// TestScheduler_ARequestThatCannotBeMadeIsNotRetriedSoon: a product
// without availabilityType (set up by hand, never synchronized) cannot be
// read; its days wait RefusedInterval, not RetryInterval.
func TestScheduler_ARequestThatCannotBeMadeIsNotRetriedSoon(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{ProductsPerSupplier: 1, OptionsPerProduct: 1}})
	e.seed(t)
	p := e.product(t, "S1-P1")
	p.AvailabilityType = ""
	if _, err := e.Store.PutProduct(ctx, catalog.SystemScope(), sid, "S1-P1", catalog.ProductInput{ProductData: p.ProductData}); err != nil {
		t.Fatal(err)
	}
	sch := e.schedule(3)
	rr, err := NewScheduler(SchedulerOptions{Syncer: e.syncer(sch)}).Round(ctx)
	if err != nil || rr.Failed != 1 || len(e.takeCalls()) != 0 {
		t.Fatalf("%+v %v", rr, err)
	}
	if next, _, _ := sch.Next(ctx, Item{sid, "S1-P1", "S1-P1-O1"}); !next.Equal(e.clock.now().Add(RefusedInterval)) {
		t.Fatalf("next due %v", next)
	}
}

// TestNewScheduler_BatchFitsTheLease: a round claims no more options than
// its workers surely start within the claims' lease, so no claim runs out
// before its refresh began (another process would claim and read it too).
func TestNewScheduler_BatchFitsTheLease(t *testing.T) {
	e := start(t, envOptions{})
	sy := New(Options{Catalog: e.Store, Client: e.bsc, Schedule: e.schedule(7), Concurrency: 4,
		OptionTimeout: time.Minute, LockWait: 15 * time.Second})
	tests := []struct {
		name  string
		o     SchedulerOptions
		batch int
	}{
		{"defaults: 4 workers × 2 refreshes of 75 s in a 3 min lease", SchedulerOptions{}, 8},
		{"a larger batch asked is cut to what fits", SchedulerOptions{Batch: 64}, 8},
		{"a smaller batch is kept", SchedulerOptions{Batch: 3}, 3},
		{"a longer lease fits more", SchedulerOptions{Lease: 10 * time.Minute}, 32},
		{"a lease shorter than one refresh: one per worker", SchedulerOptions{Lease: time.Minute, Concurrency: 2}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Syncer = sy
			if got := NewScheduler(tt.o).o.Batch; got != tt.batch {
				t.Fatalf("batch %d, want %d", got, tt.batch)
			}
		})
	}
}

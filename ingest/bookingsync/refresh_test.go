package bookingsync

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/simulators/bookingsim"
)

func intp(v int) *int { return &v }

// TestCapacity_ByStatus: doc 3's statuses mapped to the catalog's capacity.
func TestCapacity_ByStatus(t *testing.T) {
	tests := []struct {
		status    string
		vacancies *int
		want      int
	}{
		{bookingsystem.Freesale, nil, FreesaleCapacity},
		{bookingsystem.Available, intp(12), 12},
		{bookingsystem.Limited, intp(2), 2},
		{bookingsystem.Available, nil, 0},
		{bookingsystem.SoldOut, intp(0), 0},
		{bookingsystem.Closed, intp(5), 0}, // not for sale now, whatever is left
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			if got := Capacity(bookingsystem.Availability{Status: tt.status, Vacancies: tt.vacancies}); got != tt.want {
				t.Fatalf("Capacity = %d, want %d", got, tt.want)
			}
		})
	}
}

// byLocalDay groups availabilities by their local start date in loc.
func byLocalDay(as []catalog.Availability, loc *time.Location) map[string][]catalog.Availability {
	out := map[string][]catalog.Availability{}
	for _, a := range as {
		d := a.Start.In(loc).Format(time.DateOnly)
		out[d] = append(out[d], a)
	}
	return out
}

// TestRefreshProduct_ReplacesOnlyTheWindowInLocalDates: a change
// notification's window is local dates of the product's time zone (doc
// 3: offsets MUST use its time zone); the days of the window get what the
// booking system says now, every other day is kept as it was, and no
// availability is duplicated, even when a local day starts on the
// previous UTC date (Auckland, UTC+13).
func TestRefreshProduct_ReplacesOnlyTheWindowInLocalDates(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{TimeZone: "Pacific/Auckland", ChangeRate: 1, ChangeEvery: time.Hour}})
	sy := e.syncer(nil)
	if _, err := e.sync(t, sy, 6); err != nil {
		t.Fatal(err)
	}
	loc, _ := time.LoadLocation("Pacific/Auckland")
	before := byLocalDay(e.availabilities(t, "S1-P1", "S1-P1-O1"), loc)
	e.clock.add(2 * time.Hour) // every slot's capacity moves
	out, err := sy.RefreshProduct(ctx, sid, "S1-P1", e.clock.today(2), e.clock.today(4))
	if err != nil || len(out.Failures) != 0 || out.Items != 2*2*3 {
		t.Fatalf("refresh: %+v %v", out, err)
	}
	after := byLocalDay(e.availabilities(t, "S1-P1", "S1-P1-O1"), loc)
	read, _, err := e.bsc.Availability(ctx, bookingsystem.Connection{Endpoint: e.url, APIKey: simKey}, bookingsystem.AvailabilityRequest{
		SupplierID: sid, ProductID: "S1-P1", OptionID: "S1-P1-O1", LocalDateStart: e.clock.today(2), LocalDateEnd: e.clock.today(4), AvailabilityType: "START_TIME"})
	if err != nil {
		t.Fatal(err)
	}
	now := map[string]int{}
	for _, a := range read {
		now[bookingsystem.CatalogAvailabilityID(sid, "S1-P1", "S1-P1-O1", a.ID)] = Capacity(a)
	}
	changed := 0
	for day, as := range after {
		if len(as) != 3 {
			t.Fatalf("%s has %d availabilities, want 3 (no duplicates, none lost)", day, len(as))
		}
		inWindow := day >= e.clock.today(2) && day < e.clock.today(4)
		for i, a := range as {
			switch {
			case inWindow && a.Capacity != now[a.ID]:
				t.Errorf("%s %s: capacity %d, the booking system says %d", day, a.ID, a.Capacity, now[a.ID])
			case !inWindow && a != before[day][i]:
				t.Errorf("%s outside the window changed: %+v → %+v", day, before[day][i], a)
			case inWindow && a.Capacity != before[day][i].Capacity:
				changed++
			}
		}
	}
	if changed == 0 {
		t.Fatal("nothing changed in the window: the test shows nothing")
	}
}

// TestRefreshProduct_RejectedItemsAreReportedTheRestApplied: an
// availability the client rejects by a data rule is reported and left
// out; the rest of the option is written.
func TestRefreshProduct_RejectedItemsAreReportedTheRestApplied(t *testing.T) {
	e := start(t, envOptions{})
	e.setRewrite(func(r *http.Request, body any) any {
		if r.URL.Query().Get("optionId") != "S1-P1-O1" {
			return body
		}
		first := true
		return mapAvailabilities(body, func(a map[string]any) {
			if first {
				a["vacancies"] = -1
			}
			first = false
		})
	})
	out, err := e.syncer(nil).RefreshProduct(ctx, sid, "S1-P1", e.clock.today(0), e.clock.today(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Failures) != 1 || !strings.HasPrefix(out.Failures[0], "option S1/S1-P1/S1-P1-O1: availability 0") || !strings.Contains(out.Failures[0], "vacancies_negative") {
		t.Fatalf("failures %q", out.Failures)
	}
	if as := e.availabilities(t, "S1-P1", "S1-P1-O1"); len(as) != 2 {
		t.Fatalf("%d availabilities written, want the 2 valid ones", len(as))
	}
	if as := e.availabilities(t, "S1-P1", "S1-P1-O2"); len(as) != 3 {
		t.Fatalf("the other option: %d availabilities", len(as))
	}
}

// TestRefreshProduct_WholeFailures: a product the booking system does not
// offer (or rejects) fails the request; so does a product list that
// cannot be read.
func TestRefreshProduct_WholeFailures(t *testing.T) {
	e := start(t, envOptions{sim: bookingsim.Config{Break: []string{bookingsim.BreakAvailabilityTyp}}})
	sy := e.syncer(nil)
	tests := []struct {
		name, pid, want string
		fault           faultFunc
	}{
		{"not offered", "S1-P9", "product S1/S1-P9: not offered by the supplier's booking system", nil},
		{"rejected by a data rule", "S1-PX", "product S1/S1-PX: rejected by data rule availability_type", nil},
		{"the products cannot be read", "S1-P1", "product S1/S1-P1: read the booking system's products", func(*http.Request) int { return 500 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.setFault(tt.fault)
			_, err := sy.RefreshProduct(ctx, sid, tt.pid, e.clock.today(0), e.clock.today(1))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRefreshOption_WaitsForAnotherProcessAndReportsBusy: the per-option
// lock keeps two read-modify-writes of one option apart; a refresh that
// cannot get it reports the option busy and writes nothing.
func TestRefreshOption_WaitsForAnotherProcessAndReportsBusy(t *testing.T) {
	e := start(t, envOptions{})
	sch := e.schedule(7)
	sy := e.syncer(sch)
	if _, err := e.sync(t, sy, 1); err != nil {
		t.Fatal(err)
	}
	unlock, err := sch.lock(ctx, Item{sid, "S1-P1", "S1-P1-O1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e.published()
	out, err := sy.RefreshProduct(ctx, sid, "S1-P1", e.clock.today(0), e.clock.today(2))
	if err != nil || len(out.Failures) != 1 || out.Failures[0] != "option S1/S1-P1/S1-P1-O1: "+errBusy.Error() {
		t.Fatalf("%+v %v", out, err)
	}
	if n := e.published(); n != 1 {
		t.Fatalf("published %d records, want only O2's", n)
	}
	unlock()
	out, err = sy.RefreshProduct(ctx, sid, "S1-P1", e.clock.today(0), e.clock.today(2))
	if err != nil || len(out.Failures) != 0 {
		t.Fatalf("after the lock was released: %+v %v", out, err)
	}
}

// TestSameAvailabilities: the write is skipped only for the same set in
// the same order.
func TestSameAvailabilities(t *testing.T) {
	a := catalog.Availability{ID: "a", Start: t0, End: t0.Add(time.Hour), Capacity: 3}
	paris, _ := time.LoadLocation("Europe/Paris")
	withMax := a
	withMax.MaxCapacity = intp(5)
	b := a
	b.ID = "b"
	tests := []struct {
		name string
		x, y []catalog.Availability
		want bool
	}{
		{"both empty", nil, []catalog.Availability{}, true},
		{"same instant in another zone", []catalog.Availability{a}, []catalog.Availability{{ID: "a", Start: t0.In(paris), End: t0.Add(time.Hour).In(paris), Capacity: 3}}, true},
		{"capacity differs", []catalog.Availability{a}, []catalog.Availability{{ID: "a", Start: t0, End: t0.Add(time.Hour), Capacity: 4}}, false},
		{"maxCapacity set on one side", []catalog.Availability{a}, []catalog.Availability{withMax}, false},
		{"order differs", []catalog.Availability{a, b}, []catalog.Availability{b, a}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameAvailabilities(tt.x, tt.y); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

// TestRefreshProduct_SystemAnsweringUTCKeepsTheProductsDays: a booking
// system that sends UTC times (17:00 in Los Angeles is 01:00Z the next
// day) has its availabilities checked and written on the product's local
// dates alike: none is refused as outside the window, none lands on
// another day.
func TestRefreshProduct_SystemAnsweringUTCKeepsTheProductsDays(t *testing.T) {
	const la = "America/Los_Angeles"
	loc, err := time.LoadLocation(la)
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range []string{catalog.ConnectionBookingSystem, catalog.ConnectionOCTO} {
		t.Run(dialect, func(t *testing.T) {
			e := start(t, envOptions{dialect: dialect, sim: bookingsim.Config{TimeZone: la, UTCTimes: true}})
			sy := e.syncer(nil)
			if _, err := e.sync(t, sy, 6); err != nil {
				t.Fatal(err)
			}
			from, to := e.clock.today(2), e.clock.today(4)
			out, err := sy.RefreshProduct(ctx, sid, "S1-P1", from, to)
			if err != nil || len(out.Failures) != 0 || out.Items != 2*2*3 { // options × days × slots
				t.Fatalf("refresh: %+v %v", out, err)
			}
			days := byLocalDay(e.availabilities(t, "S1-P1", "S1-P1-O1"), loc)
			for _, d := range []string{from, e.clock.today(3)} {
				if len(days[d]) != 3 {
					t.Fatalf("%s has %d availabilities, want 3 (9:00, 13:00, 17:00 local)", d, len(days[d]))
				}
			}
		})
	}
}

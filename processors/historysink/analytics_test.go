package historysink

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// analyticsDoc is the analysts' page whose example queries this test runs.
const analyticsDoc = "../../docs/analytics.md"

// docQuery is one ```sql block of the doc, keyed by its "-- name:" line.
type docQuery struct {
	name string
	sql  string
}

var (
	sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")
	nameLine = regexp.MustCompile(`^-- name: ([a-z0-9_]+)\n`)
)

// docQueries parses the example queries out of docs/analytics.md, so that
// the test runs exactly what the doc shows.
func docQueries(t *testing.T) []docQuery {
	t.Helper()
	b, err := os.ReadFile(analyticsDoc)
	if err != nil {
		t.Fatal(err)
	}
	var qs []docQuery
	for _, m := range sqlBlock.FindAllStringSubmatch(string(b), -1) {
		n := nameLine.FindStringSubmatch(m[1])
		if n == nil {
			t.Fatalf("%s: a sql block does not start with a '-- name: ...' line:\n%s", analyticsDoc, m[1])
		}
		qs = append(qs, docQuery{name: n[1], sql: m[1]})
	}
	if len(qs) == 0 {
		t.Fatalf("%s has no sql blocks", analyticsDoc)
	}
	return qs
}

// seedEvents is the known history the doc's queries are checked against:
// two weeks of events dated relative to now (recent), plus events older
// than the queries' 30 days, which every query must leave out.
func seedEvents(t *testing.T) []schemas.Envelope {
	t.Helper()
	var evs []schemas.Envelope
	add := func(typ, key string, at time.Time, data any) { evs = append(evs, ev(t, typ, key, at, data)) }

	// Availability: p1 moves 4 times (13 vacancies, one sell-out, two
	// windows), p3 twice, p2 once; a February change of p1 is out of range.
	w := func(day, hour int) time.Time { return recent(day, hour, 0) }
	avail := func(at time.Time, sup, prod, rate string, start time.Time, old, new int) {
		add(schemas.HistoryAvailabilityChanged, prod+"/"+rate, at, schemas.AvailabilityChanged{
			SupplierID: sup, ProductID: prod, RateID: rate, Start: start, End: start.Add(2 * time.Hour),
			OldVacancies: old, NewVacancies: new, Source: "push"})
	}
	avail(recent(2, 9, 0), "s1", "p1", "r1", w(20, 10), 10, 8)
	avail(recent(3, 9, 0), "s1", "p1", "r1", w(20, 10), 8, 0)
	avail(recent(4, 9, 0), "s1", "p1", "r1", w(20, 10), 0, 2)
	avail(recent(5, 9, 0), "s1", "p1", "r2", w(21, 10), 5, 4)
	avail(recent(5, 10, 0), "s1", "p2", "r3", w(22, 10), 3, 0)
	avail(recent(6, 9, 0), "s2", "p3", "r4", w(23, 10), 20, 18)
	avail(recent(7, 9, 0), "s2", "p3", "r4", w(23, 10), 18, 15)
	avail(time.Now().AddDate(0, 0, -60), "s1", "p1", "r1", w(20, 10), 1, 0) // out of the 30 days

	price := func(at time.Time, old, new float64) {
		add(schemas.HistoryPriceChanged, "p1/r1", at, schemas.PriceChanged{SupplierID: "s1", ProductID: "p1", RateID: "r1",
			Start: w(20, 0), End: w(21, 0), Currency: "EUR", OldRetail: old, NewRetail: new, OldNet: old * 0.8, NewNet: new * 0.8, Source: "changerequest"})
	}
	price(recent(8, 9, 0), 100, 110)
	price(recent(9, 9, 0), 110, 105.5)

	produced := func(at time.Time, sub, typ, id string) {
		add(schemas.HistoryNotificationProduced, sub, at, schemas.NotificationProduced{DeliveryID: id, Subscriber: sub, Type: typ, EntityKey: "p1", Source: "matcher"})
	}
	produced(recent(10, 8, 0), "sub-a", "availability", "d1")
	produced(recent(10, 8, 1), "sub-a", "availability", "d2")
	produced(recent(10, 8, 2), "sub-a", "availability", "d3")
	produced(recent(10, 8, 3), "sub-b", "availability", "d6")
	produced(recent(10, 8, 4), "sub-b", "availability", "d7")
	produced(recent(11, 8, 0), "sub-a", "availability", "d4")
	produced(recent(11, 8, 1), "sub-a", "booking", "d5")
	produced(recent(11, 8, 2), "sub-b", "availability", "d8")
	produced(time.Now().AddDate(0, 0, -90), "sub-a", "availability", "d99") // out of the 30 days

	attempt := func(at time.Time, sub, typ, id string, n, status int, latency int64, outcome string) {
		add(schemas.HistoryDeliveryAttempt, sub, at, schemas.DeliveryAttempt{DeliveryID: id, Subscriber: sub, Type: typ,
			Attempt: n, Status: status, LatencyMs: latency, Outcome: outcome, At: at})
	}
	attempt(recent(10, 8, 0), "sub-a", "availability", "d1", 1, 200, 100, schemas.OutcomeDelivered)
	attempt(recent(10, 8, 1), "sub-a", "availability", "d2", 1, 500, 300, schemas.OutcomeRetry)
	attempt(recent(10, 8, 2), "sub-a", "availability", "d2", 2, 200, 200, schemas.OutcomeDelivered)
	attempt(recent(10, 8, 3), "sub-a", "availability", "d3", 1, 0, 5000, schemas.OutcomeRetry)
	attempt(recent(10, 9, 3), "sub-a", "availability", "d3", 2, 503, 400, schemas.OutcomeFailed)
	add(schemas.HistoryNotificationSuppressed, "sub-a", recent(11, 8, 0), schemas.NotificationSuppressed{DeliveryID: "d4", Subscriber: "sub-a", Type: "availability", Reason: "disableAll", At: recent(11, 8, 0)})
	attempt(recent(11, 8, 1), "sub-a", "booking", "d5", 1, 204, 50, schemas.OutcomeDelivered)
	attempt(recent(10, 8, 3), "sub-b", "availability", "d6", 1, 200, 20, schemas.OutcomeDelivered)
	attempt(recent(10, 8, 4), "sub-b", "availability", "d7", 1, 200, 40, schemas.OutcomeDelivered)
	attempt(recent(11, 8, 2), "sub-b", "availability", "d8", 1, 429, 30, schemas.OutcomeRetry)
	attempt(recent(11, 9, 2), "sub-b", "availability", "d8", 2, 0, 0, schemas.OutcomeDropped)
	attempt(time.Now().AddDate(0, 0, -45), "sub-b", "availability", "d0", 1, 500, 9999, schemas.OutcomeFailed) // out of the 30 days
	// sub-c: one notification, suppressed: no attempt, a success rate of
	// NULL (not nan).
	add(schemas.HistoryNotificationSuppressed, "sub-c", recent(11, 9, 0), schemas.NotificationSuppressed{DeliveryID: "d9", Subscriber: "sub-c", Type: "availability", Reason: "disableAll", At: recent(11, 9, 0)})

	hold := func(at time.Time, ch, id, status string) {
		add(schemas.HistoryHoldStatus, id, at, schemas.HoldStatusChanged{HoldID: id, ChannelID: ch, SupplierID: "s1", ProductID: "p1", Status: status, Quantity: 2})
	}
	booking := func(at time.Time, ch, id, hold, status string) {
		add(schemas.HistoryBookingStatus, id, at, schemas.BookingStatusChanged{BookingID: id, HoldID: hold, ChannelID: ch, SupplierID: "s1", ProductID: "p1", Status: status, Quantity: 2})
	}
	hold(recent(12, 9, 0), "ch1", "h1", "ACTIVE")
	booking(recent(12, 9, 5), "ch1", "b1", "h1", "CONFIRMED")
	hold(recent(12, 10, 0), "ch1", "h2", "ACTIVE")
	booking(recent(12, 10, 5), "ch1", "b2", "h2", "CONFIRMED")
	booking(recent(13, 10, 5), "ch1", "b2", "h2", "CANCELLED")
	hold(recent(12, 11, 0), "ch1", "h3", "ACTIVE")
	hold(recent(12, 11, 30), "ch1", "h3", "RELEASED")
	hold(recent(14, 9, 0), "ch2", "h4", "ACTIVE")
	booking(recent(14, 9, 5), "ch2", "b3", "h4", "OPEN")
	hold(recent(14, 10, 0), "ch3", "h5", "ACTIVE") // holds, no booking: a cancellation rate of NULL

	report := func(at time.Time, id int64, system string, errs, items int) {
		r := schemas.SyncReport{ID: id, ExternalSystemID: system, Inserted: at, ErrorCount: errs, Items: items}
		for range errs {
			r.ErrorReport = append(r.ErrorReport, json.RawMessage(`{"message":"product missing"}`))
		}
		add(schemas.HistorySyncReport, system, at, r)
	}
	report(recent(2, 3, 0), 1, "bs-1", 0, 100)
	report(recent(4, 3, 0), 2, "bs-1", 2, 100)
	report(recent(3, 3, 0), 3, "bs-2", 0, 10)
	report(recent(10, 3, 0), 4, "bs-1", 5, 50)
	report(recent(11, 3, 0), 5, "bs-3", 0, 0) // read nothing: an error rate of NULL

	run := func(at time.Time, id, sup, status string) {
		add(schemas.HistoryChangeRequestRun, sup, at, schemas.ChangeRequestRun{ID: id, SupplierID: sup, Mode: "standard", Status: status, Inserted: recent(15, 8, 0)})
	}
	run(recent(15, 8, 0), "cr1", "s1", "WAITING")
	run(recent(15, 8, 1), "cr1", "s1", "WORKING")
	run(recent(15, 8, 2), "cr1", "s1", "SUCCEEDED")
	run(recent(15, 9, 0), "cr2", "s1", "WAITING")
	run(recent(15, 9, 1), "cr2", "s1", "WORKING")
	run(recent(15, 9, 2), "cr2", "s1", "FAILED")
	run(recent(15, 10, 0), "cr3", "s2", "WAITING")

	call := func(at time.Time, system, sup, op string, status int, latency int64, outcome string) {
		add(schemas.HistoryPartnerCall, sup, at, schemas.PartnerCall{System: system, SupplierID: sup, Operation: op, Status: status, LatencyMs: latency, Outcome: outcome})
	}
	call(recent(16, 9, 0), schemas.SystemPartner, "s1", "availabilities", 200, 100, schemas.CallOK)
	call(recent(16, 9, 1), schemas.SystemPartner, "s1", "availabilities", 200, 200, schemas.CallOK)
	call(recent(16, 9, 2), schemas.SystemPartner, "s1", "availabilities", 200, 300, schemas.CallOK)
	call(recent(16, 9, 3), schemas.SystemPartner, "s1", "availabilities", 0, 2000, schemas.CallTimeout)
	call(recent(16, 9, 4), schemas.SystemBookingSystem, "s2", "createBooking", 500, 150, schemas.CallError)
	return evs
}

// wantDoc is what each of the doc's queries must return for seedEvents.
var wantDoc = map[string][][]string{
	"availability_volatility": {
		{"s1", "p1", "4", "13", "1", "2"},
		{"s2", "p3", "2", "5", "0", "1"},
		{"s1", "p2", "1", "3", "1", "1"},
	},
	"price_changes": {
		{"s1", "p1", "2", "1", "1"},
	},
	"notifications_produced_per_day": {
		{"2026-03-10", "sub-a", "availability", "3"},
		{"2026-03-10", "sub-b", "availability", "2"},
		{"2026-03-11", "sub-a", "availability", "1"},
		{"2026-03-11", "sub-a", "booking", "1"},
		{"2026-03-11", "sub-b", "availability", "1"},
	},
	// sub-a/availability: d1, d2 delivered, d3 failed, d4 suppressed;
	// sub-b: d6, d7 delivered, d8 retried then dropped (not a failure).
	"notification_volume_and_success_rate": {
		{"sub-a", "Acme Travel", "availability", "4", "2", "1", "1", "5", "0.6667"},
		{"sub-a", "Acme Travel", "booking", "1", "1", "0", "0", "1", "1"},
		{"sub-b", "Bergen Reisen", "availability", "3", "2", "0", "1", "3", "1"},
		{"sub-c", "", "availability", "1", "0", "0", "1", "0", "NULL"}, // no principal record: no name
	},
	// quantileExact(0.95) of n sorted values is the one at index
	// floor(0.95 n): [100 200 300 400 5000] -> 5000, [20 30 40] -> 40.
	"delivery_latency_p95": {
		{"sub-a", "availability", "5", "5000", "5000"},
		{"sub-a", "booking", "1", "50", "50"},
		{"sub-b", "availability", "3", "40", "40"},
	},
	"bookings_and_cancellations_per_channel": {
		{"ch1", "Acme shop", "3", "2", "1", "0.5"},
		{"ch2", "Bergen web", "1", "1", "0", "0"},
		{"ch3", "", "1", "0", "0", "NULL"},
	},
	"sync_error_trend": {
		{"2026-03-02", "bs-1", "2", "1", "2", "200", "0.01"},
		{"2026-03-02", "bs-2", "1", "0", "0", "10", "0"},
		{"2026-03-09", "bs-1", "1", "1", "5", "50", "0.1"},
		{"2026-03-09", "bs-3", "1", "0", "0", "0", "NULL"},
	},
	"change_request_outcomes": {
		{"s1", "FAILED", "1"},
		{"s1", "SUCCEEDED", "1"},
		{"s2", "WAITING", "1"},
	},
	"partner_call_outcomes": {
		{"bookingsystem", "createBooking", "1", "1", "150"},
		{"partner", "availabilities", "4", "1", "2000"},
	},
}

// TestAnalyticsDoc_QueriesReturnExpectedNumbers loads seedEvents through
// the sink into ClickHouse, runs every query of docs/analytics.md exactly as
// written, and checks the numbers; then publishes every event a second time
// (a replay) and checks that the numbers did not move.
func TestAnalyticsDoc_QueriesReturnExpectedNumbers(t *testing.T) {
	qs := docQueries(t)
	var names []string
	for _, q := range qs {
		names = append(names, q.name)
		if _, ok := wantDoc[q.name]; !ok {
			t.Errorf("doc query %q has no expected result in wantDoc: add one", q.name)
		}
	}
	for name := range wantDoc {
		if !slices.Contains(names, name) {
			t.Errorf("wantDoc has %q but docs/analytics.md has no such query", name)
		}
	}

	e := newEnv(t)
	seed := seedEvents(t)
	run := runSink(t, e.brokers, e.conn, Options{})
	loadNames(t, e)

	rows := 0
	check := func(t *testing.T) {
		for _, q := range qs {
			t.Run(q.name, func(t *testing.T) {
				got := query(t, e.conn, q.sql)
				if len(got) == 0 {
					t.Errorf("%s returned no row", q.name)
				}
				rows += len(got)
				for _, r := range got {
					for _, c := range r {
						if l := strings.ToLower(c); strings.Contains(l, "nan") || strings.Contains(l, "inf") {
							t.Errorf("%s returned %q in %v", q.name, c, r)
						}
					}
				}
				if want := recentDates(wantDoc[q.name]); joinRows(got) != joinRows(want) {
					t.Errorf("%s returned\n%swant\n%s", q.name, joinRows(got), joinRows(want))
				}
			})
		}
	}

	e.publish(t, seed)
	waitCommitted(t, e.brokers, GroupID, e.topic, 30*time.Second)
	t.Run("first load", check)

	e.publish(t, seed) // the same envelopes, ids included: a replay
	waitCommitted(t, e.brokers, GroupID, e.topic, 30*time.Second)
	if got := counterValue(t, run.reg, "switchback_history_rows_inserted_total", nil); got != float64(2*len(seed)) {
		t.Fatalf("rows inserted = %v, want %d (every event twice)", got, 2*len(seed))
	}
	t.Run("after replay", check)
	t.Logf("%d queries of docs/analytics.md run twice (first load, replay): %d rows returned, none empty, no nan or inf", len(qs), rows)
}

// mondayWeeksAgo is the Monday, 00:00 UTC, three to four weeks before now:
// recent(2, ...) falls on it, as March 2 2026 (the original dates of the
// seed) is a Monday, so weeks group as they did.
func mondayWeeksAgo() time.Time {
	d := time.Now().UTC().AddDate(0, 0, -21).Truncate(24 * time.Hour)
	for d.Weekday() != time.Monday {
		d = d.AddDate(0, 0, -1)
	}
	return d
}

// recent is day "day" of the seed's two weeks (2 to 16) at hour:minute:
// between 27 and 7 days before now, inside the queries' 30 days.
func recent(day, hour, minute int) time.Time {
	return mondayWeeksAgo().AddDate(0, 0, day-2).Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
}

var seedDate = regexp.MustCompile(`^2026-03-(\d\d)$`)

// recentDates maps the expectations' dates, written as days of March 2026,
// to the days recent gives them.
func recentDates(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
		for j, c := range r {
			if m := seedDate.FindStringSubmatch(c); m != nil {
				day, _ := strconv.Atoi(m[1])
				out[i][j] = recent(day, 0, 0).Format("2006-01-02")
			}
		}
	}
	return out
}

// loadNames publishes the principals and channels the doc's joins name
// (sub-c and ch3 have none) and runs the names loader until they are in
// ClickHouse.
func loadNames(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := stream.EnsureTopics(ctx, e.brokers, []schemas.Topic{
		{Name: schemas.TopicPrincipals, Partitions: 1, Compacted: true}, {Name: schemas.TopicChannels, Partitions: 1, Compacted: true}}); err != nil {
		t.Fatal(err)
	}
	publishNames(t, e.brokers,
		envelopeMsg(t, schemas.TopicPrincipals, principalEnv(t, "principal.created", "sub-a", "reseller", "Acme Travel", "ch1", 1, false)),
		envelopeMsg(t, schemas.TopicPrincipals, principalEnv(t, "principal.created", "sub-b", "reseller", "Bergen Reisen", "ch2", 1, false)),
		envelopeMsg(t, schemas.TopicChannels, channelEnv(t, "ch1", "Acme shop", "Acme Travel Ltd", 1, false)),
		envelopeMsg(t, schemas.TopicChannels, channelEnv(t, "ch2", "Bergen web", "Bergen Reisen AS", 1, false)),
	)
	rctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- NewNames(NamesOptions{Brokers: e.brokers, Conn: e.conn, FlushInterval: 50 * time.Millisecond}).Run(rctx)
	}()
	t.Cleanup(func() { stop(); <-done })
	testharness.Eventually(t, 30*time.Second, "principals and channels loaded", func() bool {
		return query(t, e.conn, "SELECT count() FROM principals FINAL")[0][0] == "2" && query(t, e.conn, "SELECT count() FROM channels FINAL")[0][0] == "2"
	})
}

var docColumn = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")

// TestAnalyticsDoc_ListsEveryColumn keeps the doc's column tables in step
// with the DDL: every column of every history table is documented under its
// table's heading (or in the shared columns table).
func TestAnalyticsDoc_ListsEveryColumn(t *testing.T) {
	b, err := os.ReadFile(analyticsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	sections := map[string]map[string]bool{}
	var shared map[string]bool
	for i, part := range strings.Split(doc, "\n### ") {
		cols := map[string]bool{}
		for _, m := range docColumn.FindAllStringSubmatch(part, -1) {
			cols[m[1]] = true
		}
		if i == 0 {
			shared = cols
			continue
		}
		title, _, _ := strings.Cut(part, "\n")
		sections[strings.TrimSpace(title)] = cols
	}
	conn := openClickHouse(t, testharness.ClickHouse(t))
	for _, table := range append(Tables(), NameTables()...) {
		t.Run(table, func(t *testing.T) {
			documented, ok := sections[table]
			if !ok {
				t.Fatalf("docs/analytics.md has no '### %s' section", table)
			}
			for _, row := range query(t, conn, "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = ? ORDER BY name", table) {
				col := row[0]
				if !documented[col] && !shared[col] {
					t.Errorf("column %s.%s is not documented", table, col)
				}
			}
		})
	}
}

package historyapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// attemptRow is one history_deliveries row with its attempt and latency.
type attemptRow struct {
	id, subscriber, typ, outcome string
	attempt                      int
	latency                      int
	at                           time.Time
}

func insertAttempts(t *testing.T, conn driver.Conn, rows ...attemptRow) {
	t.Helper()
	b, err := conn.PrepareBatch(context.Background(), "INSERT INTO history_deliveries (event_id, occurred_at, occurred_ms, delivery_id, subscriber, type, attempt, status, latency_ms, outcome, error)")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		status := 200
		if r.outcome != "delivered" {
			status = 500
		}
		if r.attempt == 0 {
			status = 0
		}
		ev := "ev-" + r.id + "-" + itoa(i)
		if err := b.Append(ev, r.at, r.at.UnixMilli(), r.id, r.subscriber, r.typ, uint16(r.attempt), uint16(status), uint32(r.latency), r.outcome, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
}

type statsBody struct {
	From        time.Time    `json:"from"`
	To          time.Time    `json:"to"`
	StepSeconds int          `json:"stepSeconds"`
	Points      []StatsPoint `json:"points"`
	Totals      Counts       `json:"totals"`
}

func TestStats_CountsEachMinuteByOutcomeWithLatencyPercentilesOfTheCallerOnly(t *testing.T) {
	conn := openClickHouse(t)
	e := serve(t, conn, nil)
	a, b := e.ids[resellerA], e.ids[resellerB]
	m := func(minute, sec int) time.Time { return time.Date(2026, 3, 10, 12, minute, sec, 0, time.UTC) }
	var rows []attemptRow
	// Minute 0: ten delivered attempts of 10..100 ms, one retry of 1000 ms.
	for i := 1; i <= 10; i++ {
		rows = append(rows, attemptRow{"d" + itoa(i), a, "availability", "delivered", 1, i * 10, m(0, i)})
	}
	rows = append(rows,
		attemptRow{"r1", a, "availability", "retry", 1, 1000, m(0, 30)},
		// Minute 2: one failed attempt, one suppressed and one dropped (no
		// POST: not in the latency).
		attemptRow{"f1", a, "booking", "failed", 11, 300, m(2, 5)},
		attemptRow{"s1", a, "booking", "suppressed", 0, 0, m(2, 6)},
		attemptRow{"x1", a, "booking", "dropped", 0, 0, m(2, 7)},
		// Another subscriber's rows in the same minutes, and one of the
		// caller's outside the range.
		attemptRow{"o1", b, "availability", "delivered", 1, 5000, m(0, 1)},
		attemptRow{"o2", b, "booking", "failed", 1, 5000, m(2, 1)},
		attemptRow{"late", a, "availability", "delivered", 1, 9999, m(5, 0)},
	)
	insertAttempts(t, conn, rows...)
	// A replayed history event (same event id): counted once.
	insertAttempts(t, conn, rows[0])

	status, raw := e.get(t, resellerA, "/registry/v1.1/deliveries/stats?from=2026-03-10T12:00:00Z&to=2026-03-10T12:04:00Z")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, raw)
	}
	var got statsBody
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.StepSeconds != 60 || len(got.Points) != 4 || !got.Points[0].At.Equal(m(0, 0)) || !got.Points[3].At.Equal(m(3, 0)) {
		t.Fatalf("step %d, %d points from %v: want 60 s, 4 points from 12:00", got.StepSeconds, len(got.Points), got.Points)
	}
	p0 := got.Points[0]
	if p0.Delivered != 10 || p0.Retry != 1 || p0.Attempts != 11 || p0.Failed+p0.Suppressed+p0.Dropped != 0 {
		t.Errorf("minute 0 counts = %+v", p0.Counts)
	}
	// quantileTiming is exact below 30 s: the median of 10..100 and 1000.
	if p0.Latency == nil || p0.Latency.P50 != 60 || p0.Latency.P99 != 1000 {
		t.Errorf("minute 0 latency = %+v, want p50 60, p99 1000", p0.Latency)
	}
	if p1 := got.Points[1]; p1.Counts != (Counts{}) {
		t.Errorf("empty minute = %+v, want zeros and no latency", p1.Counts)
	}
	p2 := got.Points[2]
	if p2.Failed != 1 || p2.Suppressed != 1 || p2.Dropped != 1 || p2.Attempts != 1 || p2.Latency == nil || p2.Latency.P50 != 300 {
		t.Errorf("minute 2 = %+v latency %+v", p2.Counts, p2.Latency)
	}
	tot := got.Totals
	if tot.Delivered != 10 || tot.Retry != 1 || tot.Failed != 1 || tot.Suppressed != 1 || tot.Dropped != 1 || tot.Attempts != 12 ||
		tot.Latency == nil || tot.Latency.P99 != 1000 {
		t.Errorf("totals = %+v latency %+v", tot, tot.Latency)
	}

	// By type.
	_, raw = e.get(t, resellerA, "/registry/v1.1/deliveries/stats?type=booking&from=2026-03-10T12:00:00Z&to=2026-03-10T12:04:00Z")
	var booking statsBody
	if err := json.Unmarshal(raw, &booking); err != nil {
		t.Fatal(err)
	}
	if booking.Totals.Failed != 1 || booking.Totals.Delivered != 0 {
		t.Errorf("booking totals = %+v", booking.Totals)
	}
}

func TestStats_RangeDefaultsToTheLastHourInWholeMinutesAndIsBounded(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 30, 20, 0, time.UTC)
	tests := []struct {
		name      string
		query     string
		wantFrom  time.Time
		wantTo    time.Time
		wantField string
	}{
		{"default: the last hour to the end of this minute", "", time.Date(2026, 3, 10, 11, 30, 0, 0, time.UTC), time.Date(2026, 3, 10, 12, 31, 0, 0, time.UTC), ""},
		{"from and to widened to whole minutes", "from=2026-03-10T10:00:30Z&to=2026-03-10T10:10:01Z", time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 10, 10, 11, 0, 0, time.UTC), ""},
		{"from alone ends now", "from=2026-03-10T12:00:00Z", time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 10, 12, 31, 0, 0, time.UTC), ""},
		{"a whole day", "from=2026-03-09T12:00:00Z&to=2026-03-10T12:00:00Z", time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), ""},
		{"more than a day", "from=2026-03-09T11:59:00Z&to=2026-03-10T12:00:00Z", time.Time{}, time.Time{}, "from"},
		{"to before from", "from=2026-03-10T12:00:00Z&to=2026-03-10T11:00:00Z", time.Time{}, time.Time{}, "to"},
		{"not a time", "from=yesterday", time.Time{}, time.Time{}, "from"},
		{"unknown type", "type=weather", time.Time{}, time.Time{}, "type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parseStatsFilter(argsOf(tt.query), now)
			if tt.wantField != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantField) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !f.from.Equal(tt.wantFrom) || !f.to.Equal(tt.wantTo) {
				t.Fatalf("range %v .. %v, want %v .. %v", f.from, f.to, tt.wantFrom, tt.wantTo)
			}
		})
	}
}

func TestAutoDisables_ListsTheCallersOwnNewestFirst(t *testing.T) {
	conn := openClickHouse(t)
	e := serve(t, conn, nil)
	a, b := e.ids[resellerA], e.ids[resellerB]
	ins, err := conn.PrepareBatch(context.Background(), "INSERT INTO history_events (event_id, type, key, occurred_at, occurred_ms, source, payload)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id, typ, key string
		at           time.Time
		payload      string
	}{
		{"a1", schemas.HistorySubscriberAutoDisabled, a, at(1), `{"subscriber":"` + a + `","backlog":10000,"limit":10000,"reason":"backlog bound reached while failing","at":"2026-03-10T12:01:00Z"}`},
		{"a2", schemas.HistorySubscriberAutoDisabled, a, at(9), `{"reason":"second episode","backlog":12000,"limit":10000}`},
		{"b1", schemas.HistorySubscriberAutoDisabled, b, at(5), `{"reason":"not yours","backlog":1,"limit":1}`},
		{"x1", "something.else", a, at(7), `{"reason":"not an auto-disable"}`},
	} {
		if err := ins.Append(r.id, r.typ, r.key, r.at, r.at.UnixMilli(), "dispatcher", r.payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := ins.Send(); err != nil {
		t.Fatal(err)
	}
	status, raw := e.get(t, resellerA, "/registry/v1.1/deliveries/auto-disables")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, raw)
	}
	var got struct {
		Items []AutoDisable `json:"items"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := []AutoDisable{
		{At: at(9), Reason: "second episode", Backlog: 12000, Limit: 10000},
		{At: at(1), Reason: "backlog bound reached while failing", Backlog: 10000, Limit: 10000},
	}
	if len(got.Items) != len(want) || got.Items[0] != want[0] || got.Items[1] != want[1] {
		t.Fatalf("items = %+v, want %+v", got.Items, want)
	}
	if status, raw := e.get(t, resellerA, "/registry/v1.1/deliveries/auto-disables?limit=1"); status != 200 || strings.Count(string(raw), `"reason"`) != 1 {
		t.Errorf("limit=1: %d %s", status, raw)
	}
	if _, raw := e.get(t, resellerB, "/registry/v1.1/deliveries/auto-disables"); strings.Count(string(raw), `"reason"`) != 1 || !strings.Contains(string(raw), "not yours") {
		t.Errorf("reseller B sees %s, want its one event", raw)
	}
	// A subscriber never disabled gets an empty list, not null (a database
	// of its own).
	empty := serve(t, openClickHouse(t), nil)
	if _, raw := empty.get(t, resellerA, "/registry/v1.1/deliveries/auto-disables"); !strings.Contains(string(raw), `"items":[]`) {
		t.Errorf("never disabled: %s", raw)
	}
}

func TestConnections_SummarisesTheLastDayOfOwnedSuppliersCalls(t *testing.T) {
	conn := openClickHouse(t)
	now := time.Now().UTC().Truncate(time.Second)
	e := serve(t, conn, func(ids map[cred]string) Ownership {
		return ownership{owned: map[string][]string{ids[operator]: {"s1", "s-quiet"}}}
	})
	ins, err := conn.PrepareBatch(context.Background(), "INSERT INTO history_partner_calls (event_id, occurred_at, occurred_ms, system, supplier_id, operation, status, latency_ms, outcome, error)")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		id, sup, op, outcome, errText string
		status, latency               int
		at                            time.Time
	}{
		{"c0", "s1", "availabilities", "ok", "", 200, 900, now.Add(-30 * time.Hour)}, // older than a day
		{"c1", "s1", "availabilities", "ok", "", 200, 40, now.Add(-3 * time.Hour)},
		{"c2", "s1", "createHold", "timeout", "partner call: timeout", 0, 10000, now.Add(-2 * time.Hour)},
		{"c3", "s1", "availabilities", "error", "partner call: server error (status 503)", 503, 80, now.Add(-90 * time.Minute)},
		{"c4", "s1", "availabilities", "ok", "", 200, 35, now.Add(-time.Hour)},
		{"c5", "s2", "availabilities", "error", "other operator's", 500, 1, now.Add(-time.Minute)},
	} {
		if err := ins.Append(r.id, r.at, r.at.UnixMilli(), schemas.SystemPartner, r.sup, r.op, uint16(r.status), uint32(r.latency), r.outcome, r.errText); err != nil {
			t.Fatal(err)
		}
	}
	if err := ins.Send(); err != nil {
		t.Fatal(err)
	}

	var got struct {
		Connection Connection `json:"connection"`
	}
	status, raw := e.get(t, operator, "/operator/v2/history/connections?supplierId=s1")
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, raw)
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Connection
	if c.SupplierID != "s1" || c.Calls != 4 || c.OK != 2 || c.Errors != 1 || c.Timeouts != 1 || c.BreakerOpen != 0 {
		t.Errorf("counts = %+v", c)
	}
	if c.Last == nil || c.Last.Outcome != "ok" || c.Last.LatencyMs != 35 || !c.Last.At.Equal(now.Add(-time.Hour)) {
		t.Errorf("last = %+v", c.Last)
	}
	if c.LastOKAt == nil || !c.LastOKAt.Equal(now.Add(-time.Hour)) {
		t.Errorf("lastOkAt = %v", c.LastOKAt)
	}
	if f := c.LastFailure; f == nil || f.Status != 503 || f.Operation != "availabilities" || !strings.Contains(f.Error, "503") {
		t.Errorf("lastFailure = %+v", f)
	}

	// An owned supplier without calls: zeros and nulls.
	_, raw = e.get(t, operator, "/operator/v2/history/connections?supplierId=s-quiet")
	if !strings.Contains(string(raw), `"calls":0`) || !strings.Contains(string(raw), `"last":null`) || !strings.Contains(string(raw), `"lastFailure":null`) {
		t.Errorf("quiet supplier: %s", raw)
	}
	// Another operator's supplier, and a reseller: 403.
	for _, tc := range []struct {
		who  cred
		path string
	}{{operator, "?supplierId=s2"}, {resellerA, "?supplierId=s1"}} {
		if status, raw := e.get(t, tc.who, "/operator/v2/history/connections"+tc.path); status != http.StatusForbidden {
			t.Errorf("%s %s: %d %s, want 403", tc.who.Key, tc.path, status, raw)
		}
	}
	if status, raw := e.get(t, operator, "/operator/v2/history/connections"); status != http.StatusBadRequest || querytest.DecodeError(t, raw).Data["field"] != "supplierId" {
		t.Errorf("no supplierId: %d %s", status, raw)
	}
}

func TestDeliveries_DeliveryIdListsOneDeliverysAttempts(t *testing.T) {
	conn := openClickHouse(t)
	e := serve(t, conn, nil)
	a, b := e.ids[resellerA], e.ids[resellerB]
	insertAttempts(t, conn,
		attemptRow{"x", a, "rate", "retry", 1, 500, at(1)},
		attemptRow{"x", a, "rate", "retry", 2, 400, at(2)},
		attemptRow{"x", a, "rate", "delivered", 3, 30, at(3)},
		attemptRow{"y", a, "rate", "delivered", 1, 30, at(4)},
		// Another subscriber's row of the same id: never shown.
		attemptRow{"x", b, "rate", "delivered", 1, 30, at(5)},
	)
	tests := []struct {
		query, want string
		status      int
	}{
		{"?deliveryId=x", "3 2 1", 200},
		{"?deliveryId=nope", "", 200},
		{"?deliveryId=" + strings.Repeat("z", 129), "", 400},
		{"?deliveryId=a%20b", "", 400},
	}
	for _, tt := range tests {
		status, raw := e.get(t, resellerA, "/registry/v1.1/deliveries"+tt.query)
		if status != tt.status {
			t.Fatalf("%s: status %d %s", tt.query, status, raw)
		}
		if status != 200 {
			if querytest.DecodeError(t, raw).Data["field"] != "deliveryId" {
				t.Errorf("%s: %s does not name deliveryId", tt.query, raw)
			}
			continue
		}
		var got listBody[Delivery]
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		var attempts []string
		for _, d := range got.Items {
			attempts = append(attempts, itoa(d.Attempt))
		}
		if strings.Join(attempts, " ") != tt.want {
			t.Errorf("%s: attempts %v, want %s", tt.query, attempts, tt.want)
		}
	}
}

func TestConsoleRoutes_ParkedWithoutClickHouseAfterValidation(t *testing.T) {
	owns := func(ids map[cred]string) Ownership {
		return ownership{owned: map[string][]string{ids[operator]: {"s1"}}}
	}
	tests := []struct {
		name       string
		who        cred
		path       string
		wantStatus int
		wantField  string
	}{
		{"stats parked", resellerA, "/registry/v1.1/deliveries/stats", 503, ""},
		{"stats validated first", resellerA, "/registry/v1.1/deliveries/stats?type=weather", 400, "type"},
		{"auto-disables parked", resellerA, "/registry/v1.1/deliveries/auto-disables", 503, ""},
		{"auto-disables limit", resellerA, "/registry/v1.1/deliveries/auto-disables?limit=101", 400, "limit"},
		{"connections parked", operator, "/operator/v2/history/connections?supplierId=s1", 503, ""},
		{"stats: operators may not", operator, "/registry/v1.1/deliveries/stats", 403, ""},
		{"connections: resellers may not", resellerA, "/operator/v2/history/connections?supplierId=s1", 403, ""},
	}
	e := serve(t, nil, owns)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, raw := e.get(t, tt.who, tt.path)
			if status != tt.wantStatus || querytest.DecodeError(t, raw).Data["field"] != tt.wantField {
				t.Fatalf("= %d %s, want %d naming %q", status, raw, tt.wantStatus, tt.wantField)
			}
		})
	}
}

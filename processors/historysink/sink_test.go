package historysink

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// TestSink_EveryTableWrittenAndReadBack publishes one event of every kind
// and reads every table back, column by column.
func TestSink_EveryTableWrittenAndReadBack(t *testing.T) {
	e := newEnv(t)
	at := time.Date(2026, 3, 31, 23, 59, 59, 123_000_000, time.UTC)
	win := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	events := []struct {
		typ  string
		data any
	}{
		{schemas.HistoryAvailabilityChanged, schemas.AvailabilityChanged{SupplierID: "s1", ProductID: "p1", RateID: "r1", Start: win, End: win.Add(time.Hour), OldVacancies: 5, NewVacancies: 0, OldStatus: "LIMITED", NewStatus: "SOLD_OUT", Source: "push"}},
		{schemas.HistoryPriceChanged, schemas.PriceChanged{SupplierID: "s1", ProductID: "p1", RateID: "r1", PriceID: "adult", Start: win, End: win.Add(24 * time.Hour), Currency: "EUR", OldRetail: 12.35, NewRetail: 13.1, OldNet: 10, NewNet: 10.4825, Source: "changerequest"}},
		{schemas.HistoryNotificationProduced, schemas.NotificationProduced{DeliveryID: "d1", Subscriber: "sub1", Type: "availability", EntityKey: "p1", RuleID: "rule1", Source: "matcher"}},
		{schemas.HistoryDeliveryAttempt, schemas.DeliveryAttempt{DeliveryID: "d1", Subscriber: "sub1", Type: "availability", Attempt: 2, Status: 503, LatencyMs: 812, Outcome: schemas.OutcomeRetry, Error: "503 Service Unavailable", At: at}},
		{schemas.HistoryNotificationSuppressed, schemas.NotificationSuppressed{DeliveryID: "d2", Subscriber: "sub1", Type: "booking", Reason: "disableAll", At: at, Notification: json.RawMessage(`{"id":"d2","subscriber":"sub1"}`)}},
		{schemas.HistoryHoldStatus, schemas.HoldStatusChanged{HoldID: "h1", ChannelID: "ch1", SupplierID: "s1", ProductID: "p1", RateID: "r1", Status: "ACTIVE", Quantity: 3, ExpiresAt: win}},
		{schemas.HistoryBookingStatus, schemas.BookingStatusChanged{BookingID: "b1", HoldID: "h1", ChannelID: "ch1", SupplierID: "s1", ProductID: "p1", RateID: "r1", Status: "CANCELLED", PreviousStatus: "CONFIRMED", ResellerReference: "R-1", Quantity: 3, StartTime: win}},
		{schemas.HistoryChangeRequestRun, schemas.ChangeRequestRun{ID: "cr1", SupplierID: "s1", ProductID: "p1", Mode: "price-schedule", Status: "SUCCEEDED", Inserted: win, Began: win.Add(time.Minute), Finished: win.Add(3 * time.Minute)}},
		{schemas.HistorySyncReport, schemas.SyncReport{ID: 42, ExternalSystemID: "bs-1", SupplierID: "s1", Inserted: win, ErrorCount: 1, Items: 120, ErrorReport: []json.RawMessage{json.RawMessage(`{"productId":"p9","message":"missing"}`)}}},
		{schemas.HistoryPartnerCall, schemas.PartnerCall{System: schemas.SystemPartner, SupplierID: "s1", Operation: "createHold", Status: 0, LatencyMs: 10000, Outcome: schemas.CallTimeout, Error: "deadline exceeded"}},
	}
	var envs []schemas.Envelope
	for _, x := range events {
		envs = append(envs, ev(t, x.typ, "k", at, x.data))
	}
	e.publish(t, envs)
	runSink(t, e.brokers, e.conn, Options{})
	waitCommitted(t, e.brokers, GroupID, e.topic, 30*time.Second)

	id := func(i int) string { return envs[i].ID }
	occurred, ms := "2026-03-31 23:59:59", strconv.FormatInt(at.UnixMilli(), 10)
	tests := []struct {
		table string
		cols  string
		want  [][]string
	}{
		{TableAvailability, "*", [][]string{{id(0), occurred, ms, "s1", "p1", "r1", "2026-04-02 10:00:00", "2026-04-02 11:00:00", "5", "0", "LIMITED", "SOLD_OUT", "push"}}},
		{TablePrices, "*", [][]string{{id(1), occurred, ms, "s1", "p1", "r1", "adult", "2026-04-02 10:00:00", "2026-04-03 10:00:00", "EUR", "12.35", "13.1", "10", "10.4825", "changerequest"}}},
		{TableNotifications, "*", [][]string{{id(2), occurred, ms, "d1", "sub1", "availability", "p1", "rule1", "matcher"}}},
		{TableDeliveries, "*", [][]string{
			{id(3), occurred, ms, "d1", "sub1", "availability", "2", "503", "812", "retry", "503 Service Unavailable", ""},
			{id(4), occurred, ms, "d2", "sub1", "booking", "0", "0", "0", "suppressed", "disableAll", `{"id":"d2","subscriber":"sub1"}`},
		}},
		{TableBookings, "*", [][]string{
			{id(5), occurred, ms, "hold", "", "h1", "ch1", "s1", "p1", "r1", "ACTIVE", "", "", "3", "NULL", "2026-04-02 10:00:00"},
			{id(6), occurred, ms, "booking", "b1", "h1", "ch1", "s1", "p1", "r1", "CANCELLED", "CONFIRMED", "R-1", "3", "2026-04-02 10:00:00", "NULL"},
		}},
		{TableChangeRequests, "*", [][]string{{id(7), occurred, ms, "cr1", "s1", "p1", "price-schedule", "SUCCEEDED", "2026-04-02 10:00:00", "2026-04-02 10:01:00", "2026-04-02 10:03:00", ""}}},
		{TableSyncReports, "*", [][]string{{id(8), occurred, ms, "42", "bs-1", "s1", "2026-04-02 10:00:00", "1", "120", `[{"productId":"p9","message":"missing"}]`}}},
		{TablePartnerCalls, "*", [][]string{{id(9), occurred, ms, "partner", "s1", "createHold", "0", "10000", "timeout", "deadline exceeded"}}},
		{TableEvents, "count()", [][]string{{"0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			q := "SELECT " + tt.cols + " FROM " + tt.table + " FINAL"
			if tt.cols == "*" {
				q += " ORDER BY event_id"
			}
			got := query(t, e.conn, q)
			if joinRows(got) != joinRows(sortRows(tt.want)) {
				t.Errorf("%s\n got %s\nwant %s", tt.table, joinRows(got), joinRows(sortRows(tt.want)))
			}
		})
	}
}

// sortRows orders rows by their first column, the event id (ORDER BY
// event_id).
func sortRows(rows [][]string) [][]string {
	out := append([][]string(nil), rows...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j][0] < out[j-1][0]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestSink_UnroutableRecordsLandInHistoryEvents: nothing the topic holds is
// dropped, whatever it is.
func TestSink_UnroutableRecordsLandInHistoryEvents(t *testing.T) {
	e := newEnv(t)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	unknown := ev(t, "catalog.renamed", "s1", at, map[string]string{"name": "x"})
	badPayload := schemas.Envelope{ID: "bad-1", Type: schemas.HistoryDeliveryAttempt, Key: "sub1", Time: at, Data: json.RawMessage(`{"attempt":"two"}`)}
	noData := schemas.Envelope{ID: "bad-2", Type: schemas.HistoryPartnerCall, Key: "s1", Time: at}
	e.publish(t, []schemas.Envelope{unknown, badPayload, noData}, []byte("not json at all"))
	run := runSink(t, e.brokers, e.conn, Options{})
	waitCommitted(t, e.brokers, GroupID, e.topic, 30*time.Second)

	got := query(t, e.conn, "SELECT type, key, payload FROM history_events FINAL WHERE type != ? ORDER BY type", TypeInvalidEnvelope)
	want := [][]string{
		{"catalog.renamed", "s1", `{"name":"x"}`},
		{"delivery.attempt", "sub1", `{"attempt":"two"}`},
		{"partner.call", "s1", ""},
	}
	if joinRows(got) != joinRows(want) {
		t.Errorf("history_events\n got %s\nwant %s", joinRows(got), joinRows(want))
	}
	invalid := query(t, e.conn, "SELECT event_id, payload FROM history_events FINAL WHERE type = ?", TypeInvalidEnvelope)
	if len(invalid) != 1 || !strings.HasPrefix(invalid[0][0], "kafka:"+e.topic+"/") || invalid[0][1] != "not json at all" {
		t.Errorf("invalid envelope row = %v, want one row keyed by its record coordinates with the raw value", invalid)
	}
	if n := query(t, e.conn, "SELECT count() FROM history_deliveries FINAL"); n[0][0] != "0" {
		t.Errorf("a bad payload left %s rows in history_deliveries", n[0][0])
	}
	for reason, want := range map[string]float64{reasonUnknownType: 1, reasonBadPayload: 2, reasonInvalidEnvelope: 1} {
		if got := counterValue(t, run.reg, "switchback_history_unrouted_total", map[string]string{"reason": reason}); got != want {
			t.Errorf("unrouted{reason=%s} = %v, want %v", reason, got, want)
		}
	}
}

// TestSink_ReplayFromStartDoesNotDoubleCounts replays the whole topic into
// the same tables with a second consumer group (what resetting the group's
// offsets does): counts read with FINAL do not move.
func TestSink_ReplayFromStartDoesNotDoubleCounts(t *testing.T) {
	e := newEnv(t)
	seed := seedEvents(t)
	e.publish(t, seed)
	first := runSink(t, e.brokers, e.conn, Options{})
	waitCommitted(t, e.brokers, GroupID, e.topic, 30*time.Second)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	const counts = `SELECT
		(SELECT count() FROM history_availability_changes FINAL),
		(SELECT count() FROM history_price_changes FINAL),
		(SELECT count() FROM history_notifications FINAL),
		(SELECT count() FROM history_deliveries FINAL),
		(SELECT count() FROM history_bookings FINAL),
		(SELECT count() FROM history_change_requests FINAL),
		(SELECT count() FROM history_sync_reports FINAL),
		(SELECT count() FROM history_partner_calls FINAL)`
	before := query(t, e.conn, counts)
	var sum int
	for _, c := range before[0] {
		n := 0
		for _, d := range c {
			n = n*10 + int(d-'0')
		}
		sum += n
	}
	if sum != len(seed) {
		t.Fatalf("rows after the first load = %d (%v), want %d", sum, before, len(seed))
	}

	replay := runSink(t, e.brokers, e.conn, Options{GroupID: "switchback-history-replay"})
	waitCommitted(t, e.brokers, "switchback-history-replay", e.topic, 30*time.Second)
	if got := counterValue(t, replay.reg, "switchback_history_rows_inserted_total", nil); got != float64(len(seed)) {
		t.Fatalf("replay inserted %v rows, want %d", got, len(seed))
	}
	if after := query(t, e.conn, counts); joinRows(after) != joinRows(before) {
		t.Fatalf("counts after the replay = %v, want %v", after, before)
	}
}

// TestSink_BatchesAreBoundedBySizeAndTime: a batch is inserted when it is
// full or when its first event has waited FlushInterval, and offsets are
// committed only for inserted events.
func TestSink_BatchesAreBoundedBySizeAndTime(t *testing.T) {
	tests := []struct {
		name         string
		batchSize    int
		interval     time.Duration
		publish      int
		wantInserted int
	}{
		{"size bound inserts full batches only", 5, time.Hour, 12, 10},
		{"time bound inserts a partial batch", 1000, 200 * time.Millisecond, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var envs []schemas.Envelope
			for i := range tt.publish {
				envs = append(envs, ev(t, schemas.HistoryPartnerCall, "s1", march(1, 0, i), schemas.PartnerCall{System: "partner", SupplierID: "s1", Operation: "availabilities", Outcome: "ok"}))
			}
			e.publish(t, envs)
			run := runSink(t, e.brokers, e.conn, Options{BatchSize: tt.batchSize, FlushInterval: tt.interval})
			testharness.Eventually(t, 30*time.Second, "inserts", func() bool {
				return counterValue(t, run.reg, "switchback_history_rows_inserted_total", nil) >= float64(tt.wantInserted)
			})
			// Nothing more comes: the rest is neither full nor old enough.
			testharness.Eventually(t, 10*time.Second, "commits", func() bool {
				return committedTotal(t, e.brokers, GroupID, e.topic) == int64(tt.wantInserted)
			})
			time.Sleep(300 * time.Millisecond) // a window for a wrong extra flush to show
			if got := counterValue(t, run.reg, "switchback_history_rows_inserted_total", nil); got != float64(tt.wantInserted) {
				t.Errorf("inserted %v rows, want %d", got, tt.wantInserted)
			}
			if got := committedTotal(t, e.brokers, GroupID, e.topic); got != int64(tt.wantInserted) {
				t.Errorf("committed %d records, want %d", got, tt.wantInserted)
			}
			if got, want := counterValue(t, run.reg, "switchback_history_pending_events", nil), float64(tt.publish-tt.wantInserted); got != want {
				t.Errorf("pending events = %v, want %v", got, want)
			}
		})
	}
}

// TestSink_StopInsertsWhatItHolds: at shutdown the partial batch is
// inserted and committed, not left for redelivery.
func TestSink_StopInsertsWhatItHolds(t *testing.T) {
	e := newEnv(t)
	var envs []schemas.Envelope
	for i := range 7 {
		envs = append(envs, ev(t, schemas.HistoryPartnerCall, "s1", march(1, 0, i), schemas.PartnerCall{System: "partner", SupplierID: "s1", Operation: "availabilities", Outcome: "ok"}))
	}
	e.publish(t, envs)
	run := runSink(t, e.brokers, e.conn, Options{BatchSize: 1000, FlushInterval: time.Hour})
	testharness.Eventually(t, 30*time.Second, "events fetched", func() bool {
		return counterValue(t, run.reg, "switchback_history_pending_events", nil) == 7
	})
	if err := run.stop(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, e.conn, "SELECT count() FROM history_partner_calls FINAL"); got[0][0] != "7" {
		t.Errorf("rows after stop = %s, want 7", got[0][0])
	}
	if got := committedTotal(t, e.brokers, GroupID, e.topic); got != 7 {
		t.Errorf("committed %d, want 7", got)
	}
}

// TestSink_MetricLabelsCarryNoIDs: labels are tables, partitions and fixed
// reasons only.
func TestSink_MetricLabelsCarryNoIDs(t *testing.T) {
	e := newEnv(t)
	e.publish(t, seedEvents(t))
	run := runSink(t, e.brokers, e.conn, Options{})
	waitCommitted(t, e.brokers, GroupID, e.topic, 30*time.Second)
	mfs, err := run.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"table": true, "partition": true, "reason": true}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "switchback_history_") {
			t.Errorf("metric %s lacks the switchback_history_ prefix", mf.GetName())
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !allowed[l.GetName()] {
					t.Errorf("metric %s has label %s", mf.GetName(), l.GetName())
				}
			}
		}
	}
}

func TestRun_RejectsMissingDependencies(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no brokers", Options{}, "no brokers"},
		{"no connection", Options{Brokers: []string{"127.0.0.1:1"}}, "no ClickHouse connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewSink(tt.opts).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

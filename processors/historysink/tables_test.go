package historysink

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rec(t *testing.T, e schemas.Envelope) []byte {
	t.Helper()
	return mustJSON(t, e)
}

// TestAddRecord_RoutesEveryTypeToItsTable: each history type lands in its
// table, everything else in history_events, with the reason counted.
func TestAddRecord_RoutesEveryTypeToItsTable(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		value        []byte
		wantTable    string
		wantUnrouted string
	}{
		{"availability", rec(t, ev(t, schemas.HistoryAvailabilityChanged, "k", at, schemas.AvailabilityChanged{})), TableAvailability, ""},
		{"price", rec(t, ev(t, schemas.HistoryPriceChanged, "k", at, schemas.PriceChanged{})), TablePrices, ""},
		{"notification", rec(t, ev(t, schemas.HistoryNotificationProduced, "k", at, schemas.NotificationProduced{})), TableNotifications, ""},
		{"delivery attempt", rec(t, ev(t, schemas.HistoryDeliveryAttempt, "k", at, schemas.DeliveryAttempt{})), TableDeliveries, ""},
		{"suppressed notification", rec(t, ev(t, schemas.HistoryNotificationSuppressed, "k", at, schemas.NotificationSuppressed{})), TableDeliveries, ""},
		{"hold", rec(t, ev(t, schemas.HistoryHoldStatus, "k", at, schemas.HoldStatusChanged{})), TableBookings, ""},
		{"booking", rec(t, ev(t, schemas.HistoryBookingStatus, "k", at, schemas.BookingStatusChanged{})), TableBookings, ""},
		{"change request", rec(t, ev(t, schemas.HistoryChangeRequestRun, "k", at, schemas.ChangeRequestRun{})), TableChangeRequests, ""},
		{"sync report", rec(t, ev(t, schemas.HistorySyncReport, "k", at, schemas.SyncReport{})), TableSyncReports, ""},
		{"partner call", rec(t, ev(t, schemas.HistoryPartnerCall, "k", at, schemas.PartnerCall{})), TablePartnerCalls, ""},
		{"unknown type", rec(t, ev(t, "something.new", "k", at, map[string]int{"a": 1})), TableEvents, reasonUnknownType},
		{"auto-disable kept generically by design", rec(t, ev(t, schemas.HistorySubscriberAutoDisabled, "sub", at, map[string]any{"subscriber": "sub", "backlog": 20000})), TableEvents, ""},
		{"fields in another order", []byte(`{"data":{"type":"availability","subscriber":"s","deliveryId":"d"},"time":"2026-03-01T00:00:00Z","type":"notification.produced","id":"x"}`), TableNotifications, ""},
		{"extra payload fields of the dispatcher's records", rec(t, ev(t, schemas.HistoryDeliveryAttempt, "k", at, map[string]any{"deliveryId": "d", "outcome": "failed", "nextAttemptAt": at, "notification": map[string]any{"id": "d", "payload": map[string]int{"x": 1}}})), TableDeliveries, ""},
		{"payload of the wrong shape", rec(t, schemas.Envelope{ID: "x", Type: schemas.HistorySyncReport, Time: at, Data: json.RawMessage(`{"id":"not a number"}`)}), TableEvents, reasonBadPayload},
		{"no payload", rec(t, schemas.Envelope{ID: "x", Type: schemas.HistorySyncReport, Time: at}), TableEvents, reasonBadPayload},
		{"not an envelope", []byte(`[1,2`), TableEvents, reasonInvalidEnvelope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTables()
			if got := b.addRecord(tt.value, recordRef{"t", 0, 1}, at); got != tt.wantUnrouted {
				t.Errorf("unrouted = %q, want %q", got, tt.wantUnrouted)
			}
			for _, tb := range b.all {
				want := 0
				if tb.name == tt.wantTable {
					want = 1
				}
				if tb.n != want {
					t.Errorf("%s has %d rows, want %d", tb.name, tb.n, want)
				}
				for _, c := range tb.cols {
					if n := c.col.length(); n != tb.n {
						t.Errorf("%s.%s has %d values for %d rows", tb.name, c.name, n, tb.n)
					}
				}
			}
		})
	}
}

// TestAddRecord_FallsBackToRecordIDAndTime: an envelope without id or time
// is still stored, keyed by its record so a replay collapses.
func TestAddRecord_FallsBackToRecordIDAndTime(t *testing.T) {
	recordTime := time.Date(2026, 3, 2, 3, 4, 5, 0, time.UTC)
	b := newTables()
	b.addRecord(rec(t, schemas.Envelope{Type: schemas.HistoryPartnerCall, Data: mustJSON(t, schemas.PartnerCall{})}), recordRef{"t", 2, 7}, recordTime)
	p := &b.partner
	if p.eventID.v[0] != "kafka:t/2/7" || !p.occurredAt.v[0].Equal(recordTime) {
		t.Fatalf("event id %q at %v, want the record's coordinates and time", p.eventID.v[0], p.occurredAt.v[0])
	}
}

// TestAddRecord_ClampsWhatClickHouseWouldRefuse: a value out of a column's
// range would fail the batch at every retry and stall the sink.
func TestAddRecord_ClampsWhatClickHouseWouldRefuse(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b := newTables()
	b.addRecord(rec(t, ev(t, schemas.HistoryDeliveryAttempt, "k", at, schemas.DeliveryAttempt{Attempt: 70000, Status: -1, LatencyMs: math.MaxInt64})), recordRef{"t", 0, 0}, at)
	b.addRecord(rec(t, ev(t, schemas.HistoryAvailabilityChanged, "k", at, schemas.AvailabilityChanged{OldVacancies: math.MaxInt64, Start: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)})), recordRef{"t", 0, 0}, at)
	b.addRecord(rec(t, ev(t, schemas.HistoryPriceChanged, "k", at, schemas.PriceChanged{NewRetail: 1e20, OldRetail: -1e20, NewNet: 0.12345})), recordRef{"t", 0, 0}, at)

	d := &b.deliv
	if d.attempt.v[0] != math.MaxUint16 || d.status.v[0] != 0 || d.latency.v[0] != math.MaxUint32 {
		t.Errorf("delivery clamped to attempt %d status %d latency %d", d.attempt.v[0], d.status.v[0], d.latency.v[0])
	}
	a := &b.avail
	if a.oldVac.v[0] != math.MaxInt32 || !a.start.v[0].Equal(minDateTime) || !a.end.v[0].Equal(maxDateTime) {
		t.Errorf("availability clamped to %d, %v .. %v", a.oldVac.v[0], a.start.v[0], a.end.v[0])
	}
	p := &b.price
	if got := p.newRetail.v[0].String(); got != "99999999999999" {
		t.Errorf("new retail = %s, want the Decimal(18, 4) maximum", got)
	}
	if got := p.oldRetail.v[0].String(); got != "-99999999999999" {
		t.Errorf("old retail = %s, want the Decimal(18, 4) minimum", got)
	}
	if got := p.newNet.v[0].String(); got != "0.1235" {
		t.Errorf("new net = %s, want 0.1235 (scale 4)", got)
	}
}

func TestMoney_KeepsDecimalAmountsExact(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{12.35, "12.35"},
		{0.1 + 0.2, "0.3"},
		{105.5, "105.5"},
		{math.NaN(), "0"},
		{math.Inf(1), "99999999999999"},
	}
	for _, tt := range tests {
		if got := money(tt.in).String(); got != tt.want {
			t.Errorf("money(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestNewHistoryEvent_MakesUniqueIDsAndUTCTime(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	a, err := schemas.NewHistoryEvent(schemas.HistoryPartnerCall, "s1", schemas.PartnerCall{SupplierID: "s1"}, at)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := schemas.NewHistoryEvent(schemas.HistoryPartnerCall, "s1", schemas.PartnerCall{SupplierID: "s1"}, at)
	if a.ID == "" || a.ID == b.ID {
		t.Fatalf("ids %q and %q, want two distinct ids", a.ID, b.ID)
	}
	if a.Time.Location() != time.UTC || !a.Time.Equal(at) {
		t.Fatalf("time %v, want %v in UTC", a.Time, at)
	}
}

// BenchmarkAddRecord is the per-record decoding cost of the sink (one
// goroutine), for the event mix of bench/history.
func BenchmarkAddRecord(b *testing.B) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var values [][]byte
	for i := range 10 {
		var e schemas.Envelope
		switch {
		case i < 6:
			e, _ = schemas.NewHistoryEvent(schemas.HistoryDeliveryAttempt, "subscriber-0001", schemas.DeliveryAttempt{DeliveryID: "delivery-1", Subscriber: "subscriber-0001", Type: "availability", Attempt: 1, Status: 200, LatencyMs: 120, Outcome: "delivered", At: at}, at)
		case i < 9:
			e, _ = schemas.NewHistoryEvent(schemas.HistoryAvailabilityChanged, "product-0001", schemas.AvailabilityChanged{SupplierID: "supplier-01", ProductID: "product-0001", RateID: "rate-1", Start: at, End: at.Add(time.Hour), OldVacancies: 3, NewVacancies: 2, OldStatus: "AVAILABLE", NewStatus: "LIMITED", Source: "push"}, at)
		default:
			e, _ = schemas.NewHistoryEvent(schemas.HistoryNotificationProduced, "subscriber-0001", schemas.NotificationProduced{DeliveryID: "delivery-1", Subscriber: "subscriber-0001", Type: "availability", EntityKey: "product-1", Source: "matcher"}, at)
		}
		v, _ := json.Marshal(e)
		values = append(values, v)
	}
	t := newTables()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%10_000 == 0 {
			t.reset()
		}
		t.addRecord(values[i%len(values)], recordRef{"t", 0, int64(i)}, at)
	}
}

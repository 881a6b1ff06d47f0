package historyapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// recordingReplayer is the Replayer seam: it records what it was asked to
// republish, with dispatcher.Replay's range filter on CreatedAt.
type recordingReplayer struct {
	mu  sync.Mutex
	got []schemas.Notification
	err error
}

func (r *recordingReplayer) Replay(_ context.Context, subscriber, typ string, from, to time.Time, ns []schemas.Notification) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	for _, x := range ns {
		if x.Subscriber == subscriber && x.Type == typ && !x.CreatedAt.Before(from) && x.CreatedAt.Before(to) {
			r.got = append(r.got, x)
			n++
		}
	}
	return n, nil
}

func (r *recordingReplayer) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.got {
		out = append(out, n.ID)
	}
	sort.Strings(out)
	return out
}

// insertAttempt writes one history_deliveries row with its notification, as
// the sink does for suppressed, failed and dropped outcomes.
func insertAttempt(t *testing.T, conn driver.Conn, eventID, deliveryID, subscriber, typ, outcome string, at time.Time, withNotification bool) {
	t.Helper()
	raw := ""
	if withNotification {
		b, _ := json.Marshal(schemas.Notification{ID: deliveryID, Subscriber: subscriber, Type: typ, EntityKey: "s1", Payload: json.RawMessage(`{"supplierID":"s1","operation":"updated"}`), CreatedAt: at})
		raw = string(b)
	}
	b, err := conn.PrepareBatch(context.Background(), "INSERT INTO history_deliveries (event_id, occurred_at, occurred_ms, delivery_id, subscriber, type, attempt, status, latency_ms, outcome, error, notification)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(eventID, at, at.UnixMilli(), deliveryID, subscriber, typ, uint16(1), uint16(500), uint32(10), outcome, "", raw); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
}

func TestReplay_ResendsOnlyTheCallersUndeliveredNotificationsOfTheType(t *testing.T) {
	conn := openClickHouse(t)
	e := serve(t, conn, nil)
	a, b := e.ids[resellerA], e.ids[resellerB]
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	rows := []struct {
		event, delivery, sub, typ, outcome string
		at                                 time.Time
		withN                              bool
	}{
		{"e1", "d-suppressed", a, "supplier", "suppressed", t0, true},
		{"e2", "d-failed", a, "supplier", "failed", t0.Add(time.Minute), true},
		{"e3", "d-dropped", a, "supplier", "dropped", t0.Add(2 * time.Minute), true},
		// Failed first, delivered by a later replay: not replayed again.
		{"e4", "d-later-delivered", a, "supplier", "failed", t0.Add(3 * time.Minute), true},
		{"e5", "d-later-delivered", a, "supplier", "delivered", t0.Add(4 * time.Minute), false},
		// Delivered at once: nothing to replay.
		{"e6", "d-delivered", a, "supplier", "delivered", t0.Add(5 * time.Minute), false},
		// Another type, another subscriber, outside the range.
		{"e7", "d-other-type", a, "product", "suppressed", t0, true},
		{"e8", "d-other-sub", b, "supplier", "suppressed", t0, true},
		{"e9", "d-too-early", a, "supplier", "suppressed", t0.Add(-2 * time.Hour), true},
	}
	for _, r := range rows {
		insertAttempt(t, conn, r.event, r.delivery, r.sub, r.typ, r.outcome, r.at, r.withN)
	}
	// The same row again, as a replayed history topic would write it.
	insertAttempt(t, conn, "e1", "d-suppressed", a, "supplier", "suppressed", t0, true)

	body := `{"type":"supplier","from":"2026-03-10T11:00:00Z","to":"2026-03-10T13:00:00Z"}`
	status, raw := e.post(t, resellerA, "/registry/v1.1/deliveries/replay", body)
	if status != http.StatusAccepted {
		t.Fatalf("replay = %d %s", status, raw)
	}
	var resp struct {
		Replayed int `json:"replayed"`
	}
	_ = json.Unmarshal(raw, &resp)
	want := []string{"d-dropped", "d-failed", "d-suppressed"}
	if got := e.replayer.ids(); strings.Join(got, ",") != strings.Join(want, ",") || resp.Replayed != len(want) {
		t.Fatalf("replayed %v (count %d), want %v", got, resp.Replayed, want)
	}

	// Only suppressed ones when asked.
	e.replayer.got = nil
	status, raw = e.post(t, resellerA, "/registry/v1.1/deliveries/replay", `{"type":"supplier","from":"2026-03-10T11:00:00Z","to":"2026-03-10T13:00:00Z","outcomes":["suppressed"]}`)
	if status != http.StatusAccepted || strings.Join(e.replayer.ids(), ",") != "d-suppressed" {
		t.Fatalf("suppressed-only replay = %d %s, replayed %v", status, raw, e.replayer.ids())
	}
}

func TestReplay_ValidationParkingAndBrokerDown(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantField string
	}{
		{"type missing", `{"from":"2026-03-10T11:00:00Z","to":"2026-03-10T13:00:00Z"}`, "type"},
		{"unknown type", `{"type":"weather","from":"2026-03-10T11:00:00Z","to":"2026-03-10T13:00:00Z"}`, "type"},
		{"from missing", `{"type":"rate","to":"2026-03-10T13:00:00Z"}`, "from"},
		{"to before from", `{"type":"rate","from":"2026-03-10T13:00:00Z","to":"2026-03-10T11:00:00Z"}`, "to"},
		{"range too long", `{"type":"rate","from":"2026-01-01T00:00:00Z","to":"2026-03-01T00:00:00Z"}`, "to"},
		{"outcome not replayable", `{"type":"rate","from":"2026-03-10T11:00:00Z","to":"2026-03-10T13:00:00Z","outcomes":["delivered"]}`, "outcomes[0]"},
	}
	e := serve(t, nil, nil) // parked: validation still comes first
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, raw := e.post(t, resellerA, "/registry/v1.1/deliveries/replay", tt.body)
			eb := querytest.DecodeError(t, raw)
			if status != http.StatusBadRequest || eb.Data["field"] != tt.wantField {
				t.Fatalf("= %d %s, want 400 naming %s", status, raw, tt.wantField)
			}
		})
	}
	t.Run("parked ClickHouse is 503", func(t *testing.T) {
		status, raw := e.post(t, resellerA, "/registry/v1.1/deliveries/replay", `{"type":"rate","from":"2026-03-10T11:00:00Z","to":"2026-03-10T13:00:00Z"}`)
		if status != http.StatusServiceUnavailable || querytest.DecodeError(t, raw).Code != "UNAVAILABLE" {
			t.Fatalf("= %d %s, want 503 UNAVAILABLE", status, raw)
		}
	})
	t.Run("operators may not replay", func(t *testing.T) {
		if status, _ := e.post(t, operator, "/registry/v1.1/deliveries/replay", `{}`); status != http.StatusForbidden {
			t.Fatalf("= %d, want 403", status)
		}
	})
}

// A long outage is replayed range by range, as the 400 "narrow from/to"
// asks: a range counts the notifications created in it, not every
// suppression recorded up to a day after it (rows are found by when they
// happened, and a disabled subscriber's backlog is suppressed long after
// its notifications were created).
func TestUndelivered_CountsByCreationTimeNotByWhenTheRowWasWritten(t *testing.T) {
	conn := openClickHouse(t)
	a := "sub-outage"
	t0 := time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC)
	// Notifications created every 10 s over 10 minutes, all suppressed
	// together an hour later (the backlog drained at auto-disable).
	drained := t0.Add(time.Hour)
	var inRange []string
	for i := range 60 {
		created := t0.Add(time.Duration(i) * 10 * time.Second)
		id := fmt.Sprintf("d-%02d", i)
		b, _ := json.Marshal(schemas.Notification{ID: id, Subscriber: a, Type: "availability", EntityKey: "s1/p1/r1",
			Payload: json.RawMessage(`{}`), CreatedAt: created.Add(250 * time.Millisecond)})
		batch, err := conn.PrepareBatch(context.Background(), "INSERT INTO history_deliveries (event_id, occurred_at, occurred_ms, delivery_id, subscriber, type, attempt, status, latency_ms, outcome, error, notification)")
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Append("e-"+id, drained, drained.UnixMilli(), id, a, "availability", uint16(0), uint16(0), uint32(0), "suppressed", "disableAll is set", string(b)); err != nil {
			t.Fatal(err)
		}
		if err := batch.Send(); err != nil {
			t.Fatal(err)
		}
		if !created.Before(t0.Add(2*time.Minute)) && created.Before(t0.Add(3*time.Minute)) {
			inRange = append(inRange, id)
		}
	}
	s := store{conn: conn}
	in := replayBody{Type: "availability", From: t0.Add(2 * time.Minute), To: t0.Add(3 * time.Minute), Outcomes: []string{"suppressed"}}
	ns, err := s.undelivered(context.Background(), a, in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range ns {
		got = append(got, n.ID)
	}
	// The boundary second may add one (cut exactly by the replayer); no
	// more than that.
	if len(got) < len(inRange) || len(got) > len(inRange)+1 || !strings.Contains(strings.Join(got, ","), strings.Join(inRange, ",")) {
		t.Fatalf("undelivered in [+2m, +3m) = %v, want %v (of 60 suppressed at +1h)", got, inRange)
	}
}

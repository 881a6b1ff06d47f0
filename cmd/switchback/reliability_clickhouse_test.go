package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
	"github.com/switchbackhq/switchback/processors/historysink"
	"github.com/switchbackhq/switchback/schemas"
)

// TestReliability_ClickHouseDownSinkCatchesUp is issue 9's "ClickHouse
// down for a while: no history lost, the sink catches up". The binary
// (`switchback run`) reaches a real clickhouse-server through a proxy the
// test can cut. Under the steady operator load (availability changes,
// notifications and webhook deliveries all make history), ClickHouse is
// cut off for a while: the pipeline keeps serving (the load's changes are
// accepted and delivered), /readyz names ClickHouse as down, and history
// waits on its topic. Once ClickHouse is back, every event on
// switchback.history (read from the broker, by event id) is in the
// ClickHouse table of its type, and every delivery the sink received has its
// `delivered` row in history_deliveries. Lost = history events on the
// topic that never reached ClickHouse.
func TestReliability_ClickHouseDownSinkCatchesUp(t *testing.T) {
	form := reliabilityForm(t)
	downFor := byForm(form, 10*time.Second, 3*time.Minute)
	chURL := testharness.ClickHouse(t)
	u, err := url.Parse(chURL)
	if err != nil {
		t.Fatal(err)
	}
	px := newFaultProxy(t, u.Host)
	proxied := *u
	proxied.Host = px.addr()

	p := startBinary(t, append(relEnv(), "SWITCHBACK_CLICKHOUSE_URL="+proxied.String())...)
	waitClickHouse(t, p)
	sk := newSink(t)
	base := "http://" + p.api
	op := api{base, "demo-operator", "demo-operator-secret"}
	createAvailabilityRule(t, api{base, "demo-reseller", "demo-reseller-secret"}, sk.url+"/av")
	push, _ := loadPlans(form, "rel-ch", "rel-ch-cr")
	setupPush(t, op, push)
	l := newLedger("before")
	pl := newPushLoad(op, push, l, 150*time.Millisecond)
	pl.baseline(t)
	pl.start(0)
	l.waitCount(t, "before", "", 10, 60*time.Second)

	l.setPhase("clickhouse-down")
	px.cut()
	cut := time.Now()
	waitUntil(t, "/readyz names clickhouse down", 60*time.Second, func() bool { return readyzStatus(p, "clickhouse") == "down" })
	seenDown := time.Since(cut).Round(100 * time.Millisecond)
	time.Sleep(downFor)
	during := l.count("clickhouse-down", "")
	px.mend()
	mended := time.Now()
	l.setPhase("after")
	l.waitCount(t, "after", "", 10, 60*time.Second)
	pl.halt(t)
	waitDelivered(sk, "/av", l, 60*time.Second)

	conn, err := warehouse.Open(context.Background(), chURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Every history event of the topic, by id, once the sink caught up.
	onTopic := map[string]string{}
	var missing []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := stream.ReadAll(ctx, []string{p.kafka}, schemas.TopicHistory, func(m stream.Message) error {
			var env schemas.Envelope
			if json.Unmarshal(m.Value, &env) == nil && env.ID != "" {
				onTopic[env.ID] = env.Type
			}
			return nil
		})
		cancel()
		if err != nil {
			t.Fatalf("read %s: %v", schemas.TopicHistory, err)
		}
		// Each event lands in the table of its type (history_events for
		// the others): look in every table the sink writes.
		inCH := map[string]bool{}
		for _, table := range historysink.Tables() {
			distinctIDs(t, conn, "SELECT DISTINCT event_id FROM "+table, inCH)
		}
		missing = missing[:0]
		for id, typ := range onTopic {
			if !inCH[id] {
				missing = append(missing, id+" ("+typ+")")
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	caught := time.Since(mended).Round(100 * time.Millisecond)

	// Every delivery the sink received is in history_deliveries as
	// delivered.
	deliveredRows := map[string]bool{}
	distinctIDs(t, conn, "SELECT DISTINCT delivery_id FROM history_deliveries WHERE outcome = 'delivered'", deliveredRows)
	deliveries, noRow := 0, 0
	seen := map[string]bool{}
	for _, r := range sk.on("/av") {
		if seen[r.deliveryID] {
			continue
		}
		seen[r.deliveryID] = true
		deliveries++
		if !deliveredRows[r.deliveryID] {
			noRow++
		}
	}
	tl, _ := account(sk, "/av", l, l.all())
	t.Logf("RELIABILITY fault=clickhouse-down history_events=%d lost=%d deliveries=%d deliveries_without_history=%d notifications_lost=%d down=%s changes_while_down=%d readyz_down_after=%s caught_up_after=%s",
		len(onTopic), len(missing), deliveries, noRow, tl.lost, downFor, during, seenDown, caught)
	if len(missing) > 0 {
		if len(missing) > 10 {
			missing = missing[:10]
		}
		t.Errorf("%d history events on the topic never reached ClickHouse, e.g. %s", len(missing), strings.Join(missing, ", "))
	}
	if noRow > 0 {
		t.Errorf("%d deliveries received by the sink have no delivered row in history_deliveries", noRow)
	}
	if during == 0 {
		t.Errorf("no change was accepted while ClickHouse was down: the pipeline must not need it")
	}
	checkTally(t, "clickhouse-down", tl)
	p.stop(t)
}

// distinctIDs adds the ids query selects (one string column) to into.
func distinctIDs(t *testing.T, conn driver.Conn, query string, into map[string]bool) {
	t.Helper()
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		into[id] = true
	}
}

// readyzStatus is the status /readyz gives the named dependency ("" if
// none).
func readyzStatus(p *proc, dep string) string {
	status, deps, err := p.readyz()
	if status == 0 {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("unreadable: %v", err)
	}
	return deps[dep].Status
}

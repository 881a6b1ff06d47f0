package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// switchSink is a subscriber endpoint that is up (200) or down (503), and
// remembers every POST with the answer it got.
type switchSink struct {
	url  string
	down atomic.Bool
	mu   sync.Mutex
	got  []sinkPost
}

type sinkPost struct {
	deliveryID string
	status     int
	at         time.Time
}

func newSwitchSink(t *testing.T) *switchSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &switchSink{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		status := 200
		if s.down.Load() {
			status = 503
		}
		s.mu.Lock()
		s.got = append(s.got, sinkPost{deliveryID: r.Header.Get(schemas.HeaderDeliveryID), status: status, at: time.Now()})
		s.mu.Unlock()
		w.WriteHeader(status)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *switchSink) posts() []sinkPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkPost(nil), s.got...)
}

// delivered is the delivery ids answered 200, in the order of their first
// 200, and how many 200s there were in all.
func (s *switchSink) delivered() (order []string, total int) {
	seen := map[string]bool{}
	for _, p := range s.posts() {
		if p.status != 200 {
			continue
		}
		total++
		if !seen[p.deliveryID] {
			seen[p.deliveryID] = true
			order = append(order, p.deliveryID)
		}
	}
	return order, total
}

// deliveredSet is the delivery ids answered 200.
func (s *switchSink) deliveredSet() map[string]bool {
	order, _ := s.delivered()
	set := make(map[string]bool, len(order))
	for _, id := range order {
		set[id] = true
	}
	return set
}

// subscriberNotifications are n notifications of the supplier type for
// each of entities, ids encoding (round, entity, sequence), published in
// sequence order per entity.
func subscriberNotifications(subscriber string, round, entities, n int) ([]schemas.Notification, map[string][]string) {
	var out []schemas.Notification
	byEntity := map[string][]string{}
	for k := range n {
		for e := range entities {
			id := fmt.Sprintf("00000000-0000-4000-8%03d-%06d%06d", round, e, k)
			entity := fmt.Sprintf("sup-sub-%d-%d", round, e)
			out = append(out, supplierNotification(id, subscriber, entity))
			byEntity[entity] = append(byEntity[entity], id)
		}
	}
	return out, byEntity
}

// TestReliability_SubscriberDownThenBack is issue 9's "subscriber endpoint
// down for a while, then back", over the built binary (`switchback run`
// with ClickHouse for the delivery history), in two parts:
//
//  1. Within the backlog bound: while the subscriber answers 503, several
//     entities' notifications arrive (published on the notifications topic,
//     a few per entity); when it is back, the backlog drains: every
//     notification is delivered, and for each entity in the order it was
//     published (the order of the first 200 of each delivery id).
//  2. Past the bound (SWITCHBACK_DISPATCH_BACKLOG_LIMIT): while it is down,
//     more notifications arrive than the bound holds; the dispatcher sets
//     the subscriber's disableAll by itself and suppresses the rest. When
//     the subscriber is back and clears disableAll, a replay of its
//     undelivered notifications (POST /registry/v1.1/deliveries/replay)
//     delivers every one that had not been delivered.
//
// Lost = published notifications never answered 200 at the sink.
func TestReliability_SubscriberDownThenBack(t *testing.T) {
	form := reliabilityForm(t)
	const limit = 40
	downFor := byForm(form, 6*time.Second, 90*time.Second)
	entities, perEntity := 5, byForm(form, 4, 6)
	// Retries every second for two minutes: the down period of the long
	// form stays within the schedule, so part 1 is about draining, not
	// about failed deliveries.
	schedule := "200ms,500ms" + strings.Repeat(",1s", 118)
	env := append(relEnv(), "SWITCHBACK_DISPATCH_BACKLOG_LIMIT="+strconv.Itoa(limit), "SWITCHBACK_DISPATCH_RETRY_SCHEDULE="+schedule)
	p := startBinary(t, env...)
	waitClickHouse(t, p)
	sk := newSwitchSink(t)
	base := "http://" + p.api
	reseller := api{base, "demo-reseller", "demo-reseller-secret"}
	subscriber := principals.FixedID("demo-reseller")
	reseller.must(t, "POST", "/registry/v1.1/supplier", fmt.Sprintf(`{"url":%q}`, sk.url+"/supplier"), 201)

	// Part 1: within the bound.
	sk.down.Store(true)
	ns, byEntity := subscriberNotifications(subscriber, 1, entities, perEntity)
	if len(ns) >= limit {
		t.Fatalf("part 1 publishes %d notifications, not under the bound %d", len(ns), limit)
	}
	publish(t, p.kafka, ns...)
	waitUntil(t, "the subscriber's endpoint is tried while down", 30*time.Second, func() bool { return len(sk.posts()) > 0 })
	time.Sleep(downFor)
	triedWhileDown := len(sk.posts())
	sk.down.Store(false)
	up := time.Now()
	waitUntil(t, "part 1's backlog drains", 3*time.Minute, func() bool { o, _ := sk.delivered(); return len(o) >= len(ns) })
	drained := time.Since(up).Round(100 * time.Millisecond)
	order, total := sk.delivered()
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	outOfOrder := 0
	for entity, ids := range byEntity {
		for i := 1; i < len(ids); i++ {
			if pos[ids[i]] < pos[ids[i-1]] {
				outOfOrder++
				t.Errorf("entity %s: %s delivered before %s, published after it", entity, ids[i], ids[i-1])
			}
		}
	}
	lost1 := 0
	for _, n := range ns {
		if _, ok := pos[n.ID]; !ok {
			lost1++
		}
	}
	t.Logf("RELIABILITY fault=subscriber-down published=%d delivered=%d lost=%d duplicates=%d out_of_order=%d down=%s posts_while_down=%d drained_after=%s entities=%d",
		len(ns), len(order), lost1, total-len(order), outOfOrder, downFor, triedWhileDown, drained, entities)
	if lost1 > 0 {
		t.Errorf("part 1: %d of %d notifications not delivered after the subscriber came back", lost1, len(ns))
	}
	if md := metadata(t, reseller); md.DisableAll {
		t.Fatalf("part 1 stayed under the bound but disableAll is set")
	}

	// Part 2: past the bound.
	from := time.Now().UTC().Add(-time.Minute)
	sk.down.Store(true)
	over := byForm(form, 25, 60)
	ns2, _ := subscriberNotifications(subscriber, 2, limit+over, 1)
	publish(t, p.kafka, ns2...)
	waitUntil(t, "disableAll set automatically past the backlog bound", 60*time.Second, func() bool { return metadata(t, reseller).DisableAll })
	time.Sleep(downFor)
	sk.down.Store(false)
	// Delivered on their own: at most what was sent before disableAll;
	// queued ones are suppressed when due.
	time.Sleep(3 * time.Second)
	beforeReplay := sk.deliveredSet()
	reseller.must(t, "PUT", "/registry/v1.1/metadata", `{"disableAll":false}`, 200)
	to := time.Now().UTC().Add(time.Minute)
	// The suppressed notifications reach ClickHouse through the history
	// sink; replay until every one of part 2 has arrived (a replay of one
	// already pending is skipped by the dispatcher).
	replays := 0
	waitUntil(t, "the replay delivers every suppressed notification", 3*time.Minute, func() bool {
		seen := sk.deliveredSet()
		missing := 0
		for _, n := range ns2 {
			if !seen[n.ID] {
				missing++
			}
		}
		if missing == 0 {
			return true
		}
		status, raw, err := reseller.call("POST", "/registry/v1.1/deliveries/replay",
			fmt.Sprintf(`{"type":"supplier","from":%q,"to":%q}`, from.Format(time.RFC3339), to.Format(time.RFC3339)))
		if err == nil && status == 202 {
			replays++
		} else {
			t.Logf("replay: %d %v %s", status, err, raw)
		}
		time.Sleep(2 * time.Second)
		return false
	})
	seen := sk.deliveredSet()
	lost2, replayed := 0, 0
	for _, n := range ns2 {
		switch {
		case !seen[n.ID]:
			lost2++
		case !beforeReplay[n.ID]:
			replayed++
		}
	}
	t.Logf("RELIABILITY fault=subscriber-backlog-bound published=%d limit=%d delivered_before_disable=%d suppressed_then_replayed=%d lost=%d replay_calls=%d auto_disabled=true",
		len(ns2), limit, len(beforeReplay)-len(ns), replayed, lost2, replays)
	if lost2 > 0 {
		t.Errorf("part 2: %d of %d notifications never delivered, replay included", lost2, len(ns2))
	}
	if replayed == 0 {
		t.Errorf("part 2: nothing was suppressed and replayed: the bound was not reached")
	}
	p.stop(t)
}

type metadataView struct {
	DisableAll bool `json:"disableAll"`
}

func metadata(t *testing.T, reseller api) metadataView {
	t.Helper()
	raw := reseller.must(t, "GET", "/registry/v1.1/metadata", "", 200)
	var md metadataView
	if err := json.Unmarshal(raw, &md); err != nil {
		t.Fatalf("metadata %s: %v", raw, err)
	}
	return md
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitClickHouse polls /readyz until ClickHouse is up (the history the
// test reads or replays from is loaded by then).
func waitClickHouse(t *testing.T, p *proc) {
	t.Helper()
	waitUntil(t, "clickhouse ready", 90*time.Second, func() bool {
		status, deps, _ := p.readyz()
		st := deps["clickhouse"].Status
		return status == 200 && (st == "up" || st == "embedded")
	})
}

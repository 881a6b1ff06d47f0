package availchange_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/processors/availchange"
	"github.com/switchbackhq/switchback/schemas"
)

var t0 = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func h(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }

// world: product S1/P1; chan-a binds R1 only, chan-b the whole product.
// sub-a (chan-a) has an availability rule under 3 vacancies; sub-b
// (chan-b) every change within 1 day; sub-c (chan-b) filters on P2.
type world struct{}

func (world) BindingsOf(_ context.Context, products []catalog.ProductRef) ([][]catalog.Binding, error) {
	out := make([][]catalog.Binding, len(products))
	for i, p := range products {
		out[i] = []catalog.Binding{
			{SupplierID: p.SupplierID, ProductID: p.ProductID, ChannelID: "chan-a", RateIDs: []string{"R1"}},
			{SupplierID: p.SupplierID, ProductID: p.ProductID, ChannelID: "chan-b"},
		}
	}
	return out, nil
}

func (world) OnChannel(_ context.Context, cid string) ([]string, error) {
	return map[string][]string{"chan-a": {"sub-a"}, "chan-b": {"sub-b", "sub-c"}}[cid], nil
}

func (world) Rule(_ context.Context, sub, typ string) (registry.Rule, error) {
	if typ != schemas.TypeAvailability {
		return registry.Rule{}, registry.ErrNotFound
	}
	switch sub {
	case "sub-a":
		return registry.Rule{Config: registry.Config{MaxLookAheadDays: 7, VacanciesUnder: 3}}, nil
	case "sub-b":
		return registry.Rule{Config: registry.Config{MaxLookAheadDays: 1}}, nil
	case "sub-c":
		return registry.Rule{Config: registry.Config{MaxLookAheadDays: 7, ProductIDs: []string{"P2"}}}, nil
	}
	return registry.Rule{}, registry.ErrNotFound
}

func snapshotMsg(t *testing.T, rid string, retrieved time.Time, caps ...int) stream.Message {
	t.Helper()
	s := schemas.Snapshot{SupplierID: "S1", ProductID: "P1", RateID: rid, Start: t0, End: h(72), Retrieved: retrieved, Expires: retrieved.Add(10 * time.Minute)}
	// windows at 9, 33, 57 h (one a day), capacities as given
	for i, c := range caps {
		s.Availabilities = append(s.Availabilities, schemas.Availability{ID: "a", Start: h(9 + 24*i), End: h(11 + 24*i), Capacity: c})
	}
	m, err := availcache.SnapshotMessage(s, retrieved)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func redisClient(t *testing.T) redis.UniversalClient {
	rdb := testharness.RedisClient(t, 0)
	return rdb
}

func notes(t *testing.T, msgs []stream.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Topic != schemas.TopicNotifications {
			continue
		}
		n, err := schemas.DecodeNotification(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		// The topic's envelope, identified and keyed as the notification.
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil || env.Type != schemas.EventNotification || env.ID != n.ID ||
			env.Key != n.Subscriber || string(m.Key) != n.Subscriber {
			t.Fatalf("record %s: envelope %+v (%v)", m.Value, env, err)
		}
		var p schemas.AvailabilityPayload
		_ = json.Unmarshal(n.Payload, &p)
		out = append(out, n.Subscriber+" "+p.RateID+" "+p.Start+" "+p.End)
	}
	slices.Sort(out)
	return out
}

func TestHandle_DiffsNotifiesByRuleAndIsIdempotent(t *testing.T) {
	rec := &catalogtest.Recorder{}
	p := availchange.New(availchange.Options{Redis: redisClient(t), Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: rec, Clock: func() time.Time { return t0 }})
	ctx := context.Background()
	// Baseline: nothing to notify.
	if err := p.Handle(ctx, snapshotMsg(t, "R1", t0, 5, 5, 5)); err != nil {
		t.Fatal(err)
	}
	if len(rec.Messages()) != 0 {
		t.Fatalf("baseline published %d", len(rec.Messages()))
	}
	// Day 0 goes to 2 (under 3), day 1 to 4, day 2 unchanged.
	m := snapshotMsg(t, "R1", t0.Add(time.Minute), 2, 4, 5)
	if err := p.Handle(ctx, m); err != nil {
		t.Fatal(err)
	}
	got := notes(t, rec.Messages())
	want := []string{
		"sub-a R1 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z", // only the change under 3
		"sub-b R1 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z", // 1 day look-ahead: day 1 (33 h) is outside
	}
	if !slices.Equal(got, want) {
		t.Fatalf("notifications\n got %v\nwant %v", got, want)
	}
	// One availability.changed per changed window (2), and one
	// notification.produced per notification (2).
	history := map[string]int{}
	for _, msg := range rec.Messages() {
		if msg.Topic == schemas.TopicHistory {
			var env schemas.Envelope
			if err := json.Unmarshal(msg.Value, &env); err != nil {
				t.Fatal(err)
			}
			history[env.Type]++
		}
	}
	if history[schemas.HistoryAvailabilityChanged] != 2 || history[schemas.HistoryNotificationProduced] != 2 || len(history) != 2 {
		t.Fatalf("history events = %v, want 2 availability.changed and 2 notification.produced", history)
	}
	// Redelivery: the state already has it, nothing more.
	rec.Reset()
	if err := p.Handle(ctx, m); err != nil {
		t.Fatal(err)
	}
	if len(rec.Messages()) != 0 {
		t.Fatalf("redelivery published %d", len(rec.Messages()))
	}
	// An older snapshot is skipped.
	if err := p.Handle(ctx, snapshotMsg(t, "R1", t0.Add(30*time.Second), 9, 9, 9)); err != nil || len(rec.Messages()) != 0 {
		t.Fatalf("older snapshot: err %v, published %d", err, len(rec.Messages()))
	}
	// R2 is bound to chan-b only.
	if err := p.Handle(ctx, snapshotMsg(t, "R2", t0, 5)); err != nil {
		t.Fatal(err)
	}
	if err := p.Handle(ctx, snapshotMsg(t, "R2", t0.Add(time.Minute), 1)); err != nil {
		t.Fatal(err)
	}
	if got := notes(t, rec.Messages()); !slices.Equal(got, []string{"sub-b R2 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z"}) {
		t.Fatalf("R2: %v", got)
	}
}

func TestNotificationIDs_AreDeterministic(t *testing.T) {
	run := func() []string {
		rec := &catalogtest.Recorder{}
		p := availchange.New(availchange.Options{Redis: redisClient(t), Bindings: world{}, Subscribers: world{}, Rules: world{},
			Publisher: rec, Clock: func() time.Time { return t0 }})
		_ = p.Handle(context.Background(), snapshotMsg(t, "R1", t0, 5))
		_ = p.Handle(context.Background(), snapshotMsg(t, "R1", t0.Add(time.Minute), 0))
		var ids []string
		for _, m := range rec.Messages() {
			var env struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(m.Value, &env)
			ids = append(ids, env.ID)
		}
		return ids
	}
	a, b := run(), run()
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Fatalf("ids differ between runs: %v vs %v", a, b)
	}
}

// TestRun_EndToEndThroughTheBroker: snapshots published to the embedded
// broker are consumed by the processor in its group, and the notification
// reaches the notifications topic.
func TestRun_EndToEndThroughTheBroker(t *testing.T) {
	rdb := redisClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	brokers, producer := startStreams(t, ctx)
	p := availchange.New(availchange.Options{Brokers: brokers, Redis: rdb, Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: producer, Clock: func() time.Time { return t0 }})
	testharness.RunInBackground(t, "processor", 30*time.Second, p.Run)

	var mu sync.Mutex
	var got []schemas.Notification
	followCtx, stopFollow := context.WithCancel(ctx)
	followDone := make(chan struct{})
	go func() {
		defer close(followDone)
		_ = stream.Follow(followCtx, brokers, schemas.TopicNotifications, func(m stream.Message) error {
			n, err := schemas.DecodeNotification(m.Value)
			if err == nil {
				mu.Lock()
				got = append(got, n)
				mu.Unlock()
			}
			return nil
		})
	}()
	t.Cleanup(func() { stopFollow(); <-followDone })

	if err := producer.Publish(ctx, snapshotMsg(t, "R1", t0, 5), snapshotMsg(t, "R1", t0.Add(time.Minute), 1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d notifications, want 2 (sub-a, sub-b)", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	subs := []string{got[0].Subscriber, got[1].Subscriber}
	slices.Sort(subs)
	if !slices.Equal(subs, []string{"sub-a", "sub-b"}) || got[0].Type != schemas.TypeAvailability {
		t.Fatalf("notifications %+v", got)
	}
}

func pushMsg(t *testing.T, version int64, caps ...int) stream.Message {
	t.Helper()
	return pushOf(t, "P1", "R1", version, caps...)
}

// pushOf is an operator's push of S1's product pid, rate rid.
func pushOf(t *testing.T, pid, rid string, version int64, caps ...int) stream.Message {
	t.Helper()
	set := catalog.AvailabilitySet{SupplierID: "S1", ProductID: pid, RateID: rid, Version: version}
	for i, c := range caps {
		set.Availabilities = append(set.Availabilities, catalog.Availability{ID: "a", Start: h(9 + 24*i), End: h(11 + 24*i), Capacity: c})
	}
	ev := catalog.Event{Kind: schemas.CatalogKindAvailability, SupplierID: "S1", ProductID: pid, RateID: rid, Availability: &set}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	id := "push-" + string(rune('0'+version))
	if pid != "P1" || rid != "R1" {
		id = "push-" + pid + "-" + rid + "-" + strconv.FormatInt(version, 10)
	}
	env := schemas.Envelope{ID: id, Type: schemas.CatalogEventType(schemas.CatalogKindAvailability, false),
		Key: ev.EntityKey(), Version: version, Time: t0, Data: data}
	b, _ := json.Marshal(env)
	return stream.Message{Topic: schemas.TopicAvailability, Key: []byte(env.Key), Value: b}
}

func TestHandle_OperatorPushesAreDiffedToo(t *testing.T) {
	rec := &catalogtest.Recorder{}
	p := availchange.New(availchange.Options{Redis: redisClient(t), Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: rec, Clock: func() time.Time { return t0 }})
	ctx := context.Background()
	if err := p.Handle(ctx, pushMsg(t, 1, 5, 5)); err != nil {
		t.Fatal(err)
	}
	// Version 2 drops the second day's window: it went to 0.
	if err := p.Handle(ctx, pushMsg(t, 2, 5)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"sub-a R1 2026-11-23T09:00:00Z 2026-11-23T11:00:00Z", // 0 < 3; sub-b's 1-day look-ahead ends before 33 h
	}
	if got := notes(t, rec.Messages()); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestHandleBatch_CountsDecodesByPath: a record the hand-written reader
// takes counts as fast, one it leaves to encoding/json (here an escaped
// id) as slow, so a producer whose records change shape shows.
func TestHandleBatch_CountsDecodesByPath(t *testing.T) {
	reg := prometheus.NewRegistry()
	p := availchange.New(availchange.Options{Redis: redisClient(t), Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: &catalogtest.Recorder{}, Clock: func() time.Time { return t0 }, Registerer: reg})
	slow := pushMsg(t, 2, 4)
	slow.Value = bytes.Replace(slow.Value, []byte(`"id":"push-2"`), []byte(`"id":"push-\u0032"`), 1)
	if err := p.HandleBatch(context.Background(), []stream.Message{pushMsg(t, 1, 5), slow, {Topic: schemas.TopicAvailability}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "switchback_availability_decodes_total" {
			for _, m := range mf.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if got["fast"] != 1 || got["slow"] != 1 {
		t.Fatalf("decodes by path %v, want fast 1 and slow 1 (the empty record is none)", got)
	}
}

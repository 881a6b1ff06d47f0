package catalogredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
)

// gatedPublisher holds the first Publish until released, so that the
// pushes arriving meanwhile queue behind it (the group commit's batch).
type gatedPublisher struct {
	recorder
	mu      sync.Mutex // guards calls
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	calls   int
}

func newGatedPublisher() *gatedPublisher {
	return &gatedPublisher{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedPublisher) Publish(ctx context.Context, msgs ...stream.Message) error {
	g.once.Do(func() { close(g.entered); <-g.release })
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	return g.recorder.Publish(ctx, msgs...)
}

// seedRates creates supplier s1 of opA with product p1 and rates r0…r(n-1).
func seedRates(t *testing.T, s *Store, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s1", "Seed")); err != nil {
		t.Fatal(err)
	}
	var pin catalog.ProductInput
	mustUnmarshal(t, `{"id":"p1","name":"P","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`, &pin)
	if _, err := s.CreateProduct(ctx, opA, "s1", pin); err != nil {
		t.Fatal(err)
	}
	var rins []catalog.RateInput
	for i := range n {
		var rin catalog.RateInput
		mustUnmarshal(t, fmt.Sprintf(`{"id":"r%d","name":"Rate","cancelable":true,"holdable":true,"holdablePeriod":900,"maxTravelers":10,"minTravelers":1,"prices":[]}`, i), &rin)
		rins = append(rins, rin)
	}
	if _, err := s.UpsertRates(ctx, opA, "s1", "p1", rins); err != nil {
		t.Fatal(err)
	}
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}

func window(capacity int) []catalog.Availability {
	// Within the window of dates the API accepts (internal/bounds).
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 1, 1).Add(9 * time.Hour)
	return []catalog.Availability{{ID: "w", Start: start, End: start.Add(2 * time.Hour), Capacity: capacity}}
}

// waitQueued polls until n pushes of sid wait behind the running batch.
func waitQueued(t *testing.T, s *Store, sid string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		q := s.availQueueOf(sid)
		q.mu.Lock()
		got := 0
		for _, w := range q.pending {
			if w.sid == sid {
				got++
			}
		}
		q.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pushes queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPutAvailabilities_ConcurrentPushesOfOneSupplierAreWrittenInOneBatchInOrder(t *testing.T) {
	s, _, _ := newStore(t)
	s.lockWait = 5 * time.Second
	seedRates(t, s, 10)
	gp := newGatedPublisher()
	s.pub = gp
	ctx := context.Background()

	// The first push holds the publish; 99 more arrive meanwhile.
	const pushes = 100
	type result struct {
		set catalog.AvailabilitySet
		err error
	}
	results := make([]result, pushes)
	var wg sync.WaitGroup
	wg.Go(func() {
		set, err := s.PutAvailabilities(ctx, opA, "s1", "p1", "r0", window(0))
		results[0] = result{set, err}
	})
	<-gp.entered
	for i := 1; i < pushes; i++ {
		wg.Go(func() {
			set, err := s.PutAvailabilities(ctx, opA, "s1", "p1", fmt.Sprintf("r%d", i%10), window(i))
			results[i] = result{set, err}
		})
	}
	waitQueued(t, s, "s1", pushes-1)
	close(gp.release)
	wg.Wait()

	for i, r := range results {
		if r.err != nil {
			t.Fatalf("push %d: %v", i, r.err)
		}
		if got := r.set.Availabilities[0].Capacity; got != i {
			t.Fatalf("push %d answered capacity %d", i, got)
		}
	}
	if gp.calls != 2 {
		t.Fatalf("%d publishes for %d pushes, want 2 (the first alone, then one batch)", gp.calls, pushes)
	}
	// Per rate: versions 1, 2, … in the topic's order, each answer's
	// version the one of its event, and the view holds the last.
	envs := gp.Envelopes(t)
	if len(envs) != pushes {
		t.Fatalf("%d events, want %d", len(envs), pushes)
	}
	last := map[string]int64{}
	capOf := map[string]int{} // rate/version -> capacity of its event
	for _, env := range envs {
		ev, err := catalog.DecodeEvent(env)
		if err != nil {
			t.Fatal(err)
		}
		if env.Version != last[ev.RateID]+1 {
			t.Fatalf("rate %s: version %d after %d", ev.RateID, env.Version, last[ev.RateID])
		}
		last[ev.RateID] = env.Version
		capOf[fmt.Sprint(ev.RateID, "/", env.Version)] = ev.Availability.Availabilities[0].Capacity
	}
	for i, r := range results {
		if got := capOf[fmt.Sprint(r.set.RateID, "/", r.set.Version)]; got != i {
			t.Fatalf("push %d answered version %d, whose event has capacity %d", i, r.set.Version, got)
		}
	}
	for i := range 10 {
		rid := fmt.Sprintf("r%d", i)
		got, err := s.Availabilities(ctx, admin, "s1", "p1", rid)
		if err != nil {
			t.Fatal(err)
		}
		want := capOf[fmt.Sprint(rid, "/", last[rid])]
		if got.Version != last[rid] || got.Availabilities[0].Capacity != want {
			t.Fatalf("rate %s: view has v%d capacity %d, want v%d capacity %d", rid, got.Version, got.Availabilities[0].Capacity, last[rid], want)
		}
	}
}

func TestPutAvailabilities_EachPushOfABatchIsAnsweredOnItsOwn(t *testing.T) {
	s, _, _ := newStore(t)
	s.lockWait = 5 * time.Second
	seedRates(t, s, 3)
	ctx := context.Background()
	for _, rid := range []string{"r1", "r2"} {
		if _, err := s.PutAvailabilities(ctx, opA, "s1", "p1", rid, window(5)); err != nil {
			t.Fatal(err)
		}
	}
	gp := newGatedPublisher()
	s.pub = gp
	opB := catalog.ScopeOf(principals.Principal{ID: "op-b", Role: principals.RoleOperator})

	var wg sync.WaitGroup
	wg.Go(func() { _, _ = s.PutAvailabilities(ctx, opA, "s1", "p1", "r0", window(1)) })
	<-gp.entered
	tests := []struct {
		name    string
		p       catalog.Scope
		rid     string
		cap     int
		wantErr error
	}{
		{"another operator's push is not found", opB, "r0", 7, catalog.ErrNotFound},
		{"an unknown rate is not found", opA, "nope", 7, catalog.ErrNotFound},
		{"the same state again writes nothing", opA, "r1", 5, nil},
		{"a change is written", opA, "r2", 6, nil},
	}
	errs := make([]error, len(tests))
	for i, tt := range tests {
		wg.Go(func() { _, errs[i] = s.PutAvailabilities(ctx, tt.p, "s1", "p1", tt.rid, window(tt.cap)) })
	}
	waitQueued(t, s, "s1", len(tests))
	close(gp.release)
	wg.Wait()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(errs[i], tt.wantErr) && !(tt.wantErr == nil && errs[i] == nil) {
				t.Fatalf("err %v, want %v", errs[i], tt.wantErr)
			}
		})
	}
	// Two events: the held first push and the one change.
	envs := gp.Envelopes(t)
	if len(envs) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(envs), envs)
	}
	got, err := s.Availabilities(ctx, admin, "s1", "p1", "r2")
	if err != nil || got.Availabilities[0].Capacity != 6 || got.Version != 2 {
		t.Fatalf("r2: %+v %v, want capacity 6 at version 2", got, err)
	}
	got, err = s.Availabilities(ctx, admin, "s1", "p1", "r1")
	if err != nil || got.Availabilities[0].Capacity != 5 || got.Version != 1 {
		t.Fatalf("r1: %+v %v, want capacity 5 still at version 1", got, err)
	}
}

func TestPutAvailabilities_ALockedSupplierWaitsWhileOthersAreWritten(t *testing.T) {
	s, rec, _ := newStore(t)
	s.lockWait = 5 * time.Second
	seedRates(t, s, 1)
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn("s2", "Other")); err != nil {
		t.Fatal(err)
	}
	var pin catalog.ProductInput
	mustUnmarshal(t, `{"id":"p1","name":"P","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`, &pin)
	if _, err := s.CreateProduct(ctx, opA, "s2", pin); err != nil {
		t.Fatal(err)
	}
	var rin catalog.RateInput
	mustUnmarshal(t, `{"id":"r0","name":"Rate","cancelable":true,"holdable":true,"holdablePeriod":900,"maxTravelers":10,"minTravelers":1,"prices":[]}`, &rin)
	if _, err := s.CreateRate(ctx, opA, "s2", "p1", rin); err != nil {
		t.Fatal(err)
	}
	// Another write holds s2's lock.
	tx, err := s.lockSupplier(ctx, opA, "s2", true)
	if err != nil {
		t.Fatal(err)
	}
	before := len(rec.Envelopes(t))
	s2done := make(chan error, 1)
	go func() {
		_, err := s.PutAvailabilities(ctx, opA, "s2", "p1", "r0", window(2))
		s2done <- err
	}()
	if _, err := s.PutAvailabilities(ctx, opA, "s1", "p1", "r0", window(1)); err != nil {
		t.Fatalf("s1's push behind s2's lock: %v", err)
	}
	select {
	case err := <-s2done:
		t.Fatalf("s2's push answered (%v) while its supplier was locked", err)
	default:
	}
	s.release(ctx, tx.lock)
	if err := <-s2done; err != nil {
		t.Fatalf("s2's push after the lock was released: %v", err)
	}
	if got := len(rec.Envelopes(t)) - before; got != 2 {
		t.Fatalf("%d events, want 2", got)
	}

	// Held past the lock wait: 503, nothing written.
	s.lockWait = 100 * time.Millisecond
	tx, err = s.lockSupplier(ctx, opA, "s2", true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.release(ctx, tx.lock)
	if _, err := s.PutAvailabilities(ctx, opA, "s2", "p1", "r0", window(3)); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("push to a supplier locked past the wait: %v, want ErrUnavailable", err)
	}
}

// firstGatedPublisher holds its first Publish until released and lets the
// others through meanwhile (gatedPublisher's sync.Once would hold them too).
type firstGatedPublisher struct {
	recorder
	started atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *firstGatedPublisher) Publish(ctx context.Context, msgs ...stream.Message) error {
	if g.started.CompareAndSwap(false, true) {
		close(g.entered)
		<-g.release
	}
	return g.recorder.Publish(ctx, msgs...)
}

// seedSupplier creates supplier sid of opA with product p1 and rate r0.
func seedSupplier(t *testing.T, s *Store, sid string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateSupplier(ctx, opA, supplierIn(sid, "Other")); err != nil {
		t.Fatal(err)
	}
	var pin catalog.ProductInput
	mustUnmarshal(t, `{"id":"p1","name":"P","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`, &pin)
	if _, err := s.CreateProduct(ctx, opA, sid, pin); err != nil {
		t.Fatal(err)
	}
	var rin catalog.RateInput
	mustUnmarshal(t, `{"id":"r0","name":"Rate","cancelable":true,"holdable":true,"holdablePeriod":900,"maxTravelers":10,"minTravelers":1,"prices":[]}`, &rin)
	if _, err := s.CreateRate(ctx, opA, sid, "p1", rin); err != nil {
		t.Fatal(err)
	}
}

// TestPutAvailabilities_AnotherQueuesBatchIsWrittenMeanwhile: while one
// batch waits for its publish, a supplier of another queue is written and
// answered; a push of the waiting batch's supplier queues behind it (one
// queue per supplier: its order is kept).
func TestPutAvailabilities_AnotherQueuesBatchIsWrittenMeanwhile(t *testing.T) {
	s, _, _ := newStore(t)
	s.lockWait = 5 * time.Second
	seedRates(t, s, 2)
	other := ""
	for i := 2; i < 100 && other == ""; i++ {
		if sid := fmt.Sprintf("s%d", i); s.availQueueOf(sid) != s.availQueueOf("s1") {
			other = sid
		}
	}
	if other == "" {
		t.Fatal("no supplier id in another queue than s1's")
	}
	seedSupplier(t, s, other)
	gp := &firstGatedPublisher{entered: make(chan struct{}), release: make(chan struct{})}
	s.pub = gp
	ctx := context.Background()

	first := make(chan error, 1)
	go func() {
		_, err := s.PutAvailabilities(ctx, opA, "s1", "p1", "r0", window(1))
		first <- err
	}()
	<-gp.entered // s1's batch holds its publish
	second := make(chan error, 1)
	go func() {
		_, err := s.PutAvailabilities(ctx, opA, "s1", "p1", "r1", window(2))
		second <- err
	}()
	waitQueued(t, s, "s1", 1)
	set, err := s.PutAvailabilities(ctx, opA, other, "p1", "r0", window(3))
	if err != nil {
		t.Fatalf("%s's push while s1's batch publishes: %v", other, err)
	}
	if set.Version != 1 || len(set.Availabilities) != 1 || set.Availabilities[0].Capacity != 3 {
		t.Fatalf("%s's push answered %+v", other, set)
	}
	select {
	case err := <-first:
		t.Fatalf("s1's push answered (%v) while its publish was held", err)
	case err := <-second:
		t.Fatalf("s1's second push answered (%v) before the first's batch", err)
	default:
	}
	close(gp.release)
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatalf("s1's push after the release: %v", err)
		}
	}
	envs := gp.Envelopes(t)
	var order []string
	for _, e := range envs {
		order = append(order, e.Key)
	}
	if len(order) != 3 || !strings.HasPrefix(order[0], other+"/") || !strings.HasSuffix(order[1], "/r0") || !strings.HasSuffix(order[2], "/r1") {
		t.Fatalf("published in the order %v, want %s's push, then s1's r0, then s1's r1", order, other)
	}
}

package availchange_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/processors/availchange"
	"github.com/switchbackhq/switchback/schemas"
)

var prefixes atomic.Int64

// newProc returns a processor with state keys of its own on rdb.
func newProc(rdb redis.UniversalClient, pub stream.Publisher) (*availchange.Processor, string) {
	prefix := fmt.Sprintf("t%d:", prefixes.Add(1))
	return availchange.New(availchange.Options{Redis: rdb, Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: pub, Clock: func() time.Time { return t0 }, KeyPrefix: prefix}), prefix
}

// wire is a published message as compared between runs.
func wire(msgs []stream.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Topic + " " + string(m.Key) + " " + string(m.Value)
	}
	return out
}

// byRate keeps, per rate, the order of what was published about it
// (notification entity key, or the history event's rateId; the
// notification.produced events follow their notification's).
func byRate(t *testing.T, msgs []stream.Message) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, m := range msgs {
		var probe struct {
			EntityKey string `json:"entityKey"`
			Data      struct {
				RateID    string `json:"rateId"`
				EntityKey string `json:"entityKey"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m.Value, &probe); err != nil {
			t.Fatal(err)
		}
		k := probe.EntityKey + probe.Data.EntityKey
		if probe.Data.RateID != "" {
			k = "S1/P1/" + probe.Data.RateID
		}
		out[k] = append(out[k], m.Topic+" "+string(m.Value))
	}
	return out
}

// states returns every saved rate state under prefix, by rate key.
func states(t *testing.T, rdb redis.UniversalClient, prefix string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	keys, err := testharness.Keys(ctx, rdb, prefix+"avstate:*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, k := range keys {
		b, err := rdb.Get(ctx, k).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(k, prefix)] = b
	}
	return out
}

func TestHandleBatch_SameResultsAsHandle(t *testing.T) {
	rdb := redisClient(t)
	m := func(rid string, minute int, caps ...int) stream.Message {
		return snapshotMsg(t, rid, t0.Add(time.Duration(minute)*time.Minute), caps...)
	}
	tests := []struct {
		name  string
		msgs  func() []stream.Message
		sizes []int // batch sizes to compare with one by one
	}{
		{"baseline then changes of one rate", func() []stream.Message {
			return []stream.Message{m("R1", 0, 5, 5, 5), m("R1", 1, 2, 4, 5), m("R1", 2, 0, 4), m("R1", 3, 1, 1, 1)}
		}, []int{4, 2, 3}},
		{"two rates interleaved", func() []stream.Message {
			return []stream.Message{m("R1", 0, 5, 5), m("R2", 0, 5), m("R1", 1, 2, 5), m("R2", 1, 1), m("R2", 2, 9), m("R1", 2, 2, 0)}
		}, []int{6, 4, 1}},
		{"older and redelivered events inside the batch", func() []stream.Message {
			return []stream.Message{m("R1", 0, 5, 5), m("R1", 2, 1, 5), m("R1", 1, 9, 9), m("R1", 2, 1, 5), m("R1", 3, 5, 5)}
		}, []int{5, 2}},
		{"pushes and snapshots of one rate", func() []stream.Message {
			return []stream.Message{pushMsg(t, 1, 5, 5), pushMsg(t, 2, 5), m("R1", 0, 1, 5), pushMsg(t, 1, 9, 9), pushMsg(t, 3, 0, 0, 7)}
		}, []int{5, 3}},
		{"many rates: a batch diffed on every core", func() []stream.Message {
			var out []stream.Message
			for round := range 4 {
				for i := range 80 {
					out = append(out, m("R"+strconv.Itoa(i), round, 5, (i+round)%4, 5))
				}
			}
			return out
		}, []int{320, 100, 33}},
		{"unusable records are skipped", func() []stream.Message {
			return []stream.Message{m("R1", 0, 5), {Topic: schemas.TopicAvailability, Value: []byte("{nope")}, {}, m("R1", 1, 2)}
		}, []int{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			one := &catalogtest.Recorder{}
			p1, prefix1 := newProc(rdb, one)
			for _, msg := range tt.msgs() {
				if err := p1.Handle(context.Background(), msg); err != nil {
					t.Fatal(err)
				}
			}
			if len(notes(t, one.Messages())) == 0 {
				t.Fatal("the sequence notifies nobody: it proves nothing")
			}
			for _, size := range tt.sizes {
				t.Run(fmt.Sprintf("batches of %d", size), func(t *testing.T) {
					batched := &catalogtest.Recorder{}
					pb, prefixB := newProc(rdb, batched)
					for chunk := range slices.Chunk(tt.msgs(), size) {
						if err := pb.HandleBatch(context.Background(), chunk); err != nil {
							t.Fatal(err)
						}
					}
					a, b := wire(one.Messages()), wire(batched.Messages())
					slices.Sort(a)
					slices.Sort(b)
					if !slices.Equal(a, b) {
						t.Fatalf("published\n one by one %d: %v\n batched %d: %v", len(a), a, len(b), b)
					}
					ra, rb := byRate(t, one.Messages()), byRate(t, batched.Messages())
					for k := range ra {
						if !slices.Equal(ra[k], rb[k]) {
							t.Errorf("order of %s differs", k)
						}
					}
					sa, sb := states(t, rdb, prefix1), states(t, rdb, prefixB)
					if len(sa) == 0 || len(sa) != len(sb) {
						t.Errorf("saved %d states one by one, %d batched", len(sa), len(sb))
					}
					for rid := range sa {
						if !bytes.Equal(sa[rid], sb[rid]) {
							t.Errorf("saved state of %s differs:\n one by one %q\n batched %q", rid, sa[rid], sb[rid])
						}
					}
				})
			}
		})
	}
}

func TestHandleBatch_TwoSnapshotsOfOneRateChain(t *testing.T) {
	rec := &catalogtest.Recorder{}
	p, _ := newProc(redisClient(t), rec)
	// The second sees the first's state: the first is the baseline.
	batch := []stream.Message{snapshotMsg(t, "R1", t0, 5, 5, 5), snapshotMsg(t, "R1", t0.Add(time.Minute), 2, 4, 5)}
	if err := p.HandleBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"sub-a R1 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z",
		"sub-b R1 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z",
	}
	if got := notes(t, rec.Messages()); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestHandleBatch_RedeliveryIsIdempotent(t *testing.T) {
	rdb := redisClient(t)
	rec := &catalogtest.Recorder{}
	p, prefix := newProc(rdb, rec)
	ctx := context.Background()
	if err := p.HandleBatch(ctx, []stream.Message{snapshotMsg(t, "R1", t0, 5, 5), snapshotMsg(t, "R2", t0, 5)}); err != nil {
		t.Fatal(err)
	}
	batch := []stream.Message{snapshotMsg(t, "R1", t0.Add(time.Minute), 1, 5), snapshotMsg(t, "R2", t0.Add(time.Minute), 0)}
	if err := p.HandleBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if len(notes(t, rec.Messages())) == 0 {
		t.Fatal("the batch notified nobody")
	}
	before := states(t, rdb, prefix)
	rec.Reset()
	if err := p.HandleBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Messages()); n != 0 {
		t.Fatalf("redelivered batch published %d messages", n)
	}
	after := states(t, rdb, prefix)
	for rid := range before {
		if !bytes.Equal(before[rid], after[rid]) {
			t.Errorf("state of %s changed on redelivery", rid)
		}
	}
}

func TestHandleBatch_OlderVersionsAreSkipped(t *testing.T) {
	tests := []struct {
		name  string
		batch func() []stream.Message
		want  []string
	}{
		{"older after newer in one batch", func() []stream.Message {
			return []stream.Message{snapshotMsg(t, "R1", t0.Add(2*time.Minute), 5), snapshotMsg(t, "R1", t0.Add(time.Minute), 1)}
		}, nil},
		{"older push after newer push", func() []stream.Message {
			return []stream.Message{pushMsg(t, 2, 5), pushMsg(t, 1, 1)}
		}, nil},
		{"sources are versioned apart", func() []stream.Message {
			// A push's catalog version 1 is not older than a snapshot's
			// retrieved time: it is diffed.
			return []stream.Message{snapshotMsg(t, "R1", t0.Add(time.Minute), 5), pushMsg(t, 1, 1)}
		}, []string{"sub-a R1 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z", "sub-b R1 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &catalogtest.Recorder{}
			p, _ := newProc(redisClient(t), rec)
			if err := p.HandleBatch(context.Background(), tt.batch()); err != nil {
				t.Fatal(err)
			}
			if got := notes(t, rec.Messages()); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// crashing records what is published, then fails as a process that died
// after the broker's ack and before the state was saved.
type crashing struct {
	catalogtest.Recorder
	crash atomic.Bool
}

func (c *crashing) Publish(ctx context.Context, msgs ...stream.Message) error {
	if err := c.Recorder.Publish(ctx, msgs...); err != nil {
		return err
	}
	if c.crash.Load() {
		return errors.New("crashed after the publish")
	}
	return nil
}

func TestHandleBatch_CrashBetweenPublishAndSaveRedoesTheSameIDs(t *testing.T) {
	rdb := redisClient(t)
	pub := &crashing{}
	p, prefix := newProc(rdb, pub)
	ctx := context.Background()
	if err := p.HandleBatch(ctx, []stream.Message{snapshotMsg(t, "R1", t0, 5, 5), snapshotMsg(t, "R2", t0, 5)}); err != nil {
		t.Fatal(err)
	}
	saved := states(t, rdb, prefix)
	batch := []stream.Message{snapshotMsg(t, "R1", t0.Add(time.Minute), 1, 5), snapshotMsg(t, "R2", t0.Add(time.Minute), 0)}
	pub.crash.Store(true)
	if err := p.HandleBatch(ctx, batch); err == nil {
		t.Fatal("the crash was not reported")
	}
	first := wire(pub.Messages())
	if len(first) == 0 {
		t.Fatal("nothing published before the crash")
	}
	for rid, b := range states(t, rdb, prefix) {
		if !bytes.Equal(b, saved[rid]) {
			t.Fatalf("state of %s saved despite the crash", rid)
		}
	}
	// The restarted processor redoes the batch: the same messages, ids
	// included.
	pub.Reset()
	pub.crash.Store(false)
	p2 := availchange.New(availchange.Options{Redis: rdb, Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: pub, Clock: func() time.Time { return t0 }, KeyPrefix: prefix})
	if err := p2.HandleBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if again := wire(pub.Messages()); !slices.Equal(first, again) {
		t.Fatalf("redo published other messages\n first %v\n again %v", first, again)
	}
}

// racing makes another writer apply a newer snapshot of R1 while the batch
// is being published, as a second consumer would during a rebalance.
type racing struct {
	catalogtest.Recorder
	once  sync.Once
	other func() error
	err   error
}

func (r *racing) Publish(ctx context.Context, msgs ...stream.Message) error {
	r.once.Do(func() { r.err = r.other() })
	if r.err != nil {
		return r.err
	}
	return r.Recorder.Publish(ctx, msgs...)
}

func TestHandleBatch_ConflictingRateIsRedoneAgainstTheOtherWritersState(t *testing.T) {
	rdb := redisClient(t)
	ctx := context.Background()
	pub := &racing{}
	p, prefix := newProc(rdb, pub)
	other := availchange.New(availchange.Options{Redis: rdb, Bindings: world{}, Subscribers: world{}, Rules: world{},
		Publisher: &catalogtest.Recorder{}, Clock: func() time.Time { return t0 }, KeyPrefix: prefix})
	pub.once.Do(func() {}) // not during the baseline
	if err := p.HandleBatch(ctx, []stream.Message{snapshotMsg(t, "R1", t0, 5, 5), snapshotMsg(t, "R2", t0, 5)}); err != nil {
		t.Fatal(err)
	}
	pub.once = sync.Once{}
	pub.other = func() error { return other.Handle(ctx, snapshotMsg(t, "R1", t0.Add(5*time.Minute), 7, 7)) }
	if err := p.HandleBatch(ctx, []stream.Message{snapshotMsg(t, "R1", t0.Add(time.Minute), 1, 5), snapshotMsg(t, "R2", t0.Add(time.Minute), 0)}); err != nil {
		t.Fatal(err)
	}
	// R1's redo finds the other writer's newer version: its event is
	// older now, and the other writer's state stays.
	ref, refPrefix := newProc(rdb, &catalogtest.Recorder{})
	for _, m := range []stream.Message{snapshotMsg(t, "R1", t0, 5, 5), snapshotMsg(t, "R1", t0.Add(5*time.Minute), 7, 7),
		snapshotMsg(t, "R2", t0, 5), snapshotMsg(t, "R2", t0.Add(time.Minute), 0)} {
		if err := ref.Handle(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	got, want := states(t, rdb, prefix), states(t, rdb, refPrefix)
	for rid := range want {
		if !bytes.Equal(got[rid], want[rid]) {
			t.Errorf("state of %s: got %q, want %q", rid, got[rid], want[rid])
		}
	}
}

func TestHandleBatch_ReadsTheJSONStateOfEarlierVersions(t *testing.T) {
	rdb := redisClient(t)
	rec := &catalogtest.Recorder{}
	p, prefix := newProc(rdb, rec)
	// What the processor saved before the compact encoding: R1 had 5
	// vacancies at 9-11 h, seen by a snapshot covering [0, 72 h).
	old := fmt.Sprintf(`{"slots":[{"s":%q,"e":%q,"v":5}],"cov":[{"f":%q,"t":%q}],"ver":{"partner":%d}}`,
		h(9).Format(time.RFC3339Nano), h(11).Format(time.RFC3339Nano), t0.Format(time.RFC3339Nano), h(72).Format(time.RFC3339Nano), t0.UnixNano())
	if err := rdb.Set(context.Background(), prefix+"avstate:{S1}:P1:R1", old, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.HandleBatch(context.Background(), []stream.Message{snapshotMsg(t, "R1", t0.Add(time.Minute), 1, 2)}); err != nil {
		t.Fatal(err)
	}
	// Day 0 went from 5 to 1; day 1 appeared with 2 inside covered time
	// (sub-a: both under 3, coalesced; sub-b: day 0 only, 1-day look-ahead).
	want := []string{
		"sub-a R1 2026-11-22T09:00:00Z 2026-11-23T11:00:00Z",
		"sub-b R1 2026-11-22T09:00:00Z 2026-11-22T11:00:00Z",
	}
	if got := notes(t, rec.Messages()); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	b, _ := rdb.Get(context.Background(), prefix+"avstate:{S1}:P1:R1").Bytes()
	if len(b) == 0 || strings.HasPrefix(string(b), "{") {
		t.Fatalf("state not rewritten in the compact form: %q", b)
	}
}

// countingWorld is world counting its bindings reads.
type countingWorld struct {
	world
	mu    sync.Mutex
	calls [][]catalog.ProductRef
}

func (c *countingWorld) BindingsOf(ctx context.Context, products []catalog.ProductRef) ([][]catalog.Binding, error) {
	c.mu.Lock()
	c.calls = append(c.calls, slices.Clone(products))
	c.mu.Unlock()
	return c.world.BindingsOf(ctx, products)
}

func TestHandleBatch_ReadsEveryProductsBindingsInOneCall(t *testing.T) {
	rdb := redisClient(t)
	rec := &catalogtest.Recorder{}
	cw := &countingWorld{}
	p := availchange.New(availchange.Options{Redis: rdb, Bindings: cw, Subscribers: world{}, Rules: world{},
		Publisher: rec, Clock: func() time.Time { return t0 }, KeyPrefix: fmt.Sprintf("t%d:", prefixes.Add(1))})
	var batch []stream.Message
	for i := range 40 { // more than minPerWorker: the rates are diffed in parallel
		pid := "P" + strconv.Itoa(1+i%5)
		batch = append(batch, pushOf(t, pid, "R"+strconv.Itoa(1+i/5), 1, 5, 5), pushOf(t, pid, "R"+strconv.Itoa(1+i/5), 2, 1, 5))
	}
	if err := p.HandleBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if len(cw.calls) != 1 {
		t.Fatalf("bindings read in %d calls, want 1: %v", len(cw.calls), cw.calls)
	}
	want := []catalog.ProductRef{{SupplierID: "S1", ProductID: "P1"}, {SupplierID: "S1", ProductID: "P2"}, {SupplierID: "S1", ProductID: "P3"}, {SupplierID: "S1", ProductID: "P4"}, {SupplierID: "S1", ProductID: "P5"}}
	got := slices.Clone(cw.calls[0])
	slices.SortFunc(got, func(a, b catalog.ProductRef) int { return strings.Compare(a.ProductID, b.ProductID) })
	if !slices.Equal(got, want) {
		t.Fatalf("bindings read for %v, want each product once: %v", got, want)
	}
	// Each rate's second push notifies the subscribers its product's
	// bindings (read in that one call) and their rules reach: chan-a binds
	// R1 of each product (sub-a: 5 rates), chan-b every rate (sub-b: 40;
	// sub-c's rule keeps P2: 8).
	perSub := map[string]int{}
	for _, n := range notes(t, rec.Messages()) {
		perSub[strings.Fields(n)[0]]++
	}
	if want := map[string]int{"sub-a": 5, "sub-b": 40, "sub-c": 8}; !maps.Equal(perSub, want) {
		t.Fatalf("notifications per subscriber %v, want %v", perSub, want)
	}
}

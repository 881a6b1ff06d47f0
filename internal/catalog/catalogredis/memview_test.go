package catalogredis

import (
	"context"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// viewEnv is a catalog writing to the embedded broker and a real Redis,
// and a view following the broker: redisStore reads Redis, viewStore the
// view (while fresh).
type viewEnv struct {
	writer, redisStore, viewStore *Store
	view                          *View
}

func newViewEnv(t *testing.T, bound time.Duration) *viewEnv {
	t.Helper()
	b, err := kafkabroker.Start(t.Context(), kafkabroker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	brokers := []string{b.Addr()}
	var topics []schemas.Topic
	for _, tp := range schemas.Topics() {
		if slices.Contains(schemas.CatalogTopics(), tp.Name) {
			topics = append(topics, tp)
		}
	}
	if err := stream.EnsureTopics(t.Context(), brokers, topics); err != nil {
		t.Fatal(err)
	}
	prod := stream.NewProducer(stream.ProducerConfig{Brokers: brokers})
	t.Cleanup(func() { _ = prod.Close() })
	rdb := testharness.RedisClient(t, 0)
	view := NewView(ViewOptions{Brokers: brokers, Bound: bound, ProbeInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- view.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("view: %v", err)
		}
	})
	kr := testharness.Keyring(t)
	e := &viewEnv{
		writer:     NewStore(Options{Redis: rdb, Publisher: prod, Secrets: kr}),
		redisStore: NewStore(Options{Redis: rdb, Secrets: kr}),
		viewStore:  NewStore(Options{Redis: rdb, Secrets: kr, View: view}),
		view:       view,
	}
	e.writer.lockWait = 5 * time.Second
	return e
}

// bindOneProduct writes through w channel chan-a and supplier s1 (name v0)
// with product p1 bound to chan-a, all rates.
func bindOneProduct(t *testing.T, w *Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.CreateChannel(ctx, catalog.ChannelInput{ID: "chan-a", Name: "A", CompanyName: "Co A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CreateSupplier(ctx, admin, supplierIn("s1", "v0")); err != nil {
		t.Fatal(err)
	}
	var pin catalog.ProductInput
	mustUnmarshal(t, `{"id":"p1","name":"P","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`, &pin)
	if _, err := w.UpsertProducts(ctx, admin, "s1", []catalog.ProductInput{pin}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CreateBinding(ctx, admin, "s1", "p1", "chan-a", catalog.BindingInput{}); err != nil {
		t.Fatal(err)
	}
}

// caughtUp waits until the view holds every write acknowledged so far.
func (e *viewEnv) caughtUp(t *testing.T) {
	t.Helper()
	mark := time.Now()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if e.view.Freshness().After(mark) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the view did not catch up within 20s (freshness %v)", e.view.Freshness())
		}
	}
}

// readAll is every reseller read of a channel over the given ids, as the
// API would answer (bytes, or the error).
func readAll(ctx context.Context, s *Store, channel string, sids, pids, rids []string, now time.Time) []string {
	var out []string
	rec := func(name string, b []byte, err error) {
		if err != nil {
			out = append(out, name+" error: "+err.Error())
			return
		}
		out = append(out, name+" "+string(b))
	}
	for _, v := range []SupplierVersion{SupplierV12, SupplierV13, SupplierV13Content} {
		b, err := s.AppendSuppliers(ctx, nil, channel, v, "", "", now)
		rec(fmt.Sprint("suppliers ", v), b, err)
		b, err = s.AppendSuppliers(ctx, nil, channel, v, "", "C-s1", now)
		rec(fmt.Sprint("suppliers by code ", v), b, err)
	}
	for _, sid := range sids {
		b, err := s.AppendSupplier(ctx, nil, channel, sid, SupplierV12, now)
		rec("supplier "+sid, b, err)
		b, err = s.AppendProducts(ctx, nil, channel, sid, now)
		rec("products "+sid, b, err)
		for _, pid := range pids {
			b, err := s.AppendProduct(ctx, nil, channel, sid, pid, now)
			rec("product "+sid+"/"+pid, b, err)
			b, err = s.AppendRates(ctx, nil, channel, sid, pid, now)
			rec("rates "+sid+"/"+pid, b, err)
			for _, rid := range rids {
				b, err := s.AppendRate(ctx, nil, channel, sid, pid, rid, now)
				rec("rate "+sid+"/"+pid+"/"+rid, b, err)
				ps, err := s.ChannelPriceSchedule(ctx, channel, sid, pid, rid, time.Time{}, time.Time{}, now)
				rec("prices "+sid+"/"+pid+"/"+rid, catalogwire.MustJSON(ps), err)
			}
		}
	}
	return out
}

// TestView_AnswersAsRedisDoes: after random catalog writes (suppliers,
// products, rates, bindings with windows, rate lists and price tags, price
// schedules, deletions), every reseller read answers the same bytes from
// the process's copy of the view as from Redis.
func TestView_AnswersAsRedisDoes(t *testing.T) {
	e := newViewEnv(t, time.Hour)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	sids, pids, rids := []string{"s1", "s2", "s3"}, []string{"p1", "p2"}, []string{"r1", "r2", "r3"}
	channels := []string{"chan-a", "chan-b"}
	for _, c := range channels {
		if _, err := e.writer.CreateChannel(ctx, catalog.ChannelInput{ID: c, Name: c, CompanyName: "Co " + c}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	writes := 0
	for round := range 300 {
		sid, pid, rid := sids[rng.IntN(len(sids))], pids[rng.IntN(len(pids))], rids[rng.IntN(len(rids))]
		var err error
		switch rng.IntN(8) {
		case 0:
			_, err = e.writer.CreateSupplier(ctx, admin, supplierIn(sid, fmt.Sprint("Supplier ", round)))
			if errors.Is(err, catalog.ErrConflict) {
				_, err = e.writer.PutSupplier(ctx, admin, sid, supplierIn(sid, fmt.Sprint("Supplier ", round)))
			}
		case 1:
			var pin catalog.ProductInput
			mustUnmarshal(t, fmt.Sprintf(`{"id":%q,"name":"P %d","description":"d","timeZone":"Europe/Paris","availabilityType":"START_TIME",
"deliveryFormats":["QR_CODE"],"deliveryMethods":["TICKET"],"redemptionMethod":"DIGITAL","instantConfirmation":true}`, pid, round), &pin)
			_, err = e.writer.UpsertProducts(ctx, admin, sid, []catalog.ProductInput{pin})
		case 2, 3:
			var rin catalog.RateInput
			mustUnmarshal(t, fmt.Sprintf(`{"id":%q,"name":"R %d","cancelable":true,"holdable":true,"holdablePeriod":900,"maxTravelers":10,"minTravelers":1,
"prices":[{"id":"pr1","labels":["web"],"name":"adult","retail":{"amount":%d,"currency":"EUR"}},{"id":"pr2","labels":["agent"],"name":"child","retail":{"amount":5,"currency":"EUR"}}]}`, rid, round, 10+round), &rin)
			_, err = e.writer.UpsertRates(ctx, admin, sid, pid, []catalog.RateInput{rin})
		case 4, 5:
			in := catalog.BindingInput{}
			switch rng.IntN(4) {
			case 0:
				in.RateIDs = []string{rid}
			case 1:
				in.PriceTags = []string{"web"}
			case 2:
				in.Valid = &catalog.Validity{From: now.Add(-time.Hour), Until: now.Add(time.Hour)}
			case 3:
				in.Valid = &catalog.Validity{From: now.Add(time.Hour)} // not open yet
			}
			_, err = e.writer.PutBinding(ctx, admin, sid, pid, channels[rng.IntN(2)], in)
			if errors.Is(err, catalog.ErrNotFound) {
				_, err = e.writer.CreateBinding(ctx, admin, sid, pid, channels[rng.IntN(2)], in)
			}
		case 6:
			day := now.UTC().AddDate(0, 0, 3).Format(catalog.DateLayout)
			_, err = e.writer.PutPriceSchedule(ctx, admin, sid, pid, rid, []catalog.PriceScheduleEntry{{From: day, Until: day, Prices: []catalog.Price{
				{ID: "pp", Labels: []string{"web"}, Name: "adult", Retail: &catalog.Money{Amount: "12", Currency: "EUR"}}}}})
		case 7:
			switch rng.IntN(3) {
			case 0:
				err = e.writer.DeleteBinding(ctx, admin, sid, pid, channels[rng.IntN(2)])
			case 1:
				err = e.writer.DeleteRate(ctx, admin, sid, pid, rid)
			default:
				err = e.writer.DeleteProduct(ctx, admin, sid, pid)
			}
		}
		if err == nil {
			writes++
		}
	}
	// And every kind of removal at the end, so that the final state has
	// them whatever the random rounds did.
	final := []func() error{
		func() error {
			_, err := e.writer.PutBinding(ctx, admin, "s1", "p1", "chan-a", catalog.BindingInput{})
			return err
		},
		func() error { return e.writer.DeleteBinding(ctx, admin, "s1", "p1", "chan-a") },
		func() error { return e.writer.DeleteRate(ctx, admin, "s2", "p1", "r1") },
		func() error { return e.writer.DeleteProduct(ctx, admin, "s3", "p2") },
	}
	for _, f := range final {
		if err := f(); err == nil {
			writes++
		}
	}
	if writes < 40 {
		t.Fatalf("only %d of the random writes succeeded: the test would prove little", writes)
	}
	e.caughtUp(t)
	if !e.view.Fresh() {
		t.Fatal("the view is not fresh after catching up")
	}
	visible := 0
	for _, c := range channels {
		want := readAll(ctx, e.redisStore, c, sids, pids, rids, now)
		got := readAll(ctx, e.viewStore, c, sids, pids, rids, now)
		if len(got) != len(want) {
			t.Fatalf("%d reads from the view, %d from Redis", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("channel %s, read %d:\n view  %s\n redis %s", c, i, got[i], want[i])
			}
			if !strings.Contains(want[i], " error: ") && !strings.HasSuffix(want[i], " []") {
				visible++
			}
		}
	}
	if visible < 20 {
		t.Fatalf("only %d reads found something: the catalog is too empty to compare", visible)
	}
	t.Logf("%d random writes, %d reads compared, %d answered with data", writes, 2*len(readAll(ctx, e.redisStore, "chan-a", sids, pids, rids, now)), visible)
}

// TestView_NoStaleReadPastTheBound: an operator renames a bound supplier
// over and over while a reseller reads it through a store with a view;
// every read shows at least the last name acknowledged more than Bound
// before the read began. The view's own visibility (write acknowledged to
// applied) is logged as measured.
func TestView_NoStaleReadPastTheBound(t *testing.T) {
	const bound = 200 * time.Millisecond
	e := newViewEnv(t, bound)
	ctx := context.Background()
	bindOneProduct(t, e.writer)
	e.caughtUp(t)

	type ack struct {
		at      time.Time
		version int64
	}
	var (
		mu   sync.Mutex
		acks []ack
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sup, err := e.writer.PutSupplier(ctx, admin, "s1", supplierIn("s1", fmt.Sprint("v", i)))
			if err != nil {
				t.Errorf("rename: %v", err)
				return
			}
			mu.Lock()
			acks = append(acks, ack{time.Now(), sup.Version})
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	})
	var reads, fromView int
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		began := time.Now()
		memBefore := e.view.Fresh()
		b, err := e.viewStore.AppendSupplier(ctx, nil, "chan-a", "s1", SupplierV12, began)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Version int64 `json:"version"`
		}
		mustUnmarshal(t, string(b), &got)
		mu.Lock()
		var want int64
		for _, a := range acks {
			if a.at.Before(began.Add(-bound)) && a.version > want {
				want = a.version
			}
		}
		mu.Unlock()
		if got.Version < want {
			t.Fatalf("read at %v shows version %d, but version %d was acknowledged more than %v before", began, got.Version, want, bound)
		}
		reads++
		if memBefore {
			fromView++
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if fromView < reads/2 {
		t.Fatalf("only %d of %d reads were answered by the view: it did not keep up", fromView, reads)
	}
	t.Logf("%d reads (%d from the view), %d renames; none older than the bound of %v", reads, fromView, len(acks), bound)
}

// Whoever writes through a process reads the write back through it at
// once: the bound is for writes of other instances. (Without NoteWrite,
// a read right after a rename answered the old name from the copy, fresh
// within its bound: an operator binding a product and a reseller listing
// it through the same instance saw it missing for up to the bound.)
func TestView_ReadsItsOwnProcessWritesAtOnce(t *testing.T) {
	const bound = 2 * time.Second // long: a stale copy would answer
	e := newViewEnv(t, bound)
	// One store writing and reading, as the query tier wires it.
	e.viewStore.pub, e.viewStore.lockWait = e.writer.pub, e.writer.lockWait
	ctx := context.Background()
	bindOneProduct(t, e.viewStore)
	e.caughtUp(t)

	for i := 1; i <= 30; i++ {
		sup, err := e.viewStore.PutSupplier(ctx, admin, "s1", supplierIn("s1", fmt.Sprint("v", i)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.viewStore.AppendSupplier(ctx, nil, "chan-a", "s1", SupplierV12, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Version int64 `json:"version"`
		}
		mustUnmarshal(t, string(b), &got)
		if got.Version != sup.Version {
			t.Fatalf("rename %d: read version %d right after the write acknowledged version %d", i, got.Version, sup.Version)
		}
	}
	// The copy answers again once it has caught up with the writes.
	e.caughtUp(t)
	if !e.view.Fresh() {
		t.Error("the copy is not fresh after catching up with this process's writes")
	}
}

// TestView_ProductReadAllocatesThreeTimes: a warm reseller read of a
// product from the copy makes three allocations (the batch and two keys),
// the hot path of issue 21; the copy must be what answered.
func TestView_ProductReadAllocatesThreeTimes(t *testing.T) {
	e := newViewEnv(t, time.Minute) // long: the copy stays fresh for the whole test
	ctx := context.Background()
	bindOneProduct(t, e.writer)
	e.caughtUp(t)
	now := time.Now()
	dst := make([]byte, 0, 4096)
	before := testutil.ToFloat64(e.view.m.fromMemory)
	n := testing.AllocsPerRun(100, func() {
		b, err := e.viewStore.AppendProduct(ctx, dst[:0], "chan-a", "s1", "p1", now)
		if err != nil || len(b) == 0 {
			t.Fatalf("read: %v", err)
		}
	})
	if got := testutil.ToFloat64(e.view.m.fromMemory) - before; got != 101 {
		t.Fatalf("the copy answered %v of 101 reads", got)
	}
	if n > 3 {
		t.Errorf("a product read from the copy allocates %v times, want at most 3", n)
	}
}

package catalogchange

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// Component tests: the embedded Kafka broker, a real redis-server, the
// catalog store written as the API writes it, the real registry, and the
// processor in its consumer group.

// sink follows the notifications topic, as the dispatcher would.
type sink struct {
	mu    sync.Mutex
	notes []schemas.Notification
}

func follow(t *testing.T, brokers []string) *sink {
	t.Helper()
	s := &sink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = stream.Follow(ctx, brokers, schemas.TopicNotifications, func(m stream.Message) error {
			n, err := schemas.DecodeNotification(m.Value)
			if err != nil {
				return err
			}
			s.mu.Lock()
			s.notes = append(s.notes, n)
			s.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// waitFor polls until the sink holds want (as "subscriber type operation
// entity", in any order) beyond the first from notifications, then checks
// that nothing else arrived.
func (s *sink) waitFor(t *testing.T, from int, names map[string]string, want ...string) int {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(15 * time.Second)
	var got []string
	for {
		s.mu.Lock()
		got = got[:0]
		for _, n := range s.notes[from:] {
			var pl struct {
				Operation string `json:"operation"`
			}
			_ = json.Unmarshal(n.Payload, &pl)
			got = append(got, names[n.Subscriber]+" "+n.Type+" "+pl.Operation+" "+n.EntityKey)
		}
		total := len(s.notes)
		s.mu.Unlock()
		slices.Sort(got)
		if len(got) >= len(want) {
			if !slices.Equal(got, want) {
				t.Fatalf("notifications %q, want %q", got, want)
			}
			return total
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out: notifications %q, want %q", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runProcessor(t *testing.T, p *Processor) {
	t.Helper()
	testharness.RunInBackground(t, "processor", 30*time.Second, p.Run)
}

func TestComponent_BindingLifecycleReachesTheNotificationTopic(t *testing.T) {
	e := catalogtest.Start(t, catalogtest.Options{Kafka: true})
	ctx := context.Background()
	reg := registry.New(registry.Options{Redis: e.Redis, Publisher: e.Producer, AllowHTTP: true, AllowPrivate: true, Secrets: e.Keyring})
	for _, r := range []struct {
		sub, typ string
	}{
		{e.Reseller1.ID, schemas.TypeChannelBinding},
		{e.Reseller1.ID, schemas.TypeProduct},
		{e.Reseller2.ID, schemas.TypeProduct},
	} {
		if _, err := reg.Create(ctx, r.sub, r.typ, registry.RuleInput{URL: "http://127.0.0.1:9/" + r.typ}); err != nil {
			t.Fatalf("create %s rule: %v", r.typ, err)
		}
	}
	p := New(Options{Brokers: e.Brokers, Store: e.Store, Subscribers: Resellers{Principals: e.Principals}, Rules: reg,
		Publisher: e.Producer, Logger: e.Logger, GroupID: "test-catalog"})
	runProcessor(t, p)
	s := follow(t, e.Brokers)
	names := map[string]string{e.Reseller1.ID: "R1", e.Reseller1b.ID: "R1b", e.Reseller2.ID: "R2"}

	op := e.As(t, e.Operator)
	seedProduct(op, "r1", "r2")

	op.CreateBinding("s1", "p1", "chan-a", `{"rateIds":["r1"]}`)
	n := s.waitFor(t, 0, names, "R1 channelbinding created s1/p1")
	op.PutBinding("s1", "p1", "chan-a", `{"rateIds":["r1","r2"]}`)
	n = s.waitFor(t, n, names, "R1 channelbinding updated s1/p1")
	op.PutProduct("s1", "p1", catalogtest.ProductBody("p1", "P1", "a new description"))
	n = s.waitFor(t, n, names, "R1 product updated s1/p1")
	op.DeleteBinding("s1", "p1", "chan-a")
	s.waitFor(t, n, names, "R1 channelbinding removed s1/p1")
}

// reads is every reseller and operator read of the test catalog, made
// on the store as the query tier's handlers make them (the reseller
// renderings, and the operator's entities in their API shapes), by
// principal: what a rebuild must reproduce byte for byte. A read that
// fails is recorded with its error.
func reads(t *testing.T, e *catalogtest.Env) map[string]string {
	t.Helper()
	ctx, now := t.Context(), time.Now()
	out := map[string]string{}
	// at records the read of key: a reseller rendering as it is, an
	// operator read JSON-encoded as the API encodes it, or the error.
	at := func(key string) func(any, error) {
		return func(v any, err error) {
			if err != nil {
				out[key] = "error " + err.Error()
				return
			}
			b, ok := v.([]byte)
			if !ok {
				if b, err = json.Marshal(v); err != nil {
					t.Fatalf("%s: %v", key, err)
				}
			}
			out[key] = "ok " + string(b)
		}
	}
	st := e.Store
	for name, c := range map[string]catalogtest.Cred{"R1": e.Reseller1, "R2": e.Reseller2} {
		ch := c.Principal.ChannelID
		for _, v := range []struct {
			name string
			v    catalogredis.SupplierVersion
		}{{"v1.2", catalogredis.SupplierV12}, {"v1.3", catalogredis.SupplierV13}} {
			at(name + " " + v.name + " suppliers")(st.AppendSuppliers(ctx, nil, ch, v.v, "", "", now))
			at(name + " " + v.name + " suppliers?code=S1")(st.AppendSuppliers(ctx, nil, ch, v.v, "", "S1", now))
		}
		for _, sid := range []string{"s1", "s2", "s3"} {
			for _, v := range []struct {
				name string
				v    catalogredis.SupplierVersion
			}{{"v1.2", catalogredis.SupplierV12}, {"v1.3", catalogredis.SupplierV13}, {"v1.3 content", catalogredis.SupplierV13Content}} {
				at(name + " " + v.name + " supplier " + sid)(st.AppendSupplier(ctx, nil, ch, sid, v.v, now))
			}
			at(name + " products " + sid)(st.AppendProducts(ctx, nil, ch, sid, now))
			for _, pid := range []string{"p1", "p2", "p3"} {
				at(name + " product " + sid + "/" + pid)(st.AppendProduct(ctx, nil, ch, sid, pid, now))
				at(name + " rates " + sid + "/" + pid)(st.AppendRates(ctx, nil, ch, sid, pid, now))
				for _, rid := range []string{"r1", "r2", "r3", "r4"} {
					at(name + " rate " + sid + "/" + pid + "/" + rid)(st.AppendRate(ctx, nil, ch, sid, pid, rid, now))
				}
			}
		}
	}
	admin := catalog.ScopeOf(e.Admin.Principal)
	at("admin suppliers")(each(catalogwire.SupplierOf)(st.Suppliers(ctx, admin)))
	at("admin channels")(each(catalogwire.ChannelOf)(st.Channels(ctx)))
	for _, sid := range []string{"s1", "s2"} {
		sup, err := st.Supplier(ctx, admin, sid)
		at("admin supplier "+sid)(catalogwire.SupplierOf(sup), err)
		at("admin products " + sid)(st.Products(ctx, admin, sid))
		for _, pid := range []string{"p1", "p2", "p3"} {
			k := sid + "/" + pid
			at("admin product " + k)(st.Product(ctx, admin, sid, pid))
			at("admin rates " + k)(each(catalogwire.RateOf)(st.Rates(ctx, admin, sid, pid)))
			bs, err := st.ProductBindings(ctx, admin, sid, pid)
			at("admin bindings " + k)(each(catalogwire.BoundProduct.ChannelRate)(bs, err))
			at("admin v2 bindings " + k)(each(catalogwire.BoundProduct.V2)(bs, err))
			at("admin availabilities " + k + "/r1")(st.Availabilities(ctx, admin, sid, pid, "r1"))
		}
	}
	return out
}

// each maps a read's result with f (a rendering), keeping its error.
func each[X, Y any](f func(X) Y) func([]X, error) ([]Y, error) {
	return func(xs []X, err error) ([]Y, error) {
		if err != nil {
			return nil, err
		}
		out := make([]Y, len(xs))
		for i, x := range xs {
			out[i] = f(x)
		}
		return out, nil
	}
}

func TestRebuild_FlushAndReplayGiveIdenticalReads(t *testing.T) {
	e := catalogtest.Start(t, catalogtest.Options{Kafka: true})
	ctx := context.Background()
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	tomorrowPlusHour := time.Now().Add(25 * time.Hour).UTC().Format(time.RFC3339)
	// A history with updates, deletes, both binding APIs, windows and tags,
	// written as the channel interface's handlers write it.
	op, op2 := e.As(t, e.Operator), e.As(t, e.Operator2)
	sup, prod, rate := catalogtest.SupplierBody, catalogtest.ProductBody, catalogtest.RateBody
	op.CreateSupplier(sup("s1", "One", "S1", "k", "s"))
	op2.CreateSupplier(sup("s2", "Two", "S2", "k", "s"))
	op.CreateSupplier(sup("s3", "Three", "S3", "k", "s"))
	op.PutSupplier("s1", sup("s1", "One v2", "S1", "k", "s"))
	op.UpsertProducts("s1", prod("p1", "P1", "d"), prod("p2", "P2", "d"), prod("p3", "P3", "gone"))
	op.UpsertRates("s1", "p1", rate("r1", "A"), rate("r2", "B"), rate("r3", "C"))
	op.CreateRate("s1", "p3", rate("r4", "D"))
	op.DeleteProduct("s1", "p3")
	op.PutRate("s1", "p1", "r2", rate("r2", "B v2"))
	op.DeleteRate("s1", "p1", "r3")
	op.PutAvailabilities("s1", "p1", "r1", `{"availabilities":[{"id":"a1","start":"`+tomorrow+`","end":"`+tomorrowPlusHour+`","capacity":3}]}`)
	op.CreateBinding("s1", "p1", "chan-a", `{"rateIds":["r1"],"priceTags":["b2b"],"priceAt":"PRICE_AT_SALE"}`)
	op.PutOptions("s1", "p1", "chan-a", "r1", "r2")
	op.CreateBinding("s1", "p2", "chan-b", `{"valid":{"from":"`+tomorrow+`"}}`)
	op.CreateBinding("s1", "p1", "chan-b", `{}`)
	op.DeleteBinding("s1", "p1", "chan-b")
	op2.CreateProduct("s2", prod("p1", "S2P1", "d"))
	op2.CreateBinding("s2", "p1", "chan-b", `{}`)
	op.DeleteSupplier("s3")
	e.As(t, e.Admin).PutChannel("chan-b", `{"name":"Channel B renamed","companyName":"B Tours"}`)
	before := reads(t, e)
	visible := 0
	for _, v := range before {
		if strings.HasPrefix(v, "ok ") {
			visible++
		}
	}
	t.Logf("%d reads captured, %d of them found", len(before), visible)
	if visible < 40 {
		t.Fatalf("only %d reads find something: the scenario does not exercise the view", visible)
	}

	flush := func() {
		t.Helper()
		if err := testharness.FlushAll(ctx, e.Redis); err != nil {
			t.Fatal(err)
		}
		if got := reads(t, e); got["R1 v1.2 suppliers"] == before["R1 v1.2 suppliers"] {
			t.Fatal("FLUSHALL did not empty the view")
		}
	}
	compare := func(t *testing.T) {
		t.Helper()
		after := reads(t, e)
		for k, want := range before {
			if after[k] != want {
				t.Errorf("%s differs after the rebuild:\nbefore %s\nafter  %s", k, want, after[k])
			}
		}
	}
	p := New(Options{Brokers: e.Brokers, Store: e.Store, Subscribers: fakeSubscribers{}, Rules: &fakeRules{rules: map[string]registry.Rule{}},
		Publisher: e.Producer, Logger: e.Logger, GroupID: "test-rebuild"})

	t.Run("Rebuild reading the compacted topics", func(t *testing.T) {
		flush()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := p.Rebuild(rctx); err != nil {
			t.Fatal(err)
		}
		compare(t)
	})
	t.Run("the consumer group replaying from the start", func(t *testing.T) {
		flush()
		runProcessor(t, p)
		deadline := time.Now().Add(20 * time.Second)
		for {
			after := reads(t, e)
			same := true
			for k, want := range before {
				if after[k] != want {
					same = false
					break
				}
			}
			if same {
				break
			}
			if time.Now().After(deadline) {
				compare(t)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if strings.Contains(e.Logs.String(), "catalog: skipping") {
		t.Errorf("unusable records while replaying: %s", e.Logs.String())
	}
}

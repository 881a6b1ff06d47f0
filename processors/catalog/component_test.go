package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/internal/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

// Component tests: the embedded Kafka broker, a real redis-server, the
// HTTP API, the real registry, and the processor in its consumer group.

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
			var n schemas.Notification
			if err := json.Unmarshal(m.Value, &n); err != nil {
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
	})
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

	const prod = catalogtest.Ch + "/suppliers/s1/products/p1"
	e.Must(t, 201, "POST", catalogtest.Ch+"/supplier", e.Operator, catalogtest.SupplierBody("s1", "One", "S1", "k", "s"))
	e.Must(t, 201, "POST", catalogtest.Ch+"/suppliers/s1/products", e.Operator, catalogtest.ProductBody("p1", "P1", "d"))
	e.Must(t, 201, "POST", prod+"/rates", e.Operator, catalogtest.RateBody("r1", "R1"))
	e.Must(t, 201, "POST", prod+"/rates", e.Operator, catalogtest.RateBody("r2", "R2"))

	e.Must(t, 201, "POST", prod+"/channels/chan-a", e.Operator, `{"rateIds":["r1"]}`)
	n := s.waitFor(t, 0, names, "R1 channelbinding created s1/p1")
	e.Must(t, 200, "PUT", prod+"/channels/chan-a", e.Operator, `{"rateIds":["r1","r2"]}`)
	n = s.waitFor(t, n, names, "R1 channelbinding updated s1/p1")
	e.Must(t, 200, "PUT", prod, e.Operator, catalogtest.ProductBody("p1", "P1", "a new description"))
	n = s.waitFor(t, n, names, "R1 product updated s1/p1")
	e.Must(t, 204, "DELETE", prod+"/channels/chan-a", e.Operator, "")
	s.waitFor(t, n, names, "R1 channelbinding removed s1/p1")
}

// reads is every reseller and operator read of the test catalog, by
// path and principal: what a rebuild must reproduce byte for byte.
func reads(t *testing.T, e *catalogtest.Env) map[string]string {
	t.Helper()
	out := map[string]string{}
	who := map[string]catalogtest.Cred{"R1": e.Reseller1, "R2": e.Reseller2}
	var paths []string
	for _, base := range []string{catalogtest.V12, catalogtest.V13} {
		paths = append(paths, base+"/suppliers", base+"/suppliers?code=S1")
	}
	for _, sid := range []string{"s1", "s2", "s3"} {
		paths = append(paths, catalogtest.V12+"/suppliers/"+sid, catalogtest.V13+"/suppliers/"+sid, catalogtest.V13+"/suppliers/"+sid+"?content=true",
			catalogtest.V12+"/suppliers/"+sid+"/products")
		for _, pid := range []string{"p1", "p2", "p3"} {
			pp := catalogtest.V12 + "/suppliers/" + sid + "/products/" + pid
			paths = append(paths, pp, pp+"/rates")
			for _, rid := range []string{"r1", "r2", "r3", "r4"} {
				paths = append(paths, pp+"/rates/"+rid)
			}
		}
	}
	for name, c := range who {
		for _, p := range paths {
			status, body := e.Do(t, "GET", p, c, "")
			out[fmt.Sprintf("%s GET %s", name, p)] = fmt.Sprintf("%d %s", status, body)
		}
	}
	ops := []string{catalogtest.Ch + "/suppliers", catalogtest.Ch + "/channels", catalogtest.Op + "/channels"}
	for _, sid := range []string{"s1", "s2"} {
		ops = append(ops, catalogtest.Ch+"/suppliers/"+sid, catalogtest.Ch+"/suppliers/"+sid+"/products")
		for _, pid := range []string{"p1", "p2", "p3"} {
			pp := catalogtest.Ch + "/suppliers/" + sid + "/products/" + pid
			ops = append(ops, pp, pp+"/rates", pp+"/channels", pp+"/rates/r1/availabilities",
				catalogtest.Op+"/suppliers/"+sid+"/products/"+pid+"/bindings")
		}
	}
	for _, p := range ops {
		status, body := e.Do(t, "GET", p, e.Admin, "")
		out["admin GET "+p] = fmt.Sprintf("%d %s", status, body)
	}
	return out
}

func TestRebuild_FlushAndReplayGiveIdenticalReads(t *testing.T) {
	e := catalogtest.Start(t, catalogtest.Options{Kafka: true})
	ctx := context.Background()
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	tomorrowPlusHour := time.Now().Add(25 * time.Hour).UTC().Format(time.RFC3339)
	// A history with updates, deletes, both binding APIs, windows and tags.
	steps := []struct {
		who          catalogtest.Cred
		method, path string
		body         string
		status       int
	}{
		{e.Operator, "POST", catalogtest.Ch + "/supplier", catalogtest.SupplierBody("s1", "One", "S1", "k", "s"), 201},
		{e.Operator2, "POST", catalogtest.Ch + "/supplier", catalogtest.SupplierBody("s2", "Two", "S2", "k", "s"), 201},
		{e.Operator, "POST", catalogtest.Ch + "/supplier", catalogtest.SupplierBody("s3", "Three", "S3", "k", "s"), 201},
		{e.Operator, "PUT", catalogtest.Ch + "/suppliers/s1", catalogtest.SupplierBody("s1", "One v2", "S1", "k", "s"), 200},
		{e.Operator, "POST", catalogtest.Ch + "/bulk/suppliers/s1/products", `{"products":[` + catalogtest.ProductBody("p1", "P1", "d") + `,` + catalogtest.ProductBody("p2", "P2", "d") + `,` + catalogtest.ProductBody("p3", "P3", "gone") + `]}`, 200},
		{e.Operator, "POST", catalogtest.Ch + "/bulk/suppliers/s1/products/p1/rates", `{"rates":[` + catalogtest.RateBody("r1", "A") + `,` + catalogtest.RateBody("r2", "B") + `,` + catalogtest.RateBody("r3", "C") + `]}`, 200},
		{e.Operator, "POST", catalogtest.Ch + "/suppliers/s1/products/p3/rates", catalogtest.RateBody("r4", "D"), 201},
		{e.Operator, "DELETE", catalogtest.Ch + "/suppliers/s1/products/p3", "", 204},
		{e.Operator, "PUT", catalogtest.Ch + "/suppliers/s1/products/p1/rates/r2", catalogtest.RateBody("r2", "B v2"), 200},
		{e.Operator, "DELETE", catalogtest.Ch + "/suppliers/s1/products/p1/rates/r3", "", 204},
		{e.Operator, "PUT", catalogtest.Ch + "/suppliers/s1/products/p1/rates/r1/availabilities", `{"availabilities":[{"id":"a1","start":"` + tomorrow + `","end":"` + tomorrowPlusHour + `","capacity":3}]}`, 200},
		{e.Operator, "POST", catalogtest.Ch + "/suppliers/s1/products/p1/channels/chan-a", `{"rateIds":["r1"],"priceTags":["b2b"],"priceAt":"PRICE_AT_SALE"}`, 201},
		{e.Operator, "PUT", catalogtest.Op + "/suppliers/s1/products/p1/bindings/chan-a", `{"optionIds":["r1","r2"]}`, 200},
		{e.Operator, "POST", catalogtest.Ch + "/suppliers/s1/products/p2/channels/chan-b", `{"valid":{"from":"` + tomorrow + `"}}`, 201},
		{e.Operator, "POST", catalogtest.Ch + "/suppliers/s1/products/p1/channels/chan-b", `{}`, 201},
		{e.Operator, "DELETE", catalogtest.Ch + "/suppliers/s1/products/p1/channels/chan-b", "", 204},
		{e.Operator2, "POST", catalogtest.Ch + "/suppliers/s2/products", catalogtest.ProductBody("p1", "S2P1", "d"), 201},
		{e.Operator2, "POST", catalogtest.Ch + "/suppliers/s2/products/p1/channels/chan-b", `{}`, 201},
		{e.Operator, "DELETE", catalogtest.Ch + "/suppliers/s3", "", 204},
		{e.Admin, "PUT", "/admin/v1/channels/chan-b", `{"name":"Channel B renamed","companyName":"B Tours"}`, 200},
	}
	for _, s := range steps {
		e.Must(t, s.status, s.method, s.path, s.who, s.body)
	}
	before := reads(t, e)
	visible := 0
	for _, v := range before {
		if strings.HasPrefix(v, "200 ") {
			visible++
		}
	}
	t.Logf("%d reads captured, %d of them 200", len(before), visible)
	if visible < 40 {
		t.Fatalf("only %d reads answer 200: the scenario does not exercise the view", visible)
	}

	flush := func() {
		t.Helper()
		if err := testharness.FlushAll(ctx, e.Redis); err != nil {
			t.Fatal(err)
		}
		if got := reads(t, e); got["R1 GET /v1.2/suppliers"] == before["R1 GET /v1.2/suppliers"] {
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

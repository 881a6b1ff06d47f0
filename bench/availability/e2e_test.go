package availability

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/processors/availchange"
	"github.com/switchbackhq/switchback/processors/catalogchange"
	"github.com/switchbackhq/switchback/query/querytest"
	"github.com/switchbackhq/switchback/schemas"
)

// oneRule: every subscriber has the same availability rule.
type oneRule struct{ cfg registry.Config }

func (o oneRule) Rule(_ context.Context, _, typ string) (registry.Rule, error) {
	if typ != schemas.TypeAvailability {
		return registry.Rule{}, registry.ErrNotFound
	}
	return registry.Rule{Config: o.cfg}, nil
}

// TestStaleReadToNotification is the vertical slice: a reseller read
// fills the cache from the partner (a baseline snapshot); 5 min + 1 s
// later the partner's capacities have moved, the next read refreshes, and
// the processor turns the new snapshot into availability notifications
// for the resellers of the channel that has the rates bound (the real
// catalog's bindings and principals), never for the unbound rate.
func TestStaleReadToNotification(t *testing.T) {
	var now atomic.Int64
	t0 := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	now.Store(t0.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	sim := partnersim.New(partnersim.Config{APIKey: "k", APISecret: "s", Clock: clock, ChangeRate: 1, ChangeEvery: time.Minute,
		Rates: map[string][]string{"p1": {"r1", "r2", "r3"}}})
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	e := querytest.Start(t, querytest.Options{Quiet: true})
	e.Must(t, 201, "POST", querytest.Ch+"/supplier", e.Operator,
		strings.Replace(catalogtest.SupplierBody("s1", "Supplier", "C1", "k", "s"), "https://partner.example.com/api/", ts.URL, 1))
	e.Must(t, 201, "POST", querytest.Ch+"/suppliers/s1/products", e.Operator, catalogtest.ProductBody("p1", "Tour", "d"))
	e.Must(t, 200, "POST", querytest.Ch+"/bulk/suppliers/s1/products/p1/rates", e.Operator,
		`{"rates":[`+catalogtest.RateBody("r1", "A")+`,`+catalogtest.RateBody("r2", "B")+`,`+catalogtest.RateBody("r3", "C")+`]}`)
	e.Must(t, 201, "POST", querytest.Ch+"/suppliers/s1/products/p1/channels/chan-a", e.Operator, `{"rateIds":["r1","r2"]}`)

	var st atomic.Pointer[catalogredis.Store]
	st.Store(e.Store)
	rec := &catalogtest.Recorder{}
	svc := availcache.New(availcache.Options{Redis: e.Redis, Catalog: lazyCatalog{&st}, Partner: partner.NewClient(partner.Options{Outbound: allowLoopback}),
		Publisher: rec, Clock: clock})
	out := &catalogtest.Recorder{}
	proc := availchange.New(availchange.Options{Redis: e.Redis, Bindings: e.Store, Subscribers: catalogchange.Resellers{Principals: e.Principals},
		Rules: oneRule{registry.Config{MaxLookAheadDays: 7}}, Publisher: out, Clock: clock})

	ctx := context.Background()
	start := t0.Truncate(24*time.Hour).AddDate(0, 0, 1)
	read := func() {
		t.Helper()
		rec.Reset()
		if err := svc.Warm(ctx, catalogtest.ChannelA, "s1", "p1", "", start, start.AddDate(0, 0, 2)); err != nil {
			t.Fatal(err)
		}
		for _, m := range rec.Messages() {
			if err := proc.Handle(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	read()
	if len(out.Messages()) != 0 || sim.Calls() != 1 {
		t.Fatalf("baseline: %d messages, %d calls", len(out.Messages()), sim.Calls())
	}
	now.Add(int64(5*time.Minute + time.Second))
	read()
	if sim.Calls() != 2 {
		t.Fatalf("calls = %d, want 2", sim.Calls())
	}
	subs := map[string]bool{}
	for _, m := range out.Messages() {
		if m.Topic != schemas.TopicNotifications {
			continue
		}
		var p schemas.AvailabilityPayload
		n, err := schemas.DecodeNotification(m.Value)
		if err != nil || json.Unmarshal(n.Payload, &p) != nil {
			t.Fatal(err)
		}
		if p.RateID == "r3" || p.SupplierID != "s1" || p.Start < start.Format(time.RFC3339) || n.Type != schemas.TypeAvailability {
			t.Fatalf("unexpected notification %+v %+v", n, p)
		}
		subs[n.Subscriber] = true
	}
	if !subs[e.Reseller1.ID] || !subs[e.Reseller1b.ID] || subs[e.Reseller2.ID] {
		t.Fatalf("notified %v; want the two resellers of chan-a only", subs)
	}
}

package catalogchange

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogtest"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/schemas"
)

// fakeSubscribers and fakeRules stand in at the two seams the lead wires
// to the principals table and the registry (the component test uses the
// real registry).
type fakeSubscribers map[string][]string

func (f fakeSubscribers) OnChannel(_ context.Context, c string) ([]string, error) { return f[c], nil }

type fakeRules struct {
	mu    sync.Mutex
	rules map[string]registry.Rule // subscriber/type
}

func (f *fakeRules) set(sub, typ string, cfg registry.Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cfg.Operations == nil && typ != schemas.TypeAvailability && typ != schemas.TypePriceSchedule {
		cfg.Operations = registry.Operations(typ)
	}
	f.rules[sub+"/"+typ] = registry.Rule{ID: sub + typ, Type: typ, Config: cfg}
}

func (f *fakeRules) Rule(_ context.Context, sub, typ string) (registry.Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rules[sub+"/"+typ]
	if !ok {
		return registry.Rule{}, fmt.Errorf("%s rule: %w", typ, registry.ErrNotFound)
	}
	return r, nil
}

// harness runs what the writers published through Processor.Handle, as
// the consumer group would, and collects the notifications.
type harness struct {
	e     *catalogtest.Env
	p     *Processor
	notes *catalogtest.Recorder
	rules *fakeRules
	seen  int
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	e := catalogtest.Start(t, catalogtest.Options{})
	h := &harness{e: e, notes: &catalogtest.Recorder{}, rules: &fakeRules{rules: map[string]registry.Rule{}}}
	subs := fakeSubscribers{
		catalogtest.ChannelA: {e.Reseller1.ID, e.Reseller1b.ID},
		catalogtest.ChannelB: {e.Reseller2.ID},
	}
	h.p = New(Options{Store: e.Store, Subscribers: subs, Rules: h.rules, Publisher: h.notes})
	return h
}

// drain handles every record published since the last drain and returns
// the notifications they produced as "subscriber type operation entity".
func (h *harness) drain(t *testing.T) []string {
	t.Helper()
	msgs := h.e.Rec.Messages()
	h.notes.Reset()
	for _, m := range msgs[h.seen:] {
		if err := h.p.Handle(context.Background(), m); err != nil {
			t.Fatalf("handle %s: %v", m.Key, err)
		}
	}
	h.seen = len(msgs)
	return h.summary(t)
}

func (h *harness) summary(t *testing.T) []string {
	t.Helper()
	names := map[string]string{h.e.Reseller1.ID: "R1", h.e.Reseller1b.ID: "R1b", h.e.Reseller2.ID: "R2"}
	var out []string
	notes, hist := splitTopics(t, h.notes.Messages())
	// Every notification has its notification.produced history record.
	produced := map[string]bool{}
	for _, m := range hist {
		var env schemas.Envelope
		var np schemas.NotificationProduced
		if json.Unmarshal(m.Value, &env) != nil || json.Unmarshal(env.Data, &np) != nil {
			t.Fatalf("undecodable history record %s", m.Value)
		}
		if env.Type == schemas.HistoryNotificationProduced {
			produced[np.DeliveryID] = true
		}
	}
	for _, m := range notes {
		n, err := schemas.DecodeNotification(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != n.Subscriber {
			t.Errorf("notification keyed %q, subscriber %q", m.Key, n.Subscriber)
		}
		// The topic's envelope, identified and keyed as the notification.
		var ne schemas.Envelope
		if err := json.Unmarshal(m.Value, &ne); err != nil || ne.Type != schemas.EventNotification || ne.ID != n.ID || ne.Key != n.Subscriber {
			t.Errorf("record %s: envelope %+v (%v)", m.Value, ne, err)
		}
		var pl struct {
			Operation string `json:"operation"`
		}
		_ = json.Unmarshal(n.Payload, &pl)
		out = append(out, names[n.Subscriber]+" "+n.Type+" "+pl.Operation+" "+n.EntityKey)
		if !produced[n.ID] {
			t.Errorf("notification %s has no notification.produced history record", n.ID)
		}
	}
	slices.Sort(out)
	return out
}

// splitTopics separates notifications from history records; anything else
// fails the test.
func splitTopics(t *testing.T, msgs []stream.Message) (notes, hist []stream.Message) {
	t.Helper()
	for _, m := range msgs {
		switch m.Topic {
		case schemas.TopicNotifications:
			notes = append(notes, m)
		case schemas.TopicHistory:
			hist = append(hist, m)
		default:
			t.Fatalf("published to %s", m.Topic)
		}
	}
	return notes, hist
}

func TestNotifications_CatalogChangesNotifyBoundSubscribersByTheirRules(t *testing.T) {
	h := newHarness(t)
	e := h.e
	r1, r1b, r2 := e.Reseller1.ID, e.Reseller1b.ID, e.Reseller2.ID
	for _, typ := range []string{schemas.TypeChannelBinding, schemas.TypeSupplier, schemas.TypeProduct, schemas.TypeRate} {
		h.rules.set(r1, typ, registry.Config{})
	}
	h.rules.set(r1b, schemas.TypeChannelBinding, registry.Config{Operations: []string{"created"}, ProductIDs: []string{"p2"}})
	h.rules.set(r2, schemas.TypeChannelBinding, registry.Config{})
	h.rules.set(r2, schemas.TypeProduct, registry.Config{})

	// The operator's writes, as the channel interface's handlers make them.
	type writer = catalogtest.Writer
	sup, prod, rate := catalogtest.SupplierBody, catalogtest.ProductBody, catalogtest.RateBody
	future := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	steps := []struct {
		name  string
		write func(writer)
		want  []string
	}{
		{"new supplier notifies nobody", func(w writer) { w.CreateSupplier(sup("s1", "One", "S1", "k", "s")) }, nil},
		{"new product notifies nobody", func(w writer) { w.CreateProduct("s1", prod("p1", "P1", "d")) }, nil},
		{"new rate of an unbound product notifies nobody", func(w writer) { w.CreateRate("s1", "p1", rate("r1", "R1")) }, nil},
		{"second rate", func(w writer) { w.CreateRate("s1", "p1", rate("r2", "R2")) }, nil},
		{"second product", func(w writer) { w.CreateProduct("s1", prod("p2", "P2", "d")) }, nil},
		{"first rate bound: created, filtered by rule", func(w writer) { w.CreateBinding("s1", "p1", "chan-a", `{"rateIds":["r1"]}`) },
			[]string{"R1 channelbinding created s1/p1"}},
		{"second rate bound: updated", func(w writer) { w.PutBinding("s1", "p1", "chan-a", `{"rateIds":["r1","r2"]}`) },
			[]string{"R1 channelbinding updated s1/p1"}},
		{"identical binding re-sent: nothing", func(w writer) { w.PutBinding("s1", "p1", "chan-a", `{"rateIds":["r2","r1"]}`) }, nil},
		{"price tags changed: updated", func(w writer) { w.PutBinding("s1", "p1", "chan-a", `{"rateIds":["r1","r2"],"priceTags":["b2b"]}`) },
			[]string{"R1 channelbinding updated s1/p1"}},
		{"product description changed: product updated to the bound channel only", func(w writer) { w.PutProduct("s1", "p1", prod("p1", "P1", "better")) },
			[]string{"R1 product updated s1/p1"}},
		{"identical product re-sent: nothing", func(w writer) { w.PutProduct("s1", "p1", prod("p1", "P1", "better")) }, nil},
		{"bound rate changed: rate updated", func(w writer) { w.PutRate("s1", "p1", "r1", rate("r1", "R1 renamed")) },
			[]string{"R1 rate updated s1/p1/r1"}},
		{"supplier changed: supplier updated", func(w writer) { w.PutSupplier("s1", sup("s1", "One renamed", "S1", "k", "s")) },
			[]string{"R1 supplier updated s1"}},
		{"only credentials changed: nothing resellers see", func(w writer) { w.PutSupplier("s1", sup("s1", "One renamed", "S1", "k2", "s2")) }, nil},
		{"whole product bound: created for both rules that match", func(w writer) { w.CreateBinding("s1", "p2", "chan-a", `{}`) },
			[]string{"R1 channelbinding created s1/p2", "R1b channelbinding created s1/p2"}},
		{"rate added under a whole-product binding: updated", func(w writer) { w.CreateRate("s1", "p2", rate("r5", "R5")) },
			[]string{"R1 channelbinding updated s1/p2"}},
		{"rate changed under a whole-product binding: rate updated", func(w writer) { w.PutRate("s1", "p2", "r5", rate("r5", "R5b")) },
			[]string{"R1 rate updated s1/p2/r5"}},
		{"rate removed under a whole-product binding: updated", func(w writer) { w.DeleteRate("s1", "p2", "r5") },
			[]string{"R1 channelbinding updated s1/p2"}},
		{"v2 PUT on a bound product: updated", func(w writer) { w.PutOptions("s1", "p1", "chan-a", "r2") },
			[]string{"R1 channelbinding updated s1/p1"}},
		{"unbound rate changed: nothing", func(w writer) { w.PutRate("s1", "p1", "r1", rate("r1", "R1 again")) }, nil},
		{"product and all its rates unbound: removed", func(w writer) { w.DeleteBinding("s1", "p1", "chan-a") },
			[]string{"R1 channelbinding removed s1/p1"}},
		{"unbound product changed: nothing", func(w writer) { w.PutProduct("s1", "p1", prod("p1", "P1", "best")) }, nil},
		{"bound on the other channel, window not open yet: created", func(w writer) { w.CreateBinding("s1", "p1", "chan-b", `{"valid":{"from":"`+future+`"}}`) },
			[]string{"R2 channelbinding created s1/p1"}},
		{"product changed while its only binding is outside its window: nothing", func(w writer) { w.PutProduct("s1", "p1", prod("p1", "P1", "bestest")) }, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.write(e.As(t, e.Operator))
			if got := h.drain(t); !slices.Equal(got, s.want) {
				t.Errorf("notifications %q, want %q", got, s.want)
			}
		})
	}
}

func TestNotifications_RedeliveryGivesTheSameIDs(t *testing.T) {
	h := newHarness(t)
	e := h.e
	h.rules.set(e.Reseller1.ID, schemas.TypeChannelBinding, registry.Config{})
	op := e.As(t, e.Operator)
	seedProduct(op)
	op.CreateBinding("s1", "p1", "chan-a", `{}`)
	h.drain(t)
	first, firstHist := splitTopics(t, h.notes.Messages())
	if len(first) != 1 {
		t.Fatalf("%d notifications, want 1", len(first))
	}
	// The consumer redelivers the last record (crash before its commit).
	msgs := e.Rec.Messages()
	h.notes.Reset()
	if err := h.p.Handle(context.Background(), msgs[len(msgs)-1]); err != nil {
		t.Fatal(err)
	}
	again, againHist := splitTopics(t, h.notes.Messages())
	if len(again) != 1 || string(again[0].Value) != string(first[0].Value) {
		t.Fatalf("redelivery produced %d notifications, want the same one again", len(again))
	}
	if len(againHist) != len(firstHist) || len(againHist) == 0 || string(againHist[0].Value) != string(firstHist[0].Value) {
		t.Fatalf("redelivery produced other history records: %d then %d", len(firstHist), len(againHist))
	}
}

func TestNotifications_StaleEventIsAppliedButNotifiesNobody(t *testing.T) {
	h := newHarness(t)
	e := h.e
	h.rules.set(e.Reseller1.ID, schemas.TypeChannelBinding, registry.Config{})
	h.p.opts.Clock = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }
	op := e.As(t, e.Operator)
	seedProduct(op)
	op.CreateBinding("s1", "p1", "chan-a", `{}`)
	if got := h.drain(t); len(got) != 0 {
		t.Fatalf("week-old events notified %q", got)
	}
}

func TestHandle_SkipsUnusableRecordsAndForeignSnapshots(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		m    stream.Message
	}{
		{"tombstone", stream.Message{Topic: schemas.TopicProducts, Key: []byte("s/p")}},
		{"not JSON", stream.Message{Topic: schemas.TopicProducts, Value: []byte("{")}},
		{"unknown type", stream.Message{Topic: schemas.TopicProducts, Value: []byte(`{"id":"x","type":"other","key":"k","version":1}`)}},
		{"key does not match", stream.Message{Topic: schemas.TopicProducts,
			Value: []byte(`{"id":"x","type":"catalog.product.deleted","key":"a/b","version":1,"deleted":true,"data":{"kind":"product","supplierId":"a","productId":"c"}}`)}},
		{"another stage's availability snapshot", stream.Message{Topic: schemas.TopicAvailability, Value: []byte(`{"id":"x","type":"availability.snapshot","key":"k","version":1}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := h.p.Handle(context.Background(), tt.m); err != nil {
				t.Fatalf("Handle: %v, want the record skipped", err)
			}
		})
	}
}

func TestBindingOperation(t *testing.T) {
	b := func(rates ...string) *catalog.Binding {
		return &catalog.Binding{RateIDs: rates, PriceAt: catalog.PriceAtUnknown, PriceTags: []string{}}
	}
	tagged := b("r1")
	tagged.PriceTags = []string{"x"}
	tests := []struct {
		name        string
		prior, next *catalog.Binding
		want        string
	}{
		{"nothing", nil, nil, ""},
		{"first rate bound", nil, b("r1"), "created"},
		{"whole product bound", nil, b(), "created"},
		{"rate added", b("r1"), b("r1", "r2"), "updated"},
		{"rate removed", b("r1", "r2"), b("r1"), "updated"},
		{"whole to some rates", b(), b("r1"), "updated"},
		{"terms changed", b("r1"), tagged, "updated"},
		{"same", b("r1"), b("r1"), ""},
		{"unbound", b("r1"), nil, "removed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BindingOperation(tt.prior, tt.next); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNotificationID_IsStablePerEventSubscriberAndType(t *testing.T) {
	a := NotificationID("ev1", "sub1", "product")
	if a != NotificationID("ev1", "sub1", "product") {
		t.Fatal("not deterministic")
	}
	for _, other := range []string{NotificationID("ev2", "sub1", "product"), NotificationID("ev1", "sub2", "product"), NotificationID("ev1", "sub1", "rate")} {
		if other == a {
			t.Fatal("collision")
		}
	}
}

type principalList []principals.Principal

func (l principalList) List() []principals.Principal { return l }

func TestResellers_OnChannelListsItsLiveResellers(t *testing.T) {
	revoked := time.Now()
	l := principalList{
		{ID: "r1", Role: principals.RoleReseller, ChannelID: "a"},
		{ID: "r2", Role: principals.RoleReseller, ChannelID: "b"},
		{ID: "r3", Role: principals.RoleReseller, ChannelID: "a", RevokedAt: &revoked},
		{ID: "op", Role: principals.RoleOperator},
	}
	got, err := Resellers{Principals: l}.OnChannel(context.Background(), "a")
	if err != nil || !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("got %v %v, want [r1]", got, err)
	}
}

// The processor consumes the rate and binding topics in no guaranteed
// relative order (and the writer has applied everything to the view
// before the processor sees it). Rates created before a product was bound
// are not rates added to the bound product, whichever event is handled
// first: the binding's created is the only notification.
func TestNotifications_RateCreatedBeforeTheBindingIsNotABindingUpdate(t *testing.T) {
	h := newHarness(t)
	e := h.e
	h.rules.set(e.Reseller1.ID, schemas.TypeChannelBinding, registry.Config{})
	op := e.As(t, e.Operator)
	seedProduct(op, "r1", "r2")
	op.CreateBinding("s1", "p1", "chan-a", `{"rateIds":["r1"]}`)
	op.CreateProduct("s1", catalogtest.ProductBody("p2", "P2", "d"))
	op.CreateRate("s1", "p2", catalogtest.RateBody("r3", "R3"))
	op.CreateBinding("s1", "p2", "chan-a", `{}`)

	// Bindings first, then the rates they were made after.
	var first, rates []stream.Message
	for _, m := range e.Rec.Messages() {
		switch m.Topic {
		case schemas.TopicRates:
			rates = append(rates, m)
		default:
			first = append(first, m)
		}
	}
	if len(rates) != 3 {
		t.Fatalf("%d rate records, want 3", len(rates))
	}
	h.notes.Reset()
	for _, m := range append(first, rates...) {
		if err := h.p.Handle(context.Background(), m); err != nil {
			t.Fatalf("handle %s: %v", m.Key, err)
		}
	}
	want := []string{"R1 channelbinding created s1/p1", "R1 channelbinding created s1/p2"}
	if got := h.summary(t); !slices.Equal(got, want) {
		t.Errorf("notifications %q, want %q", got, want)
	}
}

// A rate created under a bound product is channelbinding updated even
// when the binding is gone from the view by the time the processor
// handles the rate (the writer recorded who was bound); a rate event
// written before Event.BoundChannels existed falls back to the view.
func TestNotifications_RateCreatedUnderABindingUsesTheWriteTimeBindings(t *testing.T) {
	h := newHarness(t)
	e := h.e
	h.rules.set(e.Reseller1.ID, schemas.TypeChannelBinding, registry.Config{})
	h.rules.set(e.Reseller2.ID, schemas.TypeChannelBinding, registry.Config{})
	op := e.As(t, e.Operator)
	seedProduct(op)
	op.CreateBinding("s1", "p1", "chan-a", `{}`)
	op.CreateBinding("s1", "p1", "chan-b", `{}`)
	h.drain(t)

	op.CreateRate("s1", "p1", catalogtest.RateBody("r1", "R1"))
	msgs := e.Rec.Messages()
	created := msgs[len(msgs)-1]
	var env schemas.Envelope
	if err := json.Unmarshal(created.Value, &env); err != nil {
		t.Fatal(err)
	}
	var ev catalog.Event
	if err := json.Unmarshal(env.Data, &ev); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ev.BoundChannels, []string{catalogtest.ChannelA, catalogtest.ChannelB}) {
		t.Fatalf("rate created with boundChannels %q, want both channels", ev.BoundChannels)
	}
	// chan-b unbinds before the processor gets to the rate.
	op.DeleteBinding("s1", "p1", "chan-b")
	if got, want := h.drain(t), []string{
		"R1 channelbinding updated s1/p1", "R2 channelbinding removed s1/p1", "R2 channelbinding updated s1/p1",
	}; !slices.Equal(got, want) {
		t.Errorf("notifications %q, want %q", got, want)
	}

	// The same event without the field (an older writer): the view's
	// bindings, now chan-a only.
	var data map[string]json.RawMessage
	if err := json.Unmarshal(env.Data, &data); err != nil {
		t.Fatal(err)
	}
	delete(data, "boundChannels")
	env.Data, _ = json.Marshal(data)
	env.ID = "older-writer"
	old := created
	old.Value, _ = json.Marshal(env)
	h.notes.Reset()
	if err := h.p.Handle(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if got, want := h.summary(t), []string{"R1 channelbinding updated s1/p1"}; !slices.Equal(got, want) {
		t.Errorf("older event: notifications %q, want %q", got, want)
	}
}

// seedProduct creates supplier s1 and its product p1 with the rates named
// (rate "r1" is named "R1"), as most tests of the package begin.
func seedProduct(op catalogtest.Writer, rates ...string) {
	op.CreateSupplier(catalogtest.SupplierBody("s1", "One", "S1", "k", "s"))
	op.CreateProduct("s1", catalogtest.ProductBody("p1", "P1", "d"))
	for _, r := range rates {
		op.CreateRate("s1", "p1", catalogtest.RateBody(r, strings.ToUpper(r)))
	}
}

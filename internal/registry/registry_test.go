package registry

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

const subA, subB = "sub-a", "sub-b"

func TestCreate_PublishesTheRuleKeyedBySlotThenReadsItBack(t *testing.T) {
	e := newEnv(t, false)
	rule := mustCreate(t, e.reg, subA, schemas.TypeAvailability, ruleIn("https://hooks.example.com/av", `{"vacanciesUnder":3}`))

	if rule.ID == "" || len(rule.SecurityKey) != 64 || rule.CreatedOn.IsZero() || !rule.CreatedOn.Equal(rule.UpdatedOn) {
		t.Fatalf("generated fields missing: %+v", rule)
	}
	msgs := e.pub.Messages()
	if len(msgs) != 1 || msgs[0].Topic != schemas.TopicRules || string(msgs[0].Key) != subA+"/availability" {
		t.Fatalf("published %+v", msgs)
	}
	env := e.pub.Envelopes(t)[0]
	if env.Type != schemas.RegistryRuleCreated || env.Key != schemas.RuleKey(subA, "availability") || env.Version <= 0 || env.Deleted {
		t.Fatalf("envelope %+v", env)
	}
	got, err := e.reg.Rule(t.Context(), subA, schemas.TypeAvailability)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rule) {
		t.Fatalf("read %+v\nwant %+v", got, rule)
	}
	if keys := e.mr.Keys(); slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, ":lock:") }) {
		t.Fatalf("a lock is left after the commit: %v", keys)
	}
}

func TestCreate_UsesTheGivenIDAndIgnoresNothingElse(t *testing.T) {
	e := newEnv(t, false)
	rule := mustCreate(t, e.reg, subA, schemas.TypeSupplier, RuleInput{ID: "my-rule-1", URL: "https://hooks.example.com/s", Disabled: true})
	if rule.ID != "my-rule-1" || !rule.Disabled {
		t.Fatalf("rule %+v", rule)
	}
}

func TestCreate_SecondOfTypeIs409(t *testing.T) {
	e := newEnv(t, false)
	mustCreate(t, e.reg, subA, schemas.TypeBooking, ruleIn("https://hooks.example.com/b", ""))
	_, err := e.reg.Create(t.Context(), subA, schemas.TypeBooking, ruleIn("https://hooks.example.com/b2", ""))
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	// Another type, and the same type of another subscriber, are fine.
	mustCreate(t, e.reg, subA, schemas.TypeRate, ruleIn("https://hooks.example.com/r", ""))
	mustCreate(t, e.reg, subB, schemas.TypeBooking, ruleIn("https://hooks.example.com/b", ""))
	if n := len(e.pub.Messages()); n != 3 {
		t.Fatalf("%d events published, want 3 (the refused create publishes nothing)", n)
	}
}

func TestCreate_ConcurrentCreatesOfOneTypeExactlyOneWins(t *testing.T) {
	e := newEnv(t, false)
	e.reg.lockWait = 2 * time.Second
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = e.reg.Create(context.Background(), subA, schemas.TypeProduct, ruleIn("https://hooks.example.com/p", ""))
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrConflict):
			t.Fatalf("unexpected error %v", err)
		}
	}
	if won != 1 || len(e.pub.Messages()) != 1 {
		t.Fatalf("%d creates won and %d events were published, want 1 and 1", won, len(e.pub.Messages()))
	}
}

func TestCreate_PublishFailureIsUnavailableAndChangesNothing(t *testing.T) {
	e := newEnv(t, false)
	e.pub.SetFail(true)
	_, err := e.reg.Create(t.Context(), subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("create with Kafka down: %v, want ErrUnavailable", err)
	}
	if _, err := e.reg.Rule(t.Context(), subA, schemas.TypeSupplier); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rule after failed create: %v", err)
	}
	if keys := e.mr.Keys(); len(keys) != 0 {
		t.Fatalf("Redis keys left by a failed create: %v", keys)
	}
	// The marker was released: a retry once Kafka is back succeeds at once.
	e.pub.SetFail(false)
	mustCreate(t, e.reg, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
}

func TestCreate_CrashAfterReserveLeavesOnlyAnExpiringMarker(t *testing.T) {
	e := newEnv(t, false)
	// A writer reserves the slot and dies before publishing.
	if _, err := e.reg.lock(t.Context(), subA, schemas.TypeSupplier, modeCreate); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Rule(t.Context(), subA, schemas.TypeSupplier); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a pending marker is not a rule: %v", err)
	}
	if len(e.pub.Messages()) != 0 {
		t.Fatal("nothing was published")
	}
	if _, err := e.reg.Create(t.Context(), subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", "")); !errors.Is(err, ErrConflict) {
		t.Fatalf("create while a create is pending: %v, want ErrConflict", err)
	}
	e.mr.FastForward(lockTTL + time.Second)
	mustCreate(t, e.reg, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
}

func TestUpdate_ReplacesTheBodyKeepsKeyAndCreatedOn(t *testing.T) {
	e := newEnv(t, false)
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	e.reg.now = func() time.Time { return now }
	orig := mustCreate(t, e.reg, subA, schemas.TypeChannelBinding, ruleIn("https://hooks.example.com/cb", `{"supplierIDs":["s1"]}`))

	now = now.Add(time.Hour)
	in := ruleIn("https://hooks.example.com/cb2", `{"operations":["removed"]}`)
	in.ID, in.Disabled = orig.ID, true
	upd, err := e.reg.Update(t.Context(), subA, schemas.TypeChannelBinding, in)
	if err != nil {
		t.Fatal(err)
	}
	want := Rule{ID: orig.ID, Type: schemas.TypeChannelBinding, URL: "https://hooks.example.com/cb2", Disabled: true,
		SecurityKey: orig.SecurityKey, CreatedOn: orig.CreatedOn, UpdatedOn: now, Config: Config{Operations: []string{"removed"}}}
	if !reflect.DeepEqual(upd, want) {
		t.Fatalf("updated %+v\nwant    %+v", upd, want)
	}
	got, _ := e.reg.Rule(t.Context(), subA, schemas.TypeChannelBinding)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v", got)
	}
	envs := e.pub.Envelopes(t)
	if len(envs) != 2 || envs[1].Type != schemas.RegistryRuleUpdated || envs[1].Version <= envs[0].Version {
		t.Fatalf("events %+v", envs)
	}
}

func TestUpdate_Errors(t *testing.T) {
	e := newEnv(t, false)
	rule := mustCreate(t, e.reg, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
	tests := []struct {
		name, sub, typ string
		in             RuleInput
		want           error
		field          string
	}{
		{"id missing", subA, schemas.TypeSupplier, RuleInput{URL: "https://hooks.example.com/s"}, ErrInvalid, "id"},
		{"invalid body", subA, schemas.TypeSupplier, RuleInput{ID: rule.ID, URL: "ftp://x"}, ErrInvalid, "url"},
		{"unknown id", subA, schemas.TypeSupplier, RuleInput{ID: "nope", URL: "https://hooks.example.com/s"}, ErrNotFound, ""},
		{"no rule of the type", subA, schemas.TypeProduct, RuleInput{ID: rule.ID, URL: "https://hooks.example.com/s"}, ErrNotFound, ""},
		{"another subscriber's id", subB, schemas.TypeSupplier, RuleInput{ID: rule.ID, URL: "https://hooks.example.com/s"}, ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.reg.Update(t.Context(), tt.sub, tt.typ, tt.in)
			if !errors.Is(err, tt.want) || fieldOf(err) != tt.field {
				t.Fatalf("err = %v (field %q), want %v (field %q)", err, fieldOf(err), tt.want, tt.field)
			}
		})
	}
	if n := len(e.pub.Messages()); n != 1 {
		t.Fatalf("%d events, want only the create's", n)
	}
	if got, _ := e.reg.Rule(t.Context(), subA, schemas.TypeSupplier); !reflect.DeepEqual(got, rule) {
		t.Fatalf("rule changed: %+v", got)
	}
}

func TestDelete_RemovesTheRuleAndTheTypeCanBeCreatedAgain(t *testing.T) {
	e := newEnv(t, false)
	rule := mustCreate(t, e.reg, subA, schemas.TypeRate, ruleIn("https://hooks.example.com/r", ""))
	if err := e.reg.Delete(t.Context(), subA, schemas.TypeRate, "other-id"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of an unknown id: %v", err)
	}
	if err := e.reg.Delete(t.Context(), subB, schemas.TypeRate, rule.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete by another subscriber: %v", err)
	}
	if err := e.reg.Delete(t.Context(), subA, schemas.TypeRate, rule.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Rule(t.Context(), subA, schemas.TypeRate); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rule after delete: %v", err)
	}
	if err := e.reg.Delete(t.Context(), subA, schemas.TypeRate, rule.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	envs := e.pub.Envelopes(t)
	if last := envs[len(envs)-1]; last.Type != schemas.RegistryRuleDeleted || !last.Deleted || last.Key != schemas.RuleKey(subA, "rate") {
		t.Fatalf("delete event %+v", last)
	}
	again := mustCreate(t, e.reg, subA, schemas.TypeRate, ruleIn("https://hooks.example.com/r", ""))
	if again.ID == rule.ID || again.SecurityKey == rule.SecurityKey {
		t.Fatal("a re-created rule gets a new id and key")
	}
	subs, _ := e.reg.Subscribers(t.Context())
	if !reflect.DeepEqual(subs, []string{subA}) {
		t.Fatalf("subscribers %v", subs)
	}
}

func TestUpdateAndDelete_KafkaDownChangesNothing(t *testing.T) {
	e := newEnv(t, false)
	rule := mustCreate(t, e.reg, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
	e.pub.SetFail(true)
	in := RuleInput{ID: rule.ID, URL: "https://hooks.example.com/new"}
	if _, err := e.reg.Update(t.Context(), subA, schemas.TypeSupplier, in); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("update: %v", err)
	}
	if err := e.reg.Delete(t.Context(), subA, schemas.TypeSupplier, rule.ID); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("delete: %v", err)
	}
	if _, err := e.reg.UpdateMetadata(t.Context(), subA, MetadataInput{DisableAll: ptr(true)}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("metadata: %v", err)
	}
	if err := e.reg.SetDisableAll(t.Context(), subA, true, "backlog full"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("disableAll: %v", err)
	}
	got, _ := e.reg.Rule(t.Context(), subA, schemas.TypeSupplier)
	md, _ := e.reg.Metadata(t.Context(), subA)
	if !reflect.DeepEqual(got, rule) || md != DefaultMetadata() {
		t.Fatalf("changed while Kafka was down: %+v %+v", got, md)
	}
	e.pub.SetFail(false)
	if _, err := e.reg.Update(t.Context(), subA, schemas.TypeSupplier, in); err != nil {
		t.Fatalf("update after Kafka is back (locks released): %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestMetadata_DefaultsThenPartialUpdates(t *testing.T) {
	e := newEnv(t, false)
	md, err := e.reg.Metadata(t.Context(), subA)
	if err != nil || md != DefaultMetadata() || md.ThrottleDelay != "0s" {
		t.Fatalf("never set: %+v %v", md, err)
	}
	md, err = e.reg.UpdateMetadata(t.Context(), subA, MetadataInput{ThrottleDelay: ptr("250ms")})
	if err != nil {
		t.Fatal(err)
	}
	if md.ThrottleDelay != "250ms" || md.DisableAll || md.CreatedOn.IsZero() || md.Throttle() != 250*time.Millisecond {
		t.Fatalf("after throttle: %+v", md)
	}
	created := md.CreatedOn
	md, err = e.reg.UpdateMetadata(t.Context(), subA, MetadataInput{DisableAll: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	if md.ThrottleDelay != "250ms" || !md.DisableAll || !md.CreatedOn.Equal(created) {
		t.Fatalf("a field left out keeps its value: %+v", md)
	}
	got, _ := e.reg.Metadata(t.Context(), subA)
	if got != md {
		t.Fatalf("read %+v, want %+v", got, md)
	}
	if other, _ := e.reg.Metadata(t.Context(), subB); other != DefaultMetadata() {
		t.Fatalf("another subscriber sees %+v", other)
	}
	_, err = e.reg.UpdateMetadata(t.Context(), subA, MetadataInput{ThrottleDelay: ptr("-1s")})
	if fieldOf(err) != "throttleDelay" {
		t.Fatalf("negative throttleDelay: %v", err)
	}
	msgs := e.pub.Messages()
	if len(msgs) != 2 || msgs[0].Topic != schemas.TopicMetadata || string(msgs[0].Key) != subA {
		t.Fatalf("metadata events %+v", msgs)
	}
}

func TestSetDisableAll_PublishesTheReasonAndIsANoOpWhenUnchanged(t *testing.T) {
	e := newEnv(t, false)
	if err := e.reg.SetDisableAll(t.Context(), subA, false, "nothing"); err != nil {
		t.Fatal(err)
	}
	if len(e.pub.Messages()) != 0 {
		t.Fatal("setting the current value publishes nothing")
	}
	if err := e.reg.SetDisableAll(t.Context(), subA, true, "backlog of 10000 reached"); err != nil {
		t.Fatal(err)
	}
	md, _ := e.reg.Metadata(t.Context(), subA)
	if !md.DisableAll || md.ThrottleDelay != "0s" {
		t.Fatalf("metadata %+v", md)
	}
	var ev schemas.MetadataEvent
	if err := json.Unmarshal(e.pub.Envelopes(t)[0].Data, &ev); err != nil || ev.Reason != "backlog of 10000 reached" {
		t.Fatalf("event %+v %v", ev, err)
	}
}

func TestRuleWithMetadata_ReadsBothInOneCall(t *testing.T) {
	e := newEnv(t, false)
	if _, md, err := e.reg.RuleWithMetadata(t.Context(), subA, schemas.TypeBooking); !errors.Is(err, ErrNotFound) || md != DefaultMetadata() {
		t.Fatalf("no rule: %+v %v", md, err)
	}
	rule := mustCreate(t, e.reg, subA, schemas.TypeBooking, ruleIn("https://hooks.example.com/b", ""))
	if _, err := e.reg.UpdateMetadata(t.Context(), subA, MetadataInput{ThrottleDelay: ptr("1s")}); err != nil {
		t.Fatal(err)
	}
	got, md, err := e.reg.RuleWithMetadata(t.Context(), subA, schemas.TypeBooking)
	if err != nil || !reflect.DeepEqual(got, rule) || md.Throttle() != time.Second {
		t.Fatalf("%+v %+v %v", got, md, err)
	}
}

func TestRules_ListsInTheSpecsTypeOrder(t *testing.T) {
	e := newEnv(t, false)
	for _, typ := range []string{schemas.TypeBooking, schemas.TypeSupplier, schemas.TypeAvailability} {
		mustCreate(t, e.reg, subA, typ, ruleIn("https://hooks.example.com/"+typ, ""))
	}
	rules, err := e.reg.Rules(t.Context(), subA)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range rules {
		types = append(types, r.Type)
	}
	if !reflect.DeepEqual(types, []string{"supplier", "availability", "booking"}) {
		t.Fatalf("types %v", types)
	}
	if none, err := e.reg.Rules(t.Context(), subB); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("no rules: %#v %v", none, err)
	}
}

// view is every read of the registry, to compare a rebuilt Redis with the
// original.
type view struct {
	Subscribers []string
	Rules       map[string][]Rule
	ByType      map[string]map[string]Rule
	Metadata    map[string]Metadata
}

func readView(t *testing.T, r *Registry, subs []string) view {
	t.Helper()
	ctx := t.Context()
	v := view{Rules: map[string][]Rule{}, ByType: map[string]map[string]Rule{}, Metadata: map[string]Metadata{}}
	var err error
	if v.Subscribers, err = r.Subscribers(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		if v.Rules[s], err = r.Rules(ctx, s); err != nil {
			t.Fatal(err)
		}
		v.ByType[s] = map[string]Rule{}
		for _, typ := range schemas.NotificationTypes() {
			rule, err := r.Rule(ctx, s, typ)
			if err == nil {
				v.ByType[s][typ] = rule
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		if v.Metadata[s], err = r.Metadata(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

func TestApply_ReplayingThePublishedEventsRebuildsTheSameView(t *testing.T) {
	e := newEnv(t, false)
	ctx := t.Context()
	subs := []string{subA, subB, "sub-c"}
	// A history with every kind of write: creates of every type, updates,
	// deletes, a delete then re-create, metadata changes, auto-disable.
	for _, s := range subs[:2] {
		for _, typ := range schemas.NotificationTypes() {
			mustCreate(t, e.reg, s, typ, ruleIn("https://hooks.example.com/"+s+"/"+typ, ""))
		}
	}
	sup, _ := e.reg.Rule(ctx, subA, schemas.TypeSupplier)
	if _, err := e.reg.Update(ctx, subA, schemas.TypeSupplier, RuleInput{ID: sup.ID, URL: "https://hooks.example.com/v2", Disabled: true, Config: json.RawMessage(`{"supplierIDs":["s9"]}`)}); err != nil {
		t.Fatal(err)
	}
	av, _ := e.reg.Rule(ctx, subB, schemas.TypeAvailability)
	if err := e.reg.Delete(ctx, subB, schemas.TypeAvailability, av.ID); err != nil {
		t.Fatal(err)
	}
	bk, _ := e.reg.Rule(ctx, subA, schemas.TypeBooking)
	if err := e.reg.Delete(ctx, subA, schemas.TypeBooking, bk.ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, e.reg, subA, schemas.TypeBooking, RuleInput{ID: "rebooked", URL: "https://hooks.example.com/rebook"})
	if _, err := e.reg.UpdateMetadata(ctx, subA, MetadataInput{ThrottleDelay: ptr("2s")}); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.SetDisableAll(ctx, subA, true, "backlog full"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.UpdateMetadata(ctx, "sub-c", MetadataInput{DisableAll: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	want := readView(t, e.reg, subs)
	msgs := e.pub.Messages()

	replays := []struct {
		name  string
		order func([]stream.Message) []stream.Message
	}{
		{"in order", func(m []stream.Message) []stream.Message { return m }},
		{"reversed", func(m []stream.Message) []stream.Message {
			r := slices.Clone(m)
			slices.Reverse(r)
			return r
		}},
		{"twice", func(m []stream.Message) []stream.Message { return append(slices.Clone(m), m...) }},
	}
	for _, rp := range replays {
		t.Run(rp.name, func(t *testing.T) {
			e.mr.FlushAll()
			for _, m := range rp.order(msgs) {
				if err := e.reg.HandleMessage(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			if got := readView(t, e.reg, subs); !reflect.DeepEqual(got, want) {
				t.Fatalf("rebuilt view differs\n got %+v\nwant %+v", got, want)
			}
		})
	}
	if !reflect.DeepEqual(want.Subscribers, subs) {
		t.Fatalf("subscribers %v", want.Subscribers)
	}
}

func TestApply_OlderEventDoesNotOverwriteOrResurrect(t *testing.T) {
	e := newEnv(t, false)
	rule := mustCreate(t, e.reg, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
	if _, err := e.reg.Update(t.Context(), subA, schemas.TypeSupplier, RuleInput{ID: rule.ID, URL: "https://hooks.example.com/s2"}); err != nil {
		t.Fatal(err)
	}
	envs := e.pub.Envelopes(t)
	// A redelivered create (older) leaves the update in place.
	if err := e.reg.Apply(t.Context(), envs[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.reg.Rule(t.Context(), subA, schemas.TypeSupplier); got.URL != "https://hooks.example.com/s2" {
		t.Fatalf("older event overwrote: %+v", got)
	}
	if err := e.reg.Delete(t.Context(), subA, schemas.TypeSupplier, rule.ID); err != nil {
		t.Fatal(err)
	}
	for _, env := range envs {
		if err := e.reg.Apply(t.Context(), env); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.reg.Rule(t.Context(), subA, schemas.TypeSupplier); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a replayed older event resurrected a deleted rule: %v", err)
	}
}

func TestHandleMessage_KafkaTombstoneRemovesTheSlot(t *testing.T) {
	e := newEnv(t, false)
	mustCreate(t, e.reg, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", ""))
	if _, err := e.reg.UpdateMetadata(t.Context(), subA, MetadataInput{DisableAll: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []stream.Message{
		{Topic: schemas.TopicRules, Key: []byte(schemas.RuleKey(subA, schemas.TypeSupplier))},
		{Topic: schemas.TopicMetadata, Key: []byte(subA)},
	} {
		if err := e.reg.HandleMessage(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.reg.Rule(t.Context(), subA, schemas.TypeSupplier); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rule: %v", err)
	}
	if md, _ := e.reg.Metadata(t.Context(), subA); md != DefaultMetadata() {
		t.Fatalf("metadata %+v", md)
	}
	if subs, _ := e.reg.Subscribers(t.Context()); len(subs) != 0 {
		t.Fatalf("subscribers %v", subs)
	}
}

func TestApply_RejectsUnusableEvents(t *testing.T) {
	e := newEnv(t, false)
	good := schemas.RuleState{ID: "r1", Type: "supplier", URL: "https://hooks.example.com/s"}
	data := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	tests := []struct {
		name string
		env  schemas.Envelope
	}{
		{"no version", schemas.Envelope{Type: schemas.RegistryRuleCreated, Key: "a/supplier", Data: data(schemas.RuleEvent{Subscriber: "a", Type: "supplier", Rule: &good})}},
		{"unknown event type", schemas.Envelope{Type: "registry.rule.exploded", Key: "a/supplier", Version: 1, Data: data(schemas.RuleEvent{Subscriber: "a", Type: "supplier", Rule: &good})}},
		{"not JSON", schemas.Envelope{Type: schemas.RegistryRuleCreated, Key: "a/supplier", Version: 1, Data: json.RawMessage(`"x"`)}},
		{"unknown rule type", schemas.Envelope{Type: schemas.RegistryRuleCreated, Key: "a/suppliers", Version: 1, Data: data(schemas.RuleEvent{Subscriber: "a", Type: "suppliers", Rule: &good})}},
		{"key does not match", schemas.Envelope{Type: schemas.RegistryRuleCreated, Key: "b/supplier", Version: 1, Data: data(schemas.RuleEvent{Subscriber: "a", Type: "supplier", Rule: &good})}},
		{"no subscriber", schemas.Envelope{Type: schemas.RegistryRuleCreated, Key: "/supplier", Version: 1, Data: data(schemas.RuleEvent{Type: "supplier", Rule: &good})}},
		{"created without rule", schemas.Envelope{Type: schemas.RegistryRuleCreated, Key: "a/supplier", Version: 1, Data: data(schemas.RuleEvent{Subscriber: "a", Type: "supplier"})}},
		{"rule of another type", schemas.Envelope{Type: schemas.RegistryRuleCreated, Key: "a/product", Version: 1, Data: data(schemas.RuleEvent{Subscriber: "a", Type: "product", Rule: &good})}},
		{"metadata key mismatch", schemas.Envelope{Type: schemas.RegistryMetadataUpdated, Key: "b", Version: 1, Data: data(schemas.MetadataEvent{Subscriber: "a", Metadata: schemas.MetadataState(DefaultMetadata())})}},
		{"metadata bad throttle", schemas.Envelope{Type: schemas.RegistryMetadataUpdated, Key: "a", Version: 1, Data: data(schemas.MetadataEvent{Subscriber: "a", Metadata: schemas.MetadataState{ThrottleDelay: "-1s"}})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := e.reg.Apply(t.Context(), tt.env); !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("err = %v, want ErrInvalidEvent", err)
			}
		})
	}
	for _, m := range []stream.Message{
		{Topic: schemas.TopicRules, Value: []byte("{")},
		{Topic: schemas.TopicRules, Key: []byte("no-slash")},
		{Topic: "other", Key: []byte("a")},
	} {
		if err := e.reg.HandleMessage(t.Context(), m); !errors.Is(err, ErrInvalidEvent) {
			t.Fatalf("HandleMessage(%q, %q): %v", m.Key, m.Value, err)
		}
	}
	if keys := e.mr.Keys(); len(keys) != 0 {
		t.Fatalf("unusable events wrote %v", keys)
	}
}

func TestRegistry_RedisDownIsUnavailable(t *testing.T) {
	e := newEnv(t, false)
	// No retries, so that the test does not wait out go-redis's backoff.
	rdb := redis.NewClient(&redis.Options{Addr: e.mr.Addr(), MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	e.reg = New(Options{Redis: rdb, Publisher: e.pub, Secrets: testharness.Keyring(t)})
	e.mr.Close()
	ctx := t.Context()
	if _, err := e.reg.Rule(ctx, subA, schemas.TypeSupplier); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Rule: %v", err)
	}
	if _, err := e.reg.Rules(ctx, subA); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Rules: %v", err)
	}
	if _, err := e.reg.Metadata(ctx, subA); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Metadata: %v", err)
	}
	if _, err := e.reg.Create(ctx, subA, schemas.TypeSupplier, ruleIn("https://hooks.example.com/s", "")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Create: %v", err)
	}
	if len(e.pub.Messages()) != 0 {
		t.Fatal("nothing is published when the slot cannot be reserved")
	}
}

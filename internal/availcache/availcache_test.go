package availcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/availcache/availcachetest"
	"github.com/switchbackhq/switchback/internal/simulators/partnersim"
	"github.com/switchbackhq/switchback/schemas"
)

// The fixture's names, short for these tests.
var (
	allowLoopback = availcachetest.AllowLoopback
	t0            = availcachetest.T0
)

// env is the shared fixture (availcachetest.Env) with this package's
// wiring of the service.
type env struct{ *availcachetest.Env }

func newEnv(t *testing.T) *env { return &env{availcachetest.NewEnv(t)} }

func (e *env) service(deadline time.Duration) *Service {
	return New(Options{Redis: e.Redis, Catalog: e.Cat, Partner: partner.NewClient(partner.Options{Outbound: allowLoopback, Timeout: 2 * time.Second}),
		Publisher: e.Pub, Clock: e.Clock.Now, Deadline: deadline})
}

var day = window{start: t0, end: t0.Add(48 * time.Hour)}

func TestFreshness_FreshServedFromCacheThenOneCallAfterMaxAge(t *testing.T) {
	e := newEnv(t)
	s := e.service(2 * time.Second)
	ctx := context.Background()
	for range 3 {
		if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.Sim.Calls(); n != 1 {
		t.Fatalf("partner calls = %d, want 1 (then served from Redis)", n)
	}
	e.Clock.Add(5*time.Minute - time.Second)
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil || e.Sim.Calls() != 1 {
		t.Fatalf("at 4m59s: err %v, calls %d", err, e.Sim.Calls())
	}
	e.Clock.Add(2 * time.Second) // 5 min + 1 s after the fetch
	got, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day)
	if err != nil || e.Sim.Calls() != 2 || got.stale {
		t.Fatalf("at 5m01s: err %v, calls %d, stale %v", err, e.Sim.Calls(), got.stale)
	}
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil || e.Sim.Calls() != 2 {
		t.Fatalf("after the refresh: err %v, calls %d", err, e.Sim.Calls())
	}
	// Every refresh published one snapshot per bound rate, never R3.
	msgs := onTopic(e.Pub.Messages(), schemas.TopicAvailability)
	if len(msgs) != 4 {
		t.Fatalf("snapshots = %d, want 4", len(msgs))
	}
	for _, m := range msgs {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil || m.Topic != schemas.TopicAvailability || env.Type != schemas.SnapshotEventType {
			t.Fatalf("bad snapshot %s: %v", m.Value, err)
		}
		if strings.HasSuffix(env.Key, "/R3") || env.Key != string(m.Key) {
			t.Fatalf("snapshot key %q", env.Key)
		}
	}
}

func TestFreshness_PastPartnerExpiresIsStaleBeforeMaxAge(t *testing.T) {
	e := newEnv(t)
	e.Sim.Update(func(c *partnersim.Config) { c.ExpiresIn = time.Minute })
	s := e.service(2 * time.Second)
	ctx := context.Background()
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "R1", day); err != nil {
		t.Fatal(err)
	}
	e.Clock.Add(61 * time.Second)
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "R1", day); err != nil || e.Sim.Calls() != 2 {
		t.Fatalf("err %v, calls %d, want 2", err, e.Sim.Calls())
	}
}

func TestConcurrentStaleReads_OnePartnerCall(t *testing.T) {
	e := newEnv(t)
	e.Sim.Update(func(c *partnersim.Config) { c.Latency = 100 * time.Millisecond })
	// Two processes (two services, their own singleflight) on one Redis.
	a, b := e.service(2*time.Second), e.service(2*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if _, err := s.load(context.Background(), "r", "chan-a", "S1", "P1", "", day); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := e.Sim.Calls(); n != 1 {
		t.Fatalf("partner calls = %d, want 1", n)
	}
}

func TestConcurrentReads_ChannelsWithOtherRatesDoNotShareARefresh(t *testing.T) {
	e := newEnv(t)
	e.Sim.Update(func(c *partnersim.Config) { c.Latency = 100 * time.Millisecond })
	s := e.service(2 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, ch := range []string{"chan-a", "chan-c"} {
		wg.Go(func() {
			got, err := s.load(context.Background(), "r", ch, "S1", "P1", "", day)
			if err == nil && got.stale {
				err = fmt.Errorf("%s: stale", ch)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := e.Sim.Calls(); n != 2 {
		t.Fatalf("calls = %d, want 2 (one per rate set)", n)
	}
}

func TestDeadline_SlowPartnerServesStaleAndRefreshesInBackground(t *testing.T) {
	e := newEnv(t)
	s := e.service(100 * time.Millisecond)
	ctx := context.Background()
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil {
		t.Fatal(err)
	}
	e.Clock.Add(6 * time.Minute) // stale, but before the partner's expires (10 min)
	e.Sim.Update(func(c *partnersim.Config) { c.Latency = 400 * time.Millisecond })
	start := time.Now()
	got, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day)
	if err != nil || !got.stale {
		t.Fatalf("err %v, stale %v", err, got.stale)
	}
	if d := time.Since(start); d > 300*time.Millisecond {
		t.Fatalf("stale answer took %v, want about the 100 ms deadline", d)
	}
	// The refresh finishes in the background: the entry becomes fresh.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, missing, err := s.read(ctx, "S1", "P1", []string{"R1", "R2"}, day, e.Clock.Now())
		if err == nil && !missing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("background refresh did not write the entry back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.Sim.Calls(); n != 2 {
		t.Fatalf("calls = %d, want 2", n)
	}
}

func TestDeadline_NoEntryIs503(t *testing.T) {
	e := newEnv(t)
	e.Sim.Update(func(c *partnersim.Config) { c.Latency = 400 * time.Millisecond })
	s := e.service(50 * time.Millisecond)
	_, err := s.load(context.Background(), "r", "chan-a", "S1", "P1", "", day)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestPartnerDown_NoEntryIs503_StaleEntryServed(t *testing.T) {
	e := newEnv(t)
	s := e.service(time.Second)
	ctx := context.Background()
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil {
		t.Fatal(err)
	}
	e.Sim.Update(func(c *partnersim.Config) { c.ErrorRate = 1 })
	e.Clock.Add(6 * time.Minute)
	if got, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); err != nil || !got.stale {
		t.Fatalf("stale: err %v", err)
	}
	other := window{start: t0.Add(72 * time.Hour), end: t0.Add(96 * time.Hour)}
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", other); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no entry: err = %v", err)
	}
	e.Clock.Add(5 * time.Minute) // past the partner's expires: discarded
	if _, err := s.load(ctx, "r", "chan-a", "S1", "P1", "", day); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("expired entry: err = %v", err)
	}
}

// TestLoad_EntriesAreTheCachedAnswersOfTheBoundRates: Load gives, per
// bound rate in id order, the cached JSON array as stored (what
// query/availapi writes out without decoding), its decoded form, and
// the partner's retrieved and expires; a second Load is served from the
// cache with the same bytes.
func TestLoad_EntriesAreTheCachedAnswersOfTheBoundRates(t *testing.T) {
	e := newEnv(t)
	s := e.service(2 * time.Second)
	ctx := context.Background()
	got, err := s.Load(ctx, "r", "chan-a", "S1", "P1", "", day.start, day.end)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != 2 || got.RateID(0) != "R1" || got.RateID(1) != "R2" || got.Stale() {
		t.Fatalf("rates %d (%v), stale %v: want R1 and R2, fresh", got.Len(), got, got.Stale())
	}
	for i := range got.Len() {
		as, err := got.Availabilities(i)
		if err != nil || len(as) == 0 {
			t.Fatalf("rate %s: %d availabilities, err %v", got.RateID(i), len(as), err)
		}
		var raw []schemas.Availability
		if err := json.Unmarshal(got.Raw(i), &raw); err != nil || len(raw) != len(as) || raw[0].ID != as[0].ID {
			t.Fatalf("rate %s: raw %s does not hold the decoded %v (%v)", got.RateID(i), got.Raw(i), as, err)
		}
		if got.Retrieved(i).IsZero() || !got.Expires(i).After(got.Retrieved(i)) {
			t.Fatalf("rate %s: retrieved %v, expires %v", got.RateID(i), got.Retrieved(i), got.Expires(i))
		}
	}
	again, err := s.Load(ctx, "r", "chan-a", "S1", "P1", "R2", day.start, day.end)
	if err != nil || again.Len() != 1 || string(again.Raw(0)) != string(got.Raw(1)) {
		t.Fatalf("second load of R2: %v, err %v", again, err)
	}
	if n := e.Sim.Calls(); n != 1 {
		t.Fatalf("partner calls = %d, want 1", n)
	}
}

package cronreport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestMain(m *testing.M) { testharness.Main(m) }

func TestParseError_NamesTheEntityWhenTheTextDoes(t *testing.T) {
	tests := []struct {
		text       string
		entity, id string
	}{
		{"option o-1: 503 Service Unavailable", EntityOption, "o-1"},
		{"product p1: availabilityType FREESALE on a START_TIME product", EntityProduct, "p1"},
		{"supplier s.1~x: not found", EntitySupplier, "s.1~x"},
		{"availability a_9: vacancies -1", EntityAvailability, "a_9"},
		{"rate r1: unknown entity word", "", ""},
		{"connection refused", "", ""},
		{"option: no id", "", ""},
		{"option o 1: id with a space", "", ""},
		{"product p1 option o2: nested", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := ParseError(tt.text)
			if got.Entity != tt.entity || got.ID != tt.id || got.Message != tt.text {
				t.Errorf("ParseError = %+v, want entity %q id %q and the whole text", got, tt.entity, tt.id)
			}
		})
	}
}

func TestNewErrorReport_BoundsItemsAndMessages(t *testing.T) {
	many := make([]string, MaxErrorItems+7)
	for i := range many {
		many[i] = fmt.Sprintf("option o%d: down", i)
	}
	long := "option o1: " + strings.Repeat("é", MaxErrorMessage)
	tests := []struct {
		name      string
		in        []string
		wantLen   int
		lastCheck func(ErrorItem) bool
	}{
		{"none is absent", nil, 0, nil},
		{"one each", []string{"option o1: x", "boom"}, 2, func(e ErrorItem) bool { return e.Message == "boom" && e.Entity == "" }},
		{"past the bound: a last element counts the rest", many, MaxErrorItems + 1,
			func(e ErrorItem) bool { return strings.Contains(e.Message, "7 more errors") }},
		{"a long message is cut on a rune boundary", []string{long}, 1,
			func(e ErrorItem) bool {
				return len(e.Message) <= MaxErrorMessage+len("…") && json.Valid([]byte(`"`+e.Message+`"`))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewErrorReport(tt.in)
			if len(got) != tt.wantLen || (tt.in == nil) != (got == nil) {
				t.Fatalf("%d elements (nil %v), want %d", len(got), got == nil, tt.wantLen)
			}
			if tt.lastCheck != nil && !tt.lastCheck(got[len(got)-1]) {
				t.Errorf("last element %+v", got[len(got)-1])
			}
		})
	}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock(t time.Time) *clock    { return &clock{t: t} }
func ids(ss []Summary) (out []int64) {
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}
func rdbFor(t *testing.T) *redis.Client { t.Helper(); return redisClient(t, testharness.Redis(t)) }

func redisClient(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// broker starts the embedded broker with the topics and a producer.
func broker(t *testing.T) ([]string, *stream.Producer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := kafkabroker.Start(ctx, kafkabroker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	brokers := []string{b.Addr()}
	if err := stream.EnsureTopics(ctx, brokers, schemas.Topics()); err != nil {
		t.Fatal(err)
	}
	p := stream.NewProducer(stream.ProducerConfig{Brokers: brokers, BatchTimeout: time.Millisecond})
	t.Cleanup(func() { _ = p.Close() })
	return brokers, p
}

// TestStore_ListGetWindowScopeAndRebuildFromTopic: reports are on the
// topic and in the view; listed newest first in the caller's scope,
// filtered and paged; a report past 60 days is neither listed nor found;
// a flushed view rebuilt from the topic gives the same answers.
func TestStore_ListGetWindowScopeAndRebuildFromTopic(t *testing.T) {
	brokers, prod := broker(t)
	rdb := rdbFor(t)
	t0 := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	clk := newClock(t0)
	s := NewStore(Options{Redis: rdb, Publisher: prod, Clock: clk.Now})
	ctx := context.Background()
	put := func(id int64, sid string, at time.Time, errs ...string) {
		t.Helper()
		r := Report{Summary: Summary{ID: id, Inserted: at, ExternalSystemID: sid, ErrorCount: len(errs)}, ErrorReport: NewErrorReport(errs),
			RunID: "run", RequestKey: fmt.Sprintf("run/%s/%d", sid, id), Products: 2, Options: 3, Availabilities: 40}
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	put(1, "s1", t0) // will be 61 days old
	now := t0.Add(61 * 24 * time.Hour)
	clk.Set(now)
	put(2, "s1", now.Add(-3*time.Hour))
	put(3, "s2", now.Add(-2*time.Hour), "option o1: down")
	put(4, "s1", now.Add(-time.Hour), "product p1: bad", "timeout")
	put(5, "s3", now.Add(-time.Hour)) // same time as 4: the higher id first

	lists := []struct {
		name string
		f    Filter
		want []int64
	}{
		{"admin: all of the past 60 days, newest first", Filter{AllSuppliers: true}, []int64{5, 4, 3, 2}},
		{"operator of s1", Filter{Suppliers: []string{"s1"}}, []int64{4, 2}},
		{"operator of s1 and s2", Filter{Suppliers: []string{"s2", "s1"}}, []int64{4, 3, 2}},
		{"operator of s1 and s2, paged", Filter{Suppliers: []string{"s1", "s2"}, Offset: 1, Limit: 1}, []int64{3}},
		{"operator of s1 and s2, past the end", Filter{Suppliers: []string{"s1", "s2"}, Offset: 3, Limit: 5}, nil},
		{"operator of nothing", Filter{}, nil},
		{"admin, one supplier", Filter{AllSuppliers: true, ExternalSystemID: "s2"}, []int64{3}},
		{"operator of s1 asking for s2", Filter{Suppliers: []string{"s1"}, ExternalSystemID: "s2"}, nil},
		{"admin, paged", Filter{AllSuppliers: true, Offset: 1, Limit: 2}, []int64{4, 3}},
	}
	gets := []struct {
		id       int64
		found    bool
		errCount int
	}{{1, false, 0}, {2, true, 0}, {4, true, 2}, {99, false, 0}}
	check := func(t *testing.T) {
		for _, tt := range lists {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.List(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(ids(got)) != fmt.Sprint(tt.want) {
					t.Errorf("ids %v, want %v", ids(got), tt.want)
				}
			})
		}
		for _, tt := range gets {
			t.Run(fmt.Sprint("get ", tt.id), func(t *testing.T) {
				r, err := s.Get(ctx, tt.id)
				if !tt.found {
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("err = %v, want ErrNotFound", err)
					}
					return
				}
				if err != nil || r.ErrorCount != tt.errCount || len(r.ErrorReport) != tt.errCount || r.Items() != 45 {
					t.Fatalf("report %+v (%v), want %d errors and 45 items", r, err, tt.errCount)
				}
			})
		}
		r, err := s.ByRequest(ctx, "run/s2/3")
		if err != nil || r.ID != 3 || r.ErrorReport[0].Entity != EntityOption {
			t.Errorf("by request: %+v (%v)", r, err)
		}
	}
	t.Run("live", check)
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(ctx, Filter{AllSuppliers: true}); len(got) != 0 {
		t.Fatalf("flushed view still lists %v", ids(got))
	}
	if err := s.Rebuild(ctx, brokers); err != nil {
		t.Fatal(err)
	}
	t.Run("rebuilt from the topic", check)
}

// recorder keeps what was published, in order.
type recorder struct {
	mu   sync.Mutex
	msgs []stream.Message
}

func (r *recorder) Publish(_ context.Context, msgs ...stream.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func (r *recorder) Messages() []stream.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stream.Message(nil), r.msgs...)
}

// TestStore_TwoRecordsOfOneIDKeepTheEarliestInAnyOrder: a request redone
// after a crash between the publish and the view leaves two records of
// one id; the view keeps the earlier whatever the order it sees them in,
// so live and rebuilt views agree.
func TestStore_TwoRecordsOfOneIDKeepTheEarliestInAnyOrder(t *testing.T) {
	rdb := rdbFor(t)
	now := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	rec := &recorder{}
	s := NewStore(Options{Redis: rdb, Publisher: rec, Clock: func() time.Time { return now }})
	ctx := context.Background()
	first := Report{Summary: Summary{ID: 7, Inserted: now.Add(-time.Minute), ExternalSystemID: "s1"}, RequestKey: "k"}
	second := Report{Summary: Summary{ID: 7, Inserted: now, ExternalSystemID: "s1", ErrorCount: 1}, ErrorReport: NewErrorReport([]string{"x"}), RequestKey: "k"}
	for _, r := range []Report{first, second} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	msgs := rec.Messages()
	tests := []struct {
		name  string
		order []int
	}{{"in order", []int{0, 1}}, {"reversed", []int{1, 0}}, {"the later alone first, then both", []int{1, 1, 0, 1}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := rdb.FlushDB(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for _, i := range tt.order {
				if _, err := s.HandleMessage(ctx, msgs[i]); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Get(ctx, 7)
			if err != nil || !got.Inserted.Equal(first.Inserted) || got.ErrorCount != 0 {
				t.Fatalf("kept %+v (%v), want the earlier record", got, err)
			}
			if l, _ := s.List(ctx, Filter{AllSuppliers: true}); len(l) != 1 {
				t.Errorf("listed %d, want 1", len(l))
			}
		})
	}
}

// TestStore_HandleMessage_RejectsWhatIsNotAReport: unusable records are
// marked so, never applied.
func TestStore_HandleMessage_RejectsWhatIsNotAReport(t *testing.T) {
	s := NewStore(Options{Redis: rdbFor(t), Publisher: &recorder{}})
	env := func(typ, data string) []byte {
		b, _ := json.Marshal(schemas.Envelope{ID: "x", Type: typ, Time: time.Now(), Data: json.RawMessage(data)})
		return b
	}
	tests := []struct {
		name  string
		value []byte
	}{
		{"not JSON", []byte("{")},
		{"another type", env("something.else", `{"id":1,"externalSystemID":"s","inserted":"2026-01-01T00:00:00Z"}`)},
		{"no id", env(schemas.CronReportInserted, `{"externalSystemID":"s","inserted":"2026-01-01T00:00:00Z"}`)},
		{"negative id", env(schemas.CronReportInserted, `{"id":-3,"externalSystemID":"s","inserted":"2026-01-01T00:00:00Z"}`)},
		{"no supplier", env(schemas.CronReportInserted, `{"id":1,"inserted":"2026-01-01T00:00:00Z","requestKey":"k"}`)},
		{"no request key", env(schemas.CronReportInserted, `{"id":1,"externalSystemID":"s","inserted":"2026-01-01T00:00:00Z"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.HandleMessage(context.Background(), stream.Message{Value: tt.value}); !errors.Is(err, ErrUnusable) {
				t.Errorf("err = %v, want ErrUnusable", err)
			}
		})
	}
}

func TestParseID_PositiveIntegersOnly(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0 = invalid (400), -1 = not found (404)
	}{
		{"1", 1}, {"42", 42}, {"007", 7}, {"9223372036854775807", 9223372036854775807},
		{"", 0}, {"0", 0}, {"-1", 0}, {"+1", 0}, {"1.5", 0}, {"1e3", 0}, {"abc", 0}, {" 1", 0}, {"0x10", 0},
		{"9223372036854775808", -1}, {"99999999999999999999", -1}, {"000", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseID(tt.in)
			var fe *domainerr.FieldError
			if tt.want == -1 { // a positive integer no report has: 404
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("ParseID(%q) = %d, %v; want ErrNotFound", tt.in, got, err)
				}
				return
			}
			if tt.want == 0 {
				if !errors.As(err, &fe) || fe.Field != "id" {
					t.Fatalf("ParseID(%q) = %d, %v; want an INVALID_FIELD error on id", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseID(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

// FuzzParseID: an accepted id is positive and prints back to the input
// without its leading zeros.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1.5", "abc", "99999999999999999999", "007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseID(s)
		if err != nil {
			return
		}
		if n < 1 || strconv.FormatInt(n, 10) != strings.TrimLeft(s, "0") {
			t.Fatalf("ParseID(%q) = %d", s, n)
		}
	})
}

// FuzzParseError: any text makes an element that keeps the text (cut to
// the bound), and names an entity only with an id.
func FuzzParseError(f *testing.F) {
	for _, s := range []string{"option o-1: down", "boom", "product : x", "supplier s1:", "availability a b: c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		it := ParseError(s)
		if (it.Entity == "") != (it.ID == "") || strings.ContainsAny(it.ID, " :") {
			t.Fatalf("ParseError(%q) = %+v", s, it)
		}
		if len(s) <= MaxErrorMessage && it.Message != s {
			t.Fatalf("message %q, want the text", it.Message)
		}
		if _, err := json.Marshal(it); err != nil {
			t.Fatal(err)
		}
	})
}

// failScripts fails the view's script while on: Redis refusing the write
// after the report was published.
type failScripts struct{ on *bool }

func (failScripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f failScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if *f.on && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			return errors.New("redis: connection refused")
		}
		return next(ctx, cmd)
	}
}
func (failScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestStore_PublishedButNotAppliedIsAppliedNotPublishedAgain: a report
// whose view write failed after its publish says so (ErrNotApplied), and
// Apply records it in the view without a second record on the topic.
func TestStore_PublishedButNotAppliedIsAppliedNotPublishedAgain(t *testing.T) {
	rdb := rdbFor(t)
	fail := true
	rdb.AddHook(failScripts{&fail})
	rec := &recorder{}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	s := NewStore(Options{Redis: rdb, Publisher: rec, Clock: func() time.Time { return now }})
	r := Report{Summary: Summary{ID: 7, Inserted: now, ExternalSystemID: "s1"}, RequestKey: "run-1/s1", RunID: "run-1"}
	err := s.Put(context.Background(), r)
	if !errors.Is(err, ErrNotApplied) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Put with the view down: %v, want ErrNotApplied and ErrUnavailable", err)
	}
	if _, err := s.Get(context.Background(), 7); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get before Apply: %v", err)
	}
	if err := s.Apply(context.Background(), r); err == nil {
		t.Fatal("Apply with the view still down succeeded")
	}
	fail = false
	if err := s.Apply(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ByRequest(context.Background(), "run-1/s1"); err != nil || got.ID != 7 {
		t.Fatalf("ByRequest after Apply: %+v %v", got, err)
	}
	if n := len(rec.Messages()); n != 1 {
		t.Fatalf("%d records on the topic, want the one of Put", n)
	}
}

// TestID_IsOpaqueStableAndAJSONInteger: report ids come from the request's
// key, not a global sequence (issue 18): the same for a redelivered
// request, different across requests and candidates, positive and exact
// in JSON (below 2^53).
func TestID_IsOpaqueStableAndAJSONInteger(t *testing.T) {
	seen := map[int64]string{}
	for i := range 2000 {
		key := fmt.Sprintf("cron-20261125T%06dZ/sup-%d", i, i%7)
		for n := range 2 {
			id := ID(key, n)
			if id <= 0 || id >= 1<<53 {
				t.Fatalf("ID(%q, %d) = %d: not a positive integer below 2^53", key, n, id)
			}
			if id != ID(key, n) {
				t.Fatalf("ID(%q, %d) is not stable", key, n)
			}
			if prev, ok := seen[id]; ok {
				t.Fatalf("ID(%q, %d) = %d, as %s", key, n, id, prev)
			}
			seen[id] = fmt.Sprint(key, n)
		}
	}
	// Consecutive requests do not get neighbouring ids.
	if d := ID("run/a", 0) - ID("run/b", 0); d > -1000 && d < 1000 {
		t.Fatalf("neighbouring ids: %d", d)
	}
}

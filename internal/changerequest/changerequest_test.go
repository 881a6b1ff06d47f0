package changerequest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestMain(m *testing.M) { testharness.Main(m) }

func TestNewInput_Window(t *testing.T) {
	today := time.Date(2026, 11, 22, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name             string
		in               NewInput
		field            string // "" = valid
		wantStart, wantE string
	}{
		{"standard default: today + 90 days", NewInput{Mode: ModeStandard}, "", "2026-11-22", "2027-02-20"},
		{"price-schedule default: today + one year", NewInput{Mode: ModePriceSchedule}, "", "2026-11-22", "2027-11-22"},
		{"both given", NewInput{StartDate: "2026-12-01", EndDate: "2026-12-08"}, "", "2026-12-01", "2026-12-08"},
		{"start without end", NewInput{StartDate: "2026-12-01"}, "endDate", "", ""},
		{"end without start", NewInput{EndDate: "2026-12-01"}, "startDate", "", ""},
		{"bad start", NewInput{StartDate: "12/01/2026", EndDate: "2026-12-08"}, "startDate", "", ""},
		{"bad end", NewInput{StartDate: "2026-12-01", EndDate: "2026-02-30"}, "endDate", "", ""},
		{"end not after start (exclusive)", NewInput{StartDate: "2026-12-01", EndDate: "2026-12-01"}, "endDate", "", ""},
		{"longer than 366 days", NewInput{StartDate: "2026-01-01", EndDate: "2027-01-03"}, "endDate", "", ""},
		{"exactly 366 days", NewInput{StartDate: "2027-01-01", EndDate: "2028-01-02"}, "", "2027-01-01", "2028-01-02"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			err := in.Window(today)
			if tt.field != "" {
				var fe *domainerr.FieldError
				if !errors.As(err, &fe) || fe.Field != tt.field {
					t.Fatalf("err = %v, want a field error on %s", err, tt.field)
				}
				return
			}
			if err != nil || in.StartDate != tt.wantStart || in.EndDate != tt.wantE {
				t.Fatalf("window %s..%s (%v), want %s..%s", in.StartDate, in.EndDate, err, tt.wantStart, tt.wantE)
			}
		})
	}
}

func TestResult_Status(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		err  error
		want string
	}{
		{"all refreshed", Result{Items: 3}, nil, StatusSucceeded},
		{"nothing to refresh", Result{}, nil, StatusSucceeded},
		{"some failed", Result{Items: 2, Failures: []string{"x"}}, nil, StatusPartialFailure},
		{"all failed", Result{Failures: []string{"x", "y"}}, nil, StatusFailed},
		{"the run failed", Result{Items: 5}, errors.New("down"), StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.Status(tt.err); got != tt.want {
				t.Errorf("Status = %s, want %s", got, tt.want)
			}
		})
	}
}

// recorder is a Publisher that keeps what was published (the records a
// broker would hold, in order).
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

func newStore(t *testing.T, now func() time.Time) (*Store, *recorder, redis.UniversalClient) {
	t.Helper()
	rdb := testharness.RedisClient(t, 0)
	rec := &recorder{}
	return NewStore(Options{Redis: rdb, Publisher: rec, Clock: now}), rec, rdb
}

// TestStore_CreateListGetScopedAndRebuilt: requests are Kafka first (one
// record each on the queue topic), listed newest first with filters and
// paging, scoped to their owner, and a flushed view is rebuilt from the
// records with the same answers; an older record never overwrites a newer.
func TestStore_CreateListGetScopedAndRebuilt(t *testing.T) {
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	s, rec, rdb := newStore(t, now)
	ctx := context.Background()
	var made []Request
	for i, in := range []NewInput{
		{SupplierID: "s1", ProductID: "p1", Mode: ModeStandard, Owner: "op-a"},
		{SupplierID: "s1", ProductID: "p2", Mode: ModePriceSchedule, Owner: "op-a"},
		{SupplierID: "s2", ProductID: "p9", Mode: ModeStandard, Owner: "op-b", StartDate: "2026-12-01", EndDate: "2026-12-02"},
	} {
		clock = clock.Add(time.Duration(i+1) * time.Second)
		r, err := s.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != StatusWaiting || r.BeganWorking != nil || r.ID == "" {
			t.Fatalf("created %+v", r)
		}
		made = append(made, r)
	}
	if msgs := rec.Messages(); len(msgs) != 3 || msgs[0].Topic != schemas.TopicChangeRequest {
		t.Fatalf("published %d records", len(msgs))
	}
	// A status change, then the older WAITING record again: ignored.
	working := made[0]
	began := clock
	working.Status, working.BeganWorking = StatusWorking, &began
	if _, err := s.SetStatus(ctx, working); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.HandleMessage(ctx, rec.Messages()[0]); err != nil {
		t.Fatal(err)
	}

	lists := []struct {
		name string
		f    Filter
		want []string // ids, newest first
	}{
		{"operator a: its own, newest first", Filter{Owner: "op-a", Limit: 50}, []string{made[1].ID, made[0].ID}},
		{"admin: everyone's", Filter{Limit: 50}, []string{made[2].ID, made[1].ID, made[0].ID}},
		{"by mode", Filter{Owner: "op-a", Mode: ModePriceSchedule, Limit: 50}, []string{made[1].ID}},
		{"mode any", Filter{Owner: "op-a", Mode: ModeAny, Limit: 50}, []string{made[1].ID, made[0].ID}},
		{"by status", Filter{Owner: "op-a", Status: StatusWorking, Limit: 50}, []string{made[0].ID}},
		{"by product", Filter{Owner: "op-a", ProductID: "p1", Limit: 50}, []string{made[0].ID}},
		{"by request id", Filter{RequestID: made[2].ID, Limit: 50}, []string{made[2].ID}},
		{"by supplier, another's", Filter{Owner: "op-a", SupplierID: "s2", Limit: 50}, nil},
		{"paged", Filter{Limit: 1, Offset: 1}, []string{made[1].ID}},
	}
	check := func(t *testing.T) {
		for _, tt := range lists {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.List(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, r := range got {
					ids = append(ids, r.ID)
				}
				if fmt.Sprint(ids) != fmt.Sprint(tt.want) {
					t.Errorf("ids %v, want %v", ids, tt.want)
				}
			})
		}
		if _, err := s.Get(ctx, "op-b", made[0].ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("another operator's request: %v, want ErrNotFound", err)
		}
		got, err := s.Get(ctx, "op-a", made[0].ID)
		if err != nil || got.Status != StatusWorking || got.BeganWorking == nil {
			t.Errorf("own request = %+v (%v), want WORKING", got, err)
		}
	}
	t.Run("live", check)
	if err := testharness.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	// The records in another order (the view is order-insensitive).
	msgs := rec.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if _, _, err := s.HandleMessage(ctx, msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("rebuilt", check)
}

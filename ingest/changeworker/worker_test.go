package changeworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/changerequest"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestMain(m *testing.M) { testharness.Main(m) }

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

func (r *recorder) take() []stream.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.msgs
	r.msgs = nil
	return out
}

// syncer answers per product and remembers the order it was asked in:
// the seam to the supplier's system, which these tests do not reach.
type syncer struct {
	mu     sync.Mutex
	asked  []string
	result map[string]changerequest.Result
	err    map[string]error
}

func (s *syncer) Sync(_ context.Context, r changerequest.Request) (changerequest.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, r.CreateRequest.ProductID)
	return s.result[r.CreateRequest.ProductID], s.err[r.CreateRequest.ProductID]
}

// TestWorker_WorksInOrderWithFinalStatusesAndIsIdempotent: requests are
// worked in the order they were queued, each WAITING → WORKING → its final
// status with timestamps; a redelivered request that is finished is not
// worked again; each run leaves one history event.
func TestWorker_WorksInOrderWithFinalStatusesAndIsIdempotent(t *testing.T) {
	opts, err := redis.ParseURL(testharness.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	queue, hist := &recorder{}, &recorder{}
	store := changerequest.NewStore(changerequest.Options{Redis: rdb, Publisher: queue})
	sy := &syncer{
		result: map[string]changerequest.Result{"ok": {Items: 3}, "partial": {Items: 1, Failures: []string{"rate r2: timeout"}}},
		err:    map[string]error{"down": errors.New("supplier system unreachable")},
	}
	w := NewWorker(WorkerOptions{Store: store, Syncer: sy, Publisher: hist})
	ctx := context.Background()
	want := map[string]string{"ok": changerequest.StatusSucceeded, "partial": changerequest.StatusPartialFailure, "down": changerequest.StatusFailed}
	ids := map[string]string{}
	for _, pid := range []string{"ok", "partial", "down"} {
		r, err := store.Create(ctx, changerequest.NewInput{SupplierID: "s1", ProductID: pid, Mode: changerequest.ModeStandard, Owner: "op"})
		if err != nil {
			t.Fatal(err)
		}
		ids[pid] = r.ID
	}
	requested := queue.take()
	for _, m := range requested {
		if err := w.Handle(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(sy.asked) != "[ok partial down]" {
		t.Fatalf("worked in order %v, want the queue's", sy.asked)
	}
	for pid, status := range want {
		r, err := store.Get(ctx, "op", ids[pid])
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != status || r.BeganWorking == nil || r.FinishedWorking == nil || r.FinishedWorking.Before(*r.BeganWorking) {
			t.Errorf("%s: %+v, want %s with both timestamps", pid, r, status)
		}
		if status != changerequest.StatusSucceeded && len(r.Errors) == 0 {
			t.Errorf("%s: no errors recorded for %s", pid, status)
		}
	}
	// The status records are on the queue topic too (WORKING, final).
	if n := len(queue.take()); n != 6 {
		t.Errorf("status records = %d, want 6", n)
	}
	runs := hist.take()
	if len(runs) != 3 {
		t.Fatalf("history events = %d, want 3", len(runs))
	}
	var env schemas.Envelope
	var run schemas.ChangeRequestRun
	if json.Unmarshal(runs[1].Value, &env) != nil || json.Unmarshal(env.Data, &run) != nil || env.Type != schemas.HistoryChangeRequestRun ||
		run.Status != changerequest.StatusPartialFailure || run.ID != ids["partial"] || run.Finished.IsZero() {
		t.Errorf("history %s %+v", env.Type, run)
	}
	// Redelivered (a crash before the commit): not worked again.
	for _, m := range requested {
		if err := w.Handle(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if len(sy.asked) != 3 {
		t.Errorf("a finished request was worked again: %v", sy.asked)
	}
}

// TestWorker_FoundWorkingAfterACrashIsWorkedAgain: a request left WORKING
// by a crashed worker is worked again when its record is redelivered.
func TestWorker_FoundWorkingAfterACrashIsWorkedAgain(t *testing.T) {
	opts, err := redis.ParseURL(testharness.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	queue := &recorder{}
	store := changerequest.NewStore(changerequest.Options{Redis: rdb, Publisher: queue})
	r, err := store.Create(context.Background(), changerequest.NewInput{SupplierID: "s1", ProductID: "ok", Mode: changerequest.ModeStandard, Owner: "op"})
	if err != nil {
		t.Fatal(err)
	}
	requested := queue.take()
	began := time.Now()
	r.Status, r.BeganWorking = changerequest.StatusWorking, &began
	if _, err := store.SetStatus(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	sy := &syncer{result: map[string]changerequest.Result{"ok": {Items: 1}}}
	w := NewWorker(WorkerOptions{Store: store, Syncer: sy})
	if err := w.Handle(context.Background(), requested[0]); err != nil {
		t.Fatal(err)
	}
	got, _ := store.Get(context.Background(), "", r.ID)
	if len(sy.asked) != 1 || got.Status != changerequest.StatusSucceeded {
		t.Fatalf("after redelivery: asked %v, status %s", sy.asked, got.Status)
	}
}

// epochFence is the views' epoch as the test sets it ("" = lost).
type epochFence struct {
	mu    sync.Mutex
	epoch string
}

func (f *epochFence) Epoch(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch, nil
}

func (f *epochFence) set(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch = e
}

// flushingSyncer fails the first run the way a flushed catalog makes it
// fail (the product is not found) and loses the views meanwhile; later
// runs succeed.
type flushingSyncer struct {
	fence *epochFence
	runs  int
}

func (s *flushingSyncer) Sync(context.Context, changerequest.Request) (changerequest.Result, error) {
	s.runs++
	if s.runs == 1 {
		s.fence.set("")
		return changerequest.Result{}, errors.New("product ok: not found")
	}
	return changerequest.Result{Items: 1}, nil
}

// TestWorker_ViewsLostDuringARunAreNotRecordedAsItsResult: Redis lost its
// views while a request was worked, so the refresh found nothing; a FAILED
// status would be final (a redelivery does not work a finished request
// again), so the worker records none and returns the fence error, and the
// redelivery after the rebuild works it and records SUCCEEDED.
func TestWorker_ViewsLostDuringARunAreNotRecordedAsItsResult(t *testing.T) {
	opts, err := redis.ParseURL(testharness.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	queue := &recorder{}
	store := changerequest.NewStore(changerequest.Options{Redis: rdb, Publisher: queue})
	r, err := store.Create(context.Background(), changerequest.NewInput{SupplierID: "s1", ProductID: "ok", Mode: changerequest.ModeStandard, Owner: "op"})
	if err != nil {
		t.Fatal(err)
	}
	requested := queue.take()
	fence := &epochFence{epoch: "e1"}
	sy := &flushingSyncer{fence: fence}
	w := NewWorker(WorkerOptions{Store: store, Syncer: sy, Fence: fence})

	err = w.Handle(stream.FencedContext(context.Background(), fence, "e1"), requested[0])
	if !errors.Is(err, stream.ErrFenced) {
		t.Fatalf("Handle on lost views = %v, want ErrFenced", err)
	}
	got, _ := store.Get(context.Background(), "", r.ID)
	if got.Status != changerequest.StatusWorking {
		t.Fatalf("status after the lost run = %s, want WORKING (no final status from a lost view)", got.Status)
	}
	fence.set("e2") // rebuilt
	if err := w.Handle(stream.FencedContext(context.Background(), fence, "e2"), requested[0]); err != nil {
		t.Fatal(err)
	}
	got, _ = store.Get(context.Background(), "", r.ID)
	if sy.runs != 2 || got.Status != changerequest.StatusSucceeded {
		t.Fatalf("after the rebuild: %d runs, status %s; want 2 runs and SUCCEEDED", sy.runs, got.Status)
	}
}

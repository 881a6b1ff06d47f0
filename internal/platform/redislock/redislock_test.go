package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/redislock"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

func TestAcquire_OneHolderAtATimeAndTheNextTakesItAfterRelease(t *testing.T) {
	ctx := context.Background()
	rdb := testharness.RedisClient(t, 0)
	o := redislock.Options{TTL: time.Minute, Wait: 0}

	first, err := redislock.Acquire(ctx, rdb, "lock:a", o)
	if err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	if _, err := redislock.Acquire(ctx, rdb, "lock:a", o); !errors.Is(err, redislock.ErrBusy) {
		t.Fatalf("second Acquire while held: err = %v, want ErrBusy", err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	second, err := redislock.Acquire(ctx, rdb, "lock:a", o)
	if err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
	if second.Token() == first.Token() {
		t.Fatal("two holders got the same token")
	}
}

func TestRelease_LeavesALockTakenByTheNextHolderAlone(t *testing.T) {
	ctx := context.Background()
	rdb := testharness.RedisClient(t, 0)

	// The first holder's TTL ran out and another writer took the key.
	if err := rdb.Set(ctx, "lock:b", "next-holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	deleted, err := redislock.Release(ctx, rdb, "lock:b", "first-holder")
	if err != nil {
		t.Fatalf("Release: %v", err)
	}
	if deleted {
		t.Fatal("Release with a stale token said it deleted")
	}
	if v, err := rdb.Get(ctx, "lock:b").Result(); err != nil || v != "next-holder" {
		t.Fatalf("lock after a stale release = %q, %v; want the next holder's", v, err)
	}
	deleted, err = redislock.Release(ctx, rdb, "lock:b", "next-holder")
	if err != nil || !deleted {
		t.Fatalf("Release by the holder = %v, %v; want deleted", deleted, err)
	}
}

func TestAcquire_WaitsForTheHolderWithinTheWait(t *testing.T) {
	ctx := context.Background()
	rdb := testharness.RedisClient(t, 0)
	held, err := redislock.Acquire(ctx, rdb, "lock:c", redislock.Options{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		released <- held.Release(ctx)
	}()
	next, err := redislock.Acquire(ctx, rdb, "lock:c", redislock.Options{TTL: time.Minute, Wait: 30 * time.Second, PollMin: 5 * time.Millisecond})
	if err != nil {
		t.Fatalf("Acquire waiting for the holder: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatalf("holder's Release: %v", err)
	}
	if v, _ := rdb.Get(ctx, "lock:c").Result(); v != next.Token() {
		t.Fatalf("lock holds %q, want the waiter's token", v)
	}
}

func TestAcquire_RefusesBadOptionsAndEndsWithItsContext(t *testing.T) {
	rdb := testharness.RedisClient(t, 0)
	if _, err := redislock.Acquire(context.Background(), rdb, "lock:d", redislock.Options{}); err == nil {
		t.Fatal("Acquire without a TTL succeeded")
	}
	if err := rdb.Set(context.Background(), "lock:d", "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := redislock.Acquire(ctx, rdb, "lock:d", redislock.Options{TTL: time.Minute, Wait: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with an ended ctx: err = %v, want context.Canceled", err)
	}
}

func TestTryAcquire_ExpiresWithItsTTL(t *testing.T) {
	ctx := context.Background()
	rdb := testharness.RedisClient(t, 0)
	ok, err := redislock.TryAcquire(ctx, rdb, "lock:e", redislock.Token(), 100*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	ttl, err := rdb.PTTL(ctx, "lock:e").Result()
	if err != nil || ttl <= 0 || ttl > 100*time.Millisecond {
		t.Fatalf("PTTL = %v, %v; want in (0, 100ms]", ttl, err)
	}
}

func TestPoll_EndsWithTheFirstDoneOrErrorTheWaitOrTheContext(t *testing.T) {
	errScript := errors.New("script failed")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		wait    time.Duration
		answers []bool // try's answers in turn; past the end, not done
		fail    int    // try fails on this call (1-based); 0 never
		want    error  // nil, or matched with errors.Is
		tries   int
		pause   time.Duration // the first pause; a microsecond unless set
	}{
		{"done at once", context.Background(), time.Hour, []bool{true}, 0, nil, 1, 0},
		{"done after busy tries", context.Background(), time.Hour, []bool{false, false, true}, 0, nil, 3, 0},
		{"try's error as it is", context.Background(), time.Hour, []bool{false}, 2, errScript, 2, 0},
		{"a wait of 0 tries once", context.Background(), 0, nil, 0, redislock.ErrBusy, 1, 0},
		// An hour's pause: a pause that ends at once may win the select
		// over the ended ctx, and try again.
		{"ctx ended during the pause", ended, time.Hour, nil, 0, context.Canceled, 1, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tries := 0
			pause := max(tt.pause, time.Microsecond)
			err := redislock.Poll(tt.ctx, tt.wait, pause, max(pause, time.Millisecond), func() (bool, error) {
				tries++
				if tries == tt.fail {
					return false, errScript
				}
				return tries <= len(tt.answers) && tt.answers[tries-1], nil
			})
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Poll = %v, want %v", err, tt.want)
			}
			if tt.want == context.Canceled && err != tt.ctx.Err() {
				t.Fatalf("Poll = %#v, want ctx.Err() itself (callers compare it)", err)
			}
			if tries != tt.tries {
				t.Fatalf("try called %d times, want %d", tries, tt.tries)
			}
		})
	}
}

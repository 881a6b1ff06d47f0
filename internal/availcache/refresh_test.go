package availcache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
)

// TestRefresh_ReadsThePartnerEvenWhenAnotherRefreshHoldsTheLock: a change
// notification's Refresh must read the partner itself, also when the
// window's lock is held by a reseller's read that began before the change
// or by an instance that died mid-refresh (R5): it waits for the lock and
// then calls. A reader's refresh, by contrast, leaves the call to the
// holder.
func TestRefresh_ReadsThePartnerEvenWhenAnotherRefreshHoldsTheLock(t *testing.T) {
	for _, tc := range []struct {
		name     string
		held     time.Duration // TTL of a lock left by a holder that never writes; 0: no lock
		forced   bool
		wantCall int
	}{
		{name: "refresh, no lock", forced: true, wantCall: 1},
		{name: "refresh, lock of a dead holder", held: 300 * time.Millisecond, forced: true, wantCall: 1},
		{name: "reader, lock of a live holder", held: 300 * time.Millisecond, forced: false, wantCall: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.service(2 * time.Second)
			ctx := context.Background()
			rates := []string{"R1", "R2"}
			set := rateSet("", rates)
			if tc.held > 0 {
				if err := e.Redis.Set(ctx, s.lockKey("S1", "P1", set, day), "someone-else", tc.held).Err(); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if tc.forced {
				err = s.Refresh(ctx, "r", "S1", "P1", rates, day.start, day.end)
			} else {
				err = s.refreshForRead("r", "S1", "P1", "", set, rates, day)
			}
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if got := int(e.Sim.Calls()); got != tc.wantCall {
				t.Fatalf("partner calls = %d, want %d", got, tc.wantCall)
			}
			if snaps := len(e.Pub.Messages()); tc.wantCall > 0 && snaps < len(rates) {
				t.Fatalf("%d messages published, want a snapshot per rate (%d)", snaps, len(rates))
			}
			if n, err := e.Redis.Exists(ctx, s.lockKey("S1", "P1", set, day)).Result(); err != nil || n != 0 {
				t.Fatalf("lock left behind: exists=%d err=%v", n, err)
			}
		})
	}
}

// TestRefreshForRead_ALockHeldPastTheWaitIsUnavailable: a reader waits for
// another refresh's lock at most RefreshTimeout (the lock's own TTL); a
// lock that outlives it (a holder with a longer timeout) makes the read
// unavailable rather than re-read an entry nobody wrote, and the partner is
// not called.
func TestRefreshForRead_ALockHeldPastTheWaitIsUnavailable(t *testing.T) {
	e := newEnv(t)
	s := New(Options{Redis: e.Redis, Catalog: e.Cat, Partner: partner.NewClient(partner.Options{Outbound: allowLoopback, Timeout: 2 * time.Second}),
		Publisher: e.Pub, Clock: e.Clock.Now, Deadline: time.Second, RefreshTimeout: 300 * time.Millisecond})
	rates := []string{"R1", "R2"}
	set := rateSet("", rates)
	if err := e.Redis.Set(context.Background(), s.lockKey("S1", "P1", set, day), "someone-else", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	err := s.refreshForRead("r", "S1", "P1", "", set, rates, day)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("refresh = %v, want ErrUnavailable", err)
	}
	if got := e.Sim.Calls(); got != 0 {
		t.Fatalf("partner calls = %d, want 0", got)
	}
}

// Package redislock owns the one token lock every Redis writer of
// Switchback uses: SET key token NX PX ttl to take it, and a
// compare-and-delete script to release it, so that a holder whose TTL ran
// out never deletes the lock of the writer that took it after.
//
// It serialises writers across processes; it is not a fence. A holder
// that outlives its TTL can still write, so writers that must not
// interleave also check a version or an epoch under the lock (the catalog
// and the registry do). Callers that take the lock inside a script of
// their own (to read atomically with it) release it with Release or
// ReleaseScript all the same.
//
// It must not know what a lock protects: keys, TTLs and waits are the
// caller's.
package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
)

// ErrBusy is Acquire's (and Poll's) answer when another holder kept the
// lock past the wait.
var ErrBusy = errors.New("redislock: held by another writer")

// ReleaseScript deletes KEYS[1] if it still holds ARGV[1]; it returns 1
// when it deleted, else 0. Exported for callers that queue the release in
// a pipeline of their own (EvalSha after a Load); others call Release.
var ReleaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Token returns a fresh random token (128 bits, hex): what tells one
// holder from the next.
func Token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TryAcquire sets key to token for ttl if key is absent, and says whether
// it did.
func TryAcquire(ctx context.Context, c redis.Cmdable, key, token string, ttl time.Duration) (bool, error) {
	ok, err := c.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("redislock: take %s: %w", key, err)
	}
	return ok, nil
}

// Release deletes key if it still holds token, and says whether it did
// (false: the TTL ran out, and perhaps another writer holds it now).
func Release(ctx context.Context, c redis.Scripter, key, token string) (bool, error) {
	n, err := ReleaseScript.Run(ctx, c, []string{key}, token).Int()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("redislock: release %s: %w", key, err)
	}
	return n == 1, nil
}

// Options of Acquire.
type Options struct {
	// TTL bounds how long a holder that died keeps others out. Required.
	TTL time.Duration
	// Wait is how long Acquire polls for a busy lock before ErrBusy; 0
	// tries once.
	Wait time.Duration
	// PollMin and PollMax bound the pause between tries: it starts at
	// PollMin and doubles up to PollMax. Defaults 10 ms and 100 ms.
	PollMin, PollMax time.Duration
	// ReleaseTimeout bounds the release (it runs even after the holder's
	// ctx ended, so that a cancelled request does not leave the lock to
	// its TTL). Default 2 s.
	ReleaseTimeout time.Duration
}

// Lock is a held lock.
type Lock struct {
	c       redis.Scripter
	key     string
	token   string
	timeout time.Duration
}

// Acquire takes key, polling while another writer holds it, for up to
// o.Wait; then ErrBusy. When ctx ends first it returns ctx's error.
func Acquire(ctx context.Context, c redis.Cmdable, key string, o Options) (*Lock, error) {
	if o.TTL <= 0 {
		return nil, fmt.Errorf("redislock: take %s: no TTL", key)
	}
	if o.PollMin <= 0 {
		o.PollMin = 10 * time.Millisecond
	}
	if o.PollMax < o.PollMin {
		o.PollMax = max(o.PollMin, 100*time.Millisecond)
	}
	if o.ReleaseTimeout <= 0 {
		o.ReleaseTimeout = 2 * time.Second
	}
	token := Token()
	err := Poll(ctx, o.Wait, o.PollMin, o.PollMax, func() (bool, error) {
		return TryAcquire(ctx, c, key, token, o.TTL)
	})
	if err != nil {
		return nil, err
	}
	return &Lock{c: c, key: key, token: token, timeout: o.ReleaseTimeout}, nil
}

// Poll is Acquire's wait, for writers that take the lock in a script of
// their own (to read atomically with it): it calls try until try reports
// done or fails, pausing between tries (pollMin, doubling up to pollMax).
// Once wait has passed since Poll began it returns ErrBusy (a wait of 0
// tries once); when ctx ends during a pause it returns ctx.Err() itself,
// not wrapped, and try's error as try returned it.
func Poll(ctx context.Context, wait, pollMin, pollMax time.Duration, try func() (done bool, err error)) error {
	deadline := time.Now().Add(wait)
	pause := backoff.New(pollMin, pollMax)
	for {
		done, err := try()
		if err != nil || done {
			return err
		}
		if !time.Now().Before(deadline) {
			return ErrBusy
		}
		if err := pause.Wait(ctx); err != nil {
			return err
		}
	}
}

// Release lets the lock go if it is still this holder's; ctx's
// cancellation is ignored (bounded by Options.ReleaseTimeout instead).
func (l *Lock) Release(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	_, err := Release(rctx, l.c, l.key, l.token)
	return err
}

// Token is the holder's token (for scripts that check the lock is still
// held before they write).
func (l *Lock) Token() string { return l.token }

package dispatcher

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/switchbackhq/switchback/internal/webhook"
)

// DefaultSchedule is the wait before each retry: attempt 2 comes about 10s
// after attempt 1 failed, attempt 11 about 8h after attempt 10; then the
// delivery has failed. The steps add up to 15h51m10s (spec doc 1: "Delivery
// retry schedule: not shown"; see docs/decisions.md).
var DefaultSchedule = []time.Duration{
	10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour,
}

// Defaults of the retry policy.
const (
	DefaultJitter        = 0.5
	DefaultMaxRetryAfter = time.Hour
)

// retryPolicy decides whether and when a failed attempt is retried.
type retryPolicy struct {
	schedule []time.Duration
	// jitter is the fraction of a step drawn at random: the wait is
	// uniform in [step×(1−jitter), step]. 1 is "full jitter".
	jitter        float64
	maxRetryAfter time.Duration
	float64       func() float64 // [0,1)
}

// maxAttempts is the first attempt plus one per schedule step.
func (p retryPolicy) maxAttempts() int { return len(p.schedule) + 1 }

// next returns the wait before the attempt after attempt (counted from 1),
// which failed with res; ok is false when the delivery has failed for good.
// A Retry-After on 429 or 503 replaces the step (bounded by maxRetryAfter):
// the subscriber said when it can take the request again.
func (p retryPolicy) next(attempt int, res webhook.Result) (wait time.Duration, ok bool) {
	if res.Permanent() || attempt >= p.maxAttempts() {
		return 0, false
	}
	if (res.Status == http.StatusTooManyRequests || res.Status == http.StatusServiceUnavailable) && res.RetryAfter > 0 {
		return min(res.RetryAfter, p.maxRetryAfter), true
	}
	step := p.schedule[attempt-1]
	if p.jitter <= 0 {
		return step, true
	}
	r := rand.Float64
	if p.float64 != nil {
		r = p.float64
	}
	return step - time.Duration(float64(step)*p.jitter*r()), true
}

package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchbackhq/switchback/schemas"
)

// HeaderNotificationType carries Notification.Type on every webhook POST, so
// that a subscriber using one url for several types can route without
// parsing the body. (The delivery id header is schemas.HeaderDeliveryID.)
const HeaderNotificationType = "X-Switchback-Notification-Type"

// Target is where a notification goes: the rule's url and the securityKey
// that signs it.
type Target struct {
	URL         string
	SecurityKey string
}

// Result is the outcome of one send.
type Result struct {
	// Status is the subscriber's HTTP status; 0 when no response was read.
	Status  int
	Latency time.Duration
	// RetryAfter is the subscriber's Retry-After, parsed (0 if none).
	RetryAfter time.Duration
	// Err is set when no response was read (or the body could not be
	// built). Its text holds no URL and no key.
	Err error
}

// Delivered reports whether the subscriber accepted the notification: any
// 2xx. The spec has receivers answer 200; a 2xx other than 200 is accepted
// too, because retrying a notification the receiver says it took would only
// duplicate it.
func (r Result) Delivered() bool { return r.Err == nil && r.Status >= 200 && r.Status < 300 }

// Permanent reports whether sending the same notification to the same
// target again cannot succeed (url refused by policy, payload unusable), so
// retrying is pointless.
func (r Result) Permanent() bool {
	return errors.Is(r.Err, ErrURLNotAllowed) || errors.Is(r.Err, ErrInvalidPayload)
}

// String is the short text recorded in history for a failed send.
func (r Result) String() string {
	switch {
	case r.Err != nil:
		return r.Err.Error()
	case r.Delivered():
		return ""
	default:
		return fmt.Sprintf("subscriber answered %d", r.Status)
	}
}

// Sender signs and posts notifications. Safe for concurrent use.
type Sender struct {
	client *Client
	now    func() time.Time
}

// NewSender returns a Sender posting through c. now is the clock of the
// signature timestamps (nil: time.Now).
func NewSender(c *Client, now func() time.Time) *Sender {
	if now == nil {
		now = time.Now
	}
	return &Sender{client: c, now: now}
}

// Client is the client the sender posts through (the registry checks rule
// urls with Client().CheckURL).
func (s *Sender) Client() *Client { return s.client }

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Send builds n's body with a fresh signature (new token, current
// timestamp: every attempt is signed anew), and POSTs it to t.URL with
// Content-Type application/json, X-Switchback-Delivery-Id: n.ID and
// X-Switchback-Notification-Type: n.Type. It does not retry.
func (s *Sender) Send(ctx context.Context, t Target, n schemas.Notification) Result {
	sig := NewSignature(t.SecurityKey, s.now().Unix())
	bp := bodyPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			bodyPool.Put(bp)
		}
	}()
	body, err := AppendBody((*bp)[:0], n.Payload, sig)
	*bp = body
	if err != nil {
		return Result{Err: err}
	}
	start := time.Now()
	status, retryAfter, err := s.client.Post(ctx, t.URL, body,
		Header{schemas.HeaderDeliveryID, n.ID},
		Header{HeaderNotificationType, n.Type},
	)
	return Result{Status: status, Latency: time.Since(start), RetryAfter: retryAfter, Err: err}
}

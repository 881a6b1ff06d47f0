package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/jsonwire"
	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Event types this package reads and writes. They belong in schemas once a
// second producer needs them; until then they live with their one owner.
// The history ones have the names of schemas.History* (the sink's).
// The notifications topic's type is schemas.EventNotification (schemas owns
// that topic's payload: the processors write it too).
const (
	// On TopicDeliveries (keyed by subscriber), the log of record of the
	// schedule that Redis mirrors.
	EventDeliveryScheduled = "delivery.scheduled" // data: scheduledDelivery
	EventDeliveryDone      = "delivery.done"      // data: doneDelivery

	// On TopicHistory (keyed by subscriber).
	EventDeliveryAttempt        = "delivery.attempt"         // data: AttemptRecord
	EventNotificationSuppressed = "notification.suppressed"  // data: SuppressedRecord
	EventSubscriberAutoDisabled = "subscriber.auto_disabled" // data: AutoDisabledRecord
)

const (
	sourceDispatcher = "dispatcher"
	sourceReplay     = "replay"
	// maxHistoryErrorText bounds error and reason texts in history.
	maxHistoryErrorText = 512
	// envelopeTimePrecision is what a JSON round trip through ClickHouse
	// keeps (milliseconds).
	envelopeTimePrecision = time.Millisecond
)

// Outcomes of an attempt, as recorded in history and metrics.
const (
	OutcomeDelivered  = "delivered"  // the subscriber answered 2xx
	OutcomeRetry      = "retry"      // failed, another attempt is scheduled
	OutcomeFailed     = "failed"     // failed, no attempt left (or pointless)
	OutcomeSuppressed = "suppressed" // not sent: disableAll, or the backlog bound
	OutcomeDropped    = "dropped"    // not sent: rule disabled or deleted
)

// AttemptRecord is the data of a delivery.attempt history event: one per
// POST, and one for a notification dropped because its rule is disabled or
// deleted. Its fields are those of schemas.DeliveryAttempt (what the
// history sink reads) plus a few for replay and debugging.
type AttemptRecord struct {
	DeliveryID string `json:"deliveryId"`
	Subscriber string `json:"subscriber"`
	Type       string `json:"type"`
	EntityKey  string `json:"entityKey,omitempty"`
	// Attempt counts sends, from 1. For a dropped notification it is the
	// attempt that was not made.
	Attempt   int    `json:"attempt"`
	Status    int    `json:"status,omitempty"`
	LatencyMs int64  `json:"latencyMs"`
	Outcome   string `json:"outcome"`
	// Error is the reason of a failure, suppression or drop; never a URL
	// or a key.
	Error         string     `json:"error,omitempty"`
	At            time.Time  `json:"at"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	// Notification is included when the outcome is failed, so that it can
	// be replayed from history alone.
	Notification *schemas.Notification `json:"notification,omitempty"`
}

// SuppressedRecord is the data of a notification.suppressed history event:
// a notification not sent because the subscriber's disableAll is set or its
// backlog bound was reached. Its fields are those of
// schemas.NotificationSuppressed (the sink records it as a delivery row
// with outcome "suppressed") plus the whole notification, so that it can be
// replayed once the subscriber is enabled again.
type SuppressedRecord struct {
	DeliveryID   string               `json:"deliveryId"`
	Subscriber   string               `json:"subscriber"`
	Type         string               `json:"type"`
	EntityKey    string               `json:"entityKey,omitempty"`
	Reason       string               `json:"reason"`
	At           time.Time            `json:"at"`
	Notification schemas.Notification `json:"notification"`
}

// AutoDisabledRecord is the data of a subscriber.auto_disabled history
// event: the alert of spec doc 1 ("an alert is raised to the service
// operators") in the record.
type AutoDisabledRecord struct {
	Subscriber string    `json:"subscriber"`
	Backlog    int64     `json:"backlog"`
	Limit      int       `json:"limit"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
}

// scheduledDelivery is a pending delivery: the data of delivery.scheduled
// and the record kept in Redis. Attempt is the number of the next attempt.
type scheduledDelivery struct {
	Notification schemas.Notification `json:"notification"`
	Attempt      int                  `json:"attempt"`
	At           time.Time            `json:"at"`
}

// doneDelivery is the data of delivery.done: the delivery left the schedule.
type doneDelivery struct {
	DeliveryID string    `json:"deliveryId"`
	Subscriber string    `json:"subscriber,omitempty"`
	Outcome    string    `json:"outcome"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
}

// NotificationMessage is n as a record of TopicNotifications: the envelope
// of schemas.NewNotificationEvent (type "notification", keyed by
// subscriber, so that one subscriber's notifications stay ordered on one
// partition, its id the notification's), what the processors publish.
func NotificationMessage(n schemas.Notification) (stream.Message, error) {
	env, err := schemas.NewNotificationEvent(n)
	if err != nil {
		return stream.Message{}, err
	}
	return notificationRecord(env)
}

func notificationRecord(env schemas.Envelope) (stream.Message, error) {
	value, err := json.Marshal(env)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode notification envelope %s: %w", env.ID, err)
	}
	return stream.Message{Topic: schemas.TopicNotifications, Key: []byte(env.Key), Value: value}, nil
}

// DecodeNotification reads a TopicNotifications record: an Envelope of type
// "notification" (what every producer writes), or a bare Notification
// object (what the processors published before the envelope: records of
// before an upgrade stay on the topic for its retention). Either is read in
// one pass, the envelope tried first; anything the one-pass readers do not
// take goes to schemas.DecodeNotification (FuzzDecodeNotification holds
// the two equal).
func DecodeNotification(value []byte) (schemas.Notification, error) {
	if n, ok := decodeEnvelopeFast(value); ok {
		return n, n.Validate()
	}
	var fast schemas.Notification
	if r := jsonwire.NewReader(value); readNotification(r, &fast) && r.End() && fast.Type != schemas.EventNotification {
		return fast, fast.Validate()
	}
	return schemas.DecodeNotification(value)
}

func envelopeMessage(topic, typ, key, source string, at time.Time, data any) (stream.Message, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode %s: %w", typ, err)
	}
	if source == "" {
		source = sourceDispatcher
	}
	env := schemas.Envelope{
		ID:     uuid.NewString(),
		Type:   typ,
		Key:    key,
		Time:   at.UTC().Truncate(envelopeTimePrecision),
		Source: source,
		Data:   raw,
	}
	value, err := json.Marshal(env)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode %s envelope: %w", typ, err)
	}
	return stream.Message{Topic: topic, Key: []byte(key), Value: value}, nil
}

// Replay republishes notifications of one subscriber and type created in
// [from, to) to TopicNotifications with Source "replay" and their own ids,
// for POST /registry/v1.1/deliveries/replay. The caller lists them (from
// history); notifications of another subscriber or type, or outside the
// range, are skipped (a zero from or to is open). A replayed notification
// is delivered again even if it was delivered before (the dispatcher's
// duplicate filter lets Source "replay" through), and receivers see the
// same delivery id. It returns how many were republished.
func Replay(ctx context.Context, pub stream.Publisher, subscriber, typ string, from, to time.Time, notifications []schemas.Notification) (int, error) {
	const chunk = 1000
	var msgs []stream.Message
	count := 0
	flush := func() error {
		if len(msgs) == 0 {
			return nil
		}
		if err := pub.Publish(ctx, msgs...); err != nil {
			return fmt.Errorf("replay for %s: %w", subscriber, err)
		}
		count += len(msgs)
		msgs = msgs[:0]
		return nil
	}
	for _, n := range notifications {
		if n.Subscriber != subscriber || n.Type != typ ||
			(!from.IsZero() && n.CreatedAt.Before(from)) || (!to.IsZero() && !n.CreatedAt.Before(to)) {
			continue
		}
		n.Source = sourceReplay
		env, err := schemas.NewNotificationEvent(n)
		if err != nil {
			return count, fmt.Errorf("replay for %s: %w", subscriber, err)
		}
		// A replay is an event of its own: its envelope gets an id of its
		// own, so a consumer that deduplicates on envelope ids does not
		// take it for the processor's record it repeats.
		env.ID = uuid.NewString()
		m, err := notificationRecord(env)
		if err != nil {
			return count, fmt.Errorf("replay for %s: %w", subscriber, err)
		}
		msgs = append(msgs, m)
		if len(msgs) == chunk {
			if err := flush(); err != nil {
				return count, err
			}
		}
	}
	return count, flush()
}

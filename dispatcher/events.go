package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
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

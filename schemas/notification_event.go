package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
)

// EventNotification is the Envelope type of every TopicNotifications
// record: its Data is one Notification.
const EventNotification = "notification"

// ErrInvalidNotification: a notification without an id, a subscriber or a
// type, which no consumer can deliver or deduplicate.
var ErrInvalidNotification = errors.New("invalid notification")

// Validate reports a notification that cannot be delivered: no id (the
// delivery id subscribers deduplicate on), no subscriber (the partition
// key) or no type.
func (n Notification) Validate() error {
	switch {
	case n.ID == "":
		return fmt.Errorf("%w: no id", ErrInvalidNotification)
	case n.Subscriber == "":
		return fmt.Errorf("%w %s: no subscriber", ErrInvalidNotification, n.ID)
	case n.Type == "":
		return fmt.Errorf("%w %s: no type", ErrInvalidNotification, n.ID)
	}
	return nil
}

// NewNotificationEvent is n as the envelope of its TopicNotifications
// record, the same envelope as every other topic's: type
// EventNotification, keyed by n.Subscriber (one subscriber's notifications
// stay ordered on one partition), Time n.CreatedAt in UTC, Source n.Source
// and n as Data. Publish it to TopicNotifications keyed by Key.
//
// Its ID is n.ID: the processors derive a notification's id from the event
// it answers, so a processor that redoes an event after a crash writes the
// same record, byte for byte. A producer that means a new event for the
// same notification (a replay) sets an id of its own.
func NewNotificationEvent(n Notification) (Envelope, error) {
	if err := n.Validate(); err != nil {
		return Envelope{}, err
	}
	raw, err := json.Marshal(n)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode notification %s: %w", n.ID, err)
	}
	return Envelope{
		ID:     n.ID,
		Type:   EventNotification,
		Key:    n.Subscriber,
		Time:   n.CreatedAt.UTC(),
		Source: n.Source,
		Data:   raw,
	}, nil
}

// DecodeNotification reads a TopicNotifications record with encoding/json:
// an Envelope of type EventNotification (what NewNotificationEvent writes),
// whose data is the notification and whose other keys are not read, or a
// bare Notification object (what the processors published before the
// envelope, still on the topic for its retention after an upgrade). A bare
// notification's type is one of the webhook types, never
// EventNotification, so the two shapes cannot be mistaken. The dispatcher
// reads the same shapes in one pass and falls back on this; the producers'
// tests read their records with it.
func DecodeNotification(value []byte) (Notification, error) {
	var env struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(value, &env); err != nil {
		return Notification{}, fmt.Errorf("decode notification: %w", err)
	}
	if env.Type == EventNotification && len(env.Data) > 0 {
		value = env.Data
	}
	var n Notification
	if err := json.Unmarshal(value, &n); err != nil {
		return Notification{}, fmt.Errorf("decode notification: %w", err)
	}
	return n, n.Validate()
}

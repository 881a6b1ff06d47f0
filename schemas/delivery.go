package schemas

import "time"

// The dispatcher's records: the schedule of webhook deliveries on
// TopicDeliveries (its log of record, which the dispatcher's Redis view
// mirrors and is rebuilt from), and what it writes to TopicHistory about
// each delivery. Each is the Data of an Envelope keyed by subscriber, so
// one subscriber's records stay ordered on one partition.
//
// The history sink (processors/history) reads the history records as
// DeliveryAttempt and NotificationSuppressed (history.go): the fields its
// tables keep, the notification kept as raw JSON. The records below are
// what the dispatcher writes, a superset of those.

// Types of TopicDeliveries records. (The dispatcher's history records have
// the History* types: HistoryDeliveryAttempt, HistoryNotificationSuppressed,
// HistorySubscriberAutoDisabled.)
const (
	// EventDeliveryScheduled: a delivery is pending (a notification taken
	// in, or a retry scheduled). Data is a ScheduledDelivery.
	EventDeliveryScheduled = "delivery.scheduled"
	// EventDeliveryDone: a delivery left the schedule (delivered, failed,
	// dropped or suppressed). Data is a DoneDelivery.
	EventDeliveryDone = "delivery.done"
)

// ScheduledDelivery is a pending delivery: the data of delivery.scheduled,
// and the record the dispatcher keeps in Redis. Attempt is the number of
// the next attempt (from 1); At is when it is due.
type ScheduledDelivery struct {
	Notification Notification `json:"notification"`
	Attempt      int          `json:"attempt"`
	At           time.Time    `json:"at"`
}

// DoneDelivery is the data of delivery.done: the delivery left the
// schedule with Outcome (one of the Outcome* constants) after Attempt
// attempts.
type DoneDelivery struct {
	DeliveryID string    `json:"deliveryId"`
	Subscriber string    `json:"subscriber,omitempty"`
	Outcome    string    `json:"outcome"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
}

// DeliveryAttemptRecord is the data of a delivery.attempt history event
// as the dispatcher writes it: one per POST, and one for a notification
// dropped because its rule is disabled or deleted. Its fields are
// DeliveryAttempt's (what the sink reads) plus a few for replay and
// debugging.
type DeliveryAttemptRecord struct {
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
	Notification *Notification `json:"notification,omitempty"`
}

// NotificationSuppressedRecord is the data of a notification.suppressed
// history event as the dispatcher writes it: a notification not sent
// because the subscriber's disableAll is set or its backlog bound was
// reached. Its fields are NotificationSuppressed's (the sink records it as
// a delivery row with outcome "suppressed") plus the entity key, and the
// whole notification, so that it can be replayed once the subscriber is
// enabled again.
type NotificationSuppressedRecord struct {
	DeliveryID   string       `json:"deliveryId"`
	Subscriber   string       `json:"subscriber"`
	Type         string       `json:"type"`
	EntityKey    string       `json:"entityKey,omitempty"`
	Reason       string       `json:"reason"`
	At           time.Time    `json:"at"`
	Notification Notification `json:"notification"`
}

// SubscriberAutoDisabled is the data of a subscriber.auto_disabled history
// event: the alert of spec doc 1 ("an alert is raised to the service
// operators") as a record. Backlog is the subscriber's pending count that
// reached Limit, the bound.
type SubscriberAutoDisabled struct {
	Subscriber string    `json:"subscriber"`
	Backlog    int64     `json:"backlog"`
	Limit      int       `json:"limit"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
}

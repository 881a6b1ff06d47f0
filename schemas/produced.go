package schemas

import "github.com/google/uuid"

// producedNamespace is the UUIDv5 namespace of notification.produced ids.
var producedNamespace = uuid.MustParse("6f1d2c3b-8a47-4e59-9b1c-0d2e3f4a5b6c")

// ProducedID is the id of the notification.produced event of the
// notification notificationID: a UUIDv5 of it, so redoing the event writes
// the same id. Processors that write the event by hand use it too.
func ProducedID(notificationID string) string {
	return uuid.NewSHA1(producedNamespace, []byte(notificationID)).String()
}

// ProducedEvent is the notification.produced history event of a
// notification, keyed by its subscriber. Its id derives from the
// notification's, so a processor that redoes an event after a crash
// produces the same row (the sink deduplicates by id).
func ProducedEvent(n Notification) (Envelope, error) {
	env, err := NewHistoryEvent(HistoryNotificationProduced, n.Subscriber, NotificationProduced{
		DeliveryID: n.ID, Subscriber: n.Subscriber, Type: n.Type, EntityKey: n.EntityKey, Source: n.Source,
	}, n.CreatedAt)
	if err != nil {
		return env, err
	}
	env.ID = ProducedID(n.ID)
	env.Source = n.Source
	return env, nil
}

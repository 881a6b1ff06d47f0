package schemas

import (
	"encoding/json"
	"time"
)

// Notification types (spec doc 1, "What the service does", 2). The registry
// paths use them too, except that channelbinding rules live under
// /channelbindings (CRUD) and /channelbinding/test/{id}.
const (
	TypeChannelBinding = "channelbinding"
	TypeSupplier       = "supplier"
	TypeProduct        = "product"
	TypeRate           = "rate"
	TypeAvailability   = "availability"
	TypePriceSchedule  = "priceschedule"
	TypeBooking        = "booking"
)

// NotificationTypes lists every type, in the spec's order.
func NotificationTypes() []string {
	return []string{TypeChannelBinding, TypeSupplier, TypeProduct, TypeRate, TypeAvailability, TypePriceSchedule, TypeBooking}
}

// Notification is one event on TopicNotifications: a webhook that should
// reach one subscriber. Processors produce it, as the data of the topic's
// envelope (NewNotificationEvent, keyed by Subscriber, so one subscriber's
// notifications are ordered on one partition); the dispatcher consumes it. ID is the delivery id: it is stable across retries and
// redeliveries, sent as the X-Switchback-Delivery-Id header, so subscribers
// can deduplicate.
type Notification struct {
	ID         string `json:"id"`
	Subscriber string `json:"subscriber"` // reseller principal id
	Type       string `json:"type"`
	// EntityKey orders deliveries: a notification waits behind an earlier
	// one of the same subscriber and entity that is still being retried.
	EntityKey string `json:"entityKey"`
	// Supplier is the supplier the notification is about: the dispatcher's
	// fairness share within the subscriber (a flood from one supplier
	// delays only that supplier's notifications). Optional: without it the
	// share is the first segment of EntityKey.
	Supplier string `json:"supplier,omitempty"`
	// Payload is the type's webhook payload without the signature, which
	// the dispatcher adds at send time.
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"`
	// Source says what produced it (processor name, "test", "replay").
	Source string `json:"source,omitempty"`
}

// Signature is the signature object inside every webhook payload (spec doc
// 1, "Signature object"): Sum is the lowercase hex HMAC-SHA256, keyed by the
// rule's securityKey, of the decimal Timestamp immediately followed by Token.
type Signature struct {
	Sum       string `json:"sum"`
	Timestamp int64  `json:"timestamp"`
	Token     string `json:"token"`
}

// Webhook payloads (spec doc 1, "Webhook payloads"), without the signature.

type ChannelBindingPayload struct {
	SupplierID string `json:"supplierID"`
	ProductID  string `json:"productID"`
	Operation  string `json:"operation"`
}

type SupplierPayload struct {
	SupplierID string `json:"supplierID"`
	Operation  string `json:"operation"`
}

type ProductPayload struct {
	SupplierID string `json:"supplierID"`
	ProductID  string `json:"productID"`
	Operation  string `json:"operation"`
}

type RatePayload struct {
	SupplierID string `json:"supplierID"`
	ProductID  string `json:"productID"`
	RateID     string `json:"rateID"`
	Operation  string `json:"operation"`
}

type AvailabilityPayload struct {
	SupplierID string `json:"supplierID"`
	ProductID  string `json:"productID"`
	RateID     string `json:"rateID"`
	Start      string `json:"start"`
	End        string `json:"end"`
}

type PriceSchedulePayload struct {
	SupplierID string `json:"supplierID"`
	ProductID  string `json:"productID"`
	Start      string `json:"start"`
	End        string `json:"end"`
}

type BookingPayload struct {
	BookingID                string `json:"bookingID"`
	StartTime                string `json:"startTime"`
	ResellerBookingReference string `json:"resellerBookingReference,omitempty"`
	Operation                string `json:"operation"`
}

// HeaderDeliveryID carries Notification.ID on every webhook POST.
const HeaderDeliveryID = "X-Switchback-Delivery-Id"

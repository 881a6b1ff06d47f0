package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// History events: what the stages publish to TopicHistory for the
// ClickHouse sink (processors/historysink) and, through it, for analysts
// (docs/analytics.md). Each is an Envelope whose Type is one of the History*
// constants and whose Data is the matching payload below, JSON-encoded.
//
// The contract:
//   - Envelope.ID is unique per event (NewHistoryEvent makes a UUID). It is
//     the row key in ClickHouse: publishing the same envelope twice, or
//     replaying the topic, never counts twice in query results.
//   - Envelope.Time is when the thing happened (not when it was published);
//     it decides the row's month partition and, with it, its retention.
//   - Envelope.Key orders events: use the entity the event is about
//     (subscriber for deliveries, product for availability), so one
//     entity's events land on one partition in order.
//   - An unknown Type, or a payload the sink cannot decode, is not dropped:
//     it lands in the generic history_events table with its raw JSON.
//
// Field names follow the spec's spelling where the spec has one
// (supplierId, externalSystemId, errorCount); payloads only ever gain
// optional fields, so an older sink reads a newer producer's events.
const (
	// HistoryAvailabilityChanged: the vacancies of one availability window
	// changed (processors, diffing snapshots). Payload AvailabilityChanged.
	HistoryAvailabilityChanged = "availability.changed"
	// HistoryPriceChanged: a price of a rate changed. Payload PriceChanged.
	HistoryPriceChanged = "price.changed"
	// HistoryNotificationProduced: rule matching produced a notification
	// for a subscriber. Payload NotificationProduced.
	HistoryNotificationProduced = "notification.produced"
	// HistoryDeliveryAttempt: the dispatcher tried to deliver a webhook (one
	// event per attempt). Payload DeliveryAttempt (the dispatcher writes a
	// DeliveryAttemptRecord, its superset).
	HistoryDeliveryAttempt = "delivery.attempt"
	// HistoryNotificationSuppressed: the dispatcher did not send it
	// (disableAll, backlog bound). Payload NotificationSuppressed (the
	// dispatcher writes a NotificationSuppressedRecord, its superset).
	HistoryNotificationSuppressed = "notification.suppressed"
	// HistorySubscriberAutoDisabled: the dispatcher set a subscriber's
	// disableAll because its backlog reached the bound. Rare: it has no
	// table of its own and is kept in history_events. Payload
	// SubscriberAutoDisabled.
	HistorySubscriberAutoDisabled = "subscriber.auto_disabled"
	// HistoryHoldStatus: a hold was created or changed status. Payload
	// HoldStatusChanged.
	HistoryHoldStatus = "hold.status"
	// HistoryBookingStatus: a booking was created or changed status.
	// Payload BookingStatusChanged.
	HistoryBookingStatus = "booking.status"
	// HistoryChangeRequestRun: an operator change-notification request
	// changed status (spec doc 3: WAITING, WORKING, SUCCEEDED, FAILED,
	// PARTIAL_FAILURE). Payload ChangeRequestRun.
	HistoryChangeRequestRun = "changerequest.run"
	// HistorySyncReport: a scheduled full synchronization finished (spec
	// doc 3, cron report). Payload SyncReport.
	HistorySyncReport = "sync.report"
	// HistoryPartnerCall: one call to a partner (spec doc 2) or an
	// operator's booking system (spec doc 3). Payload PartnerCall.
	HistoryPartnerCall = "partner.call"
)

// HistoryTypes lists every history event type the sink routes to a table
// of its own (HistorySubscriberAutoDisabled is stored in history_events).
func HistoryTypes() []string {
	return []string{
		HistoryAvailabilityChanged, HistoryPriceChanged, HistoryNotificationProduced,
		HistoryDeliveryAttempt, HistoryNotificationSuppressed, HistoryHoldStatus,
		HistoryBookingStatus, HistoryChangeRequestRun, HistorySyncReport, HistoryPartnerCall,
	}
}

// AvailabilityChanged is one availability window whose vacancies changed.
// Start and End are the window (spec doc 3: localDateTimeStart/End, RFC
// 3339); a window that appeared has OldVacancies 0, one that disappeared
// NewVacancies 0. Statuses are the spec's (FREESALE, AVAILABLE, LIMITED,
// SOLD_OUT, CLOSED) when known.
type AvailabilityChanged struct {
	SupplierID   string    `json:"supplierId"`
	ProductID    string    `json:"productId"`
	RateID       string    `json:"rateId"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	OldVacancies int       `json:"oldVacancies"`
	NewVacancies int       `json:"newVacancies"`
	OldStatus    string    `json:"oldStatus,omitempty"`
	NewStatus    string    `json:"newStatus,omitempty"`
	// Source says where the change was seen: "push" (operator PUT),
	// "changerequest", "sync", "partner" (stale read refreshed).
	Source string `json:"source"`
}

// PriceChanged is one price of a rate that changed over a window. Amounts
// are the spec's numbers (doc 2, Price: net and retail {amount, currency});
// ClickHouse stores them as Decimal(18, 4).
type PriceChanged struct {
	SupplierID string    `json:"supplierId"`
	ProductID  string    `json:"productId"`
	RateID     string    `json:"rateId"`
	PriceID    string    `json:"priceId,omitempty"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Currency   string    `json:"currency"`
	OldRetail  float64   `json:"oldRetail"`
	NewRetail  float64   `json:"newRetail"`
	OldNet     float64   `json:"oldNet"`
	NewNet     float64   `json:"newNet"`
	Source     string    `json:"source"`
}

// NotificationProduced is a notification event produced for a subscriber
// (schemas.Notification, without its payload).
type NotificationProduced struct {
	DeliveryID string `json:"deliveryId"` // Notification.ID
	Subscriber string `json:"subscriber"`
	Type       string `json:"type"` // a notification type (TypeAvailability, ...)
	EntityKey  string `json:"entityKey"`
	RuleID     string `json:"ruleId,omitempty"`
	Source     string `json:"source,omitempty"`
}

// Delivery outcomes of DeliveryAttempt.Outcome (and "suppressed" for
// NotificationSuppressed rows in the deliveries table).
const (
	OutcomeDelivered  = "delivered"  // 2xx: done
	OutcomeRetry      = "retry"      // failed, another attempt is scheduled
	OutcomeFailed     = "failed"     // failed, no attempt left
	OutcomeSuppressed = "suppressed" // not sent: disableAll, or the subscriber's backlog bound
	OutcomeDropped    = "dropped"    // not sent: rule disabled or deleted
)

// DeliveryAttempt is one webhook POST of the dispatcher, or a notification
// dropped because its rule is disabled or deleted (outcome dropped, nothing
// sent). Status is the HTTP status code (0 when no response came: timeout,
// refused); LatencyMs the time to the response or the failure.
type DeliveryAttempt struct {
	DeliveryID string    `json:"deliveryId"`
	Subscriber string    `json:"subscriber"`
	Type       string    `json:"type"`
	Attempt    int       `json:"attempt"` // 1 for the first try
	Status     int       `json:"status"`
	LatencyMs  int64     `json:"latencyMs"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	At         time.Time `json:"at"`
	// Notification is the schemas.Notification, included when the outcome
	// is failed or dropped so that it can be replayed from history alone.
	Notification json.RawMessage `json:"notification,omitempty"`
}

// NotificationSuppressed is a notification the dispatcher did not send
// because the subscriber's disableAll is set or its backlog bound was
// reached; Reason says which.
type NotificationSuppressed struct {
	DeliveryID string    `json:"deliveryId"`
	Subscriber string    `json:"subscriber"`
	Type       string    `json:"type"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
	// Notification is the schemas.Notification, so that it can be
	// replayed once the subscriber is enabled again.
	Notification json.RawMessage `json:"notification,omitempty"`
}

// HoldStatusChanged is a hold created, released or expired. Status values
// are the partner interface's (doc 2: ACTIVE, RELEASED) or the operator
// booking system's (doc 3: ON_HOLD, EXPIRED, ...), as the hold came.
type HoldStatusChanged struct {
	HoldID         string    `json:"holdId"`
	ChannelID      string    `json:"channelId"`
	SupplierID     string    `json:"supplierId"`
	ProductID      string    `json:"productId,omitempty"`
	RateID         string    `json:"rateId,omitempty"`
	Status         string    `json:"status"`
	PreviousStatus string    `json:"previousStatus,omitempty"`
	Quantity       int       `json:"quantity,omitempty"`
	ExpiresAt      time.Time `json:"expiresAt,omitzero"`
}

// BookingStatusChanged is a booking created or changed status (CONFIRMED,
// CANCELLED, ... as in spec docs 2 and 3).
type BookingStatusChanged struct {
	BookingID         string    `json:"bookingId"`
	HoldID            string    `json:"holdId,omitempty"`
	ChannelID         string    `json:"channelId"`
	SupplierID        string    `json:"supplierId"`
	ProductID         string    `json:"productId,omitempty"`
	RateID            string    `json:"rateId,omitempty"`
	Status            string    `json:"status"`
	PreviousStatus    string    `json:"previousStatus,omitempty"`
	ResellerReference string    `json:"resellerReference,omitempty"`
	Quantity          int       `json:"quantity,omitempty"`
	StartTime         time.Time `json:"startTime,omitzero"`
}

// ChangeRequestRun is one status of an operator change-notification
// request (spec doc 3, "Change notification"): one event per status
// change, so a request that succeeded leaves WAITING, WORKING, SUCCEEDED.
// Mode: standard or price-schedule.
type ChangeRequestRun struct {
	ID         string    `json:"id"`
	SupplierID string    `json:"supplierId"`
	ProductID  string    `json:"productId,omitempty"`
	Mode       string    `json:"mode"`
	Status     string    `json:"status"`
	Inserted   time.Time `json:"inserted"`
	Began      time.Time `json:"began,omitzero"`
	Finished   time.Time `json:"finished,omitzero"`
	Error      string    `json:"error,omitempty"`
}

// SyncReport is a cron report (spec doc 3): one scheduled full
// synchronization of an external (booking) system. Items is how many
// records the run read; ErrorReport its errors, one element per error,
// absent when ErrorCount is 0.
type SyncReport struct {
	ID               int64             `json:"id"`
	ExternalSystemID string            `json:"externalSystemId"`
	SupplierID       string            `json:"supplierId,omitempty"`
	Inserted         time.Time         `json:"inserted"`
	ErrorCount       int               `json:"errorCount"`
	Items            int               `json:"items"`
	ErrorReport      []json.RawMessage `json:"errorReport,omitempty"`
}

// Partner call systems and outcomes.
const (
	SystemPartner       = "partner"       // partner interface v1.2 (spec doc 2)
	SystemBookingSystem = "bookingsystem" // booking system interface v2 (spec doc 3)

	CallOK          = "ok"
	CallError       = "error"        // an answer that is an error (4xx/5xx)
	CallTimeout     = "timeout"      // no answer in time
	CallBreakerOpen = "breaker_open" // not attempted: the circuit breaker is open
)

// PartnerCall is one outgoing call to a partner or a booking system.
// Operation names the call ("availabilities", "createHold",
// "createBooking", ...); Status is the HTTP status (0 without a response).
type PartnerCall struct {
	System     string `json:"system"`
	SupplierID string `json:"supplierId"`
	Operation  string `json:"operation"`
	Status     int    `json:"status"`
	LatencyMs  int64  `json:"latencyMs"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
}

// NewHistoryEvent builds the envelope of one history event: a new UUID as
// its ID, typ (one of the History* constants), key (the entity it is
// about, for ordering), at (when it happened, stored as UTC) and data
// JSON-encoded. Publish it to TopicHistory keyed by Key.
func NewHistoryEvent(typ, key string, data any, at time.Time) (Envelope, error) {
	if typ == "" {
		return Envelope{}, errors.New("history event: empty type")
	}
	if at.IsZero() {
		return Envelope{}, fmt.Errorf("history event %s: zero time", typ)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Envelope{}, fmt.Errorf("history event %s: encode data: %w", typ, err)
	}
	return Envelope{ID: uuid.NewString(), Type: typ, Key: key, Time: at.UTC(), Data: raw}, nil
}

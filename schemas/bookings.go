package schemas

import (
	"encoding/json"
	"time"
)

// Holds and bookings of the partner interface v1.2 (spec doc 2, "Hold
// (partner interface)" and "Booking (partner interface)"). The same shapes
// are the reseller's (spec doc 2 leaves the reseller-side shapes "not
// shown"; docs/decisions-bookings.md), the partner client's wire format
// (ingest/partner) and the payload of the events on TopicHolds and
// TopicBookings. Fields the spec leaves open (the embedded Rate, a
// traveler type, a ticket barcode) are kept as raw JSON and passed on.

// Hold statuses (spec doc 2: "ACTIVE and RELEASED appear"). HoldExpired
// is ours: an ACTIVE hold past its expires is shown as EXPIRED and is not
// usable (hold expiry is "not shown").
const (
	HoldActive   = "ACTIVE"
	HoldReleased = "RELEASED"
	HoldExpired  = "EXPIRED"
)

// Booking statuses (spec doc 2, "States and transitions", version 1.2).
const (
	BookingCancelled = "CANCELLED"
	BookingOpen      = "OPEN"
	BookingPending   = "PENDING"
	BookingRedeemed  = "REDEEMED"
)

// Booking notification operations (spec doc 1, booking rule).
const (
	OperationCanceled     = "canceled"
	OperationTicketsAdded = "tickets-added"
)

// TimelineEntry is one status a hold or booking entered.
type TimelineEntry struct {
	Timestamp time.Time `json:"timestamp"`
	TypeOf    string    `json:"typeOf"`
}

// HoldItem is one item of a hold.
type HoldItem struct {
	At             time.Time         `json:"at,omitzero"`
	AvailabilityID string            `json:"availabilityId,omitempty"`
	Ext            map[string]string `json:"ext,omitempty"`
	ID             string            `json:"id,omitempty"`
	PriceID        string            `json:"priceId,omitempty"`
	ProductID      string            `json:"productId"`
	Quantity       int               `json:"quantity"`
	RateID         string            `json:"rateId"`
	SupplierID     string            `json:"supplierId"`
	TravelerType   json.RawMessage   `json:"travelerType,omitempty"`
	Rate           json.RawMessage   `json:"rate,omitempty"`
}

// Hold is a hold: the request is a subset of the response.
type Hold struct {
	Expires   time.Time         `json:"expires,omitzero"`
	Ext       map[string]string `json:"ext,omitempty"`
	ID        string            `json:"id"`
	Items     []HoldItem        `json:"items"`
	PartnerID string            `json:"partnerId,omitempty"`
	Retrieved time.Time         `json:"retrieved,omitzero"`
	Status    string            `json:"status,omitempty"`
	Timeline  []TimelineEntry   `json:"timeline,omitempty"`
}

// Barcode is a booking's or a ticket's barcode.
type Barcode struct {
	Format string `json:"format,omitempty"`
	Value  string `json:"value"`
}

// Customer is the primary traveler of a booking.
type Customer struct {
	Email     string `json:"email,omitempty"`
	FirstName string `json:"firstName,omitempty"`
	LastName  string `json:"lastName,omitempty"`
	Phone     string `json:"phone,omitempty"`
}

// Traveler of a booking item.
type Traveler struct {
	Age       *int   `json:"age,omitempty"`
	Country   string `json:"country,omitempty"`
	Email     string `json:"email,omitempty"`
	FirstName string `json:"firstName,omitempty"`
	Gender    string `json:"gender,omitempty"`
	IsLead    bool   `json:"isLead,omitempty"`
	Lang      string `json:"lang,omitempty"`
	LastName  string `json:"lastName,omitempty"`
	Phone     string `json:"phone,omitempty"`
	Type      string `json:"type,omitempty"`
}

// BookingItem is one item of a booking.
type BookingItem struct {
	AvailabilityID string            `json:"availabilityId,omitempty"`
	Ext            map[string]string `json:"ext,omitempty"`
	ID             string            `json:"id,omitempty"`
	PriceID        string            `json:"priceId,omitempty"`
	ProductID      string            `json:"productId"`
	Quantity       int               `json:"quantity"`
	RateID         string            `json:"rateId"`
	StartTime      time.Time         `json:"startTime,omitzero"`
	SupplierID     string            `json:"supplierId"`
	Traveler       *Traveler         `json:"traveler,omitempty"`
	Rate           json.RawMessage   `json:"rate,omitempty"`
}

// Guest is a group of guests of a ticket.
type Guest struct {
	Count        int    `json:"count"`
	TypeCode     string `json:"typeCode,omitempty"`
	TypeModifier string `json:"typeModifier,omitempty"`
	TypeName     string `json:"typeName,omitempty"`
}

// Ticket is a ticket of a booking.
type Ticket struct {
	Barcode        json.RawMessage   `json:"barcode,omitempty"`
	BookingItemIDs []string          `json:"bookingItemIds,omitempty"`
	Extensions     map[string]string `json:"extensions,omitempty"`
	Guests         []Guest           `json:"guests,omitempty"`
	LeadTraveler   *Traveler         `json:"leadTraveler,omitempty"`
	Status         string            `json:"status,omitempty"`
}

// Booking is a booking: the request fields, and what the response adds
// (cancelable, the embedded Rate of each item, tickets, timeline, and the
// status of spec doc 2 "States and transitions").
type Booking struct {
	Barcode            *Barcode          `json:"barcode,omitempty"`
	ChannelID          string            `json:"channelId,omitempty"`
	Customer           *Customer         `json:"customer,omitempty"`
	Ext                map[string]string `json:"ext,omitempty"`
	HoldExt            map[string]string `json:"holdExt,omitempty"`
	HoldID             string            `json:"holdId,omitempty"`
	ID                 string            `json:"id"`
	Items              []BookingItem     `json:"items"`
	PartnerID          string            `json:"partnerId,omitempty"`
	ResellerBookingRef string            `json:"resellerBookingRef,omitempty"`
	Cancelable         *bool             `json:"cancelable,omitempty"`
	Status             string            `json:"status,omitempty"`
	Tickets            []Ticket          `json:"tickets,omitempty"`
	Timeline           []TimelineEntry   `json:"timeline,omitempty"`
}

// StartTime is the earliest startTime of the booking's items (the
// startTime of the booking notification, spec doc 1); zero when no item
// has one.
func (b Booking) StartTime() time.Time {
	var t time.Time
	for _, it := range b.Items {
		if !it.StartTime.IsZero() && (t.IsZero() || it.StartTime.Before(t)) {
			t = it.StartTime
		}
	}
	return t
}

// Lead is a copy of the booking's lead traveler (spec doc 2, ticket
// leadTraveler: "copy of the lead traveler"): the traveler of an item
// marked isLead, else the customer ("primary traveler") as a lead
// traveler; nil when the booking names neither.
func (b Booking) Lead() *Traveler {
	for _, it := range b.Items {
		if it.Traveler != nil && it.Traveler.IsLead {
			t := *it.Traveler
			return &t
		}
	}
	if c := b.Customer; c != nil && *c != (Customer{}) {
		return &Traveler{FirstName: c.FirstName, LastName: c.LastName, Email: c.Email, Phone: c.Phone, IsLead: true}
	}
	return nil
}

// Event types on TopicHolds and TopicBookings. Every event carries the
// entity's full state (the topics are compacted, keyed by the id), with
// Envelope.Version incremented at each change of the entity.
const (
	EventHold    = "hold.state"
	EventBooking = "booking.state"
)

// HoldRecord is Envelope.Data of an EventHold: the hold as the partner
// answered, and what Switchback keeps about it.
type HoldRecord struct {
	Hold Hold `json:"hold"`
	// PartnerHoldID is the partner's id when it differs from Hold.ID (the
	// id the reseller sees, unique within its channel only).
	PartnerHoldID string `json:"partnerHoldId,omitempty"`
	ChannelID     string `json:"channelId"`
	SupplierID    string `json:"supplierId"`
	CreatedBy     string `json:"createdBy"` // reseller principal id
	// Fingerprint of the create request: a retry with the same hold id
	// and data returns the hold, different data is refused.
	Fingerprint string `json:"fingerprint"`
	// Connection is the Ref of the supplier's connection (kind and
	// baseUrl) the hold was made through: its later reads and release go
	// there or nowhere (internal/booking). Empty on older records.
	Connection string `json:"connection,omitempty"`
	// BookingID is the booking that used the hold (one booking per hold).
	BookingID      string    `json:"bookingId,omitempty"`
	PreviousStatus string    `json:"previousStatus,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// Booking record changes (BookingRecord.Change): what the event is about.
const (
	ChangeCreated      = "created"
	ChangeTicketsAdded = "tickets-added"
	ChangeCanceled     = "canceled"
	ChangeUpdated      = "updated"
)

// Who cancelled a booking (BookingRecord.CanceledBy).
const (
	CanceledByReseller = "reseller"
	CanceledByPartner  = "partner"
)

// BookingRecord is Envelope.Data of an EventBooking.
type BookingRecord struct {
	Booking    Booking `json:"booking"`
	ChannelID  string  `json:"channelId"`
	SupplierID string  `json:"supplierId"`
	CreatedBy  string  `json:"createdBy"` // reseller principal id
	// PartnerBookingID is the id the supplier's system knows the booking
	// by, when it differs from Booking.ID (ids are the reseller's within
	// its channel; internal/booking derives the one sent to the system).
	PartnerBookingID string `json:"partnerBookingId,omitempty"`
	// Connection is the Ref of the supplier's connection the booking was
	// made through (see HoldRecord.Connection).
	Connection string `json:"connection,omitempty"`
	// Fingerprint of the create request (idempotent retries by id).
	Fingerprint string `json:"fingerprint"`
	// Accepted: the partner answered 202; AwaitingTickets: no ticket yet,
	// the booking poller asks the partner until tickets are attached.
	Accepted        bool   `json:"accepted,omitempty"`
	AwaitingTickets bool   `json:"awaitingTickets,omitempty"`
	Change          string `json:"change"`
	PreviousStatus  string `json:"previousStatus,omitempty"`
	CanceledBy      string `json:"canceledBy,omitempty"`
	// RequestID of the API request (or poll) that made the change.
	RequestID string    `json:"requestId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

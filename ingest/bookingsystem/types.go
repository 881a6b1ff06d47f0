package bookingsystem

import (
	"time"

	"github.com/switchbackhq/switchback/internal/octowire"
)

// Wire shapes of spec doc 3, "Resources and their fields". Nested objects
// whose fields doc 3 counts but does not show take the OCTO names
// (docs/decisions.md, "Booking-system v2 client", "Nested objects"); where
// OCTO's shape and Go types are the ones read here, they are
// internal/octowire's (Ticket, DeliveryOption, OptionRestrictions). The
// others differ from OCTO's on purpose: doc 3 counts 6 supplier contact
// fields and 5 contact fields (OCTO 4 and 9); a price's original and a
// unit's restrictions are pointers, as a booking system may leave them
// out and the rules tell absent from zero; times are time.Time.

// Availability types of a Product.
const (
	StartTime    = "START_TIME"
	OpeningHours = "OPENING_HOURS"
)

// Availability statuses.
const (
	Freesale  = "FREESALE"
	Available = "AVAILABLE"
	Limited   = "LIMITED"
	SoldOut   = "SOLD_OUT"
	Closed    = "CLOSED"
)

// Booking statuses (doc 3, Booking).
const (
	OnHold    = "ON_HOLD"
	Expired   = "EXPIRED"
	Pending   = "PENDING"
	Rejected  = "REJECTED"
	Confirmed = "CONFIRMED"
	Cancelled = "CANCELLED"
)

// Supplier is one supplier of a booking platform (GET /suppliers).
type Supplier struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Endpoint string          `json:"endpoint"`
	Contact  SupplierContact `json:"contact"`
}

// SupplierContact: doc 3 counts 6 fields without showing them.
type SupplierContact struct {
	Website   *string `json:"website"`
	Email     *string `json:"email"`
	Telephone *string `json:"telephone"`
	Address   *string `json:"address"`
	City      *string `json:"city"`
	Country   *string `json:"country"`
}

// Product is one product of a supplier.
type Product struct {
	ID                  string       `json:"id"`
	InternalName        string       `json:"internalName"`
	Reference           *string      `json:"reference"`
	Locale              string       `json:"locale"`
	TimeZone            string       `json:"timeZone"`
	InstantConfirmation bool         `json:"instantConfirmation"`
	InstantDelivery     bool         `json:"instantDelivery"`
	AvailabilityType    string       `json:"availabilityType"`
	DeliveryFormats     []string     `json:"deliveryFormats"`
	DeliveryMethods     []string     `json:"deliveryMethods"`
	RedemptionMethod    string       `json:"redemptionMethod"`
	Capabilities        []Capability `json:"capabilities"`
	Options             []Option     `json:"options"`
	// PricingPer is OCTO's pricing capability's UNIT (prices per unit,
	// on the units) or BOOKING (one price per booking, on the option);
	// empty: per unit. A v2 booking system may send it too (the nested
	// fields take OCTO's names).
	PricingPer string `json:"pricingPer,omitempty"`
}

// OCTO's pricingPer values.
const (
	PricingPerUnit    = "UNIT"
	PricingPerBooking = "BOOKING"
)

// Capability: doc 3 counts 3 fields (OCTO: id, revision, required).
type Capability struct {
	ID       string `json:"id"`
	Revision int    `json:"revision"`
	Required bool   `json:"required"`
}

// Option is a variant of a Product (Switchback's rate); doc 3 counts 4
// fields (OCTO: id, default, internalName, units). The terms of sale are
// OCTO's option fields, read in both dialects when a booking system sends
// them (docs/decisions.md, "Rates, holds and bookings of booking-system
// suppliers"): the cancellation cutoff (cancellationCutoffAmount and
// cancellationCutoffUnit; cancellationCutoff is its text), the units a
// booking may take (restrictions) and, with the octo/pricing capability,
// the price of a booking (pricingFrom, for pricingPer BOOKING).
type Option struct {
	ID                       string              `json:"id"`
	Default                  bool                `json:"default"`
	InternalName             string              `json:"internalName"`
	Units                    []Unit              `json:"units"`
	CancellationCutoff       string              `json:"cancellationCutoff,omitempty"`
	CancellationCutoffAmount *int                `json:"cancellationCutoffAmount,omitempty"`
	CancellationCutoffUnit   string              `json:"cancellationCutoffUnit,omitempty"`
	Restrictions             *OptionRestrictions `json:"restrictions,omitempty"`
	PricingFrom              []Pricing           `json:"pricingFrom,omitempty"`
}

// OCTO's duration units (cancellationCutoffUnit).
const (
	DurationMinute = "minute"
	DurationHour   = "hour"
	DurationDay    = "day"
)

// CutoffMinutes is the option's cancellation cutoff in minutes before the
// start (OCTO: cancellationCutoffAmount of cancellationCutoffUnit), and
// whether the option states one.
func (o Option) CutoffMinutes() (int, bool) {
	if o.CancellationCutoffAmount == nil {
		return 0, false
	}
	n := *o.CancellationCutoffAmount
	switch o.CancellationCutoffUnit {
	case DurationDay:
		n *= 24 * 60
	case DurationHour:
		n *= 60
	}
	return n, true
}

// OptionRestrictions: OCTO's units per booking; nil is no bound.
type OptionRestrictions = octowire.OptionRestrictions

// Unit is a unit type of an option (OCTO: id, internalName, reference,
// type, restrictions, requiredContactFields; pricingFrom with the
// octo/pricing capability, title with octo/content).
type Unit struct {
	ID           string            `json:"id"`
	InternalName string            `json:"internalName"`
	Type         string            `json:"type"`
	Title        *string           `json:"title,omitempty"`
	Restrictions *UnitRestrictions `json:"restrictions,omitempty"`
	PricingFrom  []Pricing         `json:"pricingFrom,omitempty"`
}

// OCTO's unit types. TRAVELLER, which OCTO's description allows "in
// replacement of ADULT, CHILD, ...", is accepted as any other string.
var UnitTypes = []string{"ADULT", "YOUTH", "CHILD", "INFANT", "FAMILY", "SENIOR", "STUDENT", "MILITARY", "OTHER"}

// UnitRestrictions: OCTO's restrictions of a unit type.
type UnitRestrictions struct {
	MinAge        *int     `json:"minAge"`
	MaxAge        *int     `json:"maxAge"`
	IDRequired    bool     `json:"idRequired"`
	MinQuantity   *int     `json:"minQuantity"`
	MaxQuantity   *int     `json:"maxQuantity"`
	PaxCount      *int     `json:"paxCount"`
	AccompaniedBy []string `json:"accompaniedBy"`
}

// Pricing is OCTO's price: integer amounts in minor units of currency
// (amount / 10^currencyPrecision).
type Pricing struct {
	Original          *int64 `json:"original"`
	Retail            int64  `json:"retail"`
	Net               *int64 `json:"net"`
	Currency          string `json:"currency"`
	CurrencyPrecision int    `json:"currencyPrecision"`
	IncludedTaxes     []Tax  `json:"includedTaxes"`
}

// Tax is a tax included in an OCTO price.
type Tax struct {
	Name     string `json:"name"`
	Retail   int64  `json:"retail"`
	Original *int64 `json:"original"`
	Net      *int64 `json:"net"`
}

// Availability is one availability of an option. Times are local
// (RFC 3339 with the product's offset) with fractions of a second dropped.
type Availability struct {
	ID                 string    `json:"id"`
	OptionID           string    `json:"optionId"`
	LocalDateTimeStart time.Time `json:"localDateTimeStart"`
	LocalDateTimeEnd   time.Time `json:"localDateTimeEnd"`
	Status             string    `json:"status"`
	Vacancies          *int      `json:"vacancies,omitempty"`
	// Available is OCTO's answer of the POST unit-configuration check
	// (doc 3 rule 3 does not name the field): false when the requested
	// units do not fit this availability.
	Available *bool `json:"available,omitempty"`
	// Capacity, MaxUnits and AllDay come from DialectOCTO answers only
	// (octo.go): the slot's total capacity, the most units one booking
	// may take, and whether the availability spans its whole day.
	Capacity *int `json:"capacity,omitempty"`
	MaxUnits *int `json:"maxUnits,omitempty"`
	AllDay   bool `json:"allDay,omitempty"`
	// UnitPricing: OCTO's prices of this availability, present when it was
	// read with the octo/pricing capability (DialectOCTO only).
	UnitPricing []UnitPrice `json:"unitPricing,omitempty"`
}

// v2Availability is what a v2 availability answer is decoded into: doc 3's
// fields only, so that the OCTO additions of Availability never change how
// a v2 answer is read.
type v2Availability struct {
	ID                 string    `json:"id"`
	OptionID           string    `json:"optionId"`
	LocalDateTimeStart time.Time `json:"localDateTimeStart"`
	LocalDateTimeEnd   time.Time `json:"localDateTimeEnd"`
	Status             string    `json:"status"`
	Vacancies          *int      `json:"vacancies,omitempty"`
	Available          *bool     `json:"available,omitempty"`
}

func (a v2Availability) availability() Availability {
	return Availability{ID: a.ID, OptionID: a.OptionID, LocalDateTimeStart: a.LocalDateTimeStart, LocalDateTimeEnd: a.LocalDateTimeEnd,
		Status: a.Status, Vacancies: a.Vacancies, Available: a.Available}
}

// UnitQuantity is one element of POST availability's units.
type UnitQuantity struct {
	UnitID   string `json:"unitId"`
	Quantity int    `json:"quantity"`
}

// BookingAvailability: doc 3 counts 4 fields (OCTO: id,
// localDateTimeStart, localDateTimeEnd, allDay).
type BookingAvailability struct {
	ID                 string    `json:"id"`
	LocalDateTimeStart time.Time `json:"localDateTimeStart"`
	LocalDateTimeEnd   time.Time `json:"localDateTimeEnd"`
	AllDay             bool      `json:"allDay"`
}

// UnitItem: doc 3 counts 4 fields (OCTO: uuid, unitId,
// resellerReference, supplierReference). Ticket is OCTO's ticket of the
// unit (delivery TICKET), read from answers only.
type UnitItem struct {
	UUID              string  `json:"uuid,omitempty"`
	UnitID            string  `json:"unitId"`
	ResellerReference *string `json:"resellerReference,omitempty"`
	SupplierReference *string `json:"supplierReference,omitempty"`
	Ticket            *Ticket `json:"ticket,omitempty"`
}

// Ticket is OCTO's ticket or voucher: how it is redeemed and its
// delivery options in the supplier's order of preference.
type Ticket = octowire.Ticket

// DeliveryOption is one delivery of a ticket: its format (OCTO:
// PDF_URL, QRCODE, CODE128, PKPASS_URL, AZTECCODE) and value.
type DeliveryOption = octowire.DeliveryOption

// CancellationRequest: doc 3 counts 7 fields (OCTO names).
type CancellationRequest struct {
	Status         string     `json:"status"`
	Reason         string     `json:"reason"`
	ReasonDetails  *string    `json:"reasonDetails"`
	Refund         *string    `json:"refund"`
	UTCRequestedAt *time.Time `json:"utcRequestedAt"`
	UTCResolvedAt  *time.Time `json:"utcResolvedAt"`
	ResolvedBy     *string    `json:"resolvedBy"`
}

// Contact: doc 3 counts 5 fields (OCTO names).
type Contact struct {
	FullName     *string `json:"fullName"`
	FirstName    *string `json:"firstName"`
	LastName     *string `json:"lastName"`
	EmailAddress *string `json:"emailAddress"`
	PhoneNumber  *string `json:"phoneNumber"`
}

// Booking is one booking (doc 3, Booking).
type Booking struct {
	UUID                string               `json:"uuid"`
	ResellerReference   *string              `json:"resellerReference"`
	ChannelName         string               `json:"channelName"`
	ChannelID           string               `json:"channelId"`
	SupplierReference   *string              `json:"supplierReference"`
	Status              string               `json:"status"`
	Cancellable         bool                 `json:"cancellable"`
	UTCHoldExpiration   *time.Time           `json:"utcHoldExpiration"`
	RefreshFrequency    *string              `json:"refreshFrequency"`
	ProductID           string               `json:"productId"`
	OptionID            string               `json:"optionId"`
	Availability        *BookingAvailability `json:"availability"`
	DeliveryMethod      *string              `json:"deliveryMethod"`
	UnitItems           []UnitItem           `json:"unitItems"`
	CancellationRequest *CancellationRequest `json:"cancellationRequest"`
	Contact             *Contact             `json:"contact,omitempty"`
	// Voucher is OCTO's voucher of the booking (delivery VOUCHER).
	Voucher *Ticket `json:"voucher,omitempty"`
}

// Order statuses: doc 3's Order table lists ON_HOLD, CONFIRMED, CANCELLED,
// EXPIRED; its transition table adds REJECTED (a failed confirmOrder).
var orderStatuses = []string{OnHold, Confirmed, Cancelled, Expired, Rejected}

// Order groups bookings (doc 3, Order).
type Order struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	UTCExpiresAt   *time.Time `json:"utcExpiresAt"`
	UTCConfirmedAt *time.Time `json:"utcConfirmedAt"`
	Bookings       []Booking  `json:"bookings"`
}

// PriceEntry is one element of the price-schedule read (not shown in
// doc 3; docs/decisions.md, "Booking-system v2 client"): the unit prices of an option
// for the local dates [localDateStart, localDateEnd).
type PriceEntry struct {
	OptionID       string      `json:"optionId"`
	LocalDateStart string      `json:"localDateStart"`
	LocalDateEnd   string      `json:"localDateEnd"`
	UnitPricing    []UnitPrice `json:"unitPricing"`
}

// UnitPrice is a price in minor units (OCTO pricing capability shape).
type UnitPrice struct {
	UnitID            string `json:"unitId"`
	Currency          string `json:"currency"`
	CurrencyPrecision int    `json:"currencyPrecision"`
	Retail            int64  `json:"retail"`
	Net               *int64 `json:"net,omitempty"`
}

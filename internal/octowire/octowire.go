// Package octowire holds the JSON shapes of the public OCTO standard
// (octotravel/octo-types, src/openapi.yaml, components.schemas) that
// Switchback speaks on both sides: query/octo answers resellers in them and
// reads their request bodies; ingest/bookingsystem's OCTO dialect sends the
// request bodies to a booking system and reads its leaf shapes (tickets,
// opening hours, restrictions); internal/simulators/bookingsim's OCTO
// dialect answers in them as a booking system would.
//
// It owns the field names, their order, nullability and omitempty, which
// is what the wire shows: one change here changes every side at once. A
// field OCTO marks required is always written, null where OCTO makes it
// nullable and there is no value (a pointer without omitempty); the
// octo/pricing fields are written only when the capability was asked for
// (omitempty, a pointer to a slice so that an asked-for empty list is
// written as []). Request bodies are read by query/octo and the simulator
// and written by ingest/bookingsystem: their omitempty (which reading
// ignores) is what the client leaves out, and their field order is the
// order it writes.
//
// It must not hold behaviour (no validation, no mapping to the catalog or
// to doc 3's shapes, no HTTP): the users do that. Shapes a side reads with
// other Go types (times as time.Time, a field's absence told from its zero
// value) stay with that side's decoder, saying why.
package octowire

// Supplier is OCTO's Supplier.
type Supplier struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Endpoint string          `json:"endpoint"`
	Contact  SupplierContact `json:"contact"`
}

// SupplierContact is OCTO's SupplierContact.
type SupplierContact struct {
	Website   *string `json:"website"`
	Email     *string `json:"email"`
	Telephone *string `json:"telephone"`
	Address   *string `json:"address"`
}

// Product is OCTO's Product, with the octo/pricing fields.
type Product struct {
	ID                   string   `json:"id"`
	InternalName         string   `json:"internalName"`
	Reference            *string  `json:"reference"`
	Locale               string   `json:"locale"`
	TimeZone             string   `json:"timeZone"`
	AllowFreesale        bool     `json:"allowFreesale"`
	InstantConfirmation  bool     `json:"instantConfirmation"`
	InstantDelivery      bool     `json:"instantDelivery"`
	AvailabilityRequired bool     `json:"availabilityRequired"`
	AvailabilityType     string   `json:"availabilityType"`
	DeliveryFormats      []string `json:"deliveryFormats"`
	DeliveryMethods      []string `json:"deliveryMethods"`
	RedemptionMethod     string   `json:"redemptionMethod"`
	Options              []Option `json:"options"`

	DefaultCurrency     string    `json:"defaultCurrency,omitempty"`
	AvailableCurrencies *[]string `json:"availableCurrencies,omitempty"`
	PricingPer          string    `json:"pricingPer,omitempty"`
}

// Option is OCTO's Option.
type Option struct {
	ID                          string             `json:"id"`
	Default                     bool               `json:"default"`
	InternalName                string             `json:"internalName"`
	Reference                   *string            `json:"reference"`
	AvailabilityLocalStartTimes []string           `json:"availabilityLocalStartTimes"`
	CancellationCutoff          string             `json:"cancellationCutoff"`
	CancellationCutoffAmount    int                `json:"cancellationCutoffAmount"`
	CancellationCutoffUnit      string             `json:"cancellationCutoffUnit"`
	RequiredContactFields       []string           `json:"requiredContactFields"`
	Restrictions                OptionRestrictions `json:"restrictions"`
	Units                       []Unit             `json:"units"`

	PricingFrom *[]Pricing `json:"pricingFrom,omitempty"`
}

// OptionRestrictions is OCTO's OptionRestrictions.
type OptionRestrictions struct {
	MinUnits *int `json:"minUnits"`
	MaxUnits *int `json:"maxUnits"`
}

// Unit is OCTO's Unit.
type Unit struct {
	ID                    string           `json:"id"`
	InternalName          string           `json:"internalName"`
	Reference             *string          `json:"reference"`
	Type                  string           `json:"type"`
	Restrictions          UnitRestrictions `json:"restrictions"`
	RequiredContactFields []string         `json:"requiredContactFields"`

	PricingFrom *[]Pricing `json:"pricingFrom,omitempty"`
}

// UnitRestrictions is OCTO's UnitRestrictions.
type UnitRestrictions struct {
	MinAge        int      `json:"minAge"`
	MaxAge        int      `json:"maxAge"`
	IDRequired    bool     `json:"idRequired"`
	MinQuantity   *int     `json:"minQuantity"`
	MaxQuantity   *int     `json:"maxQuantity"`
	PaxCount      int      `json:"paxCount"`
	AccompaniedBy []string `json:"accompaniedBy"`
}

// Pricing is OCTO's Pricing: integer amounts in the currency's minor
// units (amount / 10^currencyPrecision).
type Pricing struct {
	Original          int64  `json:"original"`
	Retail            int64  `json:"retail"`
	Net               *int64 `json:"net"`
	Currency          string `json:"currency"`
	CurrencyPrecision int    `json:"currencyPrecision"`
	IncludedTaxes     []Tax  `json:"includedTaxes"`
}

// Tax is OCTO's Tax.
type Tax struct {
	Name     string `json:"name"`
	Retail   int64  `json:"retail"`
	Original int64  `json:"original"`
	Net      *int64 `json:"net"`
}

// PricingUnit is OCTO's PricingUnit: a Pricing of one unit.
type PricingUnit struct {
	UnitID string `json:"unitId"`
	Pricing
}

// OpeningHours is OCTO's OpeningHours ("HH:MM" local times).
type OpeningHours struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Availability is OCTO's Availability.
type Availability struct {
	ID                 string         `json:"id"`
	LocalDateTimeStart string         `json:"localDateTimeStart"`
	LocalDateTimeEnd   string         `json:"localDateTimeEnd"`
	UTCCutoffAt        string         `json:"utcCutoffAt"`
	AllDay             bool           `json:"allDay"`
	Available          bool           `json:"available"`
	Status             string         `json:"status"`
	Vacancies          *int           `json:"vacancies"`
	Capacity           *int           `json:"capacity"`
	MaxUnits           *int           `json:"maxUnits"`
	OpeningHours       []OpeningHours `json:"openingHours"`

	UnitPricing *[]PricingUnit `json:"unitPricing,omitempty"`
	Pricing     *Pricing       `json:"pricing,omitempty"`
}

// CalendarDay is OCTO's AvailabilityCalendar.
type CalendarDay struct {
	LocalDate    string         `json:"localDate"`
	Available    bool           `json:"available"`
	Status       string         `json:"status"`
	Vacancies    *int           `json:"vacancies"`
	Capacity     *int           `json:"capacity"`
	OpeningHours []OpeningHours `json:"openingHours"`

	UnitPricingFrom *[]PricingUnit `json:"unitPricingFrom,omitempty"`
	PricingFrom     *Pricing       `json:"pricingFrom,omitempty"`
}

// Contact is OCTO's Contact (a booking's and a unit item's).
type Contact struct {
	FullName     *string  `json:"fullName"`
	FirstName    *string  `json:"firstName"`
	LastName     *string  `json:"lastName"`
	EmailAddress *string  `json:"emailAddress"`
	PhoneNumber  *string  `json:"phoneNumber"`
	Locales      []string `json:"locales"`
	PostalCode   *string  `json:"postalCode"`
	Country      *string  `json:"country"`
	Notes        *string  `json:"notes"`
}

// DeliveryOption is OCTO's DeliveryOption.
type DeliveryOption struct {
	DeliveryFormat string `json:"deliveryFormat"`
	DeliveryValue  string `json:"deliveryValue"`
}

// Ticket is OCTO's Ticket (a unit item's ticket and a booking's voucher).
type Ticket struct {
	RedemptionMethod string           `json:"redemptionMethod"`
	UTCRedeemedAt    *string          `json:"utcRedeemedAt"`
	DeliveryOptions  []DeliveryOption `json:"deliveryOptions"`
}

// UnitItem is OCTO's UnitItem.
type UnitItem struct {
	UUID              string  `json:"uuid"`
	ResellerReference *string `json:"resellerReference"`
	SupplierReference *string `json:"supplierReference"`
	UnitID            string  `json:"unitId"`
	Unit              *Unit   `json:"unit,omitempty"`
	Status            string  `json:"status"`
	UTCRedeemedAt     *string `json:"utcRedeemedAt"`
	Contact           Contact `json:"contact"`
	Ticket            *Ticket `json:"ticket"`

	Pricing *Pricing `json:"pricing,omitempty"`
}

// Cancellation is OCTO's BookingCancellation.
type Cancellation struct {
	Refund         string  `json:"refund"`
	Reason         *string `json:"reason"`
	UTCCancelledAt string  `json:"utcCancelledAt"`
}

// Booking is OCTO's Booking.
type Booking struct {
	ID                string        `json:"id"`
	UUID              string        `json:"uuid"`
	TestMode          bool          `json:"testMode"`
	ResellerReference *string       `json:"resellerReference"`
	SupplierReference *string       `json:"supplierReference"`
	Status            string        `json:"status"`
	UTCCreatedAt      string        `json:"utcCreatedAt"`
	UTCUpdatedAt      string        `json:"utcUpdatedAt"`
	UTCExpiresAt      *string       `json:"utcExpiresAt"`
	UTCRedeemedAt     *string       `json:"utcRedeemedAt"`
	UTCConfirmedAt    *string       `json:"utcConfirmedAt"`
	ProductID         string        `json:"productId"`
	OptionID          string        `json:"optionId"`
	Cancellable       bool          `json:"cancellable"`
	Cancellation      *Cancellation `json:"cancellation"`
	Freesale          bool          `json:"freesale"`
	AvailabilityID    *string       `json:"availabilityId"`
	Availability      *Availability `json:"availability"`
	Contact           Contact       `json:"contact"`
	Notes             *string       `json:"notes"`
	DeliveryMethods   []string      `json:"deliveryMethods"`
	Voucher           *Ticket       `json:"voucher"`
	UnitItems         []UnitItem    `json:"unitItems"`

	Pricing *Pricing `json:"pricing,omitempty"`
}

// Capability is OCTO's Capability.
type Capability struct {
	ID           string   `json:"id"`
	Revision     int      `json:"revision"`
	Required     bool     `json:"required"`
	Dependencies []string `json:"dependencies"`
	Docs         *string  `json:"docs"`
}

// Request bodies. Strings OCTO makes nullable read null as "". Fields
// OCTO's capabilities add that Switchback does not serve are ignored
// (unknown fields are not an error: an OCTO client sends what its
// capabilities define). omitempty marks what ingest/bookingsystem leaves
// out when it sends the body (reading ignores it).

// ContactBody is OCTO's BookingContact.
type ContactBody struct {
	FullName     string   `json:"fullName"`
	FirstName    string   `json:"firstName"`
	LastName     string   `json:"lastName"`
	EmailAddress string   `json:"emailAddress"`
	PhoneNumber  string   `json:"phoneNumber"`
	Locales      []string `json:"locales"`
	PostalCode   string   `json:"postalCode"`
	Country      string   `json:"country"`
	Notes        string   `json:"notes"`
}

// UnitItemBody is OCTO's BookingUnitItem.
type UnitItemBody struct {
	UUID              string       `json:"uuid,omitempty"`
	UnitID            string       `json:"unitId"`
	ResellerReference string       `json:"resellerReference,omitempty"`
	Contact           *ContactBody `json:"contact,omitempty"`
}

// AvailabilityUnit is OCTO's AvailabilityUnit.
type AvailabilityUnit struct {
	ID       string `json:"id"`
	Quantity int    `json:"quantity"`
}

// AvailabilityBody is OCTO's AvailabilityCheckBody and
// AvailabilityCalendarBody (the calendar takes no availabilityIds nor
// localDate).
type AvailabilityBody struct {
	ProductID       string             `json:"productId"`
	OptionID        string             `json:"optionId"`
	LocalDate       string             `json:"localDate,omitempty"`
	LocalDateStart  string             `json:"localDateStart,omitempty"`
	LocalDateEnd    string             `json:"localDateEnd,omitempty"`
	AvailabilityIDs []string           `json:"availabilityIds,omitempty"`
	Units           []AvailabilityUnit `json:"units,omitempty"`
	Currency        string             `json:"currency,omitempty"`
}

// ReservationBody is OCTO's BookingReservationBody.
type ReservationBody struct {
	UUID              string          `json:"uuid"`
	ProductID         string          `json:"productId"`
	OptionID          string          `json:"optionId"`
	AvailabilityID    string          `json:"availabilityId"`
	UnitItems         *[]UnitItemBody `json:"unitItems"`
	ExpirationMinutes *int            `json:"expirationMinutes"`
	Notes             string          `json:"notes,omitempty"`
	ResellerReference string          `json:"resellerReference,omitempty"`
	Contact           *ContactBody    `json:"contact,omitempty"`
	Currency          string          `json:"currency,omitempty"`
}

// ConfirmationBody is OCTO's BookingConfirmationBody as a reseller sends
// it (ingest/bookingsystem sends its own: a contact in doc 3's fields).
type ConfirmationBody struct {
	ResellerReference *string         `json:"resellerReference"`
	Contact           *ContactBody    `json:"contact"`
	UnitItems         *[]UnitItemBody `json:"unitItems"`
	EmailReceipt      bool            `json:"emailReceipt"`
}

// UpdateBody is OCTO's BookingUpdateBody.
type UpdateBody struct {
	ResellerReference *string         `json:"resellerReference"`
	ProductID         *string         `json:"productId"`
	OptionID          *string         `json:"optionId"`
	AvailabilityID    *string         `json:"availabilityId"`
	ExpirationMinutes *int            `json:"expirationMinutes"`
	Notes             *string         `json:"notes"`
	EmailReceipt      bool            `json:"emailReceipt"`
	UnitItems         *[]UnitItemBody `json:"unitItems"`
	Contact           *ContactBody    `json:"contact"`
}

// ExtendBody is OCTO's ExtendReservationBody.
type ExtendBody struct {
	ExpirationMinutes *int `json:"expirationMinutes"`
}

// CancellationBody is OCTO's BookingCancellationBody.
type CancellationBody struct {
	Reason string `json:"reason"`
	Force  bool   `json:"force,omitempty"`
}

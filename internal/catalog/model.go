// Package catalog owns the catalog's model: sales channels, suppliers
// (with how to reach their systems), products, rates, availabilities,
// price schedules and bindings of products to channels; their validation
// (each error names the field as the API body spells it); the Scope a
// caller acts in; and Event, a catalog event with its states decoded,
// with the checks it must pass before it is applied (DecodeEvent). The
// payload on the topics is schemas.CatalogEvent.
//
// It must not know storage or HTTP: the Redis adapter is
// internal/catalog/catalogredis, the renderings
// internal/catalog/catalogwire, the HTTP mapping query/channel,
// query/operator and query/reseller. It never logs or renders supplier
// credentials.
package catalog

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// The resources below are spec doc 2's Supplier (1.2 and 1.3 as one
// superset), Location, Hours, TravelerType, Content, Rate and Price, spec
// doc 3's Product fields, and doc 2's Channel and ChannelRate. Their JSON
// tags are the wire names; the same structs are the records on the topics
// and in Redis. Shapes that the spec does not show (Product 1.2, the
// operator setup bodies) are written down in docs/decisions.md.

// Validity is a {from, until} window (date-time). A zero bound is open.
type Validity struct {
	From  time.Time `json:"from,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// Contains reports whether t is inside the window: from inclusive, until
// exclusive.
func (v Validity) Contains(t time.Time) bool {
	return (v.From.IsZero() || !t.Before(v.From)) && (v.Until.IsZero() || t.Before(v.Until))
}

// Channel is a sales channel (spec doc 2, "Channel"; doc 3 shows id, name,
// companyName of the same channel).
type Channel struct {
	ID              string            `json:"id"`
	Name            string            `json:"name"`
	CompanyName     string            `json:"companyName"`
	ActivationDelay string            `json:"activationDelay,omitempty"`
	Config          map[string]string `json:"config,omitempty"`
	Ext             map[string]string `json:"ext,omitempty"`
	LogoURL         string            `json:"logoUrl,omitempty"`
	URL             string            `json:"url,omitempty"`
	Version         int64             `json:"version"`
}

// Contact of a supplier; primary is 1.2 only.
type Contact struct {
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
	Phone   string `json:"phone,omitempty"`
	Primary bool   `json:"primary,omitempty"`
	Title   string `json:"title,omitempty"`
}

// Address of a Location.
type Address struct {
	CountryCode   string `json:"countryCode,omitempty"`
	MapPlaceID    string `json:"mapPlaceId,omitempty"`
	Locality      string `json:"locality,omitempty"`
	PostalCode    string `json:"postalCode,omitempty"`
	Region        string `json:"region,omitempty"`
	StreetAddress string `json:"streetAddress,omitempty"`
}

// LongLat in decimal degrees. Numbers keep the operator's spelling.
type LongLat struct {
	Latitude  json.Number `json:"latitude"`
	Longitude json.Number `json:"longitude"`
}

// Reference links a location to an external mapping platform.
type Reference struct {
	Platform string `json:"platform,omitempty"`
	ID       string `json:"id,omitempty"`
	Name     string `json:"name,omitempty"`
	URL      string `json:"url,omitempty"`
}

// Location is the 1.3 location plus the deprecated 1.2 fields.
type Location struct {
	Name        string      `json:"name,omitempty"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description,omitempty"`
	Address     *Address    `json:"address,omitempty"`
	LongLat     *LongLat    `json:"longLat,omitempty"`
	Website     string      `json:"website,omitempty"`
	Notes       string      `json:"notes,omitempty"`
	Type        string      `json:"type,omitempty"`
	Order       int         `json:"order,omitempty"`
	References  []Reference `json:"references,omitempty"`
	// Deprecated 1.2 fields, rendered in 1.2 only.
	City      string `json:"city,omitempty"`
	Country   string `json:"country,omitempty"`
	State     string `json:"state,omitempty"`
	UTCOffset string `json:"utcOffset,omitempty"`
}

// TimeRange is one {open, close} of Hours, 'HH:mm' 24-hour.
type TimeRange struct {
	Open  string `json:"open"`
	Close string `json:"close"`
}

// Hours is an opening-hours rule.
type Hours struct {
	Dates      []string    `json:"dates,omitempty"`
	DaysOfWeek []int       `json:"daysOfWeek,omitempty"`
	Times      []TimeRange `json:"times,omitempty"`
	Timezone   string      `json:"timezone,omitempty"`
	Valid      *Validity   `json:"valid,omitempty"`
}

// LocalizedText is one entry of a localized text set.
type LocalizedText struct {
	Text   string `json:"text"`
	Locale string `json:"locale,omitempty"`
	Format string `json:"format,omitempty"`
}

// Constraint of a traveler type or add-on.
type Constraint struct {
	Type    string          `json:"type"`
	Min     *json.Number    `json:"min,omitempty"`
	Max     *json.Number    `json:"max,omitempty"`
	Message []LocalizedText `json:"message,omitempty"`
	Pattern string          `json:"pattern,omitempty"`
}

// AddOnPolicy of an add-on definition.
type AddOnPolicy struct {
	Cancellable    bool   `json:"cancellable"`
	Refundable     bool   `json:"refundable"`
	CutOffTime     int64  `json:"cutOffTime,omitempty"`
	HoldablePeriod int64  `json:"holdablePeriod,omitempty"`
	CancelPolicy   string `json:"cancelPolicy,omitempty"`
}

// AddOn is an add-on definition of a 1.3 traveler type.
type AddOn struct {
	ID               string       `json:"id"`
	InternalName     string       `json:"internalName,omitempty"`
	Title            string       `json:"title,omitempty"`
	Description      string       `json:"description,omitempty"`
	Reference        string       `json:"reference,omitempty"`
	Scope            string       `json:"scope,omitempty"`
	Constraints      []Constraint `json:"constraints,omitempty"`
	DeliveryFormats  []string     `json:"deliveryFormats,omitempty"`
	DeliveryMethods  []string     `json:"deliveryMethods,omitempty"`
	RedemptionMethod string       `json:"redemptionMethod,omitempty"`
	Policy           *AddOnPolicy `json:"policy,omitempty"`
	Content          *Content     `json:"content,omitempty"`
}

// TravelerType is the 1.3 traveler type; 1.2 renders ageBand, maxAge,
// minAge, modifier and name.
type TravelerType struct {
	AgeBand     string            `json:"ageBand,omitempty"`
	Extensions  json.RawMessage   `json:"extensions,omitempty"`
	Ext         map[string]string `json:"ext,omitempty"`
	MaxAge      *int32            `json:"maxAge,omitempty"`
	MinAge      *int32            `json:"minAge,omitempty"`
	Modifier    string            `json:"modifier,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Constraints []Constraint      `json:"constraints,omitempty"`
	AddOns      []AddOn           `json:"addOns,omitempty"`
}

// Duration of a content object.
type Duration struct {
	Length      json.Number     `json:"length,omitempty"`
	Flexible    bool            `json:"flexible,omitempty"`
	Unit        string          `json:"unit,omitempty"`
	Description []LocalizedText `json:"description,omitempty"`
}

// FAQ of a content object.
type FAQ struct {
	Question []LocalizedText `json:"question"`
	Answer   []LocalizedText `json:"answer"`
}

// Feature of a content object.
type Feature struct {
	Type        string          `json:"type"`
	Description []LocalizedText `json:"description,omitempty"`
}

// Media of a content object; url must be publicly accessible.
type Media struct {
	URL          string            `json:"url"`
	Type         string            `json:"type,omitempty"`
	Relationship string            `json:"relationship,omitempty"`
	Title        string            `json:"title,omitempty"`
	Caption      string            `json:"caption,omitempty"`
	Copyright    string            `json:"copyright,omitempty"`
	Credits      string            `json:"credits,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
}

// RatingAverage of a rating.
type RatingAverage struct {
	Value json.Number `json:"value"`
	Min   *int        `json:"min,omitempty"`
	Max   *int        `json:"max,omitempty"`
}

// Rating of a content object.
type Rating struct {
	Source  string         `json:"source"`
	Average *RatingAverage `json:"average,omitempty"`
	Count   *int           `json:"count,omitempty"`
}

// Content is the 1.3 structured content object (spec doc 2; fields after
// ratings are not shown and not stored).
type Content struct {
	ID               string            `json:"id,omitempty"`
	Name             string            `json:"name,omitempty"`
	Title            []LocalizedText   `json:"title,omitempty"`
	Subtitle         []LocalizedText   `json:"subtitle,omitempty"`
	Description      []LocalizedText   `json:"description,omitempty"`
	ShortDescription []LocalizedText   `json:"shortDescription,omitempty"`
	Categories       [][]LocalizedText `json:"categories,omitempty"`
	Duration         *Duration         `json:"duration,omitempty"`
	FAQs             []FAQ             `json:"faqs,omitempty"`
	Features         []Feature         `json:"features,omitempty"`
	Media            []Media           `json:"media,omitempty"`
	Ratings          []Rating          `json:"ratings,omitempty"`
}

// SupplierData is what a supplier shows to resellers: every public field
// of Supplier 1.2 and 1.3, without version.
type SupplierData struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Title          string            `json:"title,omitempty"`
	Description    string            `json:"description,omitempty"`
	Code           string            `json:"code"`
	PartnerID      string            `json:"partnerId,omitempty"`
	Extensions     json.RawMessage   `json:"extensions,omitempty"`
	Ext            map[string]string `json:"ext,omitempty"`
	BusinessType   []string          `json:"businessType,omitempty"`
	Contacts       []Contact         `json:"contacts,omitempty"`
	MainLocation   *Location         `json:"mainLocation,omitempty"`
	OtherLocations []Location        `json:"otherLocations,omitempty"`
	Hours          []Hours           `json:"hours,omitempty"`
	TravelerTypes  []TravelerType    `json:"travelerTypes,omitempty"`
	Content        *Content          `json:"content,omitempty"`
}

// Connection kinds: how Switchback reaches the supplier's system.
const (
	ConnectionPartner       = "partner"       // partner interface 1.2 (spec doc 2)
	ConnectionBookingSystem = "bookingsystem" // booking system interface v2 (spec doc 3)
	ConnectionOCTO          = "octo"          // an OCTO-style booking system, spoken like v2
)

// Credentials to call the supplier's system: apiKey + apiSecret, or a
// bearerToken. They are stored (topic and Redis) but never rendered: no
// API view carries them, and String, GoString and LogValue redact them, so
// a %v or a slog attribute cannot leak them.
type Credentials struct {
	APIKey      string `json:"apiKey,omitempty"`
	APISecret   string `json:"apiSecret,omitempty"`
	BearerToken string `json:"bearerToken,omitempty"`
}

// Set reports whether any credential is stored.
func (c Credentials) Set() bool { return c.APIKey != "" || c.APISecret != "" || c.BearerToken != "" }

func (c Credentials) String() string       { return "[redacted credentials]" }
func (c Credentials) GoString() string     { return "catalog.Credentials{[redacted]}" }
func (c Credentials) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// Format redacts for every verb (%d or %x of a struct would otherwise
// print the fields).
func (c Credentials) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted credentials]")) }

// Connection is how to reach the supplier's system.
type Connection struct {
	Kind        string      `json:"kind"`
	BaseURL     string      `json:"baseUrl"`
	Credentials Credentials `json:"credentials"`
}

// Supplier is the stored supplier: public data, version, connection and
// owner (the operator principal id that created it; empty for
// admin-created suppliers, which only admins manage).
type Supplier struct {
	SupplierData
	Version    int64      `json:"version"`
	Connection Connection `json:"connection"`
	Owner      string     `json:"owner,omitempty"`
}

// ProductData is a product as resellers and operators see it (Product 1.2
// is not shown in the spec: these are doc 3's product fields plus the
// naming fields of the 1.2 resources).
type ProductData struct {
	ID                  string            `json:"id"`
	Name                string            `json:"name"`
	Title               string            `json:"title,omitempty"`
	Description         string            `json:"description,omitempty"`
	Code                string            `json:"code,omitempty"`
	PartnerID           string            `json:"partnerId,omitempty"`
	InternalName        string            `json:"internalName,omitempty"`
	Reference           string            `json:"reference,omitempty"`
	Locale              string            `json:"locale,omitempty"`
	TimeZone            string            `json:"timeZone,omitempty"`
	InstantConfirmation bool              `json:"instantConfirmation"`
	InstantDelivery     bool              `json:"instantDelivery"`
	AvailabilityType    string            `json:"availabilityType,omitempty"`
	DeliveryFormats     []string          `json:"deliveryFormats,omitempty"`
	DeliveryMethods     []string          `json:"deliveryMethods,omitempty"`
	RedemptionMethod    string            `json:"redemptionMethod,omitempty"`
	Hours               []Hours           `json:"hours,omitempty"`
	Locations           []Location        `json:"locations,omitempty"`
	Ext                 map[string]string `json:"ext,omitempty"`
	Extensions          json.RawMessage   `json:"extensions,omitempty"`
}

// Product is the stored product.
type Product struct {
	SupplierID string `json:"supplierId"`
	ProductData
	Version int64 `json:"version"`
}

// Money is an amount in a currency.
type Money struct {
	Amount   json.Number `json:"amount"`
	Currency string      `json:"currency"`
}

// IncludedTax of a price.
type IncludedTax struct {
	Currency string      `json:"currency"`
	ID       string      `json:"id,omitempty"`
	Name     string      `json:"name,omitempty"`
	Net      json.Number `json:"net,omitempty"`
	Retail   json.Number `json:"retail,omitempty"`
}

// PriceTravelerType is the traveler type of a price (1.2 shape).
type PriceTravelerType struct {
	AgeBand  string `json:"ageBand,omitempty"`
	MaxAge   *int32 `json:"maxAge,omitempty"`
	MinAge   *int32 `json:"minAge,omitempty"`
	Modifier string `json:"modifier,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Price of a rate (spec doc 2, "Price").
type Price struct {
	ID            string             `json:"id"`
	IncludedTaxes []IncludedTax      `json:"includedTaxes,omitempty"`
	Labels        []string           `json:"labels,omitempty"`
	Name          string             `json:"name,omitempty"`
	Net           *Money             `json:"net,omitempty"`
	Original      *Money             `json:"original,omitempty"`
	Retail        *Money             `json:"retail,omitempty"`
	Status        string             `json:"status,omitempty"`
	TravelerType  *PriceTravelerType `json:"travelerType,omitempty"`
}

// HasLabels reports whether every tag is among the price's labels (spec
// doc 2, binding rules: a Price is visible only if all the binding's
// priceTags are among its labels).
func (p Price) HasLabels(tags []string) bool {
	for _, t := range tags {
		found := false
		for _, l := range p.Labels {
			if l == t {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// RateData is a rate as resellers and operators see it (spec doc 2,
// "Rate"), without productId and version.
type RateData struct {
	ID             string            `json:"id"`
	Cancelable     bool              `json:"cancelable"`
	Code           string            `json:"code,omitempty"`
	Cutoff         int               `json:"cutoff"`
	Ext            map[string]string `json:"ext,omitempty"`
	Holdable       bool              `json:"holdable"`
	HoldablePeriod int               `json:"holdablePeriod"`
	Hours          []Hours           `json:"hours,omitempty"`
	MaxTravelers   int               `json:"maxTravelers"`
	MinTravelers   int               `json:"minTravelers"`
	Name           string            `json:"name"`
	// OptionID is the v2 option id of the rate: always the rate id (doc 3's
	// options are our rates), accepted on input only when equal to it.
	OptionID   string    `json:"optionId"`
	PartnerID  string    `json:"partnerId,omitempty"`
	Prices     []Price   `json:"prices"`
	Refundable bool      `json:"refundable"`
	Title      string    `json:"title,omitempty"`
	Type       string    `json:"type,omitempty"`
	Valid      *Validity `json:"valid,omitempty"`
}

// Rate is the stored rate.
type Rate struct {
	SupplierID string `json:"supplierId"`
	ProductID  string `json:"productId"`
	RateData
	Version int64 `json:"version"`
}

// Availability is one availability window of a rate (spec doc 2,
// "Availability"), as an operator pushes it. SystemID is the booking
// system's id of an availability that a booking-system synchronization
// wrote (ingest/bookingsync): ID is then a UUID derived from it, and a
// hold names the booking system's id again through it. Resellers never
// see it (their availability is doc 2's five fields).
type Availability struct {
	ID          string    `json:"id"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Capacity    int       `json:"capacity"`
	MaxCapacity *int      `json:"maxCapacity,omitempty"`
	SystemID    string    `json:"systemId,omitempty"`
}

// AvailabilitySet is every availability of one rate, as last pushed.
type AvailabilitySet struct {
	SupplierID     string         `json:"supplierId"`
	ProductID      string         `json:"productId"`
	RateID         string         `json:"rateId"`
	Availabilities []Availability `json:"availabilities"`
	Version        int64          `json:"version"`
}

// PriceAt values of a binding (spec doc 2, ChannelRate).
const (
	PriceAtRedemption = "PRICE_AT_REDEMPTION"
	PriceAtSale       = "PRICE_AT_SALE"
	PriceAtUnknown    = "PRICE_AT_UNKNOWN"
)

// ProductRef names a product by its supplier (a batch of reads names
// several).
type ProductRef struct {
	SupplierID, ProductID string
}

// Binding is THE binding of a supplier's product to a channel. Channel
// v1.2 shows it as a ChannelRate (rateIds, priceAt, priceTags, valid) and
// operator v2 as a Binding (optionIds); both read and write this record.
// RateIDs empty means the whole product: every rate it has now or later.
type Binding struct {
	SupplierID string   `json:"supplierId"`
	ProductID  string   `json:"productId"`
	ChannelID  string   `json:"channelId"`
	RateIDs    []string `json:"rateIds"`
	PriceAt    string   `json:"priceAt"`
	PriceTags  []string `json:"priceTags"`
	Valid      Validity `json:"valid"`
	Version    int64    `json:"version"`
}

// Whole reports whether the binding covers every rate of the product.
func (b Binding) Whole() bool { return len(b.RateIDs) == 0 }

// Binds reports whether the binding grants the rate.
func (b Binding) Binds(rateID string) bool {
	if b.Whole() {
		return true
	}
	for _, id := range b.RateIDs {
		if id == rateID {
			return true
		}
	}
	return false
}

// SameTerms reports whether a and b bind the same rates on the same terms
// (versions aside).
func (b Binding) SameTerms(o Binding) bool {
	return b.PriceAt == o.PriceAt && equalStrings(b.RateIDs, o.RateIDs) && equalStrings(b.PriceTags, o.PriceTags) &&
		b.Valid.From.Equal(o.Valid.From) && b.Valid.Until.Equal(o.Valid.Until)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

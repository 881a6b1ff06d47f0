package bookingsystem

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/octowire"
)

// DialectOCTO: the same calls spoken as the public OCTO standard. OCTO has
// one endpoint per supplier, so no path names a supplier (the supplierID
// arguments are not sent); paths are relative to the connection's
// endpoint:
//
//	Suppliers          GET  /supplier                 → a list of one
//	Products           GET  /products                 Octo-Capabilities header
//	Product            GET  /products/{productId}     Octo-Capabilities header
//	Availability       POST /availability             {productId, optionId, localDateStart, localDateEnd (inclusive)}
//	CheckAvailability  POST /availability             {productId, optionId, availabilityIds, units: [{id, quantity}]}
//	CreateBooking      POST /bookings                 {uuid, productId, optionId, availabilityId, unitItems, expirationMinutes, notes?, resellerReference?}
//	GetBooking         GET  /bookings/{uuid}
//	ConfirmBooking     POST /bookings/{uuid}/confirm  {contact, resellerReference?, unitItems?}
//	CancelBooking      POST /bookings/{uuid}/cancel   {reason}
//	PriceSchedule      GET  /products/{productId}, then POST /availability per option with octo/pricing
//	*Order             ErrUnsupported (core OCTO has no orders)
//
// The availability ids sent are OCTO's own (OCTOAvailabilityID of the ids
// the client returned, which split a day into its opening ranges).
//
// Answers are read into the package's types and checked by the same data
// rules (rules.go). The mapping is in docs/decisions.md ("OCTO dialect").

// OCTO error codes (the "error" of OCTO's 400 error object) that mean the
// object asked for does not exist.
const (
	octoInvalidBookingUUID = "INVALID_BOOKING_UUID"
	octoInvalidProductID   = "INVALID_PRODUCT_ID"
)

// octoPricing is OCTO's pricing capability (prices on availabilities).
const octoPricing = "octo/pricing"

func (c Connection) octo() bool { return c.Dialect == DialectOCTO }

// Request bodies are internal/octowire's, but for the confirmation's:
// OCTO requires its contact, which this client sends in doc 3's five
// fields (Contact), nulls included ({} of nulls when the caller has none);
// octowire.ConfirmationBody is a reseller's, whose contact query/octo
// reads as OCTO's full BookingContact.
type octoConfirmBody struct {
	Contact           Contact                 `json:"contact"`
	ResellerReference string                  `json:"resellerReference,omitempty"`
	UnitItems         []octowire.UnitItemBody `json:"unitItems,omitempty"`
}

// octoUnitItems are us as OCTO's BookingUnitItems (a reseller reference
// of nil or "" is left out: OCTO makes it nullable).
func octoUnitItems(us []UnitItem) []octowire.UnitItemBody {
	if us == nil {
		return nil
	}
	out := make([]octowire.UnitItemBody, len(us))
	for i, u := range us {
		out[i] = octowire.UnitItemBody{UUID: u.UUID, UnitID: u.UnitID}
		if u.ResellerReference != nil {
			out[i].ResellerReference = *u.ResellerReference
		}
	}
	return out
}

func octoConfirm(in ConfirmRequest) octoConfirmBody {
	b := octoConfirmBody{ResellerReference: in.ResellerReference, UnitItems: octoUnitItems(in.UnitItems)}
	if in.Contact != nil {
		b.Contact = *in.Contact
	}
	return b
}

// octoCancel: OCTO's reason is free text; ours is doc 3's code, with the
// details after it.
func octoCancel(in CancelRequest) octowire.CancellationBody {
	if in.ReasonDetails != "" {
		return octowire.CancellationBody{Reason: in.Reason + ": " + in.ReasonDetails}
	}
	return octowire.CancellationBody{Reason: in.Reason}
}

// octoInclusiveEnd turns our exclusive end date into OCTO's inclusive
// localDateEnd (OCTO's example asks 2022-05-23 to 2022-05-29 for a week).
func octoInclusiveEnd(exclusive string) string {
	t, err := time.Parse(time.DateOnly, exclusive)
	if err != nil {
		return exclusive
	}
	return t.AddDate(0, 0, -1).Format(time.DateOnly)
}

// checkWindow: two dates YYYY-MM-DD, start before the (exclusive) end.
func checkWindow(start, end string) error {
	s, err1 := time.Parse(time.DateOnly, start)
	e, err2 := time.Parse(time.DateOnly, end)
	if err1 != nil || err2 != nil || !s.Before(e) {
		return invalid("localDateStart", "and localDateEnd must be YYYY-MM-DD, start before end")
	}
	return nil
}

func (c *Client) octoSupplier(ctx context.Context, conn Connection) ([]Supplier, []Problem, error) {
	return read(ctx, c, conn, call{op: "suppliers", method: fasthttp.MethodGet, segments: []string{"supplier"}},
		func(b []byte) ([]Supplier, []Problem, error) { return ParseOCTOSupplier(b) })
}

func (c *Client) octoProducts(ctx context.Context, conn Connection, capabilities []string) ([]Product, []Problem, error) {
	var h map[string]string
	if len(capabilities) > 0 {
		h = map[string]string{"Octo-Capabilities": strings.Join(capabilities, ",")}
	}
	return read(ctx, c, conn, call{op: "products", method: fasthttp.MethodGet, headers: h, segments: []string{"products"}},
		func(b []byte) ([]Product, []Problem, error) { return ParseOCTOProducts(b) })
}

func (c *Client) octoAvailability(ctx context.Context, conn Connection, in AvailabilityRequest) ([]Availability, []Problem, error) {
	if err := requireIDs("productId", in.ProductID, "optionId", in.OptionID); err != nil {
		return nil, nil, err
	}
	if err := checkWindow(in.LocalDateStart, in.LocalDateEnd); err != nil {
		return nil, nil, err
	}
	if in.AvailabilityType != StartTime && in.AvailabilityType != OpeningHours {
		return nil, nil, invalid("availabilityType", "must be START_TIME or OPENING_HOURS")
	}
	if err := checkTimeZone(in.TimeZone); err != nil {
		return nil, nil, err
	}
	body := octowire.AvailabilityBody{ProductID: in.ProductID, OptionID: in.OptionID,
		LocalDateStart: in.LocalDateStart, LocalDateEnd: octoInclusiveEnd(in.LocalDateEnd)}
	exp := AvailabilityExpect{AvailabilityType: in.AvailabilityType, OptionID: in.OptionID,
		LocalDateStart: in.LocalDateStart, LocalDateEnd: in.LocalDateEnd, TimeZone: in.TimeZone}
	return read(ctx, c, conn, call{op: "availability", method: fasthttp.MethodPost, body: body, segments: []string{"availability"}},
		func(b []byte) ([]Availability, []Problem, error) { return ParseOCTOAvailability(b, exp) })
}

func (c *Client) octoCheckAvailability(ctx context.Context, conn Connection, in AvailabilityCheck) ([]Availability, []Problem, error) {
	if err := requireIDs("productId", in.ProductID, "optionId", in.OptionID); err != nil {
		return nil, nil, err
	}
	if err := in.check(); err != nil {
		return nil, nil, err
	}
	if err := checkTimeZone(in.TimeZone); err != nil {
		return nil, nil, err
	}
	// OCTO knows days, not the opening ranges the client split them into.
	body := octowire.AvailabilityBody{ProductID: in.ProductID, OptionID: in.OptionID}
	for _, id := range in.AvailabilityIDs {
		if day := OCTOAvailabilityID(id); !slices.Contains(body.AvailabilityIDs, day) {
			body.AvailabilityIDs = append(body.AvailabilityIDs, day)
		}
	}
	for _, u := range in.Units {
		if u.UnitID == "" || u.Quantity < 1 {
			return nil, nil, invalid("units", "need a unitId and a quantity of at least 1")
		}
		body.Units = append(body.Units, octowire.AvailabilityUnit{ID: u.UnitID, Quantity: u.Quantity})
	}
	exp := AvailabilityExpect{AvailabilityType: in.AvailabilityType, OptionID: in.OptionID, AvailabilityIDs: in.AvailabilityIDs,
		TimeZone: in.TimeZone}
	return read(ctx, c, conn, call{op: "checkAvailability", method: fasthttp.MethodPost, body: body, segments: []string{"availability"}},
		func(b []byte) ([]Availability, []Problem, error) { return ParseOCTOAvailability(b, exp) })
}

func (c *Client) octoCreateBooking(ctx context.Context, conn Connection, in BookingRequest) (Booking, error) {
	if err := requireIDs("productId", in.ProductID, "optionId", in.OptionID, "availabilityId", in.AvailabilityID); err != nil {
		return Booking{}, err
	}
	if in.OrderID != "" {
		return Booking{}, unsupported("orders are not part of core OCTO")
	}
	if _, err := uuid.Parse(in.UUID); err != nil {
		return Booking{}, invalid("uuid", "must be a UUID")
	}
	if in.HoldExpirationMinutes < 1 {
		return Booking{}, invalid("holdExpirationMinutes", "must be at least 1")
	}
	if len(in.UnitItems) == 0 {
		return Booking{}, invalid("unitItems", "must not be empty")
	}
	// An opening range is booked as the OCTO day it was split from.
	items, minutes := octoUnitItems(in.UnitItems), in.HoldExpirationMinutes
	body := octowire.ReservationBody{UUID: in.UUID, ProductID: in.ProductID, OptionID: in.OptionID, AvailabilityID: OCTOAvailabilityID(in.AvailabilityID),
		UnitItems: &items, ExpirationMinutes: &minutes, Notes: in.Notes, ResellerReference: in.ResellerReference}
	return c.bookingCall(ctx, conn, call{op: "createBooking", method: fasthttp.MethodPost, body: body, segments: []string{"bookings"}},
		BookingExpect{UUID: in.UUID, Statuses: []string{OnHold, Rejected}}, ParseOCTOBooking)
}

// octoBooking is a call on one booking, /bookings/{uuid}[/action]; OCTO's
// 400 INVALID_BOOKING_UUID is ErrNotFound here.
func (c *Client) octoBooking(ctx context.Context, conn Connection, op, method string, body any, exp BookingExpect, bookingUUID string, action ...string) (Booking, error) {
	if err := requireIDs("uuid", bookingUUID); err != nil {
		return Booking{}, err
	}
	return c.bookingCall(ctx, conn, call{op: op, method: method, body: body, segments: append([]string{"bookings", bookingUUID}, action...),
		notFound: []string{octoInvalidBookingUUID}}, exp, ParseOCTOBooking)
}

// octoProduct is GET /products/{productId} (400 INVALID_PRODUCT_ID is
// ErrNotFound); a product that breaks a rule is its Problems.
func (c *Client) octoProduct(ctx context.Context, conn Connection, productID string, capabilities []string) (Product, []Problem, error) {
	if err := requireIDs("productId", productID); err != nil {
		return Product{}, nil, err
	}
	var h map[string]string
	if len(capabilities) > 0 {
		h = map[string]string{"Octo-Capabilities": strings.Join(capabilities, ",")}
	}
	return read(ctx, c, conn, call{op: "product", method: fasthttp.MethodGet, segments: []string{"products", productID},
		headers: h, notFound: []string{octoInvalidProductID}},
		func(b []byte) (Product, []Problem, error) { return ParseOCTOProduct(b) })
}

// octoPriceSchedule derives the price schedule of a product from OCTO's
// availability pricing: GET /products/{productId} (its options and
// availability type; 400 INVALID_PRODUCT_ID is ErrNotFound, a product that
// breaks a rule fails the call as KindInvalid), then per option POST
// /availability over the window with Octo-Capabilities: octo/pricing,
// read by ParseOCTOPricing. Any failed call fails the whole read.
func (c *Client) octoPriceSchedule(ctx context.Context, conn Connection, in PriceScheduleRequest) ([]PriceEntry, []Problem, error) {
	if err := requireIDs("productId", in.ProductID); err != nil {
		return nil, nil, err
	}
	if err := checkWindow(in.LocalDateStart, in.LocalDateEnd); err != nil {
		return nil, nil, err
	}
	prod, ps, err := c.octoProduct(ctx, conn, in.ProductID, []string{octoPricing})
	if err != nil {
		return nil, nil, err
	}
	if ps != nil {
		return nil, nil, invalidAnswer(ps)
	}
	var out []PriceEntry
	var problems []Problem
	for _, o := range prod.Options {
		exp := AvailabilityExpect{AvailabilityType: prod.AvailabilityType, OptionID: o.ID,
			LocalDateStart: in.LocalDateStart, LocalDateEnd: in.LocalDateEnd, TimeZone: prod.TimeZone}
		body := octowire.AvailabilityBody{ProductID: prod.ID, OptionID: o.ID,
			LocalDateStart: in.LocalDateStart, LocalDateEnd: octoInclusiveEnd(in.LocalDateEnd)}
		var es []PriceEntry
		var ps []Problem
		err := c.send(ctx, conn, call{op: "priceSchedule", method: fasthttp.MethodPost, body: body, segments: []string{"availability"},
			headers: map[string]string{"Octo-Capabilities": octoPricing},
			parse: func(b []byte) (err error) {
				es, ps, err = ParseOCTOPricing(b, exp)
				return err
			}})
		c.metrics.reject(ps)
		if err != nil {
			return nil, nil, fmt.Errorf("option %s: %w", o.ID, err)
		}
		out, problems = append(out, es...), append(problems, ps...)
	}
	return out, problems, nil
}

// Answer shapes of OCTO as this client reads them: the fields it reads
// (others are ignored, as capabilities add fields), times as time.Time
// (strict RFC 3339, checked by the decoder) and pointers where an absent
// field differs from its zero value. internal/octowire holds the shapes
// as OCTO writes them (times as strings); its leaves are used here.
type (
	octoAvailability struct {
		ID                 string                  `json:"id"`
		LocalDateTimeStart time.Time               `json:"localDateTimeStart"`
		LocalDateTimeEnd   time.Time               `json:"localDateTimeEnd"`
		AllDay             bool                    `json:"allDay"`
		Available          *bool                   `json:"available"`
		Status             string                  `json:"status"`
		Vacancies          *int                    `json:"vacancies"`
		Capacity           *int                    `json:"capacity"`
		MaxUnits           *int                    `json:"maxUnits"`
		OpeningHours       []octowire.OpeningHours `json:"openingHours"`
		UnitPricing        []UnitPrice             `json:"unitPricing"`
	}
	octoBookingAvailability struct {
		ID                 string    `json:"id"`
		LocalDateTimeStart time.Time `json:"localDateTimeStart"`
		LocalDateTimeEnd   time.Time `json:"localDateTimeEnd"`
		AllDay             bool      `json:"allDay"`
	}
	octoCancellation struct {
		Refund         *string    `json:"refund"`
		Reason         *string    `json:"reason"`
		UTCCancelledAt *time.Time `json:"utcCancelledAt"`
	}
	octoBooking struct {
		UUID              string                   `json:"uuid"`
		ResellerReference *string                  `json:"resellerReference"`
		SupplierReference *string                  `json:"supplierReference"`
		Status            string                   `json:"status"`
		Cancellable       bool                     `json:"cancellable"`
		UTCExpiresAt      *time.Time               `json:"utcExpiresAt"`
		UTCConfirmedAt    *time.Time               `json:"utcConfirmedAt"`
		ProductID         string                   `json:"productId"`
		OptionID          string                   `json:"optionId"`
		AvailabilityID    *string                  `json:"availabilityId"`
		Availability      *octoBookingAvailability `json:"availability"`
		DeliveryMethods   []string                 `json:"deliveryMethods"`
		UnitItems         []UnitItem               `json:"unitItems"`
		Cancellation      *octoCancellation        `json:"cancellation"`
		Contact           *Contact                 `json:"contact"`
		Voucher           *Ticket                  `json:"voucher"`
	}
)

// OCTODeliveryFormat is an OCTO delivery format in the catalog's
// spelling: QRCODE is doc 3's QR_CODE (one format, two spellings);
// CODE128 is the same in both; PDF_URL, PKPASS_URL and AZTECCODE, which
// doc 3 lacks, are kept (the catalog accepts them). Anything else is
// returned as is (the catalog refuses it).
func OCTODeliveryFormat(f string) string {
	if f == "QRCODE" {
		return "QR_CODE"
	}
	return f
}

// octoTicket is t with its delivery formats in the catalog's spelling.
func octoTicket(t *Ticket) *Ticket {
	if t == nil {
		return nil
	}
	out := *t
	out.DeliveryOptions = slices.Clone(t.DeliveryOptions)
	for i := range out.DeliveryOptions {
		out.DeliveryOptions[i].DeliveryFormat = OCTODeliveryFormat(out.DeliveryOptions[i].DeliveryFormat)
	}
	return &out
}

// octoRedeemed is OCTO's status of a used booking; doc 3 has none.
const octoRedeemed = "REDEEMED"

// booking maps an OCTO booking onto doc 3's: utcExpiresAt is the hold
// expiration, REDEEMED is CONFIRMED (a confirmed booking that was used),
// CANCELLED without utcConfirmedAt is EXPIRED (OCTO cancels a released
// hold; doc 3 moves ON_HOLD by cancellation to EXPIRED, and CANCELLED
// only from CONFIRMED),
// the first of deliveryMethods is the delivery method, the availability
// object (else availabilityId) the booking availability, the cancellation
// a resolved cancellation request. OCTO has no channel: channelName and
// channelId stay empty.
func (o octoBooking) booking() Booking {
	b := Booking{UUID: o.UUID, ResellerReference: o.ResellerReference, SupplierReference: o.SupplierReference,
		Status: o.Status, Cancellable: o.Cancellable, UTCHoldExpiration: o.UTCExpiresAt, ProductID: o.ProductID,
		OptionID: o.OptionID, UnitItems: o.UnitItems, Contact: o.Contact, Voucher: octoTicket(o.Voucher)}
	for i := range b.UnitItems {
		b.UnitItems[i].Ticket = octoTicket(b.UnitItems[i].Ticket)
	}
	switch {
	case b.Status == octoRedeemed:
		b.Status = Confirmed
	case b.Status == Cancelled && o.UTCConfirmedAt == nil:
		b.Status = Expired
	}
	if len(o.DeliveryMethods) > 0 {
		dm := o.DeliveryMethods[0]
		b.DeliveryMethod = &dm
	}
	switch {
	case o.Availability != nil:
		a := o.Availability
		b.Availability = &BookingAvailability{ID: a.ID, LocalDateTimeStart: a.LocalDateTimeStart, LocalDateTimeEnd: a.LocalDateTimeEnd, AllDay: a.AllDay}
		if a.ID == "" && o.AvailabilityID != nil {
			b.Availability.ID = *o.AvailabilityID
		}
	case o.AvailabilityID != nil:
		b.Availability = &BookingAvailability{ID: *o.AvailabilityID}
	}
	if x := o.Cancellation; x != nil {
		cr := &CancellationRequest{Status: Confirmed, Refund: x.Refund, UTCRequestedAt: x.UTCCancelledAt, UTCResolvedAt: x.UTCCancelledAt}
		if x.Reason != nil {
			cr.Reason = *x.Reason
		}
		b.CancellationRequest = cr
	}
	return b
}

// ParseOCTOBooking reads an OCTO booking answer (reservation, get,
// confirm, cancel) and checks it by doc 3's booking rules.
func ParseOCTOBooking(body []byte, exp BookingExpect) (Booking, []Problem, error) {
	var o octoBooking
	if err := decodeStrict(body, &o); err != nil {
		return Booking{}, nil, err
	}
	exp.octo = true
	b := o.booking()
	var ps []Problem
	for _, r := range checkBooking(&b, exp) {
		ps = append(ps, Problem{Item: "booking", ID: shortID(b.UUID), Rule: r})
	}
	if ps != nil {
		return Booking{}, ps, nil
	}
	return b, nil, nil
}

// oneObject reads a body that must be one JSON object and returns it as a
// one-element array, so that the list parsers (and their rules) read it.
func oneObject(body []byte) ([]byte, error) {
	var raw json.RawMessage
	if err := decodeStrict(body, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: not an object", ErrMalformed)
	}
	return append(append([]byte{'['}, raw...), ']'), nil
}

// ParseOCTOSupplier reads OCTO's GET /supplier: one supplier object,
// returned as a list of one (or none and its Problems, by the supplier
// rules of ParseSuppliers).
func ParseOCTOSupplier(body []byte) ([]Supplier, []Problem, error) {
	arr, err := oneObject(body)
	if err != nil {
		return nil, nil, err
	}
	return ParseSuppliers(arr)
}

// ParseOCTOProducts reads OCTO's GET /products: the product rules, for
// OCTO's shape (parseProducts: an optional timeZone, delivery formats in
// the catalog's spelling).
func ParseOCTOProducts(body []byte) ([]Product, []Problem, error) {
	return parseProducts(body, true)
}

// ParseOCTOProduct reads OCTO's GET /products/{id}: one product, checked by
// the product rules; a rejected product comes back as its Problems.
func ParseOCTOProduct(body []byte) (Product, []Problem, error) {
	arr, err := oneObject(body)
	if err != nil {
		return Product{}, nil, err
	}
	out, ps, err := parseProducts(arr, true)
	if err != nil || len(out) != 1 {
		return Product{}, ps, err
	}
	return out[0], nil, nil
}

// ParseOCTOAvailability reads OCTO availability objects (POST
// /availability) into Availability: OCTO's objects carry no optionId, so
// each is the option asked for (exp.OptionID, required); capacity,
// maxUnits, allDay and unitPricing are kept. For an OPENING_HOURS product,
// an object with openingHours (OCTO sends a day with its ranges) is one
// availability per range (doc 3 rule 2: one per contiguous range of a
// day), on the object's local date in the product's time zone
// (exp.TimeZone, else its own offset), with the object's status, prices
// and capacity; with two ranges or more each gets its own id, the day's
// and the range (ids.go, OCTOAvailabilityID maps it back). An object whose
// ranges touch or overlap, or one of whose ranges is not "HH:MM", is
// rejected whole (contiguous_range, time_range). Ids are escaped as ids.go
// says. For a unit check (exp.AvailabilityIDs), the other ranges of a day
// asked for are left out. The availability rules of doc 3 apply as to a
// v2 answer.
func ParseOCTOAvailability(body []byte, exp AvailabilityExpect) ([]Availability, []Problem, error) {
	if exp.AvailabilityType != StartTime && exp.AvailabilityType != OpeningHours {
		return nil, nil, fmt.Errorf("%w: availabilityType %q", ErrInvalid, exp.AvailabilityType)
	}
	if exp.OptionID == "" {
		return nil, nil, fmt.Errorf("%w: an OCTO availability read needs the optionId", ErrInvalid)
	}
	exp.octo = true
	loc, err := exp.location()
	if err != nil {
		return nil, nil, err
	}
	raw, idx, ps, err := decodeItems[octoAvailability](body, "availability")
	if err != nil {
		return nil, nil, err
	}
	items := make([]Availability, 0, len(raw))
	pos := make([]int, 0, len(raw)) // the answer's index of each item: a day's ranges share it
	for k, a := range raw {
		av := Availability{ID: octoID(a.ID), OptionID: exp.OptionID, LocalDateTimeStart: a.LocalDateTimeStart,
			LocalDateTimeEnd: a.LocalDateTimeEnd, Status: a.Status, Vacancies: a.Vacancies, Available: a.Available,
			Capacity: a.Capacity, MaxUnits: a.MaxUnits, AllDay: a.AllDay, UnitPricing: a.UnitPricing}
		if exp.AvailabilityType != OpeningHours || len(a.OpeningHours) == 0 {
			items, pos = append(items, av), append(pos, idx[k])
			continue
		}
		for _, r := range openingRanges(av, a.ID, a.OpeningHours, loc) {
			items, pos = append(items, r), append(pos, idx[k])
		}
	}
	if exp.AvailabilityIDs != nil {
		items, pos = onlyAsked(items, pos, exp.AvailabilityIDs)
	}
	out, ps := checkAvailabilities(items, pos, ps, exp, loc)
	return out, ps, nil
}

// openingRanges is the OCTO availability av (id: OCTO's own) as one
// availability per opening range: from–to on av's local date (in loc, else
// av's own offset), ending the next day when to is not after from (24:00,
// or open past midnight). OCTO does not forbid ranges that touch or
// overlap (doc 3 rule 2 does, for v2): they are merged into one
// contiguous range. A range that is not "HH:MM" has no times
// (RuleTimeRange, which rejects the whole day). One range keeps av's id;
// two or more get octoRangeID.
func openingRanges(av Availability, id string, hours []octowire.OpeningHours, loc *time.Location) []Availability {
	if loc == nil {
		loc = av.LocalDateTimeStart.Location()
	}
	day := av.LocalDateTimeStart.In(loc)
	at := func(minutes int) time.Time {
		return time.Date(day.Year(), day.Month(), day.Day(), 0, minutes, 0, 0, loc) // wall clock, so DST days stay right
	}
	type span struct {
		from, to int
		name     string
	}
	spans := make([]span, 0, len(hours))
	for _, h := range hours {
		from, ok1 := hhmm(h.From)
		to, ok2 := hhmm(h.To)
		if !ok1 || !ok2 || av.LocalDateTimeStart.IsZero() {
			// The day is rejected whole (time_range): one item without times.
			r := av
			r.AllDay = false
			r.LocalDateTimeStart, r.LocalDateTimeEnd = time.Time{}, time.Time{}
			return []Availability{r}
		}
		if to <= from {
			to += 24 * 60
		}
		spans = append(spans, span{from, to, h.From + "-" + h.To})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	merged := spans[:0:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp.from <= merged[n-1].to {
			if sp.to > merged[n-1].to {
				merged[n-1].to = sp.to
			}
			merged[n-1].name = minutes(merged[n-1].from) + "-" + minutes(merged[n-1].to)
			continue
		}
		merged = append(merged, sp)
	}
	out := make([]Availability, 0, len(merged))
	for _, sp := range merged {
		r := av
		r.AllDay = false
		r.LocalDateTimeStart, r.LocalDateTimeEnd = at(sp.from), at(sp.to)
		if len(merged) > 1 {
			from, to, _ := strings.Cut(sp.name, "-")
			r.ID = octoRangeID(id, from, to)
		}
		out = append(out, r)
	}
	return out
}

// minutes formats minutes after midnight as "HH:MM" (past 24:00 for a
// range open past midnight).
func minutes(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// hhmm reads a local "HH:MM" (00:00 to 24:00) as minutes after midnight.
func hhmm(v string) (int, bool) {
	if len(v) != 5 || v[2] != ':' {
		return 0, false
	}
	h, err1 := strconv.Atoi(v[:2])
	m, err2 := strconv.Atoi(v[3:])
	if err1 != nil || err2 != nil || h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, false
	}
	return h*60 + m, true
}

// onlyAsked leaves out the ranges a unit check did not ask for of the days
// it did ask for (OCTO answers a day whole); what belongs to no day asked
// for stays, for the not_requested rule.
func onlyAsked(items []Availability, pos []int, asked []string) ([]Availability, []int) {
	days := make(map[string]bool, len(asked))
	for _, id := range asked {
		days[OCTOAvailabilityID(id)] = true
	}
	outItems, outPos := items[:0:0], pos[:0:0]
	for k, a := range items {
		if slices.Contains(asked, a.ID) || !days[OCTOAvailabilityID(a.ID)] {
			outItems, outPos = append(outItems, a), append(outPos, pos[k])
		}
	}
	return outItems, outPos
}

// ParseOCTOPricing reads an OCTO availability answer read with
// octo/pricing into price-schedule entries of exp.OptionID: the prices of
// a local date are those of its availabilities (which must agree: a date
// whose availabilities differ is a RulePrice problem and left out), and
// consecutive dates with the same prices make one entry [first, last+1).
// Availabilities without prices give no date; those that break a rule are
// reported and left out, as in ParseOCTOAvailability. Every problem names
// the option (ID exp.OptionID, as a v2 price entry's problem does: callers
// keep that option's stored schedule), with the availability id or the
// date in its Detail.
func ParseOCTOPricing(body []byte, exp AvailabilityExpect) ([]PriceEntry, []Problem, error) {
	avs, ps, err := ParseOCTOAvailability(body, exp)
	if err != nil {
		return nil, nil, err
	}
	loc, _ := exp.location() // checked by ParseOCTOAvailability
	for i := range ps {
		if ps[i].ID != "" {
			ps[i].Detail = "availability " + ps[i].ID
		}
		ps[i].ID = shortID(exp.OptionID)
	}
	type day struct {
		prices   []UnitPrice
		conflict bool
	}
	days := map[string]*day{}
	var dates []string
	for _, a := range avs {
		if len(a.UnitPricing) == 0 {
			continue
		}
		d := localDate(a.LocalDateTimeStart, loc)
		p := sortedPrices(a.UnitPricing)
		switch x, ok := days[d]; {
		case !ok:
			days[d] = &day{prices: p}
			dates = append(dates, d)
		case !samePrices(x.prices, p):
			x.conflict = true
		}
	}
	slices.Sort(dates)
	var out []PriceEntry
	for i := 0; i < len(dates); {
		d := days[dates[i]]
		if d.conflict {
			ps = append(ps, Problem{Item: "priceEntry", Index: len(out), ID: shortID(exp.OptionID), Rule: RulePrice, Detail: "date " + dates[i]})
			i++
			continue
		}
		end, j := nextDate(dates[i]), i+1
		for j < len(dates) && dates[j] == end && !days[dates[j]].conflict && samePrices(days[dates[j]].prices, d.prices) {
			end, j = nextDate(dates[j]), j+1
		}
		e := PriceEntry{OptionID: exp.OptionID, LocalDateStart: dates[i], LocalDateEnd: end, UnitPricing: d.prices}
		if rules := priceEntryRules(&e); len(rules) > 0 {
			for _, r := range rules {
				ps = append(ps, Problem{Item: "priceEntry", Index: len(out), ID: shortID(e.OptionID), Rule: r, Detail: "date " + e.LocalDateStart})
			}
		} else {
			out = append(out, e)
		}
		i = j
	}
	return out, ps, nil
}

func nextDate(d string) string {
	t, _ := time.Parse(time.DateOnly, d) // d was formatted by us
	return t.AddDate(0, 0, 1).Format(time.DateOnly)
}

func sortedPrices(us []UnitPrice) []UnitPrice {
	out := slices.Clone(us)
	slices.SortFunc(out, func(a, b UnitPrice) int {
		return cmp.Or(strings.Compare(a.UnitID, b.UnitID), strings.Compare(a.Currency, b.Currency))
	})
	return out
}

func samePrices(a, b []UnitPrice) bool {
	return slices.EqualFunc(a, b, func(x, y UnitPrice) bool {
		return x.UnitID == y.UnitID && x.Currency == y.Currency && x.CurrencyPrecision == y.CurrencyPrecision &&
			x.Retail == y.Retail && (x.Net == nil) == (y.Net == nil) && (x.Net == nil || *x.Net == *y.Net)
	})
}

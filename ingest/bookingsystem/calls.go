package bookingsystem

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/internal/octowire"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// The endpoints of spec doc 3, "Booking system", and the "not shown" ones
// filled the OCTO way (docs/decisions.md, "Booking-system v2 client"). Every path is
// relative to the connection's endpoint. List reads return the valid items
// and the Problems of the rejected ones; single-object answers that break
// a rule fail with a *CallError of KindInvalid carrying the Problems.

// Suppliers is GET /suppliers (conn.Endpoint is the platform's address).
// OCTO: GET /supplier, the one supplier of the endpoint, as a list of one.
func (c *Client) Suppliers(ctx context.Context, conn Connection) ([]Supplier, []Problem, error) {
	if conn.octo() {
		return c.octoSupplier(ctx, conn)
	}
	return read(ctx, c, conn, call{op: "suppliers", method: fasthttp.MethodGet, segments: []string{"suppliers"}},
		func(b []byte) ([]Supplier, []Problem, error) { return ParseSuppliers(b) })
}

// Products is GET /suppliers/{supplierId}/products with X-Capabilities
// (comma-delimited, only when capabilities are asked for). OCTO: GET
// /products with Octo-Capabilities; supplierID is not sent.
func (c *Client) Products(ctx context.Context, conn Connection, supplierID string, capabilities []string) ([]Product, []Problem, error) {
	if conn.octo() {
		return c.octoProducts(ctx, conn, capabilities)
	}
	if err := requireIDs("supplierId", supplierID); err != nil {
		return nil, nil, err
	}
	var h map[string]string
	if len(capabilities) > 0 {
		h = map[string]string{"X-Capabilities": strings.Join(capabilities, ",")}
	}
	return read(ctx, c, conn, call{op: "products", method: fasthttp.MethodGet, headers: h,
		segments: []string{"suppliers", supplierID, "products"}},
		func(b []byte) ([]Product, []Problem, error) { return ParseProducts(b) })
}

// Product is one product of the supplier, as Products reads them (the
// same rules; a product that breaks one comes back as its Problems and no
// product). OCTO: GET /products/{productId} (400 INVALID_PRODUCT_ID is
// ErrNotFound). Doc 3 has no read of one product: for a v2 connection it
// is ErrUnsupported and nothing is sent (read Products).
func (c *Client) Product(ctx context.Context, conn Connection, supplierID, productID string, capabilities []string) (Product, []Problem, error) {
	if !conn.octo() {
		return Product{}, nil, unsupported("doc 3 reads a supplier's products as one list")
	}
	return c.octoProduct(ctx, conn, productID, capabilities)
}

// AvailabilityRequest is GET /suppliers/{supplierId}/availability.
type AvailabilityRequest struct {
	SupplierID, ProductID, OptionID string
	// LocalDateStart (inclusive) and LocalDateEnd (exclusive) are local
	// dates YYYY-MM-DD (the RFC 3339 full-date form).
	LocalDateStart, LocalDateEnd string
	// AvailabilityType of the product, for the status rules (required).
	AvailabilityType string
	// TimeZone of the product (tz name): an availability belongs to its
	// start's local date there, whatever offset the booking system sent
	// (doc 3: "any UTC offset calculation MUST use its offset"). Empty:
	// the offset sent.
	TimeZone string
}

// Availability is GET /suppliers/{supplierId}/availability. OCTO: POST
// /availability by dates (octoAvailability).
func (c *Client) Availability(ctx context.Context, conn Connection, in AvailabilityRequest) ([]Availability, []Problem, error) {
	if conn.octo() {
		return c.octoAvailability(ctx, conn, in)
	}
	if err := requireIDs("supplierId", in.SupplierID, "productId", in.ProductID, "optionId", in.OptionID); err != nil {
		return nil, nil, err
	}
	s, err1 := time.Parse(time.DateOnly, in.LocalDateStart)
	e, err2 := time.Parse(time.DateOnly, in.LocalDateEnd)
	if err1 != nil || err2 != nil || !s.Before(e) {
		return nil, nil, invalid("localDateStart", "and localDateEnd must be YYYY-MM-DD, start before end")
	}
	if in.AvailabilityType != StartTime && in.AvailabilityType != OpeningHours {
		return nil, nil, invalid("availabilityType", "must be START_TIME or OPENING_HOURS")
	}
	if err := checkTimeZone(in.TimeZone); err != nil {
		return nil, nil, err
	}
	q := url.Values{}
	q.Set("productId", in.ProductID)
	q.Set("optionId", in.OptionID)
	q.Set("localDateStart", in.LocalDateStart)
	q.Set("localDateEnd", in.LocalDateEnd)
	exp := AvailabilityExpect{AvailabilityType: in.AvailabilityType, OptionID: in.OptionID,
		LocalDateStart: in.LocalDateStart, LocalDateEnd: in.LocalDateEnd, TimeZone: in.TimeZone}
	return read(ctx, c, conn, call{op: "availability", method: fasthttp.MethodGet, query: q,
		segments: []string{"suppliers", in.SupplierID, "availability"}},
		func(b []byte) ([]Availability, []Problem, error) { return ParseAvailability(b, exp) })
}

// AvailabilityCheck is the body of POST /suppliers/{supplierId}/availability
// (doc 3, rule 3: is this unit configuration acceptable).
type AvailabilityCheck struct {
	SupplierID       string         `json:"-"`
	AvailabilityType string         `json:"-"` // of the product, for the status rules
	TimeZone         string         `json:"-"` // of the product, as AvailabilityRequest's
	ProductID        string         `json:"productId"`
	OptionID         string         `json:"optionId"`
	AvailabilityIDs  []string       `json:"availabilityIds"`
	Units            []UnitQuantity `json:"units"`
}

// CheckAvailability is POST /suppliers/{supplierId}/availability. OCTO:
// POST /availability by availabilityIds with the units.
func (c *Client) CheckAvailability(ctx context.Context, conn Connection, in AvailabilityCheck) ([]Availability, []Problem, error) {
	if conn.octo() {
		return c.octoCheckAvailability(ctx, conn, in)
	}
	if err := requireIDs("supplierId", in.SupplierID, "productId", in.ProductID, "optionId", in.OptionID); err != nil {
		return nil, nil, err
	}
	if err := in.check(); err != nil {
		return nil, nil, err
	}
	for _, u := range in.Units {
		if u.UnitID == "" || u.Quantity < 1 {
			return nil, nil, invalid("units", "need a unitId and a quantity of at least 1")
		}
	}
	if err := checkTimeZone(in.TimeZone); err != nil {
		return nil, nil, err
	}
	exp := AvailabilityExpect{AvailabilityType: in.AvailabilityType, OptionID: in.OptionID, AvailabilityIDs: in.AvailabilityIDs,
		TimeZone: in.TimeZone}
	return read(ctx, c, conn, call{op: "checkAvailability", method: fasthttp.MethodPost, body: in,
		segments: []string{"suppliers", in.SupplierID, "availability"}},
		func(b []byte) ([]Availability, []Problem, error) { return ParseAvailability(b, exp) })
}

// check is what both dialects require of a check: its availability
// type, the availabilities and the units asked for.
func (in AvailabilityCheck) check() error {
	if in.AvailabilityType != StartTime && in.AvailabilityType != OpeningHours {
		return invalid("availabilityType", "must be START_TIME or OPENING_HOURS")
	}
	if len(in.AvailabilityIDs) == 0 {
		return invalid("availabilityIds", "must list the availabilities of interest")
	}
	if len(in.Units) == 0 {
		return invalid("units", "must list the units to reserve")
	}
	return nil
}

// BookingRequest is the body of POST /suppliers/{supplierId}/bookings.
type BookingRequest struct {
	SupplierID            string     `json:"-"`
	UUID                  string     `json:"uuid"`
	ResellerReference     string     `json:"resellerReference,omitempty"`
	ChannelName           string     `json:"channelName"`
	ChannelID             string     `json:"channelId"`
	ProductID             string     `json:"productId"`
	OptionID              string     `json:"optionId"`
	AvailabilityID        string     `json:"availabilityId"`
	UnitItems             []UnitItem `json:"unitItems"`
	HoldExpirationMinutes int        `json:"holdExpirationMinutes"`
	OrderID               string     `json:"orderId,omitempty"`
	// Notes are OCTO's booking notes (DialectOCTO only; doc 3 has no
	// such field, so a v2 body never carries them).
	Notes string `json:"-"`
}

// CreateBooking is POST /suppliers/{supplierId}/bookings: a hold
// (ON_HOLD), or REJECTED. Idempotent by uuid (doc 3, rule 4): a retry with
// the same data answers the same booking; with other data the booking
// system answers 400, which is ErrRejected. OCTO: POST /bookings (OCTO's
// reservation); an OrderID is ErrUnsupported.
func (c *Client) CreateBooking(ctx context.Context, conn Connection, in BookingRequest) (Booking, error) {
	if conn.octo() {
		return c.octoCreateBooking(ctx, conn, in)
	}
	if err := requireIDs("supplierId", in.SupplierID, "productId", in.ProductID, "optionId", in.OptionID,
		"availabilityId", in.AvailabilityID); err != nil {
		return Booking{}, err
	}
	if _, err := uuid.Parse(in.UUID); err != nil {
		return Booking{}, invalid("uuid", "must be a UUID")
	}
	if _, err := uuid.Parse(in.ChannelID); err != nil {
		return Booking{}, invalid("channelId", "must be a UUID")
	}
	if in.HoldExpirationMinutes < 1 {
		return Booking{}, invalid("holdExpirationMinutes", "must be at least 1")
	}
	if len(in.UnitItems) == 0 {
		return Booking{}, invalid("unitItems", "must not be empty")
	}
	if in.OrderID != "" && checkID(in.OrderID) != "" {
		return Booking{}, invalid("orderId", "must be at most 1024 characters")
	}
	return c.booking(ctx, conn, "createBooking", fasthttp.MethodPost, in,
		BookingExpect{UUID: in.UUID, Statuses: []string{OnHold, Rejected}}, in.SupplierID, "bookings")
}

// GetBooking is GET /suppliers/{supplierId}/bookings/{uuid} (not shown in
// doc 3; OCTO's GET /bookings/{uuid} under the supplier path). OCTO: GET
// /bookings/{uuid}.
func (c *Client) GetBooking(ctx context.Context, conn Connection, supplierID, bookingUUID string) (Booking, error) {
	if conn.octo() {
		return c.octoBooking(ctx, conn, "getBooking", fasthttp.MethodGet, nil, BookingExpect{UUID: bookingUUID}, bookingUUID)
	}
	if err := requireIDs("supplierId", supplierID, "uuid", bookingUUID); err != nil {
		return Booking{}, err
	}
	return c.booking(ctx, conn, "getBooking", fasthttp.MethodGet, nil,
		BookingExpect{UUID: bookingUUID}, supplierID, "bookings", bookingUUID)
}

// ConfirmRequest is the body of confirm booking (OCTO's shape).
type ConfirmRequest struct {
	ResellerReference string     `json:"resellerReference,omitempty"`
	Contact           *Contact   `json:"contact,omitempty"`
	UnitItems         []UnitItem `json:"unitItems,omitempty"`
}

// ConfirmBooking is POST /suppliers/{supplierId}/bookings/{uuid}/confirm
// (not shown): ON_HOLD → CONFIRMED, or PENDING when the product has
// instantConfirmation false. OCTO: POST /bookings/{uuid}/confirm.
func (c *Client) ConfirmBooking(ctx context.Context, conn Connection, supplierID, bookingUUID string, in ConfirmRequest) (Booking, error) {
	if conn.octo() {
		return c.octoBooking(ctx, conn, "confirmBooking", fasthttp.MethodPost, octoConfirm(in),
			BookingExpect{UUID: bookingUUID, Statuses: []string{Confirmed, Pending}}, bookingUUID, "confirm")
	}
	if err := requireIDs("supplierId", supplierID, "uuid", bookingUUID); err != nil {
		return Booking{}, err
	}
	return c.booking(ctx, conn, "confirmBooking", fasthttp.MethodPost, in,
		BookingExpect{UUID: bookingUUID, Statuses: []string{Confirmed, Pending}}, supplierID, "bookings", bookingUUID, "confirm")
}

// Cancellation reasons (OCTO; doc 3 lists the same for orders).
var cancelReasons = []string{"CUSTOMER", "SUPPLIER", "FRAUD", "OTHER"}

// CancelRequest is the body of cancel booking and cancel order.
type CancelRequest struct {
	Reason        string `json:"reason"`
	ReasonDetails string `json:"reasonDetails,omitempty"`
}

// CancelBooking is DELETE /suppliers/{supplierId}/bookings/{uuid} (not
// shown): CONFIRMED → CANCELLED (cancellation and its confirmation in one
// call), ON_HOLD → EXPIRED (released before confirmation). OCTO: POST
// /bookings/{uuid}/cancel (OCTO's cancellation; CANCELLED or EXPIRED too).
func (c *Client) CancelBooking(ctx context.Context, conn Connection, supplierID, bookingUUID string, in CancelRequest) (Booking, error) {
	if conn.octo() {
		if err := requireIDs("uuid", bookingUUID); err != nil {
			return Booking{}, err
		}
		if !slices.Contains(cancelReasons, in.Reason) {
			return Booking{}, invalid("reason", "must be CUSTOMER, SUPPLIER, FRAUD or OTHER")
		}
		return c.octoBooking(ctx, conn, "cancelBooking", fasthttp.MethodPost, octoCancel(in),
			BookingExpect{UUID: bookingUUID, Statuses: []string{Cancelled, Expired}}, bookingUUID, "cancel")
	}
	if err := requireIDs("supplierId", supplierID, "uuid", bookingUUID); err != nil {
		return Booking{}, err
	}
	if !slices.Contains(cancelReasons, in.Reason) {
		return Booking{}, invalid("reason", "must be CUSTOMER, SUPPLIER, FRAUD or OTHER")
	}
	return c.booking(ctx, conn, "cancelBooking", fasthttp.MethodDelete, in,
		BookingExpect{UUID: bookingUUID, Statuses: []string{Cancelled, Expired}}, supplierID, "bookings", bookingUUID)
}

func (c *Client) booking(ctx context.Context, conn Connection, op, method string, body any, exp BookingExpect, segments ...string) (Booking, error) {
	return c.bookingCall(ctx, conn, call{op: op, method: method, body: body, segments: append([]string{"suppliers"}, segments...)},
		exp, ParseBooking)
}

// bookingCall sends in and reads its answer, one booking, with parse (the
// dialect's): a booking that breaks a rule fails the call (KindInvalid).
func (c *Client) bookingCall(ctx context.Context, conn Connection, in call, exp BookingExpect,
	parse func([]byte, BookingExpect) (Booking, []Problem, error)) (Booking, error) {
	var out Booking
	in.parse = func(b []byte) error {
		bk, ps, err := parse(b, exp)
		if err != nil {
			return err
		}
		if ps != nil {
			c.metrics.reject(ps)
			return invalidAnswer(ps)
		}
		out = bk
		return nil
	}
	err := c.send(ctx, conn, in)
	return out, err
}

// GetOrder is GET /suppliers/{supplierId}/orders/{orderId}. Core OCTO has
// no orders: every order call of an OCTO connection is ErrUnsupported.
func (c *Client) GetOrder(ctx context.Context, conn Connection, supplierID, orderID string) (Order, error) {
	if conn.octo() {
		return Order{}, unsupported("orders are not part of core OCTO")
	}
	if err := requireIDs("supplierId", supplierID, "orderId", orderID); err != nil {
		return Order{}, err
	}
	return c.order(ctx, conn, "getOrder", fasthttp.MethodGet, nil, OrderExpect{ID: orderID}, supplierID, orderID)
}

// ConfirmOrder is POST /suppliers/{supplierId}/orders/{orderId}/confirm
// (not shown): all bookings confirmed, or none (doc 3, Order).
func (c *Client) ConfirmOrder(ctx context.Context, conn Connection, supplierID, orderID string, in ConfirmRequest) (Order, error) {
	if conn.octo() {
		return Order{}, unsupported("orders are not part of core OCTO")
	}
	if err := requireIDs("supplierId", supplierID, "orderId", orderID); err != nil {
		return Order{}, err
	}
	return c.order(ctx, conn, "confirmOrder", fasthttp.MethodPost, in,
		OrderExpect{ID: orderID, Statuses: []string{Confirmed}}, supplierID, orderID, "confirm")
}

// CancelOrder is DELETE /suppliers/{supplierId}/orders/{orderId}: ON_HOLD
// → EXPIRED, CONFIRMED → CANCELLED (doc 3, rule 6).
func (c *Client) CancelOrder(ctx context.Context, conn Connection, supplierID, orderID string, in CancelRequest) (Order, error) {
	if conn.octo() {
		return Order{}, unsupported("orders are not part of core OCTO")
	}
	if err := requireIDs("supplierId", supplierID, "orderId", orderID); err != nil {
		return Order{}, err
	}
	if !slices.Contains(cancelReasons, in.Reason) {
		return Order{}, invalid("reason", "must be CUSTOMER, SUPPLIER, FRAUD or OTHER")
	}
	return c.order(ctx, conn, "cancelOrder", fasthttp.MethodDelete, in,
		OrderExpect{ID: orderID, Statuses: []string{Cancelled, Expired}}, supplierID, orderID)
}

// ExtendRequest is the body of POST .../orders/{orderId}/extend.
type ExtendRequest struct {
	Reason                string `json:"reason"`
	ReasonDetails         string `json:"reasonDetails,omitempty"`
	HoldExpirationMinutes int    `json:"holdExpirationMinutes"`
}

var extendReasons = []string{"FRAUD_CHECK", "CUSTOMER_REQUESTED", "OTHER"}

// ExtendOrder is POST /suppliers/{supplierId}/orders/{orderId}/extend
// (doc 3, rule 7): the exact new expiry is in the answer's utcExpiresAt.
func (c *Client) ExtendOrder(ctx context.Context, conn Connection, supplierID, orderID string, in ExtendRequest) (Order, error) {
	if conn.octo() {
		return Order{}, unsupported("orders are not part of core OCTO")
	}
	if err := requireIDs("supplierId", supplierID, "orderId", orderID); err != nil {
		return Order{}, err
	}
	if !slices.Contains(extendReasons, in.Reason) {
		return Order{}, invalid("reason", "must be FRAUD_CHECK, CUSTOMER_REQUESTED or OTHER")
	}
	if in.HoldExpirationMinutes < 1 {
		return Order{}, invalid("holdExpirationMinutes", "must be at least 1")
	}
	return c.order(ctx, conn, "extendOrder", fasthttp.MethodPost, in,
		OrderExpect{ID: orderID, Statuses: []string{OnHold}}, supplierID, orderID, "extend")
}

// ExtendBooking is OCTO's POST /bookings/{uuid}/extend {expirationMinutes}
// (issue 26: a reseller extends its OCTO reservation): an ON_HOLD booking
// held longer; the booking system MAY hold it by another length, and the
// answer's utcExpiresAt is the exact expiry. Doc 3 extends orders only
// (ExtendOrder): a v2 booking system is not asked.
func (c *Client) ExtendBooking(ctx context.Context, conn Connection, bookingUUID string, minutes int) (Booking, error) {
	if !conn.octo() {
		return Booking{}, unsupported("spec doc 3 extends orders, not bookings")
	}
	if minutes < 1 {
		return Booking{}, invalid("expirationMinutes", "must be at least 1")
	}
	return c.octoBooking(ctx, conn, "extendBooking", fasthttp.MethodPost, octowire.ExtendBody{ExpirationMinutes: &minutes},
		BookingExpect{UUID: bookingUUID, Statuses: []string{OnHold}}, bookingUUID, "extend")
}

func (c *Client) order(ctx context.Context, conn Connection, op, method string, body any, exp OrderExpect, supplierID string, rest ...string) (Order, error) {
	var out Order
	err := c.send(ctx, conn, call{op: op, method: method, body: body,
		segments: append([]string{"suppliers", supplierID, "orders"}, rest...),
		parse: func(b []byte) error {
			o, ps, err := ParseOrder(b, exp)
			if err != nil {
				return err
			}
			if ps != nil {
				c.metrics.reject(ps)
				return invalidAnswer(ps)
			}
			out = o
			return nil
		}})
	return out, err
}

// PriceScheduleRequest is the price-schedule read (not shown in doc 3).
type PriceScheduleRequest struct {
	SupplierID, ProductID string
	// LocalDateStart (inclusive) and LocalDateEnd (exclusive), YYYY-MM-DD.
	LocalDateStart, LocalDateEnd string
}

// PriceSchedule is GET /suppliers/{supplierId}/products/{productId}/pricing
// ?localDateStart&localDateEnd (docs/decisions.md). OCTO has no such read:
// the schedule is derived from availability read with octo/pricing
// (octoPriceSchedule).
func (c *Client) PriceSchedule(ctx context.Context, conn Connection, in PriceScheduleRequest) ([]PriceEntry, []Problem, error) {
	if conn.octo() {
		return c.octoPriceSchedule(ctx, conn, in)
	}
	if err := requireIDs("supplierId", in.SupplierID, "productId", in.ProductID); err != nil {
		return nil, nil, err
	}
	s, err1 := time.Parse(time.DateOnly, in.LocalDateStart)
	e, err2 := time.Parse(time.DateOnly, in.LocalDateEnd)
	if err1 != nil || err2 != nil || !s.Before(e) {
		return nil, nil, invalid("localDateStart", "and localDateEnd must be YYYY-MM-DD, start before end")
	}
	q := url.Values{}
	q.Set("localDateStart", in.LocalDateStart)
	q.Set("localDateEnd", in.LocalDateEnd)
	return read(ctx, c, conn, call{op: "priceSchedule", method: fasthttp.MethodGet, query: q,
		segments: []string{"suppliers", in.SupplierID, "products", in.ProductID, "pricing"}},
		func(b []byte) ([]PriceEntry, []Problem, error) { return ParsePriceSchedule(b) })
}

// requireIDs checks name/value pairs: every id present, at most 1024.
func requireIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if r := checkID(pairs[i+1]); r != "" {
			return invalid(pairs[i], fmt.Sprintf("must be 1 to %d characters", MaxIDLength))
		}
	}
	return nil
}

// checkTimeZone: empty, or a tz database name.
func checkTimeZone(name string) error {
	if name != "" && !validZone(name) {
		return invalid("timeZone", "must be a tz database name")
	}
	return nil
}

// unsupported is a call the connection's dialect does not have: nothing is
// sent.
func unsupported(why string) error {
	return newError(KindRequest, ErrUnsupported, errors.New(why))
}

// invalid is our own request breaking a rule: nothing is sent.
func invalid(field, reason string) error {
	return newError(KindRequest, domainerr.Field(field, reason), nil)
}

package bookingsim

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/octowire"
)

// Bookings and orders (spec doc 3, "States and transitions"), in memory.
//
//   - POST /suppliers/{s}/bookings makes an ON_HOLD booking holding its
//     units until utcHoldExpiration (now + holdExpirationMinutes), or a
//     REJECTED one when the units do not fit. Idempotent by uuid (rule 4):
//     the same body again answers the booking as it is now; another body
//     with that uuid is 400. An orderId groups bookings (rule 5): a new
//     one makes an ON_HOLD order, a known one must be ON_HOLD.
//   - Hold lapse: an ON_HOLD booking (or order) whose expiry has passed is
//     EXPIRED when next seen, and its units are released.
//   - POST .../bookings/{uuid}/confirm: ON_HOLD → CONFIRMED, or PENDING for
//     a product with instantConfirmation false; Decide resolves PENDING →
//     CONFIRMED or REJECTED (the supplier's decision).
//   - DELETE .../bookings/{uuid}: CONFIRMED → CANCELLED, ON_HOLD → EXPIRED.
//   - Orders: GET; POST .../confirm (all ON_HOLD bookings confirmed, or —
//     when one's hold has passed — none, the order REJECTED and 400);
//     DELETE (ON_HOLD → EXPIRED, CONFIRMED → CANCELLED, all bookings or
//     none); POST .../extend (ON_HOLD only).
//   - Repeating a call whose transition already happened (confirm of a
//     CONFIRMED booking, cancel of a CANCELLED one) answers the current
//     state: a retry after a lost answer must not fail
//     (Config.RejectRepeatedConfirm: a repeated confirm is 400, as a real
//     system may answer). Every other transition is 400 and changes
//     nothing.
//
// The OCTO dialect (octo.go) drives the same transitions (book,
// confirmBooking, cancelBooking, extendBooking) through its own routes and
// shapes; orders exist in v2 only.

type txState struct {
	mu       sync.Mutex
	bookings map[string]*simBooking // by uuid
	orders   map[string]*simOrder   // by supplier + "/" + id
	taken    map[string]int         // units held or sold, by availKey
}

type wireBookingAvailability struct {
	ID                 string `json:"id"`
	LocalDateTimeStart string `json:"localDateTimeStart"`
	LocalDateTimeEnd   string `json:"localDateTimeEnd"`
	AllDay             bool   `json:"allDay"`
}

type wireUnitItem struct {
	UUID              string `json:"uuid,omitempty"`
	UnitID            string `json:"unitId"`
	ResellerReference string `json:"resellerReference,omitempty"`
	SupplierReference string `json:"supplierReference,omitempty"`
}

type wireBooking struct {
	UUID                string                  `json:"uuid"`
	ResellerReference   string                  `json:"resellerReference,omitempty"`
	ChannelName         string                  `json:"channelName"`
	ChannelID           string                  `json:"channelId"`
	SupplierReference   string                  `json:"supplierReference"`
	Status              string                  `json:"status"`
	Cancellable         bool                    `json:"cancellable"`
	UTCHoldExpiration   *string                 `json:"utcHoldExpiration"`
	RefreshFrequency    string                  `json:"refreshFrequency"`
	ProductID           string                  `json:"productId"`
	OptionID            string                  `json:"optionId"`
	Availability        wireBookingAvailability `json:"availability"`
	DeliveryMethod      string                  `json:"deliveryMethod"`
	UnitItems           []wireUnitItem          `json:"unitItems"`
	CancellationRequest any                     `json:"cancellationRequest"`
}

type createBody struct {
	UUID                  string         `json:"uuid"`
	ResellerReference     string         `json:"resellerReference"`
	ChannelName           string         `json:"channelName"`
	ChannelID             string         `json:"channelId"`
	ProductID             string         `json:"productId"`
	OptionID              string         `json:"optionId"`
	AvailabilityID        string         `json:"availabilityId"`
	UnitItems             []wireUnitItem `json:"unitItems"`
	HoldExpirationMinutes int            `json:"holdExpirationMinutes"`
	OrderID               string         `json:"orderId"`
	// Notes: OCTO's booking notes (never in a v2 body).
	Notes string `json:"-"`
}

type simBooking struct {
	supplierID string
	req        createBody
	status     string
	hold       time.Time // hold expiry while ON_HOLD
	instant    bool
	availKey   string
	qty        int
	holding    bool // the units are counted in taken
	start, end time.Time
	seq        int
	// What the OCTO shape shows besides doc 3's fields.
	created, updated, confirmedAt, cancelledAt time.Time
	cancelReason                               string
	contact                                    *octowire.Contact // from OCTO's confirm body
	unitUUIDs                                  []string          // one per unit item
}

type simOrder struct {
	id, supplierID string
	status         string
	expiresAt      time.Time
	confirmedAt    time.Time
	uuids          []string
}

func availKey(sid, oid, aid string) string { return sid + "\x00" + oid + "\x00" + aid }

func (s *Server) takenOf(key string) int {
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	return s.tx.taken[key]
}

// release gives back the units of b (caller holds tx.mu).
func (s *Server) release(b *simBooking) {
	if b.holding {
		s.tx.taken[b.availKey] -= b.qty
		b.holding = false
	}
}

// lapse expires the holds that have passed (caller holds tx.mu).
func (s *Server) lapse(now time.Time) {
	for _, o := range s.tx.orders {
		if o.status == "ON_HOLD" && !now.Before(o.expiresAt) {
			o.status = "EXPIRED"
			for _, u := range o.uuids {
				if b := s.tx.bookings[u]; b.status == "ON_HOLD" {
					b.status, b.updated = "EXPIRED", o.expiresAt
					s.release(b)
				}
			}
		}
	}
	for _, b := range s.tx.bookings {
		if b.status == "ON_HOLD" && b.req.OrderID == "" && !now.Before(b.hold) {
			b.status, b.updated = "EXPIRED", b.hold
			s.release(b)
		}
	}
}

func (b *simBooking) wire(cfg Config) wireBooking {
	w := wireBooking{
		UUID: b.req.UUID, ResellerReference: b.req.ResellerReference, ChannelName: b.req.ChannelName,
		ChannelID: b.req.ChannelID, SupplierReference: "SIM-" + strconv.Itoa(b.seq), Status: b.status,
		Cancellable: b.status == "ON_HOLD" || b.status == "CONFIRMED", RefreshFrequency: "HOURLY",
		ProductID: b.req.ProductID, OptionID: b.req.OptionID, DeliveryMethod: "TICKET",
		Availability: wireBookingAvailability{ID: b.req.AvailabilityID,
			LocalDateTimeStart: b.start.Format(time.RFC3339), LocalDateTimeEnd: b.end.Format(time.RFC3339)},
		UnitItems: b.req.UnitItems,
	}
	if b.status == "ON_HOLD" {
		h := b.hold.UTC().Format(time.RFC3339)
		w.UTCHoldExpiration = &h
	}
	if cfg.breaks(BreakStatus) {
		w.Status = "MAYBE"
	}
	return w
}

type wireOrder struct {
	ID             string        `json:"id"`
	Status         string        `json:"status"`
	UTCExpiresAt   *string       `json:"utcExpiresAt"`
	UTCConfirmedAt *string       `json:"utcConfirmedAt"`
	Bookings       []wireBooking `json:"bookings"`
}

func (s *Server) orderWire(cfg Config, o *simOrder) wireOrder {
	w := wireOrder{ID: o.id, Status: o.status, Bookings: []wireBooking{}}
	if o.status == "ON_HOLD" {
		e := o.expiresAt.UTC().Format(time.RFC3339)
		w.UTCExpiresAt = &e
	}
	if !o.confirmedAt.IsZero() {
		c := o.confirmedAt.UTC().Format(time.RFC3339)
		w.UTCConfirmedAt = &c
	}
	for _, u := range o.uuids {
		w.Bookings = append(w.Bookings, s.tx.bookings[u].wire(cfg))
	}
	return w
}

var errState = errors.New("transition not allowed")

// Decide is the supplier's decision on a PENDING booking: accepted →
// CONFIRMED, else REJECTED (its units released).
func (s *Server) Decide(bookingUUID string, accept bool) error {
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	b := s.tx.bookings[bookingUUID]
	if b == nil || b.status != "PENDING" {
		return errState
	}
	b.updated = s.config().Clock()
	if accept {
		b.status = "CONFIRMED"
	} else {
		b.status = "REJECTED"
		s.release(b)
	}
	return nil
}

// BookingStatus is the simulator's status of a booking ("" if unknown).
func (s *Server) BookingStatus(bookingUUID string) string {
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	s.lapse(s.config().Clock())
	if b := s.tx.bookings[bookingUUID]; b != nil {
		return b.status
	}
	return ""
}

// Bookings is the number of distinct bookings made (replays not counted).
func (s *Server) Bookings() int {
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	return len(s.tx.bookings)
}

var cancelReasons = map[string]bool{"CUSTOMER": true, "SUPPLIER": true, "FRAUD": true, "OTHER": true}
var extendReasons = map[string]bool{"FRAUD_CHECK": true, "CUSTOMER_REQUESTED": true, "OTHER": true}

func (s *Server) serveTx(w http.ResponseWriter, r *http.Request, cfg Config, sid string, rest []string, fail func(int, string, string)) {
	now := cfg.Clock()
	if rest[0] == "bookings" && len(rest) == 1 && r.Method == http.MethodPost {
		s.createBooking(w, r, cfg, sid, now, fail)
		return
	}
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	s.lapse(now)
	if rest[0] == "bookings" {
		if len(rest) < 2 || len(rest) > 3 {
			fail(http.StatusNotFound, "NOT_FOUND", "no such route")
			return
		}
		b := s.tx.bookings[rest[1]]
		if b == nil || b.supplierID != sid {
			fail(http.StatusNotFound, "INVALID_BOOKING_UUID", "unknown booking")
			return
		}
		switch {
		case len(rest) == 2 && r.Method == http.MethodGet:
		case len(rest) == 3 && rest[2] == "confirm" && r.Method == http.MethodPost:
			if err := s.confirmBooking(cfg, b, now); err != nil {
				fail(http.StatusBadRequest, "BAD_REQUEST", "booking cannot be confirmed from "+b.status)
				return
			}
		case len(rest) == 2 && r.Method == http.MethodDelete:
			var in struct {
				Reason        string `json:"reason"`
				ReasonDetails string `json:"reasonDetails"`
			}
			if err := decodeBody(r, &in); err != nil || !cancelReasons[in.Reason] {
				fail(http.StatusBadRequest, "BAD_REQUEST", "reason must be CUSTOMER, SUPPLIER, FRAUD or OTHER")
				return
			}
			if err := s.cancelBooking(b, now, in.Reason); err != nil {
				fail(http.StatusBadRequest, "BAD_REQUEST", "booking cannot be cancelled from "+b.status)
				return
			}
		default:
			fail(http.StatusNotFound, "NOT_FOUND", "no such route")
			return
		}
		writeJSON(w, http.StatusOK, b.wire(cfg))
		return
	}
	// orders
	if len(rest) < 2 || len(rest) > 3 {
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
		return
	}
	o := s.tx.orders[sid+"/"+rest[1]]
	if o == nil {
		fail(http.StatusNotFound, "INVALID_ORDER_ID", "unknown order")
		return
	}
	switch {
	case len(rest) == 2 && r.Method == http.MethodGet:
	case len(rest) == 2 && r.Method == http.MethodDelete:
		var in struct {
			Reason        string `json:"reason"`
			ReasonDetails string `json:"reasonDetails"`
		}
		if err := decodeBody(r, &in); err != nil || !cancelReasons[in.Reason] {
			fail(http.StatusBadRequest, "BAD_REQUEST", "reason must be CUSTOMER, SUPPLIER, FRAUD or OTHER")
			return
		}
		if err := s.cancelOrder(o); err != nil {
			fail(http.StatusBadRequest, "BAD_REQUEST", "order cannot be cancelled from "+o.status)
			return
		}
	case len(rest) == 3 && rest[2] == "confirm" && r.Method == http.MethodPost:
		switch o.status {
		case "CONFIRMED": // a retried confirm
			if cfg.RejectRepeatedConfirm {
				fail(http.StatusBadRequest, "BAD_REQUEST", "the order is already CONFIRMED")
				return
			}
		case "ON_HOLD":
			if !s.confirmOrder(o, now) {
				fail(http.StatusBadRequest, "ORDER_REJECTED", "a booking's hold has passed; the order is rejected")
				return
			}
		default:
			fail(http.StatusBadRequest, "BAD_REQUEST", "order cannot be confirmed from "+o.status)
			return
		}
	case len(rest) == 3 && rest[2] == "extend" && r.Method == http.MethodPost:
		var in struct {
			Reason                string `json:"reason"`
			ReasonDetails         string `json:"reasonDetails"`
			HoldExpirationMinutes int    `json:"holdExpirationMinutes"`
		}
		if err := decodeBody(r, &in); err != nil || !extendReasons[in.Reason] || in.HoldExpirationMinutes < 1 {
			fail(http.StatusBadRequest, "BAD_REQUEST", "reason (FRAUD_CHECK, CUSTOMER_REQUESTED, OTHER) and holdExpirationMinutes ≥ 1 are required")
			return
		}
		if o.status != "ON_HOLD" {
			fail(http.StatusBadRequest, "BAD_REQUEST", "only an ON_HOLD order can be extended")
			return
		}
		m := in.HoldExpirationMinutes
		if cfg.MaxExtendMinutes > 0 {
			m = min(m, cfg.MaxExtendMinutes)
		}
		o.expiresAt = now.Add(time.Duration(m) * time.Minute)
		for _, u := range o.uuids {
			if b := s.tx.bookings[u]; b.status == "ON_HOLD" {
				b.hold = o.expiresAt
			}
		}
	default:
		fail(http.StatusNotFound, "NOT_FOUND", "no such route")
		return
	}
	writeJSON(w, http.StatusOK, s.orderWire(cfg, o))
}

// confirmBooking: ON_HOLD → CONFIRMED, or PENDING for a product with
// instantConfirmation false; a confirmed or pending booking is left as it
// is (a retried confirm; errState with cfg.RejectRepeatedConfirm); any
// other status is errState (caller holds tx.mu).
func (s *Server) confirmBooking(cfg Config, b *simBooking, now time.Time) error {
	switch b.status {
	case "ON_HOLD":
		b.status, b.updated, b.confirmedAt = "CONFIRMED", now, now
		if !b.instant {
			b.status = "PENDING"
		}
	case "CONFIRMED", "PENDING": // a retried confirm
		if cfg.RejectRepeatedConfirm {
			return errState
		}
	default:
		return errState
	}
	return nil
}

// cancelBooking: CONFIRMED → CANCELLED, ON_HOLD → EXPIRED (released
// before confirmation); a cancelled or expired booking is left as it is (a
// retried cancel); any other status is errState (caller holds tx.mu).
func (s *Server) cancelBooking(b *simBooking, now time.Time, reason string) error {
	switch b.status {
	case "CONFIRMED":
		b.status, b.updated, b.cancelledAt, b.cancelReason = "CANCELLED", now, now, reason
		s.release(b)
	case "ON_HOLD":
		b.status, b.updated = "EXPIRED", now
		s.release(b)
	case "CANCELLED", "EXPIRED": // a retried cancel
	default:
		return errState
	}
	return nil
}

// extendBooking holds an ON_HOLD booking that is not part of an order
// for minutes more from now, capped by MaxExtendMinutes (doc 3 rule 7: the
// booking system MAY extend by another length); else errState (caller
// holds tx.mu).
func (s *Server) extendBooking(cfg Config, b *simBooking, now time.Time, minutes int) error {
	if b.status != "ON_HOLD" || b.req.OrderID != "" {
		return errState
	}
	if cfg.MaxExtendMinutes > 0 {
		minutes = min(minutes, cfg.MaxExtendMinutes)
	}
	b.hold, b.updated = now.Add(time.Duration(minutes)*time.Minute), now
	return nil
}

// cancelOrder moves every booking or none (caller holds tx.mu).
func (s *Server) cancelOrder(o *simOrder) error {
	var from, to string
	switch o.status {
	case "CANCELLED", "EXPIRED":
		return nil // a retried cancel
	case "ON_HOLD":
		from, to = "ON_HOLD", "EXPIRED"
	case "CONFIRMED":
		from, to = "CONFIRMED", "CANCELLED"
	default:
		return errState
	}
	for _, u := range o.uuids {
		if st := s.tx.bookings[u].status; st != from && st != to && st != "REJECTED" && st != "EXPIRED" {
			return errState // e.g. a PENDING booking cannot be CANCELLED
		}
	}
	for _, u := range o.uuids {
		if b := s.tx.bookings[u]; b.status == from {
			b.status = to
			s.release(b)
		}
	}
	o.status = to
	return nil
}

// confirmOrder confirms every booking, or rejects the order when one
// booking's own hold has passed (caller holds tx.mu). Doc 3: "a
// confirmation fails as REJECTED when one booking's utcHoldExpiration is
// in the past"; the order's bookings do not lapse one by one, the order
// does (at utcExpiresAt).
func (s *Server) confirmOrder(o *simOrder, now time.Time) bool {
	ok := false
	for _, u := range o.uuids {
		b := s.tx.bookings[u]
		if b.status == "ON_HOLD" {
			ok = true
			if !now.Before(b.hold) {
				ok = false
				break
			}
		}
	}
	if !ok {
		o.status = "REJECTED"
		for _, u := range o.uuids {
			if b := s.tx.bookings[u]; b.status == "ON_HOLD" {
				b.status = "EXPIRED"
				s.release(b)
			}
		}
		return false
	}
	for _, u := range o.uuids {
		if b := s.tx.bookings[u]; b.status == "ON_HOLD" {
			b.status = "CONFIRMED"
			if !b.instant {
				b.status = "PENDING"
			}
		}
	}
	o.status, o.confirmedAt = "CONFIRMED", now
	return true
}

func (s *Server) createBooking(w http.ResponseWriter, r *http.Request, cfg Config, sid string, now time.Time, fail func(int, string, string)) {
	var in createBody
	if err := decodeBody(r, &in); err != nil {
		fail(http.StatusBadRequest, "BAD_REQUEST", "invalid JSON body")
		return
	}
	if _, err := uuid.Parse(in.UUID); err != nil {
		fail(http.StatusBadRequest, "INVALID_BOOKING_UUID", "uuid must be a UUID")
		return
	}
	if _, err := uuid.Parse(in.ChannelID); err != nil {
		fail(http.StatusBadRequest, "BAD_REQUEST", "channelId must be a UUID")
		return
	}
	out, serr := s.book(cfg, sid, in, now, func(b *simBooking) any { return b.wire(cfg) })
	if serr != nil {
		fail(serr.status, serr.code, serr.msg)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// simError is a refusal of the simulator: status, error code, message.
type simError struct {
	status    int
	code, msg string
}

func badRequest(code, msg string) *simError {
	return &simError{status: http.StatusBadRequest, code: code, msg: msg}
}

// book is createBooking of either dialect: a new booking ON_HOLD (or
// REJECTED when the units do not fit), the booking as it is for a replay
// with the same data, 400 for a replay with other data (doc 3 rule 4). The
// answer is render(booking), made under the lock.
func (s *Server) book(cfg Config, sid string, in createBody, now time.Time, render func(*simBooking) any) (any, *simError) {
	if _, err := uuid.Parse(in.UUID); err != nil {
		return nil, badRequest("INVALID_BOOKING_UUID", "uuid must be a UUID")
	}
	p, ok := cfg.product(sid, in.ProductID)
	if !ok {
		return nil, badRequest("INVALID_PRODUCT_ID", "unknown productId")
	}
	o, ok := p.option(in.OptionID)
	if !ok {
		return nil, badRequest("INVALID_OPTION_ID", "unknown optionId")
	}
	if in.HoldExpirationMinutes < 1 || len(in.UnitItems) == 0 {
		return nil, badRequest("BAD_REQUEST", "holdExpirationMinutes ≥ 1 and unitItems are required")
	}
	// The option's restrictions (OCTO's minUnits, maxUnits), refused as
	// OCTO's example refuses them.
	if n := len(in.UnitItems); cfg.MinUnits > 0 && n < cfg.MinUnits {
		return nil, badRequest("UNPROCESSABLE_ENTITY", fmt.Sprintf("Validation failed: Minimum tickets is %d", cfg.MinUnits))
	} else if cfg.MaxUnits > 0 && n > cfg.MaxUnits {
		return nil, badRequest("UNPROCESSABLE_ENTITY", fmt.Sprintf("Validation failed: Maximum tickets is %d", cfg.MaxUnits))
	}
	for _, u := range in.UnitItems {
		if !hasUnit(o, u.UnitID) {
			return nil, badRequest("INVALID_UNIT_ID", "unknown unitId")
		}
	}
	sl, ok := s.findSlot(cfg, p, in.OptionID, in.AvailabilityID)
	if !ok {
		return nil, badRequest("INVALID_AVAILABILITY_ID", "unknown availabilityId")
	}
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	s.lapse(now)
	if b := s.tx.bookings[in.UUID]; b != nil {
		// Doc 3 rule 4: a retry never fails or duplicates; other data is 400.
		if b.supplierID != sid || !reflect.DeepEqual(b.req, in) {
			return nil, badRequest("INVALID_BOOKING_UUID", "uuid already used with other data")
		}
		return render(b), nil
	}
	var ord *simOrder
	if in.OrderID != "" {
		ord = s.tx.orders[sid+"/"+in.OrderID]
		if ord != nil && ord.status != "ON_HOLD" {
			return nil, badRequest("INVALID_ORDER_ID", "the order is not ON_HOLD")
		}
	}
	b := &simBooking{supplierID: sid, req: in, instant: p.wire.InstantConfirmation, availKey: availKey(sid, in.OptionID, in.AvailabilityID),
		qty: len(in.UnitItems), start: sl.start, end: sl.end, seq: len(s.tx.bookings) + 1,
		hold: now.Add(time.Duration(in.HoldExpirationMinutes) * time.Minute), created: now, updated: now}
	for _, u := range in.UnitItems {
		id := u.UUID
		if id == "" {
			id = uuid.NewString()
		}
		b.unitUUIDs = append(b.unitUUIDs, id)
	}
	// The slot's vacancies were computed before taking tx.mu: compare the
	// capacity with every unit taken now plus the new ones.
	if sl.vacancies != nil {
		capacity := *sl.vacancies + s.tx.taken[b.availKey]
		sl.vacancies = &capacity
	}
	if sl.fits(b.qty + s.tx.taken[b.availKey]) {
		b.status, b.holding = "ON_HOLD", true
		s.tx.taken[b.availKey] += b.qty
	} else {
		b.status = "REJECTED"
	}
	if ord == nil && in.OrderID != "" && b.status == "ON_HOLD" {
		ord = &simOrder{id: in.OrderID, supplierID: sid, status: "ON_HOLD", expiresAt: b.hold}
		s.tx.orders[sid+"/"+in.OrderID] = ord
	}
	if ord != nil && b.status == "ON_HOLD" {
		// The order expires when its first booking's hold does (doc 3:
		// original request time plus holdExpirationMinutes); each booking
		// keeps its own hold, checked by confirmOrder.
		ord.uuids = append(ord.uuids, in.UUID)
	}
	s.tx.bookings[in.UUID] = b
	return render(b), nil
}

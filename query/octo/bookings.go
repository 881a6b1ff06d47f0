package octo

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/octowire"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// OCTO's booking statuses.
const (
	bookingOnHold    = "ON_HOLD"
	bookingConfirmed = "CONFIRMED"
	bookingExpired   = "EXPIRED"
	bookingCancelled = "CANCELLED"
	bookingRedeemed  = "REDEEMED"
	bookingPending   = "PENDING"
)

// What OCTO adds to a hold or booking is kept in its ext (the reseller's
// own data, which Kafka carries with the record): the reseller reference
// under booking.ExtResellerReference, and these.
const (
	extNotes        = "octo.notes"
	extContact      = "octo.contact"      // ContactBody as JSON
	extUnitItems    = "octo.unitItems"    // []storedUnit as JSON
	extCancelReason = "octo.cancelReason" // the reason given to cancel
)

// storedUnit is one unit item as the reseller sent it.
type storedUnit struct {
	UUID              string                `json:"uuid"`
	UnitID            string                `json:"unitId"`
	ResellerReference string                `json:"resellerReference,omitempty"`
	Contact           *octowire.ContactBody `json:"contact,omitempty"`
}

// unitItemNS derives the uuid of a unit item sent without one: the same
// for every retry of the reservation.
var unitItemNS = uuid.MustParse("6f1c1c5e-2a8e-4f51-9d43-7a0f7f0e8a26")

func unitUUID(holdID string, i int) string {
	return uuid.NewSHA1(unitItemNS, []byte(holdID+"/"+strconv.Itoa(i))).String()
}

// state is a hold with the booking made on it (when one was).
type state struct {
	hold    schemas.HoldRecord
	booking *schemas.BookingRecord
}

// ext is the OCTO data of the state: the booking's when it was made (it
// started as the hold's and was updated since), else the hold's.
func (st state) ext() map[string]string {
	if st.booking != nil {
		return st.booking.Booking.Ext
	}
	return st.hold.Hold.Ext
}

func (st state) status() string {
	if b := st.booking; b != nil {
		switch b.Booking.Status {
		case schemas.BookingPending:
			return bookingPending
		case schemas.BookingCancelled:
			return bookingCancelled
		case schemas.BookingRedeemed:
			return bookingRedeemed
		}
		return bookingConfirmed
	}
	switch st.hold.Hold.Status {
	case schemas.HoldExpired:
		return bookingExpired
	case schemas.HoldReleased:
		return bookingCancelled
	}
	return bookingOnHold
}

// load reads the reservation uuid of the channel, its booking included;
// fresh asks the supplier's system (as GET /v1.2/holds and /bookings do),
// else the records are read as they are. Another supplier's reservation,
// or none, is INVALID_BOOKING_UUID.
func (s *Service) load(r *httpapi.Request, id string, fresh bool) (state, error) {
	if id == "" {
		return state{}, invalidUUID(id, "The uuid was missing or invalid")
	}
	ctx, p := r.Context(), r.Principal
	var st state
	var err error
	if fresh {
		st.hold, err = s.book.HoldDetail(ctx, p, r.ID, id)
	} else {
		st.hold, err = s.book.HoldRecord(ctx, p.ChannelID, id)
		st.hold.Hold = booking.HoldView(st.hold, s.now())
	}
	if err != nil {
		return state{}, fail(err, invalidUUID(id, "The uuid was missing or invalid"))
	}
	if st.hold.SupplierID != r.Param(pSupplier) {
		return state{}, invalidUUID(id, "The uuid was missing or invalid")
	}
	if bid := st.hold.BookingID; bid != "" {
		if fresh {
			if _, err := s.book.Booking(ctx, p, r.ID, bid); err != nil && !isNotFound(err) {
				return state{}, fail(err, nil)
			}
		}
		rec, err := s.book.Record(ctx, p.ChannelID, bid)
		if err != nil {
			return state{}, fail(err, invalidUUID(id, "The uuid was missing or invalid"))
		}
		st.booking = &rec
	}
	return st, nil
}

// reserve answers POST /bookings: OCTO's reservation is a hold (POST
// /v1.2/holds), its uuid the hold's id.
func (s *Service) reserve(r *httpapi.Request) error {
	sup, err := s.visibleSupplier(r)
	if err != nil {
		return err
	}
	var b octowire.ReservationBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.UUID == "" {
		b.UUID = uuid.NewString()
	} else if _, err := uuid.Parse(b.UUID); err != nil {
		return invalidUUID(b.UUID, "The uuid must be a UUID")
	}
	p, err := s.loadProduct(r, sup.ID, b.ProductID)
	if err != nil {
		return err
	}
	rt, err := p.rate(b.OptionID)
	if err != nil {
		return err
	}
	if b.UnitItems == nil || len(*b.UnitItems) == 0 {
		return unprocessable("unitItems must name at least one unit")
	}
	units := make([]storedUnit, len(*b.UnitItems))
	for i, u := range *b.UnitItems {
		if _, err := unit(rt, u.UnitID); err != nil {
			return err
		}
		if u.UUID == "" {
			u.UUID = unitUUID(b.UUID, i)
		}
		units[i] = storedUnit(u)
	}
	if rt.MaxTravelers > 0 && len(units) > rt.MaxTravelers {
		return unprocessable(fmt.Sprintf("The option allows at most %d units (restrictions.maxUnits)", rt.MaxTravelers))
	}
	if rt.MinTravelers > 0 && len(units) < rt.MinTravelers {
		return unprocessable(fmt.Sprintf("The option needs at least %d units (restrictions.minUnits)", rt.MinTravelers))
	}
	if b.AvailabilityID == "" {
		return invalidAvailability("")
	}
	// Known, not past, and room for the units (a hold of a sold-out slot
	// is UNPROCESSABLE_ENTITY before the supplier's system is asked).
	q := availabilityQuery{p: p, rate: rt, ids: []string{b.AvailabilityID}}
	now := s.now()
	q.start = now.UTC().Truncate(24 * time.Hour)
	q.end = q.start.Add(s.avail.MaxWindow())
	as, err := s.read(r, q)
	if err != nil {
		return err
	}
	var slot *octowire.Availability
	var at time.Time
	for _, a := range as {
		if a.ID == b.AvailabilityID {
			v := octoAvailability(a, q)
			slot, at = &v, a.Start
		}
	}
	if slot == nil {
		// A retry of a reservation made before: its hold names the slot.
		if old, err := s.book.HoldRecord(r.Context(), r.Principal.ChannelID, b.UUID); err == nil && old.SupplierID == sup.ID {
			return s.answer(r, b.UUID)
		}
		return invalidAvailability(b.AvailabilityID)
	}
	if !bookable(slot.Status) || !fits(slot.Vacancies, len(units)) {
		if old, err := s.book.HoldRecord(r.Context(), r.Principal.ChannelID, b.UUID); err == nil && old.SupplierID == sup.ID {
			return s.answer(r, b.UUID) // the retry of a reservation that took the last places
		}
		return unprocessable(fmt.Sprintf("Availability %s has no room for %d units (%s)", b.AvailabilityID, len(units), slot.Status))
	}
	ext := map[string]string{}
	if b.ResellerReference != "" {
		ext[booking.ExtResellerReference] = b.ResellerReference
	}
	if b.Notes != "" {
		ext[extNotes] = b.Notes
	}
	if b.Contact != nil {
		ext[extContact] = mustJSON(b.Contact)
	}
	ext[extUnitItems] = mustJSON(units)
	hold := schemas.Hold{ID: b.UUID, Ext: ext}
	for _, u := range units {
		i := len(hold.Items) - 1
		if i >= 0 && hold.Items[i].PriceID == u.UnitID {
			hold.Items[i].Quantity++
			continue
		}
		found := false
		for j := range hold.Items {
			if hold.Items[j].PriceID == u.UnitID {
				hold.Items[j].Quantity++
				found = true
			}
		}
		if !found {
			hold.Items = append(hold.Items, schemas.HoldItem{SupplierID: sup.ID, ProductID: p.data.ID, RateID: rt.ID,
				AvailabilityID: b.AvailabilityID, PriceID: u.UnitID, Quantity: 1, At: at.UTC()})
		}
	}
	if _, err := s.book.CreateHold(r.Context(), r.Principal, r.ID, hold); err != nil {
		if errors.Is(err, booking.ErrIDReused) {
			return invalidUUID(b.UUID, "The uuid was already used with other data")
		}
		return fail(err, nil)
	}
	return s.answer(r, b.UUID)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// answer writes the booking of reservation id as its records hold it.
func (s *Service) answer(r *httpapi.Request, id string) error {
	st, err := s.load(r, id, false)
	if err != nil {
		return err
	}
	return writeJSON(r, requested(r.Ctx), s.render(r, st))
}

// booking answers GET /bookings/{uuid}.
func (s *Service) booking(r *httpapi.Request) error {
	if _, err := s.visibleSupplier(r); err != nil {
		return err
	}
	st, err := s.load(r, r.Param("uuid"), true)
	if err != nil {
		return err
	}
	return writeJSON(r, requested(r.Ctx), s.render(r, st))
}

// confirm answers POST /bookings/{uuid}/confirm: a booking (POST
// /v1.2/bookings) of the reservation's hold, id the uuid. Confirming a
// confirmed booking again returns it.
func (s *Service) confirm(r *httpapi.Request) error {
	if _, err := s.visibleSupplier(r); err != nil {
		return err
	}
	id := r.Param("uuid")
	var b octowire.ConfirmationBody
	if err := decode(r, &b); err != nil {
		return err
	}
	st, err := s.load(r, id, true)
	if err != nil {
		return err
	}
	if st.booking != nil {
		return writeJSON(r, requested(r.Ctx), s.render(r, st))
	}
	switch st.status() {
	case bookingExpired:
		return invalidUUID(id, "The reservation has expired")
	case bookingCancelled:
		return unprocessable("The reservation was cancelled")
	}
	if b.Contact == nil {
		return badRequest("contact is required")
	}
	ext := maps.Clone(st.hold.Hold.Ext)
	if ext == nil {
		ext = map[string]string{}
	}
	units := unitsOf(st.hold)
	if b.UnitItems != nil {
		if units, err = sameUnits(units, *b.UnitItems); err != nil {
			return err
		}
		ext[extUnitItems] = mustJSON(units)
	}
	if b.ResellerReference != nil {
		ext[booking.ExtResellerReference] = *b.ResellerReference
	}
	ext[extContact] = mustJSON(b.Contact)
	in := schemas.Booking{ID: id, HoldID: id, ResellerBookingRef: ext[booking.ExtResellerReference], Ext: ext,
		Customer: &schemas.Customer{FirstName: first(b.Contact.FirstName, b.Contact.FullName), LastName: b.Contact.LastName,
			Email: b.Contact.EmailAddress, Phone: b.Contact.PhoneNumber}}
	for _, it := range st.hold.Hold.Items {
		bi := schemas.BookingItem{SupplierID: it.SupplierID, ProductID: it.ProductID, RateID: it.RateID, AvailabilityID: it.AvailabilityID,
			PriceID: it.PriceID, Quantity: it.Quantity, StartTime: it.At}
		for _, u := range units {
			if u.UnitID == it.PriceID && u.Contact != nil {
				bi.Traveler = &schemas.Traveler{FirstName: first(u.Contact.FirstName, u.Contact.FullName), LastName: u.Contact.LastName,
					Email: u.Contact.EmailAddress, Phone: u.Contact.PhoneNumber, Country: u.Contact.Country}
				break
			}
		}
		in.Items = append(in.Items, bi)
	}
	if _, err := s.book.CreateBooking(r.Context(), r.Principal, r.ID, in); err != nil {
		if errors.Is(err, booking.ErrIDReused) {
			return invalidUUID(id, "The uuid was already used by another booking")
		}
		return fail(err, nil)
	}
	return s.answer(r, id)
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sameUnits applies the unit items of a confirmation or update to those
// reserved: their contacts and references. The units themselves cannot
// change (docs/decisions.md: a hold's items are fixed at the supplier).
func sameUnits(have []storedUnit, sent []octowire.UnitItemBody) ([]storedUnit, error) {
	if len(sent) != len(have) {
		return nil, badRequest(fmt.Sprintf("unitItems must list the %d unit items of the reservation: changing them is not supported", len(have)))
	}
	out := make([]storedUnit, len(have))
	copy(out, have)
	used := make([]bool, len(have))
	for _, u := range sent {
		j := -1
		for i, h := range out {
			if !used[i] && ((u.UUID != "" && h.UUID == u.UUID) || (u.UUID == "" && h.UnitID == u.UnitID)) {
				j = i
				break
			}
		}
		if j < 0 || out[j].UnitID != u.UnitID {
			return nil, badRequest("unitItems must name the unit items of the reservation (uuid and unitId): changing them is not supported")
		}
		used[j] = true
		if u.ResellerReference != "" {
			out[j].ResellerReference = u.ResellerReference
		}
		if u.Contact != nil {
			out[j].Contact = u.Contact
		}
	}
	return out, nil
}

// unitsOf is the unit items of a hold: as the OCTO reservation sent them,
// else one per unit of each item (a hold made through v1.2).
func unitsOf(h schemas.HoldRecord) []storedUnit {
	var units []storedUnit
	if raw := h.Hold.Ext[extUnitItems]; raw != "" && json.Unmarshal([]byte(raw), &units) == nil {
		return units
	}
	for _, it := range h.Hold.Items {
		for range it.Quantity {
			units = append(units, storedUnit{UUID: unitUUID(h.Hold.ID, len(units)), UnitID: it.PriceID})
		}
	}
	return units
}

// extend answers POST /bookings/{uuid}/extend.
func (s *Service) extend(r *httpapi.Request) error {
	if _, err := s.visibleSupplier(r); err != nil {
		return err
	}
	id := r.Param("uuid")
	var b octowire.ExtendBody
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.ExpirationMinutes == nil {
		return badRequest("expirationMinutes is required")
	}
	st, err := s.load(r, id, false)
	if err != nil {
		return err
	}
	if err := s.extendHold(r, st, *b.ExpirationMinutes); err != nil {
		return err
	}
	return s.answer(r, id)
}

func (s *Service) extendHold(r *httpapi.Request, st state, minutes int) error {
	if st := st.status(); st != bookingOnHold {
		return unprocessable("Only a reservation ON_HOLD can be extended; this one is " + st)
	}
	if minutes < 1 || minutes > booking.MaxExtendMinutes {
		return badRequest(fmt.Sprintf("expirationMinutes must be an integer from 1 to %d", booking.MaxExtendMinutes))
	}
	if _, err := s.book.ExtendHold(r.Context(), r.Principal, r.ID, st.hold.Hold.ID, minutes); err != nil {
		return fail(err, nil)
	}
	return nil
}

// update answers PATCH /bookings/{uuid}: the reseller's reference,
// notes, contact and the unit items' contacts and references; an ON_HOLD
// reservation extended by expirationMinutes. A change of product, option,
// availability or units is not supported (BAD_REQUEST).
func (s *Service) update(r *httpapi.Request) error {
	if _, err := s.visibleSupplier(r); err != nil {
		return err
	}
	id := r.Param("uuid")
	var b octowire.UpdateBody
	if err := decode(r, &b); err != nil {
		return err
	}
	st, err := s.load(r, id, false)
	if err != nil {
		return err
	}
	item := st.hold.Hold.Items[0]
	switch {
	case b.ProductID != nil && *b.ProductID != item.ProductID:
		return badRequest("changing the product of a booking is not supported: cancel it and book again")
	case b.OptionID != nil && *b.OptionID != item.RateID:
		return badRequest("changing the option of a booking is not supported: cancel it and book again")
	case b.AvailabilityID != nil && *b.AvailabilityID != item.AvailabilityID:
		return badRequest("changing the availability of a booking is not supported: cancel it and book again")
	}
	status := st.status()
	if status != bookingOnHold && status != bookingConfirmed && status != bookingPending {
		return unprocessable("A booking that is " + status + " cannot be updated")
	}
	ext := maps.Clone(st.ext())
	if ext == nil {
		ext = map[string]string{}
	}
	if b.UnitItems != nil {
		units, err := sameUnits(unitsOf(schemas.HoldRecord{Hold: schemas.Hold{ID: st.hold.Hold.ID, Items: st.hold.Hold.Items, Ext: ext}}), *b.UnitItems)
		if err != nil {
			return err
		}
		ext[extUnitItems] = mustJSON(units)
	}
	setOrDelete(ext, booking.ExtResellerReference, b.ResellerReference)
	setOrDelete(ext, extNotes, b.Notes)
	if b.Contact != nil {
		ext[extContact] = mustJSON(b.Contact)
	}
	if b.ExpirationMinutes != nil {
		if err := s.extendHold(r, st, *b.ExpirationMinutes); err != nil {
			return err
		}
	}
	if st.booking == nil {
		if _, err := s.book.SetHoldExt(r.Context(), r.Principal, id, ext); err != nil {
			return fail(err, nil)
		}
	} else {
		if _, err := s.book.UpdateBookingNotes(r.Context(), r.Principal, r.ID, st.booking.Booking.ID,
			booking.BookingNotes{ResellerBookingRef: ext[booking.ExtResellerReference], Ext: ext}); err != nil {
			return fail(err, nil)
		}
	}
	return s.answer(r, id)
}

func setOrDelete(m map[string]string, k string, v *string) {
	switch {
	case v == nil:
	case *v == "":
		delete(m, k)
	default:
		m[k] = *v
	}
}

// cancel answers POST /bookings/{uuid}/cancel: an ON_HOLD reservation is
// released (DELETE /v1.2/holds), a booking cancelled (PUT
// /v1.2/bookings/cancel); a cancelled one is returned as it is.
func (s *Service) cancel(r *httpapi.Request) error {
	if _, err := s.visibleSupplier(r); err != nil {
		return err
	}
	id := r.Param("uuid")
	var b octowire.CancellationBody
	if len(r.Ctx.PostBody()) > 0 {
		if err := decode(r, &b); err != nil {
			return err
		}
	}
	st, err := s.load(r, id, true)
	if err != nil {
		return err
	}
	ctx, p := r.Context(), r.Principal
	switch st.status() {
	case bookingCancelled:
		return writeJSON(r, requested(r.Ctx), s.render(r, st))
	case bookingExpired, bookingRedeemed:
		return unprocessable("A booking that is " + st.status() + " cannot be cancelled")
	case bookingOnHold:
		if b.Reason != "" {
			ext := maps.Clone(st.hold.Hold.Ext)
			if ext == nil {
				ext = map[string]string{}
			}
			ext[extCancelReason] = b.Reason
			if _, err := s.book.SetHoldExt(ctx, p, id, ext); err != nil {
				return fail(err, nil)
			}
		}
		if err := s.book.ReleaseHold(ctx, p, r.ID, id); err != nil {
			return fail(err, nil)
		}
	default:
		bid := st.booking.Booking.ID
		if b.Reason != "" {
			ext := maps.Clone(st.booking.Booking.Ext)
			if ext == nil {
				ext = map[string]string{}
			}
			ext[extCancelReason] = b.Reason
			if _, err := s.book.UpdateBookingNotes(ctx, p, r.ID, bid,
				booking.BookingNotes{ResellerBookingRef: st.booking.Booking.ResellerBookingRef, Ext: ext}); err != nil {
				return fail(err, nil)
			}
		}
		if _, err := s.book.CancelBooking(ctx, p, r.ID, bid); err != nil {
			return fail(err, nil)
		}
	}
	return s.answer(r, id)
}

// bookings answers GET /bookings?resellerReference=|supplierReference=:
// the channel's reservations of the supplier with that reference now.
func (s *Service) bookings(r *httpapi.Request) error {
	sup, err := s.visibleSupplier(r)
	if err != nil {
		return err
	}
	args := r.Ctx.QueryArgs()
	resRef, supRef := string(args.Peek("resellerReference")), string(args.Peek("supplierReference"))
	if resRef == "" && supRef == "" {
		return badRequest("resellerReference or supplierReference is required")
	}
	ctx, ch := r.Context(), r.Principal.ChannelID
	var ids []string
	if resRef != "" {
		ids, err = s.book.HoldsByResellerReference(ctx, ch, resRef)
	} else {
		ids, err = s.book.HoldsBySupplierReference(ctx, ch, supRef)
	}
	if err != nil {
		return fail(err, nil)
	}
	out := []octowire.Booking{}
	for _, id := range ids {
		st, err := s.load(r, id, false)
		if err != nil {
			var oe *Error
			if errors.As(err, &oe) && oe.Name == ErrNameInvalidBookingUUID {
				continue // another supplier's
			}
			return err
		}
		b := s.render(r, st)
		if (resRef != "" && (b.ResellerReference == nil || *b.ResellerReference != resRef)) ||
			(supRef != "" && (b.SupplierReference == nil || *b.SupplierReference != supRef)) || st.hold.SupplierID != sup.ID {
			continue
		}
		out = append(out, b)
	}
	return writeJSON(r, requested(r.Ctx), out)
}

// render is OCTO's Booking of a state (docs/decisions.md, "Selling
// through OCTO", Booking field by field).
func (s *Service) render(r *httpapi.Request, st state) octowire.Booking {
	h := st.hold
	ext := st.ext()
	item := schemas.HoldItem{}
	if len(h.Hold.Items) > 0 {
		item = h.Hold.Items[0]
	}
	var p product
	var rate catalog.RateData
	if got, err := s.loadProduct(r, h.SupplierID, item.ProductID); err == nil {
		p = got
		rate, _ = p.rate(item.RateID)
	}
	op := octoProduct(p)
	status := st.status()
	out := octowire.Booking{ID: h.Hold.ID, UUID: h.Hold.ID, Status: status, ProductID: item.ProductID, OptionID: item.RateID,
		UTCCreatedAt: utc(h.CreatedAt), UTCUpdatedAt: utc(h.UpdatedAt), DeliveryMethods: op.DeliveryMethods,
		SupplierReference: ptr(booking.SupplierReference(h.ChannelID, h.Hold.ID)), Contact: contactOf(ext[extContact])}
	if item.AvailabilityID != "" {
		out.AvailabilityID = ptr(item.AvailabilityID)
	}
	if v := ext[booking.ExtResellerReference]; v != "" {
		out.ResellerReference = ptr(v)
	}
	if v := ext[extNotes]; v != "" {
		out.Notes = ptr(v)
	}
	var tickets []schemas.Ticket
	var bookingItems []schemas.BookingItem
	switch b := st.booking; {
	case b != nil:
		if b.UpdatedAt.After(h.UpdatedAt) {
			out.UTCUpdatedAt = utc(b.UpdatedAt)
		}
		if b.Booking.ResellerBookingRef != "" {
			out.ResellerReference = ptr(b.Booking.ResellerBookingRef)
		}
		if status != bookingPending {
			out.UTCConfirmedAt = ptr(utc(b.CreatedAt))
		}
		switch {
		case status == bookingCancelled:
			out.Cancellation = &octowire.Cancellation{Refund: "NONE", UTCCancelledAt: utc(when(b.Booking.Timeline, schemas.BookingCancelled, b.UpdatedAt))}
			if rate.Refundable {
				out.Cancellation.Refund = "FULL"
			}
		case status == bookingConfirmed || status == bookingPending:
			out.Cancellable = rate.Cancelable
			if b.Booking.Cancelable != nil {
				out.Cancellable = *b.Booking.Cancelable
			}
		}
		if bc := b.Booking.Barcode; bc != nil {
			out.Voucher = &octowire.Ticket{RedemptionMethod: op.RedemptionMethod, DeliveryOptions: deliveryOptions(bc.Format, bc.Value)}
		}
		tickets, bookingItems = b.Booking.Tickets, b.Booking.Items
	case status == bookingOnHold:
		out.Cancellable = true
		if !h.Hold.Expires.IsZero() {
			out.UTCExpiresAt = ptr(utc(h.Hold.Expires))
		}
	case status == bookingCancelled:
		out.Cancellation = &octowire.Cancellation{Refund: "NONE", UTCCancelledAt: utc(when(h.Hold.Timeline, schemas.HoldReleased, h.UpdatedAt))}
	}
	if out.Cancellation != nil {
		if v := ext[extCancelReason]; v != "" {
			out.Cancellation.Reason = ptr(v)
		}
	}
	units := unitsOf(schemas.HoldRecord{Hold: schemas.Hold{ID: h.Hold.ID, Items: h.Hold.Items, Ext: ext}})
	seen := map[string]int{}
	for _, u := range units {
		ui := octowire.UnitItem{UUID: u.UUID, UnitID: u.UnitID, Status: status, Contact: contactOf(mustJSONPtr(u.Contact))}
		if u.ResellerReference != "" {
			ui.ResellerReference = ptr(u.ResellerReference)
		}
		if got, err := unit(rate, u.UnitID); err == nil {
			ui.Unit = &got
		} else {
			ui.Unit = &octowire.Unit{ID: u.UnitID, InternalName: u.UnitID, Type: "OTHER", RequiredContactFields: []string{},
				Restrictions: octowire.UnitRestrictions{MaxAge: 100, PaxCount: 1, AccompaniedBy: []string{}}}
		}
		k := seen[u.UnitID]
		seen[u.UnitID]++
		ui.Ticket = ticketOf(u.UnitID, k, bookingItems, tickets, op.RedemptionMethod)
		out.UnitItems = append(out.UnitItems, ui)
	}
	if out.UnitItems == nil {
		out.UnitItems = []octowire.UnitItem{}
	}
	if out.Voucher == nil && len(tickets) > 0 && contains(op.DeliveryMethods, deliveryVoucher) {
		// A booking of one ticket for every unit: that ticket is its
		// voucher as well.
		if len(tickets) == 1 {
			out.Voucher = ticket(tickets[0], op.RedemptionMethod)
		}
	}
	return out
}

func mustJSONPtr(c *octowire.ContactBody) string {
	if c == nil {
		return ""
	}
	return mustJSON(c)
}

func utc(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// when is the time the timeline entered status, else def.
func when(tl []schemas.TimelineEntry, status string, def time.Time) time.Time {
	for i := len(tl) - 1; i >= 0; i-- {
		if tl[i].TypeOf == status {
			return tl[i].Timestamp
		}
	}
	return def
}

// contactOf is OCTO's Contact of a stored ContactBody (every field,
// null when not given).
func contactOf(raw string) octowire.Contact {
	c := octowire.Contact{Locales: []string{}}
	var b octowire.ContactBody
	if raw == "" || json.Unmarshal([]byte(raw), &b) != nil {
		return c
	}
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return ptr(v)
	}
	c.FullName, c.FirstName, c.LastName = opt(b.FullName), opt(b.FirstName), opt(b.LastName)
	if c.FullName == nil && (b.FirstName != "" || b.LastName != "") {
		c.FullName = ptr(joinName(b.FirstName, b.LastName))
	}
	c.EmailAddress, c.PhoneNumber, c.PostalCode, c.Country, c.Notes = opt(b.EmailAddress), opt(b.PhoneNumber), opt(b.PostalCode), opt(b.Country), opt(b.Notes)
	if b.Locales != nil {
		c.Locales = b.Locales
	}
	return c
}

func joinName(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " " + b
}

// ticketOf is the ticket of the k-th unit item of unitID: the tickets of
// the booking item of that unit, one per unit when there are as many,
// else the item's one ticket for all its units.
func ticketOf(unitID string, k int, items []schemas.BookingItem, tickets []schemas.Ticket, redemption string) *octowire.Ticket {
	var itemID string
	for _, it := range items {
		if it.PriceID == unitID {
			itemID = it.ID
			break
		}
	}
	if itemID == "" {
		return nil
	}
	var mine []schemas.Ticket
	for _, t := range tickets {
		if contains(t.BookingItemIDs, itemID) {
			mine = append(mine, t)
		}
	}
	switch {
	case k < len(mine):
		return ticket(mine[k], redemption)
	case len(mine) > 0:
		return ticket(mine[0], redemption)
	}
	return nil
}

func ticket(t schemas.Ticket, redemption string) *octowire.Ticket {
	out := &octowire.Ticket{RedemptionMethod: redemption, DeliveryOptions: []octowire.DeliveryOption{}}
	var bc schemas.Barcode
	if len(t.Barcode) > 0 && json.Unmarshal(t.Barcode, &bc) == nil {
		out.DeliveryOptions = deliveryOptions(bc.Format, bc.Value)
	}
	if t.Status == schemas.BookingRedeemed {
		// The catalog keeps no redemption time: none is invented.
		out.UTCRedeemedAt = nil
	}
	return out
}

// deliveryOptions is OCTO's delivery option of a code: its format in
// OCTO's name; formats OCTO does not have (TEXT, EAN13, UPCA, CODE39)
// are given as CODE128, the linear code OCTO has, with the same value.
func deliveryOptions(format, value string) []octowire.DeliveryOption {
	if value == "" {
		return []octowire.DeliveryOption{}
	}
	f, ok := octoFormats[format]
	if !ok {
		f = "CODE128"
	}
	return []octowire.DeliveryOption{{DeliveryFormat: f, DeliveryValue: value}}
}

package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// Result is a booking as an API call answers it; Accepted is true while
// the partner accepted it (202) and its tickets are not attached yet.
type Result struct {
	Booking  schemas.Booking
	Accepted bool
}

func result(rec schemas.BookingRecord) Result {
	b := rec.Booking
	completeBooking(&b) // records written before the contract was filled in
	return Result{Booking: b, Accepted: rec.AwaitingTickets}
}

// CreateBooking validates a reseller's booking, checks its hold (spec doc
// 2, rule 5: a hold is required and must succeed before a booking),
// forwards it to the supplier's partner and records it.
//
// Idempotency: the booking id may be given (spec doc 2: "optional; when
// omitted the response id is a random UUID"). A retry with the same id and
// data returns the booking of the first request and never makes a second
// one; concurrent retries wait on the booking's lock. The same id with
// other data is BAD_REQUEST. Ids are unique within the channel (another
// channel's booking of the same id is another booking); the supplier's
// system gets a derived id (partnerID), and the booking is made through
// its hold's connection or not at all (ErrConnectionChanged).
//
// The hold: holdId is required (400); a hold that is not the channel's is
// 400; RELEASED, expired or already used by another booking is 409; items
// it does not cover are 400.
func (s *Service) CreateBooking(ctx context.Context, p principals.Principal, reqID string, in schemas.Booking) (Result, error) {
	now := s.now()
	sid, err := checkBookingRequest(p, &in, now)
	if err != nil {
		return Result{}, err
	}
	in.ChannelID = p.ChannelID
	fp, err := fingerprint(in)
	if err != nil {
		return Result{}, err
	}
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	ref := Ref(p.ChannelID, in.ID)
	bookingItemIDs(&in, PartnerID("booking", p.ChannelID, in.ID))
	unlock, err := s.lock(ctx, "b", ref)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	// A retry (same id) is answered from the record, under the lock, so
	// that concurrent retries make one booking.
	old, ver, err := s.loadBooking(ctx, ref)
	if err != nil {
		return Result{}, err
	}
	if ver > 0 {
		if old.Fingerprint != fp {
			return Result{}, fmt.Errorf("booking id %s was already used with different data: %w", in.ID, ErrIDReused)
		}
		return result(old), nil
	}
	rates, err := s.checkVisible(ctx, "booking", p.ChannelID, len(in.Items), bookingItem(in.Items), now)
	if err != nil {
		return Result{}, err
	}
	// The hold is locked until the booking is committed with it marked
	// used, so that two bookings cannot use one hold.
	holdRef := Ref(p.ChannelID, in.HoldID)
	unlockHold, err := s.lock(ctx, "h", holdRef)
	if err != nil {
		return Result{}, err
	}
	defer unlockHold()
	hold, hver, err := s.bookableHold(ctx, holdRef, p.ChannelID, in, now)
	if err != nil {
		return Result{}, err
	}
	conn, err := s.holdConnection(ctx, sid, in.HoldID, hold)
	if err != nil {
		return Result{}, err
	}
	got, partnerBooking, accepted, err := s.partnerCreateBooking(ctx, sid, p.ChannelID, in, hold, reqID)
	if err != nil {
		return Result{}, err
	}
	completeCreatedBooking(&got, in, p.ChannelID, accepted, now)
	bookingAnswer(&got, in, rates)
	rec := schemas.BookingRecord{Booking: got, ChannelID: p.ChannelID, SupplierID: sid, CreatedBy: p.ID, Fingerprint: fp,
		Connection: conn, Accepted: accepted, AwaitingTickets: accepted && len(got.Tickets) == 0 && got.Status != schemas.BookingCancelled,
		Change: schemas.ChangeCreated, RequestID: reqID, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
	if partnerBooking != in.ID {
		rec.PartnerBookingID = partnerBooking
	}
	hold.BookingID, hold.UpdatedAt, hold.PreviousStatus = in.ID, now.UTC(), hold.Hold.Status
	if err := s.commit(ctx, now, bookingChange(rec, 1), holdChange(hold, hver+1)); err != nil {
		return Result{}, err
	}
	return result(rec), nil
}

// bookingItem reads the supplier, product, rate and quantity of a
// booking's items (checkItems, checkVisible).
func bookingItem(items []schemas.BookingItem) func(i int) (itemRef, int) {
	return func(i int) (itemRef, int) {
		it := items[i]
		return itemRef{it.SupplierID, it.ProductID, it.RateID}, it.Quantity
	}
}

// checkBookingRequest validates what a reseller may send in a booking,
// before anything is read, and returns the items' supplier. The items'
// embedded rates are cleared (the response's: accepted in a request,
// ignored, as a hold's).
func checkBookingRequest(p principals.Principal, in *schemas.Booking, now time.Time) (string, error) {
	sid, err := checkItems("booking", len(in.Items), bookingItem(in.Items))
	if err != nil {
		return "", err
	}
	switch {
	case in.ChannelID != "" && in.ChannelID != p.ChannelID:
		return "", invalid("booking.channelId", "is not your channel")
	case len(in.ResellerBookingRef) > MaxRefLen:
		return "", invalid("booking.resellerBookingRef", fmt.Sprintf("is longer than %d characters", MaxRefLen))
	case in.Status != "" || len(in.Tickets) > 0 || len(in.Timeline) > 0 || in.Cancelable != nil:
		return "", invalid("booking", "status, tickets, timeline and cancelable are set by the supplier's system")
	}
	for i := range in.Items {
		in.Items[i].Rate = nil
	}
	if err := checkID("booking.id", in.ID, false); err != nil {
		return "", err
	}
	if err := checkBookingDates(*in, now); err != nil {
		return "", err
	}
	if err := checkID("booking.holdId", in.HoldID, true); err != nil {
		if in.HoldID == "" {
			return "", invalid("booking.holdId", "is required: acquire a hold with POST /holds before booking")
		}
		return "", err
	}
	return sid, nil
}

// bookableHold loads the booking's hold and checks that it can be booked
// (spec doc 2, rule 5): the channel's, ACTIVE, not expired, not used by
// another booking, and covering the booking's items.
func (s *Service) bookableHold(ctx context.Context, holdRef, channelID string, in schemas.Booking, now time.Time) (schemas.HoldRecord, int64, error) {
	hold, hver, err := s.loadHold(ctx, holdRef)
	if err != nil {
		return schemas.HoldRecord{}, 0, err
	}
	switch {
	case hver == 0 || hold.ChannelID != channelID:
		return schemas.HoldRecord{}, 0, invalid("booking.holdId", "is not a hold of yours: acquire a hold with POST /holds before booking")
	case hold.BookingID != "" && hold.BookingID != in.ID:
		return schemas.HoldRecord{}, 0, conflictf("hold %s was already used by booking %s", in.HoldID, hold.BookingID)
	case hold.Hold.Status != schemas.HoldActive:
		return schemas.HoldRecord{}, 0, conflictf("hold %s is %s, not ACTIVE", in.HoldID, hold.Hold.Status)
	case !now.Before(hold.Hold.Expires):
		return schemas.HoldRecord{}, 0, conflictf("hold %s expired at %s", in.HoldID, hold.Hold.Expires.UTC().Format(time.RFC3339))
	}
	if i, ok := covers(hold.Hold, in.Items); !ok {
		return schemas.HoldRecord{}, 0, invalid(fmt.Sprintf("booking.items[%d]", i), "is not covered by hold "+in.HoldID+" (supplier, product, rate, availability, start time and quantity)")
	}
	return hold, hver, nil
}

// holdConnection is the connection the booking is made through: the
// hold's (ErrConnectionChanged when the supplier's changed since), or,
// for a hold recorded without one, the supplier's current one.
func (s *Service) holdConnection(ctx context.Context, sid, holdID string, hold schemas.HoldRecord) (string, error) {
	if err := s.sameConnection(ctx, sid, hold.Connection); err != nil {
		return "", fmt.Errorf("create booking on hold %s: %w", holdID, err)
	}
	if hold.Connection != "" {
		return hold.Connection, nil
	}
	return s.connectionRef(ctx, sid)
}

// partnerCreateBooking forwards the booking to the supplier's partner
// under the ids the partner knows (PartnerID, the hold's partner id). It
// returns the partner's answer, the partner's id of the booking and
// whether the partner accepted it (202: tickets later).
func (s *Service) partnerCreateBooking(ctx context.Context, sid, channelID string, in schemas.Booking, hold schemas.HoldRecord, reqID string) (schemas.Booking, string, bool, error) {
	out := in
	out.ID = PartnerID("booking", channelID, in.ID)
	out.HoldID = partnerHoldID(hold)
	got, accepted, err := s.opts.Partner.CreateBooking(ctx, sid, out, reqID)
	if err != nil {
		return schemas.Booking{}, "", false, fmt.Errorf("create booking: %w", fromPartner(err))
	}
	partnerBooking := got.ID
	if partnerBooking == "" {
		partnerBooking = out.ID
	}
	return got, partnerBooking, accepted, nil
}

// completeCreatedBooking fills in the partner's answer: the reseller's
// ids win over the partner's echo, and a status and timeline the partner
// left out are the booking's creation (PENDING when accepted).
func completeCreatedBooking(got *schemas.Booking, in schemas.Booking, channelID string, accepted bool, now time.Time) {
	got.ID, got.HoldID, got.ChannelID = in.ID, in.HoldID, channelID
	if got.ResellerBookingRef == "" {
		got.ResellerBookingRef = in.ResellerBookingRef
	}
	if got.Status == "" {
		got.Status = schemas.BookingOpen
		if accepted {
			got.Status = schemas.BookingPending
		}
	}
	if len(got.Timeline) == 0 {
		got.Timeline = []schemas.TimelineEntry{{Timestamp: now.UTC(), TypeOf: got.Status}}
	}
}

// Record returns the recorded booking id of channel channelID as it is,
// without asking the partner (processors, tests, operations).
func (s *Service) Record(ctx context.Context, channelID, id string) (schemas.BookingRecord, error) {
	rec, ver, err := s.loadBooking(ctx, Ref(channelID, id))
	if err == nil && ver == 0 {
		err = fmt.Errorf("booking %s: %w", id, ErrNotFound)
	}
	return rec, err
}

// partnerBookingID is the id the supplier's system knows the booking by.
func partnerBookingID(rec schemas.BookingRecord) string {
	if rec.PartnerBookingID != "" {
		return rec.PartnerBookingID
	}
	return rec.Booking.ID
}

// ownBooking loads a booking of the principal's channel: ids are looked
// up within it, so another channel's is not even seen.
func (s *Service) ownBooking(ctx context.Context, p principals.Principal, id string) (schemas.BookingRecord, error) {
	rec, ver, err := s.loadBooking(ctx, Ref(p.ChannelID, id))
	if err != nil {
		return rec, err
	}
	if ver == 0 || rec.ChannelID != p.ChannelID {
		return rec, fmt.Errorf("booking %s: %w", id, ErrNotFound)
	}
	return rec, nil
}

// Booking returns a booking of the principal's channel, first reconciled
// with the partner (Refresh): a cancellation or tickets the partner has
// are recorded (and notified by processors/bookingchange). When the partner
// cannot answer, the recorded booking is returned.
func (s *Service) Booking(ctx context.Context, p principals.Principal, reqID, id string) (Result, error) {
	rec, err := s.ownBooking(ctx, p, id)
	if err != nil {
		return Result{}, err
	}
	if rec.Booking.Status == schemas.BookingCancelled {
		return result(rec), nil
	}
	fresh, _, err := s.Refresh(ctx, reqID, Ref(p.ChannelID, id))
	if err != nil {
		s.log.Warn("booking: not refreshed from the partner; serving the recorded one", "booking", id, "err", err)
		return result(rec), nil
	}
	return result(fresh), nil
}

// CancelBooking cancels a booking of the principal's channel at the
// partner (PUT /bookings/cancel/{id}) and records it CANCELLED, which
// processors/bookingchange turns into the booking canceled notification.
// Cancelling a cancelled booking returns it unchanged (no second
// notification); a booking the partner marked cancelable=false is
// CONFLICT.
func (s *Service) CancelBooking(ctx context.Context, p principals.Principal, reqID, id string) (Result, error) {
	if _, err := s.ownBooking(ctx, p, id); err != nil {
		return Result{}, err
	}
	ref := Ref(p.ChannelID, id)
	unlock, err := s.lock(ctx, "b", ref)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	rec, ver, err := s.loadBooking(ctx, ref)
	if err != nil {
		return Result{}, err
	}
	switch {
	case rec.Booking.Status == schemas.BookingCancelled:
		return result(rec), nil
	case rec.Booking.Cancelable != nil && !*rec.Booking.Cancelable:
		return Result{}, conflictf("booking %s is not cancelable", id)
	}
	if err := s.sameConnection(ctx, rec.SupplierID, rec.Connection); err != nil {
		// Never re-routed silently: the cancel would reach another system
		// (another operator's, were the id ever taken over), and the
		// booking would read CANCELLED while its supplier never heard.
		return Result{}, fmt.Errorf("cancel booking %s: %w", id, err)
	}
	if err := s.partnerCancel(ctx, rec, reqID); err != nil {
		return Result{}, fmt.Errorf("cancel booking: %w", fromPartner(err))
	}
	now := s.now()
	cancelled(&rec, now, schemas.CanceledByReseller, reqID)
	if err := s.commit(ctx, now, bookingChange(rec, ver+1)); err != nil {
		return Result{}, err
	}
	return result(rec), nil
}

// cancelled records a booking as cancelled; its final state is final
// (completeBooking: cancelable false, tickets void).
func cancelled(rec *schemas.BookingRecord, now time.Time, by, reqID string) {
	rec.PreviousStatus = rec.Booking.Status
	rec.Booking.Status = schemas.BookingCancelled
	rec.Booking.Timeline = append(slices.Clone(rec.Booking.Timeline), schemas.TimelineEntry{Timestamp: now.UTC(), TypeOf: schemas.BookingCancelled})
	rec.Change, rec.CanceledBy, rec.AwaitingTickets, rec.RequestID, rec.UpdatedAt = schemas.ChangeCanceled, by, false, reqID, now.UTC()
	completeBooking(&rec.Booking)
}

// Refresh reads a booking (by its ref, Ref) from its partner and records
// what changed there: a cancellation (change canceled, by the partner),
// the tickets of an accepted booking (change tickets-added), another
// status (change updated). It reports whether it recorded a change. The
// booking poller of processors/bookingchange calls it for bookings awaiting
// tickets. A booking whose supplier's connection changed since it was
// made is not asked for (ErrConnectionChanged) and leaves the poller's
// set: its tickets cannot come from another system.
func (s *Service) Refresh(ctx context.Context, reqID, ref string) (schemas.BookingRecord, bool, error) {
	rec, ver, err := s.loadBooking(ctx, ref)
	if err != nil || ver == 0 || rec.Booking.Status == schemas.BookingCancelled {
		if err == nil && ver == 0 {
			err = fmt.Errorf("booking %s: %w", ref, ErrNotFound)
		}
		return rec, false, err
	}
	if err := s.sameConnection(ctx, rec.SupplierID, rec.Connection); err != nil {
		if errors.Is(err, ErrConnectionChanged) {
			if zerr := s.rdb.ZRem(ctx, s.pendingKey(), ref).Err(); zerr != nil {
				s.log.Warn("booking: could not stop polling a booking whose connection changed", "err", zerr)
			}
		}
		return rec, false, fmt.Errorf("refresh booking %s: %w", rec.Booking.ID, err)
	}
	got, err := s.partnerGet(ctx, rec, reqID)
	if err != nil {
		return rec, false, fmt.Errorf("refresh booking %s: %w", rec.Booking.ID, fromPartner(err))
	}
	unlock, err := s.lock(ctx, "b", ref)
	if err != nil {
		return rec, false, err
	}
	defer unlock()
	rec, ver, err = s.loadBooking(ctx, ref) // what changed while the partner answered
	if err != nil {
		return rec, false, err
	}
	now := s.now()
	switch {
	case rec.Booking.Status == schemas.BookingCancelled:
		return rec, false, nil
	case got.Status == schemas.BookingCancelled:
		cancelled(&rec, now, schemas.CanceledByPartner, reqID)
		if len(got.Timeline) > 0 {
			rec.Booking.Timeline = got.Timeline
		}
	case rec.AwaitingTickets && len(got.Tickets) > 0:
		rec.PreviousStatus = rec.Booking.Status
		rec.Booking.Tickets = got.Tickets
		completeBooking(&rec.Booking)
		if got.Status != "" {
			rec.Booking.Status = got.Status
		}
		if len(got.Timeline) > 0 {
			rec.Booking.Timeline = got.Timeline
		}
		if got.Cancelable != nil {
			rec.Booking.Cancelable = got.Cancelable
		}
		rec.Change, rec.AwaitingTickets, rec.RequestID, rec.UpdatedAt = schemas.ChangeTicketsAdded, false, reqID, now.UTC()
	case got.Status != "" && got.Status != rec.Booking.Status:
		rec.PreviousStatus = rec.Booking.Status
		rec.Booking.Status = got.Status
		if len(got.Timeline) > 0 {
			rec.Booking.Timeline = got.Timeline
		}
		if got.Cancelable != nil {
			rec.Booking.Cancelable = got.Cancelable
		}
		rec.Change, rec.RequestID, rec.UpdatedAt = schemas.ChangeUpdated, reqID, now.UTC()
	default:
		return rec, false, nil
	}
	if err := s.commit(ctx, now, bookingChange(rec, ver+1)); err != nil {
		return rec, false, err
	}
	return rec, true, nil
}

// partnerGet reads a booking from its partner: through its hold for an
// OrderPartner, by id otherwise.
func (s *Service) partnerGet(ctx context.Context, rec schemas.BookingRecord, reqID string) (schemas.Booking, error) {
	op, ok := s.opts.Partner.(OrderPartner)
	if !ok {
		return s.opts.Partner.GetBooking(ctx, rec.SupplierID, partnerBookingID(rec), reqID)
	}
	b, err := s.partnerView(ctx, rec)
	if err != nil {
		return schemas.Booking{}, err
	}
	return op.GetBookingOf(ctx, rec.SupplierID, b, reqID)
}

// partnerCancel cancels a booking at its partner, like partnerGet.
func (s *Service) partnerCancel(ctx context.Context, rec schemas.BookingRecord, reqID string) error {
	op, ok := s.opts.Partner.(OrderPartner)
	if !ok {
		return s.opts.Partner.CancelBooking(ctx, rec.SupplierID, partnerBookingID(rec), reqID)
	}
	b, err := s.partnerView(ctx, rec)
	if err != nil {
		return err
	}
	return op.CancelBookingOf(ctx, rec.SupplierID, b, reqID)
}

// partnerView is the recorded booking with the partner's ids of it and
// of its hold, as CreateBooking sent it.
func (s *Service) partnerView(ctx context.Context, rec schemas.BookingRecord) (schemas.Booking, error) {
	b := rec.Booking
	b.ID = partnerBookingID(rec)
	hold, ver, err := s.loadHold(ctx, Ref(rec.ChannelID, b.HoldID))
	if err != nil {
		return b, err
	}
	if ver > 0 {
		b.HoldID = partnerHoldID(hold)
	}
	return b, nil
}

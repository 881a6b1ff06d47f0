package booking

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// Changes of a hold or booking after it was made that spec doc 2 does not
// have and OCTO's resellers make (issue 26): a hold held longer (OCTO's
// extend reservation), and the reseller's own data of a hold or booking
// (its ext, a booking's resellerBookingRef and its items' ext) changed
// (OCTO's booking update). The latter are Switchback's records only: the
// supplier's system has no call to hear them (doc 2 has none, doc 3 and
// core OCTO's update would change the booking itself), so they never
// carry what the supplier acts on.

// HoldExtender is what a Partner adds to extend a hold at the supplier's
// system (ingest/supplierbooking.Router implements it): the new expiry,
// which may be another length than asked (doc 3 rule 7), or
// ErrNotExtendable.
type HoldExtender interface {
	ExtendHold(ctx context.Context, sid, id string, minutes int, reqID string) (time.Time, error)
}

// MaxExtendMinutes bounds one extension (a week): a hold is a short
// reservation, not an option on inventory.
const MaxExtendMinutes = 7 * 24 * 60

// ExtendHold asks the supplier's system to hold an ACTIVE hold of the
// principal's channel minutes more and records the expiry it answers.
// A hold that is not ACTIVE, has expired or was used by a booking is
// CONFLICT; a supplier that cannot extend is ErrNotExtendable.
func (s *Service) ExtendHold(ctx context.Context, p principals.Principal, reqID, id string, minutes int) (schemas.Hold, error) {
	if minutes < 1 || minutes > MaxExtendMinutes {
		return schemas.Hold{}, invalid("expirationMinutes", fmt.Sprintf("must be an integer from 1 to %d", MaxExtendMinutes))
	}
	if _, _, err := s.ownHold(ctx, p, id); err != nil {
		return schemas.Hold{}, err
	}
	ref := Ref(p.ChannelID, id)
	unlock, err := s.lock(ctx, "h", ref)
	if err != nil {
		return schemas.Hold{}, err
	}
	defer unlock()
	rec, ver, err := s.loadHold(ctx, ref)
	if err != nil {
		return schemas.Hold{}, err
	}
	now := s.now()
	switch {
	case rec.BookingID != "":
		return schemas.Hold{}, conflictf("hold %s was used by booking %s", id, rec.BookingID)
	case rec.Hold.Status != schemas.HoldActive:
		return schemas.Hold{}, conflictf("hold %s is %s, not ACTIVE", id, rec.Hold.Status)
	case !now.Before(rec.Hold.Expires):
		return schemas.Hold{}, conflictf("hold %s expired at %s", id, rec.Hold.Expires.UTC().Format(time.RFC3339))
	}
	ext, ok := s.opts.Partner.(HoldExtender)
	if !ok {
		return schemas.Hold{}, ErrNotExtendable
	}
	if err := s.sameConnection(ctx, rec.SupplierID, rec.Connection); err != nil {
		return schemas.Hold{}, fmt.Errorf("extend hold %s: %w", id, err)
	}
	until, err := ext.ExtendHold(ctx, rec.SupplierID, partnerHoldID(rec), minutes, reqID)
	switch {
	case errors.Is(err, ErrNotExtendable):
		return schemas.Hold{}, err
	case err != nil:
		return schemas.Hold{}, fmt.Errorf("extend hold: %w", fromPartner(err))
	}
	now = s.now()
	if !until.IsZero() && !until.Equal(rec.Hold.Expires) {
		rec.Hold.Expires = until.UTC()
		rec.PreviousStatus, rec.UpdatedAt = rec.Hold.Status, now.UTC()
		if err := s.commit(ctx, now, holdChange(rec, ver+1)); err != nil {
			return schemas.Hold{}, err
		}
	}
	return HoldView(rec, now), nil
}

// SetHoldExt replaces the ext of a hold of the principal's channel, in
// any status (the reseller's notes on it). The supplier's system is not
// told.
func (s *Service) SetHoldExt(ctx context.Context, p principals.Principal, id string, ext map[string]string) (schemas.Hold, error) {
	if _, _, err := s.ownHold(ctx, p, id); err != nil {
		return schemas.Hold{}, err
	}
	rec, err := s.updateHold(ctx, Ref(p.ChannelID, id), func(r *schemas.HoldRecord) bool {
		if maps.Equal(r.Hold.Ext, ext) {
			return false
		}
		r.Hold.Ext = maps.Clone(ext)
		r.PreviousStatus = r.Hold.Status // not a status change (no history)
		return true
	})
	if err != nil {
		return schemas.Hold{}, err
	}
	return HoldView(rec, s.now()), nil
}

// BookingNotes is the reseller's own data of a booking that
// UpdateBookingNotes replaces: resellerBookingRef, ext and the ext of
// items by item id (items not named keep theirs).
type BookingNotes struct {
	ResellerBookingRef string
	Ext                map[string]string
	ItemExt            map[string]map[string]string
}

// UpdateBookingNotes replaces a booking's BookingNotes (change updated:
// no notification, no history, its status unchanged). The supplier's
// system is not told.
func (s *Service) UpdateBookingNotes(ctx context.Context, p principals.Principal, reqID, id string, n BookingNotes) (Result, error) {
	if len(n.ResellerBookingRef) > MaxRefLen {
		return Result{}, invalid("booking.resellerBookingRef", fmt.Sprintf("is longer than %d characters", MaxRefLen))
	}
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
	changed := rec.Booking.ResellerBookingRef != n.ResellerBookingRef || !maps.Equal(rec.Booking.Ext, n.Ext)
	rec.Booking.ResellerBookingRef, rec.Booking.Ext = n.ResellerBookingRef, maps.Clone(n.Ext)
	if len(n.ItemExt) > 0 {
		rec.Booking.Items = append([]schemas.BookingItem(nil), rec.Booking.Items...)
		for i := range rec.Booking.Items {
			it := &rec.Booking.Items[i]
			if e, ok := n.ItemExt[it.ID]; ok && !maps.Equal(it.Ext, e) {
				it.Ext, changed = maps.Clone(e), true
			}
		}
	}
	if !changed {
		return result(rec), nil
	}
	now := s.now()
	rec.PreviousStatus, rec.Change, rec.RequestID, rec.UpdatedAt = rec.Booking.Status, schemas.ChangeUpdated, reqID, now.UTC()
	if err := s.commit(ctx, now, bookingChange(rec, ver+1)); err != nil {
		return Result{}, err
	}
	return result(rec), nil
}

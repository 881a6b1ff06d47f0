package booking

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/schemas"
)

// CreateHold validates a reseller's hold, forwards it to the supplier's
// partner and records the answer. The hold id may be given: a retry with
// the same id and data returns the hold made by the first request (no
// second partner call); the same id with other data is BAD_REQUEST. Ids
// are unique within the channel: another channel's hold of the same id is
// another hold, of which nothing is learnt. The partner is sent an id
// derived from the channel and the reseller's id (partnerID), and the
// hold records the connection it was made through.
func (s *Service) CreateHold(ctx context.Context, p principals.Principal, reqID string, in schemas.Hold) (schemas.Hold, error) {
	now := s.now()
	sid, err := checkHoldRequest(&in, now)
	if err != nil {
		return schemas.Hold{}, err
	}
	rates, err := s.checkVisible(ctx, "hold", p.ChannelID, len(in.Items), holdItem(in.Items), now)
	if err != nil {
		return schemas.Hold{}, err
	}
	fp, err := fingerprint(in)
	if err != nil {
		return schemas.Hold{}, err
	}
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	ref := Ref(p.ChannelID, in.ID)
	// Item ids derive from the id the supplier's system knows the hold by
	// (PartnerID), unique across channels.
	holdItemIDs(&in, PartnerID("hold", p.ChannelID, in.ID))
	unlock, err := s.lock(ctx, "h", ref)
	if err != nil {
		return schemas.Hold{}, err
	}
	defer unlock()
	old, ver, err := s.loadHold(ctx, ref)
	if err != nil {
		return schemas.Hold{}, err
	}
	if ver > 0 {
		if old.Fingerprint != fp {
			return schemas.Hold{}, fmt.Errorf("hold id %s was already used with different data: %w", in.ID, ErrIDReused)
		}
		return HoldView(old, now), nil
	}
	conn, err := s.connectionRef(ctx, sid)
	if err != nil {
		return schemas.Hold{}, err
	}
	out := in
	out.ID = PartnerID("hold", p.ChannelID, in.ID)
	got, err := s.partnerCreateHold(ctx, sid, p.ChannelID, out, reqID)
	if err != nil {
		return schemas.Hold{}, err
	}
	holdAnswer(&got, in, rates)
	rec := schemas.HoldRecord{Hold: got, ChannelID: p.ChannelID, SupplierID: sid, CreatedBy: p.ID, Fingerprint: fp,
		Connection: conn, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
	partnerHold := got.ID
	if partnerHold == "" {
		partnerHold = out.ID
	}
	if partnerHold != in.ID {
		rec.PartnerHoldID = partnerHold
	}
	rec.Hold.ID = in.ID
	s.completeCreatedHold(&rec.Hold, now)
	if err := s.commit(ctx, now, holdChange(rec, 1)); err != nil {
		return schemas.Hold{}, err
	}
	return HoldView(rec, now), nil
}

// holdItem reads the supplier, product, rate and quantity of a hold's
// items (checkItems, checkVisible).
func holdItem(items []schemas.HoldItem) func(i int) (itemRef, int) {
	return func(i int) (itemRef, int) {
		it := items[i]
		return itemRef{it.SupplierID, it.ProductID, it.RateID}, it.Quantity
	}
}

// checkHoldRequest validates what a reseller may send in a hold, before
// anything is read, and returns the items' supplier. Spec doc 2: "the
// request is a subset of the response", and expires is a hold field:
// accepted, and ignored (the supplier's system sets the expiry), as is
// an item's embedded Rate (a hold read sent back); both are cleared.
func checkHoldRequest(in *schemas.Hold, now time.Time) (string, error) {
	sid, err := checkItems("hold", len(in.Items), holdItem(in.Items))
	if err != nil {
		return "", err
	}
	if err := checkID("hold.id", in.ID, false); err != nil {
		return "", err
	}
	if err := checkHoldDates(*in, now); err != nil {
		return "", err
	}
	if in.Status != "" || len(in.Timeline) > 0 || !in.Retrieved.IsZero() {
		return "", invalid("hold", "status, timeline and retrieved are set by the supplier's system")
	}
	in.Expires = time.Time{}
	for i := range in.Items {
		in.Items[i].Rate = nil
	}
	return sid, nil
}

// partnerCreateHold forwards the hold (under the partner's id) to the
// supplier's partner, telling it the channel when it takes one
// (OrderPartner).
func (s *Service) partnerCreateHold(ctx context.Context, sid, channelID string, out schemas.Hold, reqID string) (schemas.Hold, error) {
	var got schemas.Hold
	var err error
	if op, ok := s.opts.Partner.(OrderPartner); ok {
		got, err = op.CreateHoldFor(ctx, sid, channelID, out, reqID)
	} else {
		got, err = s.opts.Partner.CreateHold(ctx, sid, out, reqID)
	}
	if err != nil {
		return schemas.Hold{}, fmt.Errorf("create hold: %w", fromPartner(err))
	}
	return got, nil
}

// completeCreatedHold fills in what the partner's answer left out: an
// ACTIVE status, an expiry HoldTTL from now, and the creation as its
// timeline.
func (s *Service) completeCreatedHold(h *schemas.Hold, now time.Time) {
	if h.Status == "" {
		h.Status = schemas.HoldActive
	}
	if h.Expires.IsZero() {
		h.Expires = now.Add(s.opts.HoldTTL).UTC()
	}
	if len(h.Timeline) == 0 {
		h.Timeline = []schemas.TimelineEntry{{Timestamp: now.UTC(), TypeOf: h.Status}}
	}
}

// partnerHoldID is the id the partner knows the hold by.
func partnerHoldID(rec schemas.HoldRecord) string {
	if rec.PartnerHoldID != "" {
		return rec.PartnerHoldID
	}
	return rec.Hold.ID
}

// ownHold loads a hold of the principal's channel: ids are looked up
// within it, so another channel's is not even seen.
func (s *Service) ownHold(ctx context.Context, p principals.Principal, id string) (schemas.HoldRecord, int64, error) {
	rec, ver, err := s.loadHold(ctx, Ref(p.ChannelID, id))
	if err != nil {
		return rec, 0, err
	}
	if ver == 0 || rec.ChannelID != p.ChannelID {
		return rec, 0, fmt.Errorf("hold %s: %w", id, ErrNotFound)
	}
	return rec, ver, nil
}

// Hold returns a hold of the principal's channel, refreshed from the
// partner: a status or expiry the partner changed is recorded. When the
// partner cannot answer, the recorded hold is returned.
func (s *Service) Hold(ctx context.Context, p principals.Principal, reqID, id string) (schemas.Hold, error) {
	rec, err := s.HoldDetail(ctx, p, reqID, id)
	if err != nil {
		return schemas.Hold{}, err
	}
	return rec.Hold, nil
}

// HoldRecord returns the recorded hold id of channel channelID as it is,
// without asking the partner (as Record for bookings).
func (s *Service) HoldRecord(ctx context.Context, channelID, id string) (schemas.HoldRecord, error) {
	rec, ver, err := s.loadHold(ctx, Ref(channelID, id))
	if err == nil && (ver == 0 || rec.ChannelID != channelID) {
		err = fmt.Errorf("hold %s: %w", id, ErrNotFound)
	}
	return rec, err
}

// HoldDetail is Hold with the rest of the record (the booking that used
// the hold, when it was made); its Hold is the reseller's view (HoldView).
func (s *Service) HoldDetail(ctx context.Context, p principals.Principal, reqID, id string) (schemas.HoldRecord, error) {
	rec, _, err := s.ownHold(ctx, p, id)
	if err != nil {
		return schemas.HoldRecord{}, err
	}
	if rec.Hold.Status == schemas.HoldActive {
		var got schemas.Hold
		err := s.sameConnection(ctx, rec.SupplierID, rec.Connection)
		if err == nil {
			got, err = s.opts.Partner.GetHold(ctx, rec.SupplierID, partnerHoldID(rec), reqID)
		}
		if err != nil {
			s.log.Warn("booking: hold not refreshed from the partner; serving the recorded one", "hold", id, "err", err)
		} else if got.Status != "" && (got.Status != rec.Hold.Status || (!got.Expires.IsZero() && !got.Expires.Equal(rec.Hold.Expires))) {
			if updated, err := s.updateHold(ctx, Ref(p.ChannelID, id), func(r *schemas.HoldRecord) bool {
				r.PreviousStatus = r.Hold.Status
				r.Hold.Status = got.Status
				if !got.Expires.IsZero() {
					r.Hold.Expires = got.Expires.UTC()
				}
				if len(got.Timeline) > 0 {
					r.Hold.Timeline = got.Timeline
				}
				return true
			}); err == nil {
				rec = updated
			} else {
				s.log.Warn("booking: recording the partner's hold status failed", "hold", id, "err", err)
			}
		}
	}
	rec.Hold = HoldView(rec, s.now())
	return rec, nil
}

// updateHold changes a hold (by its ref) under its lock and commits the
// next version; edit returns false to change nothing.
func (s *Service) updateHold(ctx context.Context, ref string, edit func(*schemas.HoldRecord) bool) (schemas.HoldRecord, error) {
	unlock, err := s.lock(ctx, "h", ref)
	if err != nil {
		return schemas.HoldRecord{}, err
	}
	defer unlock()
	rec, ver, err := s.loadHold(ctx, ref)
	if err != nil {
		return rec, err
	}
	if ver == 0 {
		return rec, fmt.Errorf("hold: %w", ErrNotFound)
	}
	if !edit(&rec) {
		return rec, nil
	}
	now := s.now()
	rec.UpdatedAt = now.UTC()
	return rec, s.commit(ctx, now, holdChange(rec, ver+1))
}

// ReleaseHold releases a hold of the principal's channel at the partner
// (DELETE /holds/{id}) and records it RELEASED (spec doc 2: ACTIVE →
// RELEASED). Releasing a released hold is a no-op; a hold already used
// by a booking is CONFLICT (cancel the booking instead).
func (s *Service) ReleaseHold(ctx context.Context, p principals.Principal, reqID, id string) error {
	rec, _, err := s.ownHold(ctx, p, id)
	if err != nil {
		return err
	}
	switch {
	case rec.Hold.Status == schemas.HoldReleased:
		return nil
	case rec.BookingID != "":
		return conflictf("hold %s was used by booking %s; cancel the booking instead", id, rec.BookingID)
	}
	if err := s.sameConnection(ctx, rec.SupplierID, rec.Connection); err != nil {
		return fmt.Errorf("release hold %s: %w", id, err)
	}
	err = s.opts.Partner.ReleaseHold(ctx, rec.SupplierID, partnerHoldID(rec), reqID)
	if err != nil && !isNotFound(err) { // gone at the partner: released there
		return fmt.Errorf("release hold: %w", fromPartner(err))
	}
	now := s.now()
	_, err = s.updateHold(ctx, Ref(p.ChannelID, id), func(r *schemas.HoldRecord) bool {
		if r.Hold.Status == schemas.HoldReleased {
			return false
		}
		r.PreviousStatus = r.Hold.Status
		r.Hold.Status = schemas.HoldReleased
		r.Hold.Timeline = append(slices.Clone(r.Hold.Timeline), schemas.TimelineEntry{Timestamp: now.UTC(), TypeOf: schemas.HoldReleased})
		return true
	})
	return err
}

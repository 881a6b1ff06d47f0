package booking

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"slices"
)

// References: how a reseller finds its holds and bookings again without
// their ids (OCTO's GET /bookings?resellerReference=|supplierReference=,
// issue 26). Both are kept by Apply, from the records alone, so a replay
// of the topics rebuilds them like every other key:
//
//   - the reseller reference of a hold is its ext's ExtResellerReference
//     (doc 2's hold has no reference field; its ext is the reseller's own
//     data), of a booking its resellerBookingRef; both point at the hold
//     (the booking's holdId), the record OCTO's uuid names;
//   - the supplier reference is SupplierReference of the hold's id: the
//     short code Switchback, the supplier of an OCTO reseller, gives it.
//
// A reference changed since (a booking's resellerBookingRef set on
// confirmation, an ext updated) leaves its hold id under the old one as
// well: a lookup is a list of candidates, which the caller checks against
// the records it reads.

// ExtResellerReference is the ext key of a hold that holds the reseller's
// reference of it.
const ExtResellerReference = "resellerReference"

// Kinds of reference.
const (
	refReseller = "r"
	refSupplier = "s"
)

// MaxReferenceMatches bounds the hold ids one lookup returns.
const MaxReferenceMatches = 100

func (s *Service) refsKey(channel, kind, value string) string {
	return s.opts.KeyPrefix + "refs:{" + channel + "}:" + kind + ":" + value
}

// supplierRefAlphabet is Crockford's base32 (no I, L, O, U): a code read
// out over the phone is not misread.
var supplierRefAlphabet = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// SupplierReference is the reference Switchback gives the hold holdID of
// channel (and the booking made on it): 10 characters of Crockford
// base32 (50 bits of a SHA-256), the same for every read and replay.
func SupplierReference(channel, holdID string) string {
	sum := sha256.Sum256([]byte("switchback supplier reference\x00" + channel + "/" + holdID))
	return supplierRefAlphabet.EncodeToString(sum[:8])[:10]
}

// HoldsByResellerReference returns the ids of the channel's holds whose
// reseller reference is (or was) ref, sorted, at most
// MaxReferenceMatches.
func (s *Service) HoldsByResellerReference(ctx context.Context, channel, ref string) ([]string, error) {
	return s.holdsBy(ctx, channel, refReseller, ref)
}

// HoldsBySupplierReference returns the ids of the channel's holds whose
// SupplierReference is ref (at most one but for a collision).
func (s *Service) HoldsBySupplierReference(ctx context.Context, channel, ref string) ([]string, error) {
	return s.holdsBy(ctx, channel, refSupplier, ref)
}

func (s *Service) holdsBy(ctx context.Context, channel, kind, value string) ([]string, error) {
	if channel == "" || value == "" || len(value) > MaxRefLen {
		return nil, nil
	}
	ids, err := s.rdb.SMembers(ctx, s.refsKey(channel, kind, value)).Result()
	if err != nil {
		return nil, fmt.Errorf("read references: %w: %w", ErrUnavailable, err)
	}
	slices.Sort(ids)
	if len(ids) > MaxReferenceMatches {
		ids = ids[:MaxReferenceMatches]
	}
	return ids, nil
}

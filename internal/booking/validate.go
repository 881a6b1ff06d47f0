package booking

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/schemas"
)

// Limits of a request (spec doc 2 leaves them "not shown";
// docs/decisions-bookings.md).
const (
	MaxItems    = 100
	MaxQuantity = 1000
	MaxIDLen    = 128
	MaxRefLen   = 256
)

func checkID(field, id string, required bool) error {
	switch {
	case id == "" && required:
		return invalid(field, "is required")
	case len(id) > MaxIDLen:
		return invalid(field, fmt.Sprintf("is longer than %d characters", MaxIDLen))
	case strings.ContainsAny(id, "/?#% \t\r\n"):
		return invalid(field, "contains characters not allowed in an id")
	}
	return nil
}

// checkHoldDates refuses item times outside the window of internal/bounds
// (one year back to two years ahead): no hold at year 0001 or 9999, and
// nothing accepted that a DateTime column downstream could not hold.
func checkHoldDates(in schemas.Hold, now time.Time) error {
	for i, it := range in.Items {
		if !it.At.IsZero() {
			if err := bounds.Time(fmt.Sprintf("hold.items[%d].at", i), it.At, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBookingDates does the same for a booking's items, and bounds a
// traveler's age.
func checkBookingDates(in schemas.Booking, now time.Time) error {
	for i, it := range in.Items {
		f := fmt.Sprintf("booking.items[%d].", i)
		if !it.StartTime.IsZero() {
			if err := bounds.Time(f+"startTime", it.StartTime, now); err != nil {
				return err
			}
		}
		if tr := it.Traveler; tr != nil && tr.Age != nil {
			if err := bounds.Int(f+"traveler.age", int64(*tr.Age), 0, bounds.MaxAge); err != nil {
				return err
			}
		}
	}
	return nil
}

// itemRef is what an item points at.
type itemRef struct{ sid, pid, rid string }

// checkItems validates the item ids and quantities common to holds and
// bookings, and that every item is of one supplier (one partner serves a
// hold or booking). It returns that supplier.
func checkItems(prefix string, n int, item func(i int) (itemRef, int)) (string, error) {
	if n == 0 {
		return "", invalid(prefix+".items", "must have at least one item")
	}
	if n > MaxItems {
		return "", invalid(prefix+".items", fmt.Sprintf("has more than %d items", MaxItems))
	}
	var sid string
	for i := range n {
		ref, q := item(i)
		f := fmt.Sprintf("%s.items[%d].", prefix, i)
		for _, c := range []struct{ name, v string }{{"supplierId", ref.sid}, {"productId", ref.pid}, {"rateId", ref.rid}} {
			if err := checkID(f+c.name, c.v, true); err != nil {
				return "", err
			}
		}
		if q < 1 || q > MaxQuantity {
			return "", invalid(f+"quantity", fmt.Sprintf("must be an integer from 1 to %d", MaxQuantity))
		}
		if i == 0 {
			sid = ref.sid
		} else if ref.sid != sid {
			return "", invalid(f+"supplierId", "must be the supplier of the other items (one supplier per hold or booking)")
		}
	}
	return sid, nil
}

// checkVisible makes sure the channel sees every item's rate (bound, in
// its binding window): an unbound one does not exist for the reseller. It
// returns the rates as the channel reads them, the items' embedded Rate
// (contract.go).
func (s *Service) checkVisible(ctx context.Context, prefix, channel string, n int, item func(i int) (itemRef, int), now time.Time) (rateSet, error) {
	bound := map[[2]string]map[string]json.RawMessage{}
	out := rateSet{}
	for i := range n {
		ref, _ := item(i)
		k := [2]string{ref.sid, ref.pid}
		rates, ok := bound[k]
		if !ok {
			raw, err := s.opts.Catalog.AppendRates(ctx, nil, channel, ref.sid, ref.pid, now)
			rates = map[string]json.RawMessage{}
			switch {
			case isNotFound(err):
			case err != nil:
				return nil, fmt.Errorf("rates of %s/%s: %w", ref.sid, ref.pid, err)
			default:
				var rs []json.RawMessage
				if err := json.Unmarshal(raw, &rs); err != nil {
					return nil, fmt.Errorf("decode bound rates: %w", err)
				}
				for _, r := range rs {
					var id struct {
						ID string `json:"id"`
					}
					if err := json.Unmarshal(r, &id); err != nil {
						return nil, fmt.Errorf("decode bound rates: %w", err)
					}
					rates[id.ID] = r
				}
			}
			bound[k] = rates
		}
		r, ok := rates[ref.rid]
		if !ok {
			return nil, invalid(fmt.Sprintf("%s.items[%d].rateId", prefix, i), "is not a rate of a product bound to your channel")
		}
		out[ref] = r
	}
	return out, nil
}

func isNotFound(err error) bool {
	var c interface{ ErrorCode() string }
	return err != nil && errors.As(err, &c) && c.ErrorCode() == "NOT_FOUND"
}

// fingerprint is a digest of a create request: a retry with the same id
// must carry the same data. encoding/json writes struct fields in order
// and map keys sorted, so equal requests give equal digests.
func fingerprint(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// covers reports whether the hold's items cover the booking's: every
// booking item is matched by hold items of the same supplier, product and
// rate (and availability, and start time, where both name one) whose
// remaining quantity is enough. Spec doc 2 rule 5: "A hold is required and
// must succeed before a booking is created".
func covers(h schemas.Hold, items []schemas.BookingItem) (int, bool) {
	left := make([]int, len(h.Items))
	for i, it := range h.Items {
		left[i] = it.Quantity
	}
	for bi, b := range items {
		need := b.Quantity
		for hi, it := range h.Items {
			if need == 0 {
				break
			}
			if left[hi] == 0 || it.SupplierID != b.SupplierID || it.ProductID != b.ProductID || it.RateID != b.RateID {
				continue
			}
			if it.AvailabilityID != "" && b.AvailabilityID != "" && it.AvailabilityID != b.AvailabilityID {
				continue
			}
			if !it.At.IsZero() && !b.StartTime.IsZero() && !it.At.Equal(b.StartTime) {
				continue
			}
			take := min(need, left[hi])
			left[hi] -= take
			need -= take
		}
		if need > 0 {
			return bi, false
		}
	}
	return 0, true
}

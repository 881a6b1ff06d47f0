package availcache

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/schemas"
)

// Rate is one rate's availabilities of a window, as the cache holds them.
type Rate struct {
	RateID         string
	Availabilities []schemas.Availability
}

// Lookup reads the availabilities of the rates of product pid that the
// channel sees (rid alone when given) in [start, end) through the cache,
// as GET .../availabilities does: the same entries (one per rate and
// window), refreshed when older than MaxAge, served stale within the
// partner's expires when the refresh fails, a product or rate not bound
// is NOT_FOUND. stale reports an entry served stale. Other API dialects
// read availability through it (query/octo, issue 26), so that every
// reseller sees the same 5-minute cache. The window is truncated to the
// second and bounded by MaxWindow (an error that is not NOT_FOUND past
// it).
func (s *Service) Lookup(ctx context.Context, reqID, channel, sid, pid, rid string, start, end time.Time) ([]Rate, bool, error) {
	w := window{start: start.UTC().Truncate(time.Second), end: end.UTC().Truncate(time.Second)}
	if !w.start.Before(w.end) || w.end.Sub(w.start) > s.opts.MaxWindow {
		return nil, false, fmt.Errorf("availability window %s: %w", w, errWindow)
	}
	got, err := s.load(ctx, reqID, channel, sid, pid, rid, w)
	if err != nil {
		return nil, false, err
	}
	out := make([]Rate, len(got.rates))
	for i, r := range got.rates {
		as, err := got.Availabilities(i)
		if err != nil {
			return nil, false, err
		}
		out[i] = Rate{RateID: r, Availabilities: as}
	}
	return out, got.stale, nil
}

// errWindow: a Lookup window that is empty or longer than MaxWindow (the
// caller validates its own parameters first; this is the backstop).
var errWindow = domainerr.New("BAD_REQUEST", "the availability window is empty or too long")

// MaxWindow is the longest window a read may ask for (Options.MaxWindow).
func (s *Service) MaxWindow() time.Duration { return s.opts.MaxWindow }

// Load is the read of GET .../availabilities and .../availability
// (query/availapi): the entries of the rates of product pid that the
// channel sees (rid alone when given) for [start, end), as the cache holds
// them, so that the caller writes them out without decoding. It is
// Lookup without the window's bounds check (the caller has checked its
// parameters); the window is truncated to the second.
func (s *Service) Load(ctx context.Context, reqID, channel, sid, pid, rid string, start, end time.Time) (Entries, error) {
	return s.load(ctx, reqID, channel, sid, pid, rid, window{start: start.UTC().Truncate(time.Second), end: end.UTC().Truncate(time.Second)})
}

// Warm fills the cache for a window as a read would (benchmarks, demos).
func (s *Service) Warm(ctx context.Context, channel, sid, pid, rid string, start, end time.Time) error {
	_, err := s.Load(ctx, "warm", channel, sid, pid, rid, start, end)
	return err
}

// Len is the number of rates the read covers.
func (e Entries) Len() int { return len(e.rates) }

// RateID is the id of the i-th rate (rates in id order).
func (e Entries) RateID(i int) string { return e.rates[i] }

// Raw is the i-th rate's cached answer: a JSON array of
// schemas.Availability, not to be modified.
func (e Entries) Raw(i int) []byte { return e.entries[i].raw }

// Retrieved is the partner's retrieved of the i-th rate's entry.
func (e Entries) Retrieved(i int) time.Time { return e.entries[i].retrieved }

// Expires is the partner's expires of the i-th rate's entry.
func (e Entries) Expires(i int) time.Time { return e.entries[i].expires }

// Stale reports an entry served stale (the partner failed or was slow).
func (e Entries) Stale() bool { return e.stale }

// Availabilities decodes the i-th rate's entry (the local copy keeps
// entries decoded: then it is no work).
func (e Entries) Availabilities(i int) ([]schemas.Availability, error) {
	if as := e.entries[i].decoded; as != nil {
		return as, nil
	}
	var as []schemas.Availability
	if err := json.Unmarshal(e.entries[i].raw, &as); err != nil {
		return nil, fmt.Errorf("decode cached availability of rate %s: %w", e.rates[i], err)
	}
	return as, nil
}

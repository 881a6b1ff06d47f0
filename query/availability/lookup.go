package availability

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/internal/domainerr"
)

// Rate is one rate's availabilities of a window, as the cache holds them.
type Rate struct {
	RateID         string
	Availabilities []partner.Availability
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
		as := got.entries[i].decoded
		if as == nil {
			if err := json.Unmarshal(got.entries[i].raw, &as); err != nil {
				return nil, false, fmt.Errorf("decode cached availability of rate %s: %w", r, err)
			}
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

package availcache

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Refresh reads the product's availabilities in [start, end) from the
// supplier's system at once, whatever the cache holds (an operator's change
// notification: spec doc 3 rule 3, "polls ... at once"), writes them to the
// cache and publishes the snapshots that the availability processor diffs.
// rates are the rates to read: all of the product's, bound or not. The
// window is at most MaxWindow; the refresh has its own RefreshTimeout.
// When a reader's refresh of the same window holds the lock, Refresh waits
// for it and then reads the partner itself (the reader may have read
// before the change).
func (s *Service) Refresh(ctx context.Context, reqID, sid, pid string, rates []string, start, end time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := window{start: start.UTC().Truncate(time.Second), end: end.UTC().Truncate(time.Second)}
	if !w.start.Before(w.end) || w.end.Sub(w.start) > s.opts.MaxWindow {
		return fmt.Errorf("refresh window %s: empty or longer than %s", w, s.opts.MaxWindow)
	}
	if len(rates) == 0 {
		return nil
	}
	rates = slices.Sorted(slices.Values(rates))
	return s.refreshForced(reqID, sid, pid, "", rateSet("", rates), rates, w)
}

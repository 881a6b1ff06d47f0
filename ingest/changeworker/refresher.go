package changeworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsync"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/changerequest"
)

// Refresher is the Syncer of every connection kind: it refreshes a change
// notification's product from its supplier's system. A partner supplier (spec doc 2): every rate's
// availabilities over the window, read at once through the availability
// cache (which publishes the snapshots the processor diffs), in windows
// of at most 31 days. The partner interface has no price schedule read, so
// price-schedule mode fails for partner suppliers with that reason (their
// schedules are written by the operator). Booking-system and OCTO
// suppliers (spec doc 3) are ingest/bookingsync's: standard mode is its
// RefreshProduct, price-schedule mode its RefreshPriceSchedule.
type Refresher struct {
	Catalog Catalog
	// Partner refreshes a partner supplier's availabilities through the
	// availability cache (*internal/availcache.Service).
	Partner PartnerRefresher
	// BookingSync refreshes booking-system suppliers (*bookingsync.Syncer,
	// built with the process's Schedule so that its refreshes count for
	// the status-based schedule too).
	BookingSync BookingSync
}

// Catalog is what the refresher needs of the catalog; *catalogredis.Store
// implements it. It is what ingest/bookingsync needs (the booking-system
// refresh is delegated there), which covers the partner refresh's reads.
type Catalog interface {
	bookingsync.Catalog
}

// PartnerRefresher reads a partner's availabilities at once and publishes
// them as snapshots.
type PartnerRefresher interface {
	Refresh(ctx context.Context, reqID, sid, pid string, rates []string, start, end time.Time) error
}

// BookingSync refreshes one product of a booking-system supplier over a
// window of local dates (end exclusive); *bookingsync.Syncer implements it.
type BookingSync interface {
	RefreshProduct(ctx context.Context, sid, pid, startDate, endDate string) (bookingsync.Outcome, error)
	RefreshPriceSchedule(ctx context.Context, sid, pid, startDate, endDate string) (bookingsync.Outcome, error)
}

var _ Syncer = Refresher{}

// syncChunk bounds one partner read of a change notification.
const syncChunk = 31 * 24 * time.Hour

// Sync implements Syncer.
func (c Refresher) Sync(ctx context.Context, r changerequest.Request) (changerequest.Result, error) {
	sid, pid := r.CreateRequest.SupplierID, r.CreateRequest.ProductID
	sup, err := c.Catalog.Supplier(ctx, catalog.SystemScope(), sid)
	if err != nil {
		return changerequest.Result{}, fmt.Errorf("supplier %s: %w", sid, err)
	}
	switch sup.Connection.Kind {
	case catalog.ConnectionPartner:
	case catalog.ConnectionBookingSystem, catalog.ConnectionOCTO:
		return c.syncBookingSystem(ctx, r)
	default:
		return changerequest.Result{}, fmt.Errorf("refreshing from a %q connection is not available yet", sup.Connection.Kind)
	}
	if r.Mode == changerequest.ModePriceSchedule {
		return changerequest.Result{}, errors.New("the partner interface has no price schedule read; a partner supplier's price schedules are written by its operator (PUT .../rates/{rate_id}/priceschedule)")
	}
	rates, err := c.Catalog.Rates(ctx, catalog.SystemScope(), sid, pid)
	if err != nil {
		return changerequest.Result{}, fmt.Errorf("rates of %s/%s: %w", sid, pid, err)
	}
	ids := make([]string, len(rates))
	for i, rt := range rates {
		ids[i] = rt.ID
	}
	var res changerequest.Result
	start, end := r.Window()
	for from := start; from.Before(end); from = from.Add(syncChunk) {
		to := from.Add(syncChunk)
		if to.After(end) {
			to = end
		}
		if err := c.Partner.Refresh(ctx, r.ID, sid, pid, ids, from, to); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("availabilities %s..%s: %v", from.Format(time.DateOnly), to.Format(time.DateOnly), err))
			continue
		}
		res.Items += len(ids)
	}
	return res, nil
}

// syncBookingSystem hands a booking-system supplier's request to
// ingest/bookingsync: standard mode refreshes the product and its
// options' availabilities over the window, price-schedule mode re-caches
// the options' price schedules over it (spec doc 3, change notification
// rules 3 and 4).
func (c Refresher) syncBookingSystem(ctx context.Context, r changerequest.Request) (changerequest.Result, error) {
	bs := c.BookingSync
	if bs == nil {
		return changerequest.Result{}, errors.New("booking-system refresh is not configured")
	}
	sid, pid := r.CreateRequest.SupplierID, r.CreateRequest.ProductID
	refresh := bs.RefreshProduct
	if r.Mode == changerequest.ModePriceSchedule {
		refresh = bs.RefreshPriceSchedule
	}
	out, err := refresh(ctx, sid, pid, r.StartDate, r.EndDate)
	return changerequest.Result{Items: out.Items, Failures: out.Failures}, err
}

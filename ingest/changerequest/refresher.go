package changerequest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/changerequest"
	"github.com/switchbackhq/switchback/internal/principals"
)

// Refresher is the Syncer of every connection kind: it refreshes a change
// notification's product from its supplier's system. A partner supplier (spec doc 2): every rate's
// availabilities over the window, read at once through the availability
// cache (which publishes the snapshots the processor diffs), in windows
// of at most 31 days. The partner interface has no price schedule read, so
// price-schedule mode fails for partner suppliers with that reason (their
// schedules are written by the operator). Booking-system suppliers (spec
// doc 3) are refreshed by their client once it is wired (issue 6).
type Refresher struct {
	Catalog Catalog
	// Partner refreshes a partner supplier's availabilities through the
	// availability cache (*query/availability.Service).
	Partner PartnerRefresher
	// BookingSystem reads a booking system (*bookingsystem.Client).
	BookingSystem BookingSystem
}

// Catalog is what the refresher needs of the catalog; *catalog.Store
// implements it.
type Catalog interface {
	Supplier(ctx context.Context, p principals.Principal, sid string) (catalog.Supplier, error)
	Product(ctx context.Context, p principals.Principal, sid, pid string) (catalog.Product, error)
	Rates(ctx context.Context, p principals.Principal, sid, pid string) ([]catalog.Rate, error)
	Availabilities(ctx context.Context, p principals.Principal, sid, pid, rid string) (catalog.AvailabilitySet, error)
	PutAvailabilities(ctx context.Context, p principals.Principal, sid, pid, rid string, as []catalog.Availability) (catalog.AvailabilitySet, error)
}

// PartnerRefresher reads a partner's availabilities at once and publishes
// them as snapshots.
type PartnerRefresher interface {
	Refresh(ctx context.Context, reqID, sid, pid string, rates []string, start, end time.Time) error
}

// BookingSystem reads an option's availability from a booking system.
type BookingSystem interface {
	Availability(ctx context.Context, conn bookingsystem.Connection, in bookingsystem.AvailabilityRequest) ([]bookingsystem.Availability, []bookingsystem.Problem, error)
}

var _ Syncer = Refresher{}

var adminPrincipal = principals.Principal{Role: principals.RoleAdmin}

// syncChunk bounds one partner read of a change notification.
const syncChunk = 31 * 24 * time.Hour

// Sync implements Syncer.
func (c Refresher) Sync(ctx context.Context, r changerequest.Request) (changerequest.Result, error) {
	sid, pid := r.CreateRequest.SupplierID, r.CreateRequest.ProductID
	sup, err := c.Catalog.Supplier(ctx, adminPrincipal, sid)
	if err != nil {
		return changerequest.Result{}, fmt.Errorf("supplier %s: %w", sid, err)
	}
	switch sup.Connection.Kind {
	case catalog.ConnectionPartner:
	case catalog.ConnectionBookingSystem, catalog.ConnectionOCTO:
		return c.syncBookingSystem(ctx, r, sup)
	default:
		return changerequest.Result{}, fmt.Errorf("refreshing from a %q connection is not available yet", sup.Connection.Kind)
	}
	if r.Mode == changerequest.ModePriceSchedule {
		return changerequest.Result{}, errors.New("the partner interface has no price schedule read; a partner supplier's price schedules are written by its operator (PUT .../rates/{rate_id}/priceschedule)")
	}
	rates, err := c.Catalog.Rates(ctx, adminPrincipal, sid, pid)
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

// FreesaleCapacity is the capacity a FREESALE availability (spec doc 3:
// no limit) is stored with: more than any booking can ask for.
const FreesaleCapacity = 1_000_000

// syncBookingSystem refreshes a booking-system supplier's product (spec
// doc 3): each option (our rates) is read over the window and written to
// the catalog as the operator's availabilities of the rate, keeping those
// outside the window, so the availability processor diffs them and
// subscribers get the usual notifications. Statuses map to capacity:
// FREESALE unlimited (FreesaleCapacity), AVAILABLE and LIMITED their
// vacancies, SOLD_OUT and CLOSED 0. Items the client rejects by the data
// rules are reported, never half-applied (the rest of the option is).
func (c Refresher) syncBookingSystem(ctx context.Context, r changerequest.Request, sup catalog.Supplier) (changerequest.Result, error) {
	if r.Mode == changerequest.ModePriceSchedule {
		return changerequest.Result{}, errors.New("price-schedule mode from a booking system is not available yet")
	}
	sid, pid := sup.ID, r.CreateRequest.ProductID
	prod, err := c.Catalog.Product(ctx, adminPrincipal, sid, pid)
	if err != nil {
		return changerequest.Result{}, fmt.Errorf("product %s/%s: %w", sid, pid, err)
	}
	rates, err := c.Catalog.Rates(ctx, adminPrincipal, sid, pid)
	if err != nil {
		return changerequest.Result{}, fmt.Errorf("rates of %s/%s: %w", sid, pid, err)
	}
	conn, err := bookingsystem.ConnectionFor(sup)
	if err != nil {
		return changerequest.Result{}, err
	}
	start, end := r.Window()
	var res changerequest.Result
	for _, rt := range rates {
		avs, problems, err := c.BookingSystem.Availability(ctx, conn, bookingsystem.AvailabilityRequest{SupplierID: sid, ProductID: pid, OptionID: rt.ID,
			LocalDateStart: r.StartDate, LocalDateEnd: r.EndDate, AvailabilityType: prod.AvailabilityType})
		if err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("option %s: %v", rt.ID, err))
			continue
		}
		for _, p := range problems {
			res.Failures = append(res.Failures, fmt.Sprintf("option %s: %v", rt.ID, p))
		}
		cur, err := c.Catalog.Availabilities(ctx, adminPrincipal, sid, pid, rt.ID)
		if err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("option %s: read stored availabilities: %v", rt.ID, err))
			continue
		}
		next := make([]catalog.Availability, 0, len(cur.Availabilities)+len(avs))
		for _, a := range cur.Availabilities {
			if !a.Start.Before(end) || a.Start.Before(start) {
				next = append(next, a) // outside the refreshed window: kept
			}
		}
		for _, a := range avs {
			capacity := 0
			switch a.Status {
			case bookingsystem.Freesale:
				capacity = FreesaleCapacity
			case bookingsystem.Available, bookingsystem.Limited:
				if a.Vacancies != nil {
					capacity = *a.Vacancies
				}
			}
			next = append(next, catalog.Availability{ID: bookingsystem.CatalogAvailabilityID(a.ID), Start: a.LocalDateTimeStart, End: a.LocalDateTimeEnd, Capacity: capacity})
		}
		if _, err := c.Catalog.PutAvailabilities(ctx, adminPrincipal, sid, pid, rt.ID, next); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("option %s: write availabilities: %v", rt.ID, err))
			continue
		}
		res.Items += len(avs)
	}
	return res, nil
}

package supplierbooking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/platform/flight"
)

// Option units of the booking systems, kept by the Router. Every hold
// needs the units of its options (doc 3: a booking's unitItems name unit
// types), which only the booking system knows: a v2 one lists them with
// its products (GET /suppliers/{s}/products: the whole list, up to
// bookingsystem.MaxResponseBytes, 8 MiB), an OCTO one per product (GET
// /products/{id}). They rarely change, so they are kept UnitsTTL, read
// once for concurrent holds (singleflight: a v2 supplier's list, an OCTO
// product), and read again once when a booking system refuses a
// createBooking (it may have renamed them) or lacks an option they were
// asked for (it may have added it).

const (
	// UnitsTTL is how long the units read are used. Short: a booking
	// system that changed them refuses holds at most this long, or once
	// (a refusal reads them again).
	UnitsTTL = 5 * time.Minute
	// unitsMaxProducts bounds the products whose units are kept (a few
	// hundred bytes each); past it the expired ones, then the oldest, go.
	unitsMaxProducts = 10_000
	// unitsMinAge: a refusal or a missing option reads the units again
	// only when they are older, so that holds the booking system refuses
	// for another reason do not each read a product list.
	unitsMinAge = 30 * time.Second
)

type unitKey struct{ system, supplier, product string }

// unitEntry is a product's option units (options nil: the booking system
// does not offer the product), read at at.
type unitEntry struct {
	options map[string][]bookingsystem.Unit
	at      time.Time
}

type unitCache struct {
	mu      sync.Mutex
	entries map[unitKey]unitEntry
	flights flight.Group[map[string]unitEntry]
}

// systemKey tells booking systems apart: a supplier whose connection
// changed reads its units again.
func systemKey(conn bookingsystem.Connection) string { return conn.Dialect + "\x00" + conn.Endpoint }

func (c *unitCache) get(k unitKey, now time.Time) (unitEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || now.Sub(e.at) >= UnitsTTL {
		return unitEntry{}, false
	}
	return e, true
}

func (c *unitCache) put(k unitKey, e unitEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[unitKey]unitEntry{}
	}
	if _, ok := c.entries[k]; !ok && len(c.entries) >= unitsMaxProducts {
		for x, old := range c.entries {
			if now.Sub(old.at) >= UnitsTTL {
				delete(c.entries, x)
			}
		}
		if len(c.entries) >= unitsMaxProducts {
			var oldest unitKey
			first := true
			for x, old := range c.entries {
				if first || old.at.Before(c.entries[oldest].at) {
					oldest, first = x, false
				}
			}
			delete(c.entries, oldest)
		}
	}
	c.entries[k] = e
}

// productUnits is product pid's option units at s's booking system: the
// ones kept unless fresh is asked or they are past UnitsTTL, else read
// now, once for all who ask meanwhile (a v2 supplier's whole list, which
// keeps every product of it; an OCTO product). The read outlives a caller
// that stops waiting (its own deadline).
func (r *Router) productUnits(ctx context.Context, s supplier, pid string, fresh bool) (unitEntry, error) {
	sys := systemKey(s.conn)
	key := unitKey{sys, s.sup.ID, pid}
	if !fresh {
		if e, ok := r.units.get(key, r.opts.Clock()); ok {
			return e, nil
		}
	}
	fkey := "v2\x00" + sys + "\x00" + s.sup.ID
	if s.conn.Dialect == bookingsystem.DialectOCTO {
		fkey = "octo\x00" + sys + "\x00" + s.sup.ID + "\x00" + pid
	}
	call, _ := r.units.flights.Do(fkey, func() (map[string]unitEntry, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SettleTimeout)
		defer cancel()
		return r.readUnits(fctx, s, pid)
	})
	select {
	case <-call.Done():
		got, err := call.Result()
		if err != nil {
			return unitEntry{}, err
		}
		if e, ok := got[pid]; ok {
			return e, nil
		}
		// Read for another product of the supplier (v2): this one is not
		// offered.
		e := unitEntry{at: r.opts.Clock()}
		r.units.put(key, e, e.at)
		return e, nil
	case <-ctx.Done():
		return unitEntry{}, fmt.Errorf("units of product %s: %w", pid, ctx.Err())
	}
}

// readUnits reads the units from the booking system and keeps them: of
// every product of a v2 supplier, of product pid of an OCTO one (a product
// the booking system refuses or does not know has none).
func (r *Router) readUnits(ctx context.Context, s supplier, pid string) (map[string]unitEntry, error) {
	now := r.opts.Clock()
	sys := systemKey(s.conn)
	out := map[string]unitEntry{}
	if s.conn.Dialect == bookingsystem.DialectOCTO {
		p, ps, err := r.opts.BookingSystem.Product(ctx, s.conn, s.sup.ID, pid, nil)
		switch {
		case errors.Is(err, bookingsystem.ErrNotFound) || (err == nil && ps != nil):
			out[pid] = unitEntry{at: now}
		case err != nil:
			return nil, fmt.Errorf("product %s of %s: %w", pid, s.sup.ID, err)
		default:
			out[pid] = unitEntry{options: optionsOf(p), at: now}
		}
	} else {
		ps, _, err := r.opts.BookingSystem.Products(ctx, s.conn, s.sup.ID, nil)
		if err != nil {
			return nil, fmt.Errorf("products of %s: %w", s.sup.ID, err)
		}
		for _, p := range ps {
			out[p.ID] = unitEntry{options: optionsOf(p), at: now}
		}
		if _, ok := out[pid]; !ok {
			out[pid] = unitEntry{at: now}
		}
	}
	for id, e := range out {
		r.units.put(unitKey{sys, s.sup.ID, id}, e, now)
	}
	return out, nil
}

func optionsOf(p bookingsystem.Product) map[string][]bookingsystem.Unit {
	m := make(map[string][]bookingsystem.Unit, len(p.Options))
	for _, o := range p.Options {
		if len(o.Units) > 0 {
			m[o.ID] = o.Units
		}
	}
	return m
}

// unitLookup is one operation's use of the units kept: each product's
// units are read again at most once by it.
type unitLookup struct {
	r  *Router
	s  supplier
	mu sync.Mutex
	// read: products whose units this operation read from the booking
	// system (they are current: never read again by it).
	read map[string]bool
}

func (r *Router) unitLookup(s supplier) *unitLookup {
	return &unitLookup{r: r, s: s, read: map[string]bool{}}
}

// option is the units of option oid of product pid (none: the booking
// system does not offer it), read again once when the ones kept lack it.
func (l *unitLookup) option(ctx context.Context, pid, oid string) ([]bookingsystem.Unit, error) {
	e, err := l.r.productUnits(ctx, l.s, pid, false)
	if err != nil {
		return nil, err
	}
	if us := e.options[oid]; len(us) > 0 {
		return us, nil
	}
	if e, err = l.again(ctx, pid, e); err != nil || e.at.IsZero() {
		return nil, err
	}
	return e.options[oid], nil
}

// refreshed is the units of option oid of product pid read again after
// the booking system refused a createBooking that named them; ok is false
// when they are not read again (this operation read them already, or they
// are younger than unitsMinAge) or lack the option.
func (l *unitLookup) refreshed(ctx context.Context, pid, oid string) ([]bookingsystem.Unit, bool) {
	e, err := l.r.productUnits(ctx, l.s, pid, false)
	if err != nil {
		return nil, false
	}
	if e, err = l.again(ctx, pid, e); err != nil || e.at.IsZero() || len(e.options[oid]) == 0 {
		return nil, false
	}
	return e.options[oid], true
}

// again reads product pid's units from the booking system, unless this
// operation did already or kept (the units it has) is younger than
// unitsMinAge: then a zero entry.
func (l *unitLookup) again(ctx context.Context, pid string, kept unitEntry) (unitEntry, error) {
	l.mu.Lock()
	done := l.read[pid]
	l.read[pid] = true
	l.mu.Unlock()
	if done || l.r.opts.Clock().Sub(kept.at) < unitsMinAge {
		return unitEntry{}, nil
	}
	return l.r.productUnits(ctx, l.s, pid, true)
}

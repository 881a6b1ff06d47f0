package bookingsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/ingest/cronsync"
	"github.com/switchbackhq/switchback/internal/catalog"
)

var _ cronsync.Syncer = (*Syncer)(nil)

// maxNameLen is the catalog's bound on names (internal/catalog: 1000).
const maxNameLen = 1000

// conflictRetries bounds how often a bulk write is redone after an
// operator changed one of its items between our read and our write.
const conflictRetries = 3

// PlaceholderName is the name a product or rate gets when the booking
// system brings it first: the catalog needs a name, resellers see it, and
// doc 3 says internalName "MUST NOT be shown to customers", so it is the
// item's id (what the operator's own system calls it), never the
// internalName. When the id happens to equal the internalName, it is
// kind and a hash of the id instead. The operator is expected to rename
// it; a synchronization never touches a name again.
func PlaceholderName(kind, id, internalName string) string {
	name := id
	if len(name) > maxNameLen {
		n := maxNameLen
		for n > 0 && !utf8.RuneStart(name[n]) {
			n--
		}
		name = name[:n]
	}
	if strings.EqualFold(strings.TrimSpace(name), strings.TrimSpace(internalName)) {
		sum := sha256.Sum256([]byte(id))
		name = kind + " " + hex.EncodeToString(sum[:4])
	}
	return name
}

// MergeProduct is the product to write for bp, a product the booking
// system returned, given the stored one (nil: new). The fields the
// booking system owns (doc 3's Product: internalName, reference, locale,
// timeZone, instantConfirmation, instantDelivery, availabilityType,
// deliveryFormats, deliveryMethods, redemptionMethod) come from bp; every
// other field (name, title, description, code, partnerId, hours,
// locations, ext, extensions) is kept from the stored product, or, for a
// new one, empty but for its PlaceholderName. The version given is the
// stored one (0 for a new product), so an operator's write between our
// read and our write is a conflict, never silently overwritten.
func MergeProduct(bp bookingsystem.Product, cur *catalog.Product) catalog.ProductInput {
	var d catalog.ProductData
	var version int64
	if cur != nil {
		d, version = cur.ProductData, cur.Version
	} else {
		d.ID, d.Name = bp.ID, PlaceholderName("Product", bp.ID, bp.InternalName)
	}
	d.InternalName = bp.InternalName
	d.Reference = ""
	if bp.Reference != nil {
		d.Reference = *bp.Reference
	}
	d.Locale, d.TimeZone = bp.Locale, bp.TimeZone
	d.InstantConfirmation, d.InstantDelivery = bp.InstantConfirmation, bp.InstantDelivery
	d.AvailabilityType = bp.AvailabilityType
	d.DeliveryFormats, d.DeliveryMethods = nonEmpty(bp.DeliveryFormats), nonEmpty(bp.DeliveryMethods)
	d.RedemptionMethod = bp.RedemptionMethod
	return catalog.ProductInput{ProductData: d, Version: &version}
}

// nonEmpty keeps the catalog's spelling of an empty list (absent), so an
// unchanged product compares equal byte for byte.
func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// merge writes a supplier's products and options into the catalog in
// bulk (catalog.MaxBulk at a time), item-level failures collected in errs.
type merge struct {
	s      *Syncer
	sup    catalog.Supplier
	stored map[string]catalog.Product
	errs   []string
}

// landed is a product of the booking system as written.
type landed struct {
	bp     bookingsystem.Product
	stored catalog.Product
}

func (s *Syncer) newMerge(sup catalog.Supplier) *merge { return &merge{s: s, sup: sup} }

func (m *merge) loadProducts(ctx context.Context) error {
	ps, err := m.s.o.Catalog.Products(ctx, admin, m.sup.ID)
	if err != nil {
		return fmt.Errorf("supplier %s: read stored products: %w", m.sup.ID, err)
	}
	m.stored = make(map[string]catalog.Product, len(ps))
	for _, p := range ps {
		m.stored[p.ID] = p
	}
	return nil
}

// itemIndex reads the index of a bulk FieldError's field ("products[3].locale"
// → 3, "locale").
func itemIndex(field, list string) (int, string, bool) {
	rest, ok := strings.CutPrefix(field, list+"[")
	if !ok {
		return 0, "", false
	}
	n, after, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, "", false
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return 0, "", false
	}
	return i, strings.TrimPrefix(after, "."), true
}

// upsertProducts merges and writes bps. A product the catalog refuses
// (its id, or a value the client does not check, such as a locale) is one
// entry of errs and the others are written; the error is fatal only.
func (m *merge) upsertProducts(ctx context.Context, bps []bookingsystem.Product) ([]landed, error) {
	var out []landed
	var valid []bookingsystem.Product
	for _, bp := range bps {
		if !catalog.ValidID(bp.ID) {
			m.errs = append(m.errs, fmt.Sprintf("product %s/%q: the id cannot be a catalog id (letters, digits, '-', '.', '_', '~'); not synchronized", m.sup.ID, shortID(bp.ID)))
			m.s.metrics.products.WithLabelValues("failed").Inc()
			continue
		}
		valid = append(valid, bp)
	}
	for len(valid) > 0 {
		n := min(len(valid), catalog.MaxBulk)
		chunk := valid[:n]
		valid = valid[n:]
		for attempt := 0; len(chunk) > 0; attempt++ {
			ins := make([]catalog.ProductInput, len(chunk))
			for i, bp := range chunk {
				var cur *catalog.Product
				if p, ok := m.stored[bp.ID]; ok {
					cur = &p
				}
				ins[i] = MergeProduct(bp, cur)
			}
			written, err := m.s.o.Catalog.UpsertProducts(ctx, admin, m.sup.ID, ins)
			if err == nil {
				for i, p := range written {
					prev, had := m.stored[p.ID]
					switch {
					case !had:
						m.s.metrics.products.WithLabelValues("created").Inc()
					case prev.Version != p.Version:
						m.s.metrics.products.WithLabelValues("updated").Inc()
					default:
						m.s.metrics.products.WithLabelValues("unchanged").Inc()
					}
					m.stored[p.ID] = p
					out = append(out, landed{bp: chunk[i], stored: p})
				}
				break
			}
			var fe *catalog.FieldError
			if errors.As(err, &fe) {
				if i, field, ok := itemIndex(fe.Field, "products"); ok && i < len(chunk) {
					m.errs = append(m.errs, fmt.Sprintf("product %s: the catalog refuses it: %s %s", productRef(m.sup.ID, chunk[i].ID), field, fe.Reason))
					m.s.metrics.products.WithLabelValues("failed").Inc()
					chunk = append(chunk[:i:i], chunk[i+1:]...)
					continue
				}
			}
			if errors.Is(err, catalog.ErrConflict) && attempt < conflictRetries {
				if err := m.loadProducts(ctx); err != nil {
					return out, err
				}
				continue
			}
			if fatal(ctx, err) {
				return out, fmt.Errorf("supplier %s: write products: %w", m.sup.ID, err)
			}
			for _, bp := range chunk {
				m.errs = append(m.errs, fmt.Sprintf("product %s: write: %v", productRef(m.sup.ID, bp.ID), err))
				m.s.metrics.products.WithLabelValues("failed").Inc()
			}
			break
		}
	}
	return out, nil
}

// upsertOptions writes the options of l as rates (MergeRate: the new
// ones created, the stored ones whose booking-system terms changed
// updated, the others left alone) and returns the options that are rates
// now (present) and the product's rates that are no longer among its
// options (gone). The error is fatal only.
func (m *merge) upsertOptions(ctx context.Context, l landed) (present, gone []string, err error) {
	sid, pid := m.sup.ID, l.stored.ID
	rates, err := m.s.o.Catalog.Rates(ctx, admin, sid, pid)
	if err != nil {
		if fatal(ctx, err) {
			return nil, nil, fmt.Errorf("product %s: read rates: %w", productRef(sid, pid), err)
		}
		m.errs = append(m.errs, fmt.Sprintf("product %s: read rates: %v", productRef(sid, pid), err))
		return nil, nil, nil
	}
	stored := make(map[string]catalog.Rate, len(rates))
	for _, r := range rates {
		stored[r.ID] = r
	}
	offered := make(map[string]bool, len(l.bp.Options))
	var writes []bookingsystem.Option
	for _, o := range l.bp.Options {
		if !catalog.ValidID(o.ID) {
			m.errs = append(m.errs, fmt.Sprintf("option %s/%s/%q: the id cannot be a catalog id (letters, digits, '-', '.', '_', '~'); not synchronized", sid, pid, shortID(o.ID)))
			continue
		}
		if offered[o.ID] {
			continue // the client rejects a product whose options repeat an id
		}
		offered[o.ID] = true
		if cur, ok := stored[o.ID]; ok && sameTerms(MergeRate(l.bp, o, &cur), cur) {
			present = append(present, o.ID)
			continue
		}
		writes = append(writes, o)
	}
	for _, r := range rates {
		if !offered[r.ID] {
			gone = append(gone, r.ID)
		}
	}
	for len(writes) > 0 {
		n := min(len(writes), catalog.MaxBulk)
		chunk := writes[:n]
		writes = writes[n:]
		for attempt := 0; len(chunk) > 0; attempt++ {
			ins := make([]catalog.RateInput, len(chunk))
			for i, o := range chunk {
				var cur *catalog.Rate
				if r, ok := stored[o.ID]; ok {
					cur = &r
				}
				ins[i] = MergeRate(l.bp, o, cur)
			}
			_, err := m.s.o.Catalog.UpsertRates(ctx, admin, sid, pid, ins)
			if err == nil {
				for _, o := range chunk {
					present = append(present, o.ID)
				}
				break
			}
			var fe *catalog.FieldError
			if errors.As(err, &fe) {
				if i, field, ok := itemIndex(fe.Field, "rates"); ok && i < len(chunk) {
					m.errs = append(m.errs, fmt.Sprintf("option %s: the catalog refuses it: %s %s", optionRef(sid, pid, chunk[i].ID), field, fe.Reason))
					if _, had := stored[chunk[i].ID]; had {
						present = append(present, chunk[i].ID) // still a rate: its availability is refreshed
					}
					chunk = append(chunk[:i:i], chunk[i+1:]...)
					continue
				}
			}
			if errors.Is(err, catalog.ErrConflict) && attempt < conflictRetries {
				// Written meanwhile (by the operator, or another run):
				// merged again with what is stored now.
				rs, rerr := m.s.o.Catalog.Rates(ctx, admin, sid, pid)
				if rerr != nil {
					return present, gone, fmt.Errorf("product %s: read rates: %w", productRef(sid, pid), rerr)
				}
				clear(stored)
				for _, r := range rs {
					stored[r.ID] = r
				}
				continue
			}
			if fatal(ctx, err) {
				return present, gone, fmt.Errorf("product %s: write rates: %w", productRef(sid, pid), err)
			}
			for _, o := range chunk {
				m.errs = append(m.errs, fmt.Sprintf("option %s: write: %v", optionRef(sid, pid, o.ID), err))
				if _, had := stored[o.ID]; had {
					present = append(present, o.ID)
				}
			}
			break
		}
	}
	return present, gone, nil
}

func shortID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}

// productProblem is the error text of a product of supplier sid the
// client rejected.
func productProblem(sid string, p bookingsystem.Problem) string {
	if catalog.ValidID(p.ID) {
		return fmt.Sprintf("product %s: rejected by data rule %s; not synchronized", productRef(sid, p.ID), p.Rule)
	}
	return fmt.Sprintf("%s rejected by data rule %s (spec doc 3); not synchronized", problemItem(p), p.Rule)
}

// SyncSupplier is the scheduled full synchronization of one supplier
// (cronsync.Syncer; spec doc 3, "What the service does" 4): the
// supplier's products are read from its booking system with their options
// and merged into the catalog (MergeProduct, NewRate), then every option's
// availability over the local dates [from, to) is refreshed as
// RefreshProduct does. Price schedules are not read (doc 3: "price
// schedule data is not synchronized by it").
//
// What was read is counted (Result.Products, Options, Availabilities).
// Item-level failures are Result.Errors entries ("product S1/P1: ...",
// "option S1/P1/O1: ...": supplier, product and option ids) and the rest
// still syncs: a product the client
// rejects by a data rule, one the catalog refuses, an option whose read
// fails. A product or option the booking system no longer returns is kept
// in the catalog (it may be bound to channels; deleting it is the
// operator's decision), reported, and its availability over the window
// emptied, so nothing the booking system stopped offering is sold. The
// supplier record itself is the operator's (name, code, connection) and
// is not changed. An error (the supplier or its product list cannot be
// read, the catalog is unavailable, ctx ended) fails the whole
// synchronization; the Result then holds what was done before.
func (s *Syncer) SyncSupplier(ctx context.Context, sid string, from, to time.Time) (cronsync.Result, error) {
	var res cronsync.Result
	started := time.Now()
	sup, conn, err := s.resolve(ctx, sid)
	if err != nil {
		return res, err
	}
	prods, problems, err := s.o.Client.Products(ctx, conn, sid, Capabilities)
	if err != nil {
		return res, fmt.Errorf("supplier %s: read products: %w", sid, err)
	}
	res.Products = len(prods)
	offered := make(map[string]bool, len(prods)+len(problems))
	for _, p := range prods {
		res.Options += len(p.Options)
		offered[p.ID] = true
	}
	for _, p := range problems {
		res.Errors = append(res.Errors, productProblem(sid, p))
		offered[p.ID] = true // rejected, not gone: its catalog data is left as it is
		s.metrics.products.WithLabelValues("failed").Inc()
	}

	m := s.newMerge(sup)
	if err := m.loadProducts(ctx); err != nil {
		return res, err
	}
	var goneProducts []catalog.Product
	for _, p := range m.stored {
		if !offered[p.ID] {
			goneProducts = append(goneProducts, p)
		}
	}
	ls, err := m.upsertProducts(ctx, prods)
	res.Errors = append(res.Errors, m.errs...)
	m.errs = nil
	if err != nil {
		return res, err
	}

	// The window is as many days as [from, to) holds, from each product's
	// local today at the time the synchronization runs: from and to are
	// UTC dates of when the run was enqueued, and a product west of UTC
	// is still on the day before at 00:00 UTC (its today must be read).
	days := max(1, int(to.Sub(from).Round(24*time.Hour)/(24*time.Hour)))
	now := s.o.Clock()
	windowOf := func(t target) []DayRange {
		today := t.today(now)
		return []DayRange{{Start: today, End: addDays(today, days)}}
	}
	type job struct {
		t      target
		window []DayRange
		gone   bool
	}
	var jobs []job
	for _, l := range ls {
		present, gone, err := m.upsertOptions(ctx, l)
		res.Errors = append(res.Errors, m.errs...)
		m.errs = nil
		if err != nil {
			return res, err
		}
		t := target{conn: conn, sup: sup, prod: l.stored, loc: s.location(l.stored.TimeZone)}
		window := windowOf(t)
		for _, oid := range present {
			t.optionID = oid
			jobs = append(jobs, job{t: t, window: window})
		}
		for _, oid := range gone {
			res.Errors = append(res.Errors, fmt.Sprintf("option %s: no longer an option of product %s in the booking system; kept in the catalog, its availability from %s until %s emptied",
				optionRef(sid, l.stored.ID, oid), l.stored.ID, window[0].Start, window[0].End))
			t.optionID = oid
			jobs = append(jobs, job{t: t, window: window, gone: true})
		}
	}
	slices.SortFunc(goneProducts, func(a, b catalog.Product) int { return strings.Compare(a.ID, b.ID) })
	for _, p := range goneProducts {
		s.metrics.products.WithLabelValues("missing").Inc()
		t := target{conn: conn, sup: sup, prod: p, loc: s.location(p.TimeZone)}
		window := windowOf(t)
		res.Errors = append(res.Errors, fmt.Sprintf("product %s: no longer offered by the booking system; kept in the catalog (delete or unbind it there), its availability from %s until %s emptied",
			productRef(sid, p.ID), window[0].Start, window[0].End))
		rates, err := s.o.Catalog.Rates(ctx, admin, sid, p.ID)
		if err != nil {
			if fatal(ctx, err) {
				return res, fmt.Errorf("product %s: read rates: %w", productRef(sid, p.ID), err)
			}
			res.Errors = append(res.Errors, fmt.Sprintf("product %s: read rates: %v", productRef(sid, p.ID), err))
			continue
		}
		for _, r := range rates {
			t.optionID = r.ID
			jobs = append(jobs, job{t: t, window: window, gone: true})
		}
	}

	// Availability, option by option, Concurrency at a time; results are
	// reported in job order whatever order they finish in.
	results := make([]optionResult, len(jobs))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fatalErr error
	var once sync.Once
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(s.o.Concurrency, max(len(jobs), 1)) {
		wg.Go(func() {
			for i := range next {
				r := s.refreshOption(rctx, jobs[i].t, jobs[i].window, TriggerFullSync, jobs[i].gone)
				results[i] = r
				if r.err != nil && fatal(rctx, r.err) {
					once.Do(func() { fatalErr = r.err; cancel() })
				}
			}
		})
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-rctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for i, r := range results {
		if !jobs[i].gone {
			res.Availabilities += r.read
		}
		if fatalErr != nil && errors.Is(r.err, context.Canceled) {
			continue // cut short by the failure below, not an item's own
		}
		res.Errors = append(res.Errors, r.failures...)
	}
	if fatalErr == nil && ctx.Err() != nil {
		fatalErr = ctx.Err()
	}
	if fatalErr != nil {
		if errors.Is(fatalErr, context.Canceled) && ctx.Err() != nil {
			fatalErr = ctx.Err()
		}
		return res, fmt.Errorf("supplier %s: %w", sid, fatalErr)
	}
	s.log.Info("supplier synchronized from its booking system", "supplier", sid, "days", days,
		"products", res.Products, "options", res.Options, "availabilities", res.Availabilities, "errors", len(res.Errors),
		"took", time.Since(started).Round(time.Millisecond), "connection", conn.String())
	return res, nil
}

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
	ps, err := m.s.o.Catalog.Products(ctx, catalog.SystemScope(), m.sup.ID)
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
			written, err := m.s.o.Catalog.UpsertProducts(ctx, catalog.SystemScope(), m.sup.ID, ins)
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
	pos, err := m.upsertOptionsOf(ctx, []landed{l})
	if len(pos) == 0 {
		return nil, nil, err
	}
	m.errs = append(m.errs, pos[0].errs...)
	return pos[0].present, pos[0].gone, err
}

// productOptions is one landed product's options as a synchronization
// planned and wrote them, with the item-level errors that are its own.
type productOptions struct {
	l       landed
	stored  map[string]catalog.Rate // nil: its rates could not be read
	present []string                // options that are rates now
	gone    []string                // rates no longer among its options
	writes  []bookingsystem.Option  // options to write (new or changed terms)
	errs    []string
	written bool // its writes are done (none to do included)
}

// upsertOptionsOf writes the options of many landed products as
// upsertOptions does, in supplier-wide bulks: the options to write of as
// many products as catalog.MaxBulk rates hold go in one
// UpsertSupplierRates, one lock and one publish. One write per product
// would run a cold synchronization's hundreds of products one after the
// other behind the supplier's lock. A bulk the catalog refuses for an
// item's sake (a field it refuses, a conflict, a product deleted
// meanwhile) is written again product by product (writeOptions), which
// sorts out the items exactly as before. The answer is one entry per
// product of ls, in order, as far as the run got; the error is fatal only.
func (m *merge) upsertOptionsOf(ctx context.Context, ls []landed) ([]*productOptions, error) {
	pos := make([]*productOptions, 0, len(ls))
	for _, l := range ls {
		po, err := m.planProduct(ctx, l)
		if err != nil {
			// The products planned before are written first, as a run
			// product by product had written them before reaching this one.
			if werr := m.writePlanned(ctx, pos); werr != nil {
				return pos, werr
			}
			return pos, err
		}
		pos = append(pos, po)
	}
	return pos, m.writePlanned(ctx, pos)
}

// writePlanned writes the planned options of pos in order, as many
// products in one bulk as catalog.MaxBulk rates hold, and marks each
// product written once its writes are done; the first fatal failure
// stops it.
func (m *merge) writePlanned(ctx context.Context, pos []*productOptions) error {
	var bulk []*productOptions
	n := 0
	for _, po := range pos {
		switch {
		case len(po.writes) == 0:
			po.written = true
			continue
		case len(po.writes) > catalog.MaxBulk:
			if err := m.writeBulk(ctx, bulk); err != nil {
				return err
			}
			bulk, n = bulk[:0], 0
			if err := m.writeProduct(ctx, po); err != nil {
				return err
			}
			continue
		case n+len(po.writes) > catalog.MaxBulk:
			if err := m.writeBulk(ctx, bulk); err != nil {
				return err
			}
			bulk, n = bulk[:0], 0
		}
		bulk = append(bulk, po)
		n += len(po.writes)
	}
	return m.writeBulk(ctx, bulk)
}

// planProduct reads the stored rates of l and sorts its options
// (planOptions). A read that fails for other than the catalog being
// unavailable is an entry of the product's errs, and nothing is written.
func (m *merge) planProduct(ctx context.Context, l landed) (*productOptions, error) {
	sid, pid := m.sup.ID, l.stored.ID
	po := &productOptions{l: l}
	rates, err := m.s.o.Catalog.Rates(ctx, catalog.SystemScope(), sid, pid)
	if err != nil {
		if fatal(ctx, err) {
			return nil, fmt.Errorf("product %s: read rates: %w", productRef(sid, pid), err)
		}
		po.errs = append(po.errs, fmt.Sprintf("product %s: read rates: %v", productRef(sid, pid), err))
		return po, nil
	}
	po.stored = make(map[string]catalog.Rate, len(rates))
	for _, r := range rates {
		po.stored[r.ID] = r
	}
	po.present, po.gone, po.writes = m.planOptions(l, rates, po.stored)
	po.errs, m.errs = append(po.errs, m.errs...), nil
	return po, nil
}

// writeBulk writes the planned options of bulk (at most catalog.MaxBulk
// in all) in one UpsertSupplierRates; refused for an item's sake, product
// by product.
func (m *merge) writeBulk(ctx context.Context, bulk []*productOptions) error {
	switch len(bulk) {
	case 0:
		return nil
	case 1:
		return m.writeProduct(ctx, bulk[0]) // one product: its own write, as before
	}
	ins := make([]catalog.ProductRates, len(bulk))
	for i, po := range bulk {
		rs := make([]catalog.RateInput, len(po.writes))
		for j, o := range po.writes {
			var cur *catalog.Rate
			if r, ok := po.stored[o.ID]; ok {
				cur = &r
			}
			rs[j] = MergeRate(po.l.bp, o, cur)
		}
		ins[i] = catalog.ProductRates{ProductID: po.l.stored.ID, Rates: rs}
	}
	_, err := m.s.o.Catalog.UpsertSupplierRates(ctx, catalog.SystemScope(), m.sup.ID, ins)
	if err == nil {
		for _, po := range bulk {
			for _, o := range po.writes {
				po.present = append(po.present, o.ID)
			}
			po.written = true
		}
		return nil
	}
	if fatal(ctx, err) {
		return fmt.Errorf("product %s and %d more: write rates: %w", productRef(m.sup.ID, bulk[0].l.stored.ID), len(bulk)-1, err)
	}
	for _, po := range bulk {
		if err := m.writeProduct(ctx, po); err != nil {
			return err
		}
	}
	return nil
}

// writeProduct writes the planned options of one product, catalog.MaxBulk
// at a time (writeOptions).
func (m *merge) writeProduct(ctx context.Context, po *productOptions) error {
	writes := po.writes
	for len(writes) > 0 {
		n := min(len(writes), catalog.MaxBulk)
		chunk := writes[:n]
		writes = writes[n:]
		still, err := m.writeOptions(ctx, po.l, po.stored, chunk)
		po.present = append(po.present, still...)
		po.errs, m.errs = append(po.errs, m.errs...), nil
		if err != nil {
			return err
		}
	}
	po.written = true
	return nil
}

// planOptions sorts the product's options: the stored rates whose terms
// are unchanged (present, not written), the options to write, and the
// stored rates no longer among the options (gone). An option whose id
// cannot be a catalog id is an entry of errs.
func (m *merge) planOptions(l landed, rates []catalog.Rate, stored map[string]catalog.Rate) (present, gone []string, writes []bookingsystem.Option) {
	sid, pid := m.sup.ID, l.stored.ID
	offered := make(map[string]bool, len(l.bp.Options))
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
	return present, gone, writes
}

// writeOptions writes one bulk of options as rates, merged with stored
// (which it re-reads on a conflict), and returns those that are rates
// afterwards (present). An option the catalog refuses is an entry of
// errs and the others are written again; a write that fails for other
// than the catalog being unavailable is an entry per option. The error is
// fatal only.
func (m *merge) writeOptions(ctx context.Context, l landed, stored map[string]catalog.Rate, chunk []bookingsystem.Option) (present []string, err error) {
	sid, pid := m.sup.ID, l.stored.ID
	for attempt := 0; len(chunk) > 0; attempt++ {
		ins := make([]catalog.RateInput, len(chunk))
		for i, o := range chunk {
			var cur *catalog.Rate
			if r, ok := stored[o.ID]; ok {
				cur = &r
			}
			ins[i] = MergeRate(l.bp, o, cur)
		}
		_, err := m.s.o.Catalog.UpsertRates(ctx, catalog.SystemScope(), sid, pid, ins)
		if err == nil {
			for _, o := range chunk {
				present = append(present, o.ID)
			}
			return present, nil
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
			rs, rerr := m.s.o.Catalog.Rates(ctx, catalog.SystemScope(), sid, pid)
			if rerr != nil {
				return present, fmt.Errorf("product %s: read rates: %w", productRef(sid, pid), rerr)
			}
			clear(stored)
			for _, r := range rs {
				stored[r.ID] = r
			}
			continue
		}
		if fatal(ctx, err) {
			return present, fmt.Errorf("product %s: write rates: %w", productRef(sid, pid), err)
		}
		for _, o := range chunk {
			m.errs = append(m.errs, fmt.Sprintf("option %s: write: %v", optionRef(sid, pid, o.ID), err))
			if _, had := stored[o.ID]; had {
				present = append(present, o.ID)
			}
		}
		return present, nil
	}
	return present, nil
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
	started := time.Now()
	sup, conn, err := s.resolve(ctx, sid)
	if err != nil {
		return cronsync.Result{}, err
	}
	run := &fullSync{s: s, sid: sid, sup: sup, conn: conn, days: windowDays(from, to), now: s.o.Clock()}
	if err := run.sync(ctx); err != nil {
		return run.res, err
	}
	res := run.res
	s.log.Info("supplier synchronized from its booking system", "supplier", sid, "days", run.days,
		"products", res.Products, "options", res.Options, "availabilities", res.Availabilities, "errors", len(res.Errors),
		"took", time.Since(started).Round(time.Millisecond), "connection", conn.String())
	return res, nil
}

// fullSync is one run of SyncSupplier: the supplier it synchronizes, the
// Result it fills in and the availability refreshes it queues.
type fullSync struct {
	s    *Syncer
	sid  string
	sup  catalog.Supplier
	conn bookingsystem.Connection
	days int       // length of each product's window (windowDays)
	now  time.Time // the run's clock reading: each product's today
	res  cronsync.Result
	jobs []refreshJob
}

// refreshJob is one option whose availability a run refreshes over
// window; gone: the option (or its product) is no longer offered, its
// availability is emptied.
type refreshJob struct {
	t      target
	window []DayRange
	gone   bool
}

// windowDays is how many days [from, to) holds (at least one). The
// window is that many days from each product's local today at the time
// the synchronization runs: from and to are UTC dates of when the run
// was enqueued, and a product west of UTC is still on the day before at
// 00:00 UTC (its today must be read).
func windowDays(from, to time.Time) int {
	return max(1, int(to.Sub(from).Round(24*time.Hour)/(24*time.Hour)))
}

// sync runs the steps in order: products and options merged into the
// catalog first, so that the availability refreshes find them.
func (f *fullSync) sync(ctx context.Context) error {
	prods, offered, err := f.readProducts(ctx)
	if err != nil {
		return err
	}
	m := f.s.newMerge(f.sup)
	if err := m.loadProducts(ctx); err != nil {
		return err
	}
	// Taken before the upsert: a product the booking system stopped
	// offering is one the catalog held and the read did not return.
	gone := goneProducts(m.stored, offered)
	ls, err := m.upsertProducts(ctx, prods)
	f.takeErrors(m)
	if err != nil {
		return err
	}
	if err := f.queueOptions(ctx, m, ls); err != nil {
		return err
	}
	if err := f.queueGoneProducts(ctx, gone); err != nil {
		return err
	}
	return f.refresh(ctx)
}

// readProducts reads the supplier's products and counts them and their
// options. offered holds every product id the booking system returned,
// the ones the client rejected by a data rule included (rejected, not
// gone: their catalog data is left as it is; each is a Result error).
func (f *fullSync) readProducts(ctx context.Context) ([]bookingsystem.Product, map[string]bool, error) {
	prods, problems, err := f.s.o.Client.Products(ctx, f.conn, f.sid, Capabilities)
	if err != nil {
		return nil, nil, fmt.Errorf("supplier %s: read products: %w", f.sid, err)
	}
	f.res.Products = len(prods)
	offered := make(map[string]bool, len(prods)+len(problems))
	for _, p := range prods {
		f.res.Options += len(p.Options)
		offered[p.ID] = true
	}
	for _, p := range problems {
		f.res.Errors = append(f.res.Errors, productProblem(f.sid, p))
		offered[p.ID] = true
		f.s.metrics.products.WithLabelValues("failed").Inc()
	}
	return prods, offered, nil
}

// goneProducts are the stored products not offered, sorted by id (the
// order their errors are reported in).
func goneProducts(stored map[string]catalog.Product, offered map[string]bool) []catalog.Product {
	var gone []catalog.Product
	for _, p := range stored {
		if !offered[p.ID] {
			gone = append(gone, p)
		}
	}
	slices.SortFunc(gone, func(a, b catalog.Product) int { return strings.Compare(a.ID, b.ID) })
	return gone
}

// takeErrors moves the item-level errors the merge collected into the
// Result.
func (f *fullSync) takeErrors(m *merge) {
	f.res.Errors = append(f.res.Errors, m.errs...)
	m.errs = nil
}

// target is where the availability of product p's options is written,
// and window the days refreshed.
func (f *fullSync) target(p catalog.Product) (target, []DayRange) {
	t := target{conn: f.conn, sup: f.sup, prod: p, loc: f.s.location(p.TimeZone)}
	today := t.today(f.now)
	return t, []DayRange{{Start: today, End: addDays(today, f.days)}}
}

// queueOptions merges the options of the landed products
// (upsertOptionsOf) and queues the refresh of each: the present ones
// read, the gone ones (kept in the catalog, reported) emptied. Errors are
// reported product by product, in order.
func (f *fullSync) queueOptions(ctx context.Context, m *merge, ls []landed) error {
	pos, err := m.upsertOptionsOf(ctx, ls)
	for _, po := range pos {
		f.res.Errors = append(f.res.Errors, po.errs...)
		if !po.written {
			break // the first not written failed the run: those after it were not reached
		}
		t, window := f.target(po.l.stored)
		for _, oid := range po.present {
			t.optionID = oid
			f.jobs = append(f.jobs, refreshJob{t: t, window: window})
		}
		for _, oid := range po.gone {
			f.res.Errors = append(f.res.Errors, fmt.Sprintf("option %s: no longer an option of product %s in the booking system; kept in the catalog, its availability from %s until %s emptied",
				optionRef(f.sid, po.l.stored.ID, oid), po.l.stored.ID, window[0].Start, window[0].End))
			t.optionID = oid
			f.jobs = append(f.jobs, refreshJob{t: t, window: window, gone: true})
		}
	}
	return err
}

// queueGoneProducts reports each product no longer offered and queues
// the emptying of the availability of each of its rates. A product whose
// rates cannot be read is an item-level error unless the catalog is
// unavailable.
func (f *fullSync) queueGoneProducts(ctx context.Context, gone []catalog.Product) error {
	for _, p := range gone {
		f.s.metrics.products.WithLabelValues("missing").Inc()
		t, window := f.target(p)
		f.res.Errors = append(f.res.Errors, fmt.Sprintf("product %s: no longer offered by the booking system; kept in the catalog (delete or unbind it there), its availability from %s until %s emptied",
			productRef(f.sid, p.ID), window[0].Start, window[0].End))
		rates, err := f.s.o.Catalog.Rates(ctx, catalog.SystemScope(), f.sid, p.ID)
		if err != nil {
			if fatal(ctx, err) {
				return fmt.Errorf("product %s: read rates: %w", productRef(f.sid, p.ID), err)
			}
			f.res.Errors = append(f.res.Errors, fmt.Sprintf("product %s: read rates: %v", productRef(f.sid, p.ID), err))
			continue
		}
		for _, r := range rates {
			t.optionID = r.ID
			f.jobs = append(f.jobs, refreshJob{t: t, window: window, gone: true})
		}
	}
	return nil
}

// refresh runs the queued refreshes and reports them in the Result, in
// job order; the first fatal failure (or ctx ending) fails the run.
func (f *fullSync) refresh(ctx context.Context) error {
	results, fatalErr := f.runJobs(ctx)
	for i, r := range results {
		if !f.jobs[i].gone {
			f.res.Availabilities += r.read
		}
		if fatalErr != nil && errors.Is(r.err, context.Canceled) {
			continue // cut short by the failure below, not an item's own
		}
		f.res.Errors = append(f.res.Errors, r.failures...)
	}
	if fatalErr == nil && ctx.Err() != nil {
		fatalErr = ctx.Err()
	}
	if fatalErr != nil {
		if errors.Is(fatalErr, context.Canceled) && ctx.Err() != nil {
			fatalErr = ctx.Err()
		}
		return fmt.Errorf("supplier %s: %w", f.sid, fatalErr)
	}
	return nil
}

// writesPerRead is how many options of a full sync may be between their
// read and their write for each booking-system read in flight. The
// supplier's writes go through the catalog's group commit, one batch at a
// time (lock, read, publish, apply): with only Concurrency refreshes in
// flight a batch held at most Concurrency sets, and the write was four
// fifths of a refresh (bench/RESULTS.md, twelfth session). More refreshes
// waiting to write make bigger batches, while the booking system still
// sees Concurrency reads at once.
const writesPerRead = 8

// runJobs refreshes the queued options, Concurrency reads at a time (and
// up to writesPerRead times as many refreshes in flight); results are in
// job order whatever order they finish in. The first fatal failure
// cancels the jobs not yet done and is returned.
func (f *fullSync) runJobs(ctx context.Context) ([]optionResult, error) {
	jobs := f.jobs
	reads := make(chan struct{}, f.s.o.Concurrency)
	for i := range jobs {
		jobs[i].t.reads = reads
	}
	results := make([]optionResult, len(jobs))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fatalErr error
	var once sync.Once
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(f.s.o.Concurrency*writesPerRead, max(len(jobs), 1)) {
		wg.Go(func() {
			for i := range next {
				r := f.s.refreshOption(rctx, jobs[i].t, jobs[i].window, TriggerFullSync, jobs[i].gone)
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
	return results, fatalErr
}

package bookingsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
)

// FreesaleCapacity is the capacity a FREESALE availability (spec doc 3:
// "always available") is stored with: more than any booking can ask for.
const FreesaleCapacity = 1_000_000

// Capacity maps a doc 3 availability to the catalog's capacity: FREESALE
// unlimited (FreesaleCapacity), AVAILABLE and LIMITED their vacancies
// (OCTO, which makes vacancies nullable: else its capacity; 0 when the
// booking system sent neither), SOLD_OUT and CLOSED 0 (not for sale now;
// doc 3: they may reopen, which the next refresh will see).
func Capacity(a bookingsystem.Availability) int {
	switch a.Status {
	case bookingsystem.Freesale:
		return FreesaleCapacity
	case bookingsystem.Available, bookingsystem.Limited:
		switch {
		case a.Vacancies != nil:
			return *a.Vacancies
		case a.Capacity != nil:
			return *a.Capacity
		}
	}
	return 0
}

// CatalogAvailability is the catalog's availability of a, an availability
// of option oid of product pid of supplier sid as the client read it: the
// id a UUID derived from the four (bookingsystem.CatalogAvailabilityID:
// unique across rates and products, the same at every re-read), the
// booking system's id kept as SystemID, times in UTC, Capacity, and
// maxCapacity OCTO's capacity (the slot's total) when it is at least the
// capacity (doc 2: "optional maximum capacity"; v2 sends none).
func CatalogAvailability(sid, pid, oid string, a bookingsystem.Availability) catalog.Availability {
	out := catalog.Availability{ID: bookingsystem.CatalogAvailabilityID(sid, pid, oid, a.ID), SystemID: a.ID,
		Start: a.LocalDateTimeStart.UTC(), End: a.LocalDateTimeEnd.UTC(), Capacity: Capacity(a)}
	if a.Capacity != nil && *a.Capacity >= out.Capacity && a.Status != bookingsystem.Freesale {
		m := *a.Capacity
		out.MaxCapacity = &m
	}
	return out
}

// target is one option to refresh, with what the refresh needs of its
// supplier and product.
type target struct {
	conn     bookingsystem.Connection
	sup      catalog.Supplier
	prod     catalog.Product
	loc      *time.Location
	optionID string
	// reads, when set, bounds the booking-system reads in flight of the
	// run this refresh belongs to (a full sync's Concurrency): a slot is
	// held from before the option's lock until its read is done; nil: none.
	reads chan struct{}
}

func (t target) item() Item { return Item{t.sup.ID, t.prod.ID, t.optionID} }

// ref names the option in error texts (optionRef).
func (t target) ref() string { return optionRef(t.sup.ID, t.prod.ID, t.optionID) }

// today is the product's local date at now.
func (t target) today(now time.Time) string { return now.In(t.loc).Format(time.DateOnly) }

// optionResult is what refreshing one option did.
type optionResult struct {
	read     int      // availabilities read (and written)
	failures []string // item-level reasons ("option O1: ..."), problems included
	problems int      // items the client rejected by a data rule
	err      error    // the option could not be refreshed (also in failures)
	busy     bool     // another process holds the option's lock: nothing done
	due      time.Time
}

// refreshOption is THE mapping of a booking system's availabilities into
// the catalog, whoever asked: each run of days is read (doc 3, GET
// /suppliers/{s}/availability, one call per run), and the rate's
// availabilities of the days read are replaced by what the booking system
// answered (CatalogAvailability: statuses mapped by Capacity, ids by
// bookingsystem.CatalogAvailabilityID); every other stored availability is
// kept. Days are local dates of the product's time zone (an availability
// belongs to the local date it starts on). The set is written sorted by
// start then id, so an unchanged answer is an unchanged set and the
// catalog publishes nothing. Items the client rejects by a data rule are
// reported and left out (never half-applied); a run whose read fails is
// reported and its days are kept as they were. gone: the option is no
// longer offered, nothing is read and its days are emptied.
//
// With a Schedule, the option's lock is held for the read-modify-write,
// and each day read is recorded as next due by the statuses seen on it
// (DayInterval); the days of a failed read or write are due again after
// RetryInterval, those of a refused read after RefusedInterval.
func (s *Syncer) refreshOption(ctx context.Context, t target, runs []DayRange, trigger string, gone bool) (res optionResult) {
	if len(runs) == 0 {
		return res
	}
	// A read slot of the run (t.reads) is taken before anything of the
	// option is: waiting for one is neither the option's time (its
	// timeout, its metric) nor a reason to hold its lock. It is given
	// back once the booking system answered.
	release := func() {}
	if t.reads != nil && !gone {
		select {
		case t.reads <- struct{}{}:
		case <-ctx.Done():
			return optionResult{err: ctx.Err()} // the run ended: not a refresh
		}
		held := true
		release = func() {
			if held {
				held = false
				<-t.reads
			}
		}
		defer release()
	}
	start := time.Now()
	defer func() { s.observeRefresh(trigger, start, res) }()
	ctx, cancel := context.WithTimeout(ctx, s.o.OptionTimeout)
	defer cancel()
	if sch := s.o.Schedule; sch != nil {
		unlock, err := sch.lock(ctx, t.item(), s.o.LockWait)
		if err != nil {
			res.busy = errors.Is(err, errBusy)
			res.err = err
			res.failures = append(res.failures, fmt.Sprintf("option %s: %v", t.ref(), err))
			return res
		}
		defer unlock()
	}
	// Read every run first, then write once: one catalog version (and one
	// snapshot for the processors) per refresh, however many runs.
	days := s.readRuns(ctx, t, runs, gone, &res)
	release()
	if len(days.replaced) > 0 {
		s.writeRuns(ctx, t, &days, &res)
	}
	if sch := s.o.Schedule; sch != nil {
		now := s.o.Clock()
		due := dueByDay(t, days.read, days.replaced, days.failed, days.refused, now)
		next, err := sch.Record(ctx, t.item(), t.today(now), due)
		if err != nil {
			// The refresh happened; a missed record only makes the
			// option due again sooner.
			s.log.Warn("refresh schedule not recorded", "supplier", t.sup.ID, "product", t.prod.ID, "option", t.optionID, "err", err)
		}
		res.due = next
	}
	return res
}

// observeRefresh counts a refresh by its outcome and times it.
func (s *Syncer) observeRefresh(trigger string, start time.Time, res optionResult) {
	outcome := "ok"
	switch {
	case res.busy:
		outcome = "busy"
	case res.err != nil:
		outcome = "failed"
	case len(res.failures) > 0:
		outcome = "problems"
	}
	s.metrics.refreshes.WithLabelValues(trigger, outcome).Inc()
	s.metrics.refreshSeconds.WithLabelValues(trigger).Observe(time.Since(start).Seconds())
}

// runDays is what reading an option's runs found: the availabilities
// read, the runs whose days they replace, and the runs whose read failed
// or was refused (their days kept as they were).
type runDays struct {
	read                      []bookingsystem.Availability
	replaced, failed, refused []DayRange
}

// readRuns reads the option's availability over each run (none when
// gone: every run is replaced by nothing), recording failures and the
// items the client rejected in res.
func (s *Syncer) readRuns(ctx context.Context, t target, runs []DayRange, gone bool, res *optionResult) runDays {
	var days runDays
	for _, run := range runs {
		if gone {
			days.replaced = append(days.replaced, run)
			continue
		}
		avs, problems, err := s.o.Client.Availability(ctx, t.conn, bookingsystem.AvailabilityRequest{
			SupplierID: t.sup.ID, ProductID: t.prod.ID, OptionID: t.optionID,
			LocalDateStart: run.Start, LocalDateEnd: run.End, AvailabilityType: t.prod.AvailabilityType,
			TimeZone: t.loc.String()}) // the days the client checks are the days written here
		if err != nil {
			res.err = err
			if refusedRead(err) {
				days.refused = append(days.refused, run)
			} else {
				days.failed = append(days.failed, run)
			}
			if len(runs) == 1 {
				res.failures = append(res.failures, fmt.Sprintf("option %s: %v", t.ref(), err))
			} else {
				res.failures = append(res.failures, fmt.Sprintf("option %s: %s..%s: %v", t.ref(), run.Start, run.End, err))
			}
			continue
		}
		res.failures = append(res.failures, problemTexts(t.ref(), problems)...)
		res.problems += len(problems)
		days.read = append(days.read, avs...)
		days.replaced = append(days.replaced, run)
	}
	return days
}

// writeRuns writes what was read over the replaced runs. When the write
// fails, the replaced runs become failed ones (due for a retry) and
// nothing counts as read.
func (s *Syncer) writeRuns(ctx context.Context, t target, days *runDays, res *optionResult) {
	if err := s.writeAvailabilities(ctx, t, days.replaced, days.read); err != nil {
		res.read = 0
		res.err = err
		res.failures = append(res.failures, fmt.Sprintf("option %s: write availabilities: %v", t.ref(), err))
		days.failed = append(days.failed, days.replaced...)
		days.replaced = nil
		return
	}
	res.read = len(days.read)
	for _, a := range days.read {
		s.metrics.availabilities.WithLabelValues(a.Status).Inc()
	}
}

// refusedRead: the booking system answered 400 or 404, or our request
// could not even be made (the product has no availabilityType, an id too
// long): asking again soon would get the same answer.
func refusedRead(err error) bool {
	return errors.Is(err, bookingsystem.ErrRejected) || errors.Is(err, bookingsystem.ErrNotFound) || errors.Is(err, bookingsystem.ErrInvalid)
}

// dueByDay is when each day of the runs is next due: a day read, its
// DayInterval after now; a day whose read or write failed, RetryInterval
// after now; a day whose read the booking system refused, RefusedInterval.
func dueByDay(t target, read []bookingsystem.Availability, replaced, failed, refused []DayRange, now time.Time) map[string]time.Time {
	statuses := map[string][]string{}
	for _, a := range read {
		d := a.LocalDateTimeStart.In(t.loc).Format(time.DateOnly)
		statuses[d] = append(statuses[d], a.Status)
	}
	due := map[string]time.Time{}
	for _, r := range replaced {
		for _, d := range r.days() {
			due[d] = now.Add(DayInterval(statuses[d]))
		}
	}
	for _, r := range refused {
		for _, d := range r.days() {
			due[d] = now.Add(RefusedInterval)
		}
	}
	for _, r := range failed {
		for _, d := range r.days() {
			due[d] = now.Add(RetryInterval)
		}
	}
	return due
}

// writeAvailabilities replaces the rate's availabilities of the days of
// replaced by read, keeping the others but those of days before the
// product's local today (past days are never read again: kept, they would
// pile up until the catalog's bound per rate refused every write), sorted
// by start then id.
func (s *Syncer) writeAvailabilities(ctx context.Context, t target, replaced []DayRange, read []bookingsystem.Availability) error {
	today := t.today(s.o.Clock())
	cur, err := s.o.Catalog.Availabilities(ctx, catalog.SystemScope(), t.sup.ID, t.prod.ID, t.optionID)
	if err != nil {
		return fmt.Errorf("read stored availabilities: %w", err)
	}
	next := make([]catalog.Availability, 0, len(cur.Availabilities)+len(read))
	ids := make(map[string]bool, len(read))
	for _, a := range read {
		ca := CatalogAvailability(t.sup.ID, t.prod.ID, t.optionID, a)
		ids[ca.ID] = true
		next = append(next, ca)
	}
	for _, a := range cur.Availabilities {
		day := a.Start.In(t.loc).Format(time.DateOnly)
		if inRuns(replaced, day) || ids[a.ID] {
			continue // replaced by this read (an id read again wins wherever it was)
		}
		if day < today {
			continue // past
		}
		next = append(next, a)
	}
	slices.SortFunc(next, func(a, b catalog.Availability) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID))
	})
	if sameAvailabilities(cur.Availabilities, next) {
		// Nothing changed: the catalog would compare and publish nothing
		// too, but only under the supplier's lock, which every write of
		// the supplier waits for (bench/fullsync).
		return nil
	}
	_, err = s.o.Catalog.PutAvailabilities(ctx, catalog.SystemScope(), t.sup.ID, t.prod.ID, t.optionID, next)
	return err
}

// sameAvailabilities reports whether a and b are the same set in the same
// order, as the catalog stores them (times in UTC).
func sameAvailabilities(a, b []catalog.Availability) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.SystemID != y.SystemID || !x.Start.Equal(y.Start) || !x.End.Equal(y.End) || x.Capacity != y.Capacity ||
			(x.MaxCapacity == nil) != (y.MaxCapacity == nil) || (x.MaxCapacity != nil && *x.MaxCapacity != *y.MaxCapacity) {
			return false
		}
	}
	return true
}

func inRuns(runs []DayRange, day string) bool {
	for _, r := range runs {
		if r.contains(day) {
			return true
		}
	}
	return false
}

// problemTexts are the failures of an option's rejected availabilities
// (option: its optionRef): one per data rule, with how many broke it and
// the first of them (an answer can reject hundreds of items for one
// cause).
func problemTexts(option string, ps []bookingsystem.Problem) []string {
	var rules []string
	first := map[string]bookingsystem.Problem{}
	count := map[string]int{}
	for _, p := range ps {
		if count[p.Rule] == 0 {
			rules = append(rules, p.Rule)
			first[p.Rule] = p
		}
		count[p.Rule]++
	}
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		if count[r] == 1 {
			out = append(out, fmt.Sprintf("option %s: %s rejected by data rule %s", option, problemItem(first[r]), r))
			continue
		}
		out = append(out, fmt.Sprintf("option %s: %d items rejected by data rule %s, the first %s", option, count[r], r, problemItem(first[r])))
	}
	return out
}

// problemItem names a rejected item for a failure text: its kind, position
// in the answer and id (the client cuts ids to 64 characters).
func problemItem(p bookingsystem.Problem) string {
	switch {
	case p.ID == "":
		return fmt.Sprintf("%s %d", p.Item, p.Index)
	case p.Detail != "":
		return fmt.Sprintf("%s %d (%q, %s)", p.Item, p.Index, p.ID, p.Detail)
	}
	return fmt.Sprintf("%s %d (%q)", p.Item, p.Index, p.ID)
}

// resolve reads the supplier and builds its connection: the one place a
// supplier becomes a connection is bookingsystem.ConnectionFor.
func (s *Syncer) resolve(ctx context.Context, sid string) (catalog.Supplier, bookingsystem.Connection, error) {
	sup, err := s.o.Catalog.Supplier(ctx, catalog.SystemScope(), sid)
	if err != nil {
		return catalog.Supplier{}, bookingsystem.Connection{}, fmt.Errorf("supplier %s: %w", sid, err)
	}
	conn, err := bookingsystem.ConnectionFor(sup)
	if err != nil {
		return catalog.Supplier{}, bookingsystem.Connection{}, err
	}
	return sup, conn, nil
}

// RefreshProduct is a change notification in standard mode for a
// booking-system supplier (spec doc 3: "polls the operator's booking
// system at once for the Supplier and Product, including availabilities"):
// the product is read from the booking system (an OCTO one: GET
// /products/{id}; doc 3 has no read of one product, so a v2 one: the
// supplier's list) and merged into the catalog with its options (as
// SyncSupplier does), then every rate of the product that is one of its
// options is refreshed over [startDate, endDate) (local dates, end
// exclusive). An error is a failure of the whole request; a failed option
// is one Failures entry.
func (s *Syncer) RefreshProduct(ctx context.Context, sid, pid, startDate, endDate string) (Outcome, error) {
	sup, conn, err := s.resolve(ctx, sid)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	bp, err := s.readProduct(ctx, conn, sid, pid)
	if err != nil {
		return Outcome{}, err
	}
	m := s.newMerge(sup)
	if err := m.loadProducts(ctx); err != nil {
		return Outcome{}, err
	}
	ls, err := m.upsertProducts(ctx, []bookingsystem.Product{bp})
	out.Failures = append(out.Failures, m.errs...)
	m.errs = nil
	if err != nil {
		return out, err
	}
	if len(ls) == 0 {
		return out, errors.New(out.Failures[0]) // the catalog refused the product
	}
	present, gone, err := m.upsertOptions(ctx, ls[0])
	out.Failures = append(out.Failures, m.errs...)
	if err != nil {
		return out, err
	}

	prod := ls[0].stored
	t := target{conn: conn, sup: sup, prod: prod, loc: s.location(prod.TimeZone)}
	run := []DayRange{{Start: startDate, End: endDate}}
	for _, oid := range present {
		t.optionID = oid
		r := s.refreshOption(ctx, t, run, TriggerChangeRequest, false)
		out.Items += r.read
		out.Failures = append(out.Failures, r.failures...)
		if r.err != nil && fatal(ctx, r.err) {
			return out, r.err
		}
	}
	for _, oid := range gone {
		out.Failures = append(out.Failures, fmt.Sprintf("option %s: no longer an option of product %s in the booking system; kept in the catalog, its availability from %s until %s emptied",
			optionRef(sid, pid, oid), pid, startDate, endDate))
		t.optionID = oid
		r := s.refreshOption(ctx, t, run, TriggerChangeRequest, true)
		out.Failures = append(out.Failures, r.failures...)
		if r.err != nil && fatal(ctx, r.err) {
			return out, r.err
		}
	}
	s.log.Info("product refreshed from its booking system", "supplier", sid, "product", pid, "from", startDate, "until", endDate,
		"options", len(present), "gone", len(gone), "availabilities", out.Items, "failures", len(out.Failures), "connection", conn.String())
	return out, nil
}

// readProduct reads one product of the supplier's booking system: GET
// /products/{id} of an OCTO one, the supplier's product list of a v2 one
// (doc 3 has no read of one product). Not offered, or rejected by a data
// rule, is an error naming the product.
func (s *Syncer) readProduct(ctx context.Context, conn bookingsystem.Connection, sid, pid string) (bookingsystem.Product, error) {
	ref := productRef(sid, pid)
	if conn.Dialect == bookingsystem.DialectOCTO {
		bp, problems, err := s.o.Client.Product(ctx, conn, sid, pid, Capabilities)
		switch {
		case errors.Is(err, bookingsystem.ErrNotFound):
			return bp, fmt.Errorf("product %s: not offered by the supplier's booking system", ref)
		case err != nil:
			return bp, fmt.Errorf("product %s: read it from the booking system: %w", ref, err)
		case len(problems) > 0:
			return bp, fmt.Errorf("product %s: rejected by data rule %s", ref, problems[0].Rule)
		}
		return bp, nil
	}
	prods, problems, err := s.o.Client.Products(ctx, conn, sid, Capabilities)
	if err != nil {
		return bookingsystem.Product{}, fmt.Errorf("product %s: read the booking system's products: %w", ref, err)
	}
	for _, p := range prods {
		if p.ID == pid {
			return p, nil
		}
	}
	for _, p := range problems {
		if p.ID == pid {
			return bookingsystem.Product{}, fmt.Errorf("product %s: rejected by data rule %s", ref, p.Rule)
		}
	}
	return bookingsystem.Product{}, fmt.Errorf("product %s: not offered by the supplier's booking system", ref)
}

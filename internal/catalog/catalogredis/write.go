package catalogredis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// change is one event of a write, before it is published.
type change struct {
	ev      catalog.Event
	version int64
	deleted bool
}

// supplierTx is a held supplier lock and the supplier read under it.
type supplierTx struct {
	lock heldLock
	sup  *catalog.Supplier // nil: no such supplier (or a create)
}

// lockSupplier takes the supplier's lock. With mustExist, a supplier that
// does not exist or is out of p's scope is ErrNotFound (lock released).
func (s *Store) lockSupplier(ctx context.Context, sc catalog.Scope, sid string, mustExist bool) (*supplierTx, error) {
	if !catalog.ValidID(sid) {
		return nil, catalog.NotFound("supplier", sid)
	}
	l, err := s.acquire(ctx, s.k.lock(sid), s.k.supplier(sid), fieldRec)
	if err != nil {
		return nil, err
	}
	tx := &supplierTx{lock: l}
	if l.current != "" {
		var sup catalog.Supplier
		if err := json.Unmarshal([]byte(l.current), &sup); err != nil {
			s.release(ctx, l)
			return nil, fmt.Errorf("decode stored supplier %s: %w", sid, err)
		}
		tx.sup = &sup
	}
	if mustExist && (tx.sup == nil || !sc.CanManage(tx.sup)) {
		s.release(ctx, l)
		return nil, catalog.NotFound("supplier", sid)
	}
	return tx, nil
}

// timestamp is the clock in UTC at microsecond precision (the unit of the
// version tie-break).
func (s *Store) timestamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// commit publishes the changes (one Publish, acks=all), then applies them
// to Redis, unless the views were lost since l was taken (Fence). A publish failure changes nothing we know of and is
// ErrUnavailable; an apply failure after the publish is logged only: the
// change happened (the topic is the record) and processors/catalogchange
// applies it.
func (s *Store) commit(ctx context.Context, l heldLock, changes []change) error {
	if len(changes) == 0 {
		return nil
	}
	if s.pub == nil {
		return fmt.Errorf("catalog write: no publisher: %w", catalog.ErrUnavailable)
	}
	if err := s.checkFence(ctx, l); err != nil {
		return err
	}
	now := s.timestamp()
	envs := make([]schemas.Envelope, len(changes))
	msgs := make([]stream.Message, len(changes))
	for i := range changes {
		c := &changes[i]
		env := schemas.Envelope{ID: uuid.NewString(), Type: schemas.CatalogEventType(c.ev.Kind, c.deleted), Key: c.ev.EntityKey(),
			Version: c.version, Time: now, Source: s.source, Deleted: c.deleted, Data: catalogwire.MustJSON(&c.ev)}
		envs[i] = env
		msgs[i] = stream.Message{Topic: c.ev.Kind.Topic(), Key: []byte(env.Key), Value: catalogwire.MustJSON(env), Time: now}
	}
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	err := s.pub.Publish(pctx, msgs...)
	cancel()
	if err != nil {
		return catalog.Unavailable(fmt.Sprintf("publish %d catalog events", len(msgs)), err)
	}
	if s.view != nil && slices.ContainsFunc(msgs, func(m stream.Message) bool { return s.view.follows(m.Topic) }) {
		s.view.NoteWrite()
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	evs := make([]*catalog.Event, len(changes))
	for i := range changes {
		evs[i] = &changes[i].ev
	}
	if _, err := s.applyEvents(actx, envs, evs); err != nil {
		s.log.Warn("catalog: published changes not yet in Redis; processors/catalogchange will apply them",
			"changes", len(changes), "firstKey", envs[0].Key, "err", err)
	}
	return nil
}

// versionsOf reads the last versions of entities of a supplier.
func (s *Store) versionsOf(ctx context.Context, sid string, fields ...string) ([]int64, error) {
	vals, err := s.rdb.HMGet(ctx, s.k.versions(sid), fields...).Result()
	if err != nil {
		return nil, catalog.Unavailable("read versions", err)
	}
	out := make([]int64, len(vals))
	for i, v := range vals {
		if str, ok := v.(string); ok {
			out[i] = parseVersion(str)
		}
	}
	return out, nil
}

func checkVersion(given *int64, cur int64) error {
	if given != nil && *given != cur {
		return catalog.Conflict("version %d is not the current version %d; read it again", *given, cur)
	}
	return nil
}

func samePath(field, given, path string) error {
	if given != "" && given != path {
		return catalog.Invalidf(field, "must be %q, the id of the path, or be omitted", path)
	}
	return nil
}

// ---- suppliers ----

// CreateSupplier creates a supplier owned by p (an operator; an admin's
// supplier has no owner and only admins manage it). A given id that
// exists already is ErrConflict, and so is the id of a deleted supplier
// of another operator (its tombstone): an id is its operator's for ever,
// so that nothing recorded under it (bookings, reports, history) can be
// taken over by whoever creates it next. The answer is the same in both
// cases and never says whose the id is. The operator who deleted it (or
// an admin) may create it again.
func (s *Store) CreateSupplier(ctx context.Context, sc catalog.Scope, in catalog.SupplierInput) (catalog.Supplier, error) {
	owner, err := sc.Owner()
	if err != nil {
		return catalog.Supplier{}, err
	}
	if err := catalog.ValidateSupplier("", &in.SupplierData); err != nil {
		return catalog.Supplier{}, err
	}
	conn, err := catalog.ResolveConnection(s.policy, in.Connection, nil)
	if err != nil {
		return catalog.Supplier{}, err
	}
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	if conn.Credentials, err = s.sealCredentials(in.ID, conn.Credentials, nil); err != nil {
		return catalog.Supplier{}, err
	}
	tx, err := s.lockSupplier(ctx, sc, in.ID, false)
	if err != nil {
		return catalog.Supplier{}, err
	}
	defer s.release(ctx, tx.lock)
	if tx.sup != nil {
		return catalog.Supplier{}, catalog.Conflict("supplier id %s is already in use", in.ID)
	}
	tomb, err := s.rdb.Get(ctx, s.k.tombstone(in.ID)).Result()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return catalog.Supplier{}, catalog.Unavailable("read the supplier id's tombstone", err)
	case !sc.All() && tomb != "o:"+owner:
		return catalog.Supplier{}, catalog.Conflict("supplier id %s is already in use", in.ID)
	}
	vs, err := s.versionsOf(ctx, in.ID, verSupplier())
	if err != nil {
		return catalog.Supplier{}, err
	}
	sup := catalog.Supplier{SupplierData: in.SupplierData, Version: vs[0] + 1, Connection: conn, Owner: owner}
	err = s.commit(ctx, tx.lock, []change{{ev: catalog.Event{Kind: schemas.CatalogKindSupplier, SupplierID: sup.ID, Supplier: &sup}, version: sup.Version}})
	return sup, err
}

// PutSupplier replaces the supplier's data (and connection, when given).
// An identical body changes nothing, not even the version.
func (s *Store) PutSupplier(ctx context.Context, sc catalog.Scope, sid string, in catalog.SupplierInput) (catalog.Supplier, error) {
	if err := samePath("id", in.ID, sid); err != nil {
		return catalog.Supplier{}, err
	}
	in.ID = sid
	if err := catalog.ValidateSupplier("", &in.SupplierData); err != nil {
		return catalog.Supplier{}, err
	}
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return catalog.Supplier{}, err
	}
	defer s.release(ctx, tx.lock)
	cur := tx.sup
	if err := checkVersion(in.Version, cur.Version); err != nil {
		return catalog.Supplier{}, err
	}
	conn, err := catalog.ResolveConnection(s.policy, in.Connection, &cur.Connection)
	if err != nil {
		return catalog.Supplier{}, err
	}
	if conn.Credentials, err = s.sealCredentials(sid, conn.Credentials, &cur.Connection.Credentials); err != nil {
		return catalog.Supplier{}, err
	}
	next := catalog.Supplier{SupplierData: in.SupplierData, Version: cur.Version, Connection: conn, Owner: cur.Owner}
	if bytes.Equal(catalogwire.MustJSON(next), catalogwire.MustJSON(cur)) {
		return *cur, nil
	}
	vs, err := s.versionsOf(ctx, sid, verSupplier())
	if err != nil {
		return catalog.Supplier{}, err
	}
	next.Version = max(cur.Version, vs[0]) + 1
	ev := catalog.Event{Kind: schemas.CatalogKindSupplier, SupplierID: sid, Supplier: &next, Prior: &schemas.CatalogPrior{Version: cur.Version, Fingerprint: catalog.Fingerprint(cur)}}
	return next, s.commit(ctx, tx.lock, []change{{ev: ev, version: next.Version}})
}

// DeleteSupplier deletes a supplier without products (ErrConflict
// otherwise: delete its products first, which refuses while they are
// bound, so no binding is ever left dangling) and without holds or
// bookings that are not final (ErrConflict: they would lose the system
// they were made through). Its id stays its operator's (a tombstone).
func (s *Store) DeleteSupplier(ctx context.Context, sc catalog.Scope, sid string) error {
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return err
	}
	defer s.release(ctx, tx.lock)
	if s.open != nil {
		n, err := s.open.OpenBookings(ctx, sid)
		if err != nil {
			return catalog.Unavailable("count open bookings", err)
		}
		if n > 0 {
			return catalog.Conflict("supplier %s still has %d holds or bookings that are not final; they are cancelled, released or redeemed first", sid, n)
		}
	}
	n, err := s.rdb.HLen(ctx, s.k.products(sid)).Result()
	if err != nil {
		return catalog.Unavailable("read products", err)
	}
	if n > 0 {
		return catalog.Conflict("supplier %s still has %d products; delete them first", sid, n)
	}
	vs, err := s.versionsOf(ctx, sid, verSupplier())
	if err != nil {
		return err
	}
	cur := tx.sup
	ev := catalog.Event{Kind: schemas.CatalogKindSupplier, SupplierID: sid, Owner: cur.Owner, Prior: &schemas.CatalogPrior{Version: cur.Version, Fingerprint: catalog.Fingerprint(cur)}}
	return s.commit(ctx, tx.lock, []change{{ev: ev, version: max(cur.Version, vs[0]) + 1, deleted: true}})
}

// ---- products ----

func decodeProduct(raw string) (*catalog.Product, error) {
	var p catalog.Product
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, fmt.Errorf("decode stored product: %w", err)
	}
	return &p, nil
}

func decodeRate(sid, raw string) (*catalog.Rate, error) {
	var v catalogwire.RateView
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("decode stored rate: %w", err)
	}
	return &catalog.Rate{SupplierID: sid, ProductID: v.ProductID, RateData: v.RateData, Version: v.Version}, nil
}

func validateProductInput(prefix, sid string, in *catalog.ProductInput) error {
	if err := samePath(prefix+"supplierId", in.SupplierID, sid); err != nil {
		return err
	}
	return catalog.ValidateProduct(prefix, &in.ProductData)
}

// CreateProduct adds a product to the supplier; an existing id is
// ErrConflict.
func (s *Store) CreateProduct(ctx context.Context, sc catalog.Scope, sid string, in catalog.ProductInput) (catalog.Product, error) {
	if err := validateProductInput("", sid, &in); err != nil {
		return catalog.Product{}, err
	}
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	out, err := s.upsertProducts(ctx, sc, sid, []catalog.ProductInput{in}, modeCreate)
	if err != nil {
		return catalog.Product{}, err
	}
	return out[0], nil
}

// PutProduct replaces an existing product; identical data changes nothing.
func (s *Store) PutProduct(ctx context.Context, sc catalog.Scope, sid, pid string, in catalog.ProductInput) (catalog.Product, error) {
	if err := samePath("id", in.ID, pid); err != nil {
		return catalog.Product{}, err
	}
	in.ID = pid
	if err := validateProductInput("", sid, &in); err != nil {
		return catalog.Product{}, err
	}
	out, err := s.upsertProducts(ctx, sc, sid, []catalog.ProductInput{in}, modeReplace)
	if err != nil {
		return catalog.Product{}, err
	}
	return out[0], nil
}

// UpsertProducts is the bulk form: create or replace each product (ids
// generated where absent), all validated before anything is written, all
// published in one batch. Unchanged products are not republished.
func (s *Store) UpsertProducts(ctx context.Context, sc catalog.Scope, sid string, ins []catalog.ProductInput) ([]catalog.Product, error) {
	err := checkBulk("products", ins, func(p *catalog.ProductInput) *string { return &p.ID }, func(prefix string, in *catalog.ProductInput) error {
		return validateProductInput(prefix, sid, in)
	})
	if err != nil {
		return nil, err
	}
	return s.upsertProducts(ctx, sc, sid, ins, modeUpsert)
}

// checkBulk checks the items of a bulk write (field what): 1 to MaxBulk
// of them, each valid (validate, given the item's field prefix such as
// "products[2]."), none with the id of another. An item without an id
// gets a new one, in place.
func checkBulk[T any](what string, ins []T, id func(*T) *string, validate func(prefix string, in *T) error) error {
	if len(ins) == 0 || len(ins) > catalog.MaxBulk {
		return catalog.Invalidf(what, "must have 1 to %d items", catalog.MaxBulk)
	}
	seen := make(map[string]bool, len(ins))
	for i := range ins {
		prefix := idx(what, i) + "."
		if err := validate(prefix, &ins[i]); err != nil {
			return err
		}
		p := id(&ins[i])
		if *p == "" {
			*p = uuid.NewString()
		}
		if seen[*p] {
			return catalog.Invalid(prefix+"id", "appears twice in the request")
		}
		seen[*p] = true
	}
	return nil
}

type writeMode int

const (
	modeCreate  writeMode = iota // must not exist: ErrConflict
	modeReplace                  // must exist: ErrNotFound
	modeUpsert                   // either
)

func (s *Store) upsertProducts(ctx context.Context, sc catalog.Scope, sid string, ins []catalog.ProductInput, mode writeMode) ([]catalog.Product, error) {
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return nil, err
	}
	defer s.release(ctx, tx.lock)
	ids := make([]string, len(ins))
	vfields := make([]string, len(ins))
	for i, in := range ins {
		ids[i], vfields[i] = in.ID, verProduct(in.ID)
	}
	raws, err := s.rdb.HMGet(ctx, s.k.products(sid), ids...).Result()
	if err != nil {
		return nil, catalog.Unavailable("read products", err)
	}
	vs, err := s.versionsOf(ctx, sid, vfields...)
	if err != nil {
		return nil, err
	}
	out := make([]catalog.Product, len(ins))
	var changes []change
	for i, in := range ins {
		var cur *catalog.Product
		if raw, ok := raws[i].(string); ok {
			if cur, err = decodeProduct(raw); err != nil {
				return nil, err
			}
		}
		switch {
		case cur != nil && mode == modeCreate:
			return nil, catalog.Conflict("product %s already exists", in.ID)
		case cur == nil && mode == modeReplace:
			return nil, catalog.NotFound("product", in.ID)
		}
		next := catalog.Product{SupplierID: sid, ProductData: in.ProductData}
		ev := catalog.Event{Kind: schemas.CatalogKindProduct, SupplierID: sid, ProductID: in.ID, Product: &next}
		if cur != nil {
			if err := checkVersion(in.Version, cur.Version); err != nil {
				return nil, err
			}
			next.Version = cur.Version
			if bytes.Equal(catalogwire.MustJSON(next), catalogwire.MustJSON(cur)) {
				out[i] = *cur
				continue
			}
			ev.Prior = &schemas.CatalogPrior{Version: cur.Version, Fingerprint: catalog.Fingerprint(cur)}
			next.Version = max(cur.Version, vs[i]) + 1
		} else {
			next.Version = vs[i] + 1
		}
		out[i] = next
		changes = append(changes, change{ev: ev, version: next.Version})
	}
	return out, s.commit(ctx, tx.lock, changes)
}

// DeleteProduct deletes a product and, with it, its rates and their
// availabilities (one batch of events). A product bound to any channel is
// ErrConflict: unbind it first, so that resellers are told (removed).
func (s *Store) DeleteProduct(ctx context.Context, sc catalog.Scope, sid, pid string) error {
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return err
	}
	defer s.release(ctx, tx.lock)
	pipe := s.rdb.Pipeline()
	prodCmd := pipe.HGet(ctx, s.k.products(sid), pid)
	bindCmd := pipe.HKeys(ctx, s.k.bindings(sid, pid))
	ratesCmd := pipe.HGetAll(ctx, s.k.rates(sid, pid))
	availCmd := pipe.HKeys(ctx, s.k.avail(sid, pid))
	pricesCmd := pipe.HKeys(ctx, s.k.prices(sid, pid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return catalog.Unavailable("read product", err)
	}
	raw, err := prodCmd.Result()
	if errors.Is(err, redis.Nil) {
		return catalog.NotFound("product", pid)
	}
	cur, err := decodeProduct(raw)
	if err != nil {
		return err
	}
	if chans := bindCmd.Val(); len(chans) > 0 {
		slices.Sort(chans)
		return catalog.Conflict("product %s is bound to channel %s; unbind it first", pid, chans[0])
	}
	rates := ratesCmd.Val()
	avail := availCmd.Val()
	vfields := []string{verProduct(pid)}
	rids := make([]string, 0, len(rates))
	for rid := range rates {
		rids = append(rids, rid)
	}
	slices.Sort(rids)
	slices.Sort(avail)
	for _, rid := range avail {
		vfields = append(vfields, verAvail(pid, rid))
	}
	for _, rid := range rids {
		vfields = append(vfields, verRate(pid, rid))
	}
	prices := pricesCmd.Val()
	slices.Sort(prices)
	for _, rid := range prices {
		vfields = append(vfields, verPrices(pid, rid))
	}
	vs, err := s.versionsOf(ctx, sid, vfields...)
	if err != nil {
		return err
	}
	var changes []change
	for i, rid := range avail {
		changes = append(changes, change{ev: catalog.Event{Kind: schemas.CatalogKindAvailability, SupplierID: sid, ProductID: pid, RateID: rid},
			version: vs[1+i] + 1, deleted: true})
	}
	for i, rid := range prices {
		changes = append(changes, change{ev: catalog.Event{Kind: schemas.CatalogKindPriceSchedule, SupplierID: sid, ProductID: pid, RateID: rid},
			version: vs[1+len(avail)+len(rids)+i] + 1, deleted: true})
	}
	for i, rid := range rids {
		r, err := decodeRate(sid, rates[rid])
		if err != nil {
			return err
		}
		// The product is bound to no channel (checked above): no binding
		// loses the rate.
		changes = append(changes, change{ev: catalog.Event{Kind: schemas.CatalogKindRate, SupplierID: sid, ProductID: pid, RateID: rid,
			Prior: &schemas.CatalogPrior{Version: r.Version, Fingerprint: catalog.Fingerprint(r)}, BoundChannels: []string{}},
			version: max(r.Version, vs[1+len(avail)+i]) + 1, deleted: true})
	}
	changes = append(changes, change{ev: catalog.Event{Kind: schemas.CatalogKindProduct, SupplierID: sid, ProductID: pid,
		Prior: &schemas.CatalogPrior{Version: cur.Version, Fingerprint: catalog.Fingerprint(cur)}}, version: max(cur.Version, vs[0]) + 1, deleted: true})
	return s.commit(ctx, tx.lock, changes)
}

// ---- rates ----

func validateRateInput(prefix, sid, pid string, in *catalog.RateInput) error {
	if err := samePath(prefix+"supplierId", in.SupplierID, sid); err != nil {
		return err
	}
	if err := samePath(prefix+"productId", in.ProductID, pid); err != nil {
		return err
	}
	return catalog.ValidateRate(prefix, &in.RateData)
}

// CreateRate adds a rate to a product; an existing id is ErrConflict.
func (s *Store) CreateRate(ctx context.Context, sc catalog.Scope, sid, pid string, in catalog.RateInput) (catalog.Rate, error) {
	if err := validateRateInput("", sid, pid, &in); err != nil {
		return catalog.Rate{}, err
	}
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	out, err := s.upsertRates(ctx, sc, sid, pid, []catalog.RateInput{in}, modeCreate)
	if err != nil {
		return catalog.Rate{}, err
	}
	return out[0], nil
}

// PutRate replaces an existing rate; identical data changes nothing.
func (s *Store) PutRate(ctx context.Context, sc catalog.Scope, sid, pid, rid string, in catalog.RateInput) (catalog.Rate, error) {
	if err := samePath("id", in.ID, rid); err != nil {
		return catalog.Rate{}, err
	}
	in.ID = rid
	if err := validateRateInput("", sid, pid, &in); err != nil {
		return catalog.Rate{}, err
	}
	out, err := s.upsertRates(ctx, sc, sid, pid, []catalog.RateInput{in}, modeReplace)
	if err != nil {
		return catalog.Rate{}, err
	}
	return out[0], nil
}

// UpsertRates is the bulk form for the rates of one product.
func (s *Store) UpsertRates(ctx context.Context, sc catalog.Scope, sid, pid string, ins []catalog.RateInput) ([]catalog.Rate, error) {
	err := checkBulk("rates", ins, func(r *catalog.RateInput) *string { return &r.ID }, func(prefix string, in *catalog.RateInput) error {
		return validateRateInput(prefix, sid, pid, in)
	})
	if err != nil {
		return nil, err
	}
	return s.upsertRates(ctx, sc, sid, pid, ins, modeUpsert)
}

// UpsertSupplierRates is the bulk form across products of one supplier:
// the rates of every product in ins under one lock and one publish, at
// most catalog.MaxBulk rates in all. A booking system's full
// synchronization lands hundreds of products at once, and one write per
// product would run them one at a time behind the supplier's lock. A
// product given twice, or with no rates, is refused; a field error names
// "products[i].rates[j].field". Nothing is written unless every product
// exists and every rate passes. The answer is the rates as stored, per
// product in the order given.
func (s *Store) UpsertSupplierRates(ctx context.Context, sc catalog.Scope, sid string, ins []catalog.ProductRates) ([][]catalog.Rate, error) {
	total := 0
	seen := make(map[string]bool, len(ins))
	for i := range ins {
		prefix := idx("products", i)
		if seen[ins[i].ProductID] {
			return nil, catalog.Invalid(prefix+".productId", "appears twice in the request")
		}
		seen[ins[i].ProductID] = true
		pid := ins[i].ProductID
		if err := checkBulk(prefix+".rates", ins[i].Rates, func(r *catalog.RateInput) *string { return &r.ID }, func(p string, in *catalog.RateInput) error {
			return validateRateInput(p, sid, pid, in)
		}); err != nil {
			return nil, err
		}
		total += len(ins[i].Rates)
	}
	if len(ins) == 0 || total > catalog.MaxBulk {
		return nil, catalog.Invalidf("products", "must have 1 to %d rates in all", catalog.MaxBulk)
	}
	return s.upsertRatesOf(ctx, sc, sid, ins, modeUpsert)
}

func (s *Store) upsertRates(ctx context.Context, sc catalog.Scope, sid, pid string, ins []catalog.RateInput, mode writeMode) ([]catalog.Rate, error) {
	out, err := s.upsertRatesOf(ctx, sc, sid, []catalog.ProductRates{{ProductID: pid, Rates: ins}}, mode)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// productReads are the pipelined reads of one product's rates write.
type productReads struct {
	exists   *redis.BoolCmd
	rates    *redis.SliceCmd
	versions *redis.SliceCmd
	bindings *redis.MapStringStringCmd
}

// upsertRatesOf writes the rates of one or more products of supplier sid
// under one lock: one pipelined read of all, one commit.
func (s *Store) upsertRatesOf(ctx context.Context, sc catalog.Scope, sid string, ins []catalog.ProductRates, mode writeMode) ([][]catalog.Rate, error) {
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return nil, err
	}
	defer s.release(ctx, tx.lock)
	pipe := s.rdb.Pipeline()
	reads := make([]productReads, len(ins))
	for i, pr := range ins {
		ids := make([]string, len(pr.Rates))
		vfields := make([]string, len(pr.Rates))
		for j, in := range pr.Rates {
			ids[j], vfields[j] = in.ID, verRate(pr.ProductID, in.ID)
		}
		reads[i] = productReads{
			exists:   pipe.HExists(ctx, s.k.products(sid), pr.ProductID),
			rates:    pipe.HMGet(ctx, s.k.rates(sid, pr.ProductID), ids...),
			versions: pipe.HMGet(ctx, s.k.versions(sid), vfields...),
			bindings: pipe.HGetAll(ctx, s.k.bindings(sid, pr.ProductID)),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, catalog.Unavailable("read rates", err)
	}
	out := make([][]catalog.Rate, len(ins))
	var changes []change
	for i, pr := range ins {
		rates, more, err := rateChanges(sid, pr, reads[i], mode)
		if err != nil {
			return nil, err
		}
		out[i] = rates
		changes = append(changes, more...)
	}
	return out, s.commit(ctx, tx.lock, changes)
}

// rateChanges is the rates of one product as they are to be stored, and
// the changes that store them, given what was read under the lock.
func rateChanges(sid string, pr catalog.ProductRates, rd productReads, mode writeMode) ([]catalog.Rate, []change, error) {
	pid := pr.ProductID
	if !rd.exists.Val() {
		return nil, nil, catalog.NotFound("product", pid)
	}
	bindings, err := decodeBindings(rd.bindings.Val())
	if err != nil {
		return nil, nil, err
	}
	raws, vraw := rd.rates.Val(), rd.versions.Val()
	out := make([]catalog.Rate, len(pr.Rates))
	var changes []change
	for i, in := range pr.Rates {
		var cur *catalog.Rate
		if raw, ok := raws[i].(string); ok {
			if cur, err = decodeRate(sid, raw); err != nil {
				return nil, nil, err
			}
		}
		var last int64
		if v, ok := vraw[i].(string); ok {
			last = parseVersion(v)
		}
		switch {
		case cur != nil && mode == modeCreate:
			return nil, nil, catalog.Conflict("rate %s already exists", in.ID)
		case cur == nil && mode == modeReplace:
			return nil, nil, catalog.NotFound("rate", in.ID)
		}
		data := in.RateData
		data.OptionID = data.ID
		next := catalog.Rate{SupplierID: sid, ProductID: pid, RateData: data}
		ev := catalog.Event{Kind: schemas.CatalogKindRate, SupplierID: sid, ProductID: pid, RateID: in.ID, Rate: &next}
		if cur != nil {
			if err := checkVersion(in.Version, cur.Version); err != nil {
				return nil, nil, err
			}
			next.Version = cur.Version
			if bytes.Equal(catalogwire.RenderRate(&next), catalogwire.RenderRate(cur)) {
				out[i] = *cur
				continue
			}
			ev.Prior = &schemas.CatalogPrior{Version: cur.Version, Fingerprint: catalog.Fingerprint(cur)}
			next.Version = max(cur.Version, last) + 1
		} else {
			next.Version = last + 1
			// A new rate: the bound products that gain it, as bound now
			// (under the lock), whatever order the processor reads the
			// rate and binding topics in.
			ev.BoundChannels = grantingChannels(bindings, in.ID)
		}
		out[i] = next
		changes = append(changes, change{ev: ev, version: next.Version})
	}
	return out, changes, nil
}

// DeleteRate deletes a rate and its availabilities. A rate that a binding
// names in its rateIds is ErrConflict (rebind without it first); under a
// whole-product binding it simply stops being sold (channelbinding
// updated).
func (s *Store) DeleteRate(ctx context.Context, sc catalog.Scope, sid, pid, rid string) error {
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return err
	}
	defer s.release(ctx, tx.lock)
	pipe := s.rdb.Pipeline()
	rateCmd := pipe.HGet(ctx, s.k.rates(sid, pid), rid)
	bindCmd := pipe.HGetAll(ctx, s.k.bindings(sid, pid))
	availCmd := pipe.HExists(ctx, s.k.avail(sid, pid), rid)
	pricesCmd := pipe.HExists(ctx, s.k.prices(sid, pid), rid)
	verCmd := pipe.HMGet(ctx, s.k.versions(sid), verRate(pid, rid), verAvail(pid, rid), verPrices(pid, rid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return catalog.Unavailable("read rate", err)
	}
	raw, err := rateCmd.Result()
	if errors.Is(err, redis.Nil) {
		return catalog.NotFound("rate", rid)
	}
	cur, err := decodeRate(sid, raw)
	if err != nil {
		return err
	}
	bindings, err := decodeBindings(bindCmd.Val())
	if err != nil {
		return err
	}
	for _, b := range bindings {
		if !b.Whole() && b.Binds(rid) {
			return catalog.Conflict("rate %s is bound to channel %s; rebind the product without it first", rid, b.ChannelID)
		}
	}
	var vr, va, vp int64
	if v, ok := verCmd.Val()[0].(string); ok {
		vr = parseVersion(v)
	}
	if v, ok := verCmd.Val()[1].(string); ok {
		va = parseVersion(v)
	}
	if v, ok := verCmd.Val()[2].(string); ok {
		vp = parseVersion(v)
	}
	var changes []change
	if availCmd.Val() {
		changes = append(changes, change{ev: catalog.Event{Kind: schemas.CatalogKindAvailability, SupplierID: sid, ProductID: pid, RateID: rid}, version: va + 1, deleted: true})
	}
	if pricesCmd.Val() {
		changes = append(changes, change{ev: catalog.Event{Kind: schemas.CatalogKindPriceSchedule, SupplierID: sid, ProductID: pid, RateID: rid}, version: vp + 1, deleted: true})
	}
	// Only whole-product bindings can grant it here (a naming one is a
	// conflict above): each loses the rate.
	changes = append(changes, change{ev: catalog.Event{Kind: schemas.CatalogKindRate, SupplierID: sid, ProductID: pid, RateID: rid,
		Prior: &schemas.CatalogPrior{Version: cur.Version, Fingerprint: catalog.Fingerprint(cur)}, BoundChannels: grantingChannels(bindings, rid)},
		version: max(cur.Version, vr) + 1, deleted: true})
	return s.commit(ctx, tx.lock, changes)
}

// decodeBindings reads the stored bindings of a product (channel id →
// binding JSON), sorted by channel id; the channel is the hash field.
func decodeBindings(raw map[string]string) ([]catalog.Binding, error) {
	out := make([]catalog.Binding, 0, len(raw))
	for cid, braw := range raw {
		var b catalog.Binding
		if err := json.Unmarshal([]byte(braw), &b); err != nil {
			return nil, fmt.Errorf("decode stored binding: %w", err)
		}
		b.ChannelID = cid
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b catalog.Binding) int { return strings.Compare(a.ChannelID, b.ChannelID) })
	return out, nil
}

// grantingChannels are the channels of the bindings that grant the rate,
// in the bindings' order; never nil (Event.BoundChannels: nil means "not
// recorded").
func grantingChannels(bs []catalog.Binding, rid string) []string {
	out := []string{}
	for _, b := range bs {
		if b.Binds(rid) {
			out = append(out, b.ChannelID)
		}
	}
	return out
}

// ---- availabilities ----

// ---- channels ----

// CreateChannel creates a sales channel (admin). The id is generated
// unless given; an existing id is ErrConflict.
func (s *Store) CreateChannel(ctx context.Context, in catalog.ChannelInput) (catalog.Channel, error) {
	if err := catalog.ValidateChannel(&in); err != nil {
		return catalog.Channel{}, err
	}
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	return s.writeChannel(ctx, in, modeCreate)
}

// PutChannel replaces an existing channel (admin).
func (s *Store) PutChannel(ctx context.Context, cid string, in catalog.ChannelInput) (catalog.Channel, error) {
	if err := samePath("id", in.ID, cid); err != nil {
		return catalog.Channel{}, err
	}
	in.ID = cid
	if err := catalog.ValidateChannel(&in); err != nil {
		return catalog.Channel{}, err
	}
	return s.writeChannel(ctx, in, modeReplace)
}

// EnsureChannel makes the channel exist with exactly this data: nothing is
// published when it already does, so it is safe at every start (the demo
// channel).
func (s *Store) EnsureChannel(ctx context.Context, c catalog.Channel) (catalog.Channel, error) {
	in := catalog.ChannelInput{ID: c.ID, Name: c.Name, CompanyName: c.CompanyName, ActivationDelay: c.ActivationDelay,
		Config: c.Config, Ext: c.Ext, LogoURL: c.LogoURL, URL: c.URL}
	if in.ID == "" {
		return catalog.Channel{}, catalog.Invalid("id", "is required")
	}
	if err := catalog.ValidateChannel(&in); err != nil {
		return catalog.Channel{}, err
	}
	return s.writeChannel(ctx, in, modeUpsert)
}

func (s *Store) writeChannel(ctx context.Context, in catalog.ChannelInput, mode writeMode) (catalog.Channel, error) {
	if !catalog.ValidID(in.ID) {
		return catalog.Channel{}, catalog.NotFound("channel", in.ID)
	}
	l, err := s.acquire(ctx, s.k.channelLock(in.ID), s.k.channels(), in.ID)
	if err != nil {
		return catalog.Channel{}, err
	}
	defer s.release(ctx, l)
	var cur *catalog.Channel
	if l.current != "" {
		var c catalog.Channel
		if err := json.Unmarshal([]byte(l.current), &c); err != nil {
			return catalog.Channel{}, fmt.Errorf("decode stored channel: %w", err)
		}
		cur = &c
	}
	switch {
	case cur != nil && mode == modeCreate:
		return catalog.Channel{}, catalog.Conflict("channel %s already exists", in.ID)
	case cur == nil && mode == modeReplace:
		return catalog.Channel{}, catalog.NotFound("channel", in.ID)
	}
	next := catalog.Channel{ID: in.ID, Name: in.Name, CompanyName: in.CompanyName, ActivationDelay: in.ActivationDelay,
		Config: in.Config, Ext: in.Ext, LogoURL: in.LogoURL, URL: in.URL}
	var last int64
	if v, err := s.rdb.HGet(ctx, s.k.channelVersions(), in.ID).Result(); err == nil {
		last = parseVersion(v)
	} else if !errors.Is(err, redis.Nil) {
		return catalog.Channel{}, catalog.Unavailable("read channel version", err)
	}
	if cur != nil {
		if err := checkVersion(in.Version, cur.Version); err != nil {
			return catalog.Channel{}, err
		}
		next.Version = cur.Version
		if bytes.Equal(catalogwire.MustJSON(next), catalogwire.MustJSON(cur)) {
			return *cur, nil
		}
		last = max(last, cur.Version)
	}
	next.Version = last + 1
	return next, s.commit(ctx, l, []change{{ev: catalog.Event{Kind: schemas.CatalogKindChannel, ChannelID: next.ID, Channel: &next}, version: next.Version}})
}

// ---- bindings ----

// bindingState is what a binding write reads under the supplier lock.
type bindingState struct {
	product *catalog.Product
	channel *catalog.Channel
	rates   []string // every rate id of the product, sorted
	cur     *catalog.Binding
	last    int64
}

func (s *Store) readBindingState(ctx context.Context, sid, pid, cid string) (bindingState, error) {
	var st bindingState
	pipe := s.rdb.Pipeline()
	prodCmd := pipe.HGet(ctx, s.k.products(sid), pid)
	chanCmd := pipe.HGet(ctx, s.k.channels(), cid)
	ratesCmd := pipe.HKeys(ctx, s.k.rates(sid, pid))
	curCmd := pipe.HGet(ctx, s.k.bindings(sid, pid), cid)
	verCmd := pipe.HGet(ctx, s.k.versions(sid), verBinding(pid, cid))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return st, catalog.Unavailable("read binding", err)
	}
	raw, err := prodCmd.Result()
	if err != nil {
		return st, catalog.NotFound("product", pid)
	}
	if st.product, err = decodeProduct(raw); err != nil {
		return st, err
	}
	craw, err := chanCmd.Result()
	if err != nil || !catalog.ValidID(cid) {
		return st, catalog.NotFound("channel", cid)
	}
	var c catalog.Channel
	if err := json.Unmarshal([]byte(craw), &c); err != nil {
		return st, fmt.Errorf("decode stored channel: %w", err)
	}
	st.channel = &c
	st.rates = ratesCmd.Val()
	slices.Sort(st.rates)
	if braw, err := curCmd.Result(); err == nil {
		var b catalog.Binding
		if err := json.Unmarshal([]byte(braw), &b); err != nil {
			return st, fmt.Errorf("decode stored binding: %w", err)
		}
		st.cur = &b
		st.last = b.Version
	}
	if v, err := verCmd.Result(); err == nil {
		st.last = max(st.last, parseVersion(v))
	}
	return st, nil
}

// bindingMode is how a binding write treats the current binding.
type bindingMode int

const (
	bindCreate  bindingMode = iota // v1.2 POST: existing is ErrConflict
	bindReplace                    // v1.2 PUT: missing is ErrNotFound
	bindOptions                    // v2 PUT: create or replace the rate set, keep the terms
)

// CreateBinding binds a product to a channel (channel v1.2 POST): at the
// given rates, or the whole product when rateIds is empty. A binding
// that exists is ErrConflict; an unknown supplier, product or channel is
// ErrNotFound; a rate id that is not the product's is ErrInvalid.
func (s *Store) CreateBinding(ctx context.Context, sc catalog.Scope, sid, pid, cid string, in catalog.BindingInput) (catalogwire.BoundProduct, error) {
	b, err := catalog.NormalizeBinding(in)
	if err != nil {
		return catalogwire.BoundProduct{}, err
	}
	return s.writeBinding(ctx, sc, sid, pid, cid, b, "rateIds", bindCreate)
}

// PutBinding replaces a binding's terms (channel v1.2 PUT).
func (s *Store) PutBinding(ctx context.Context, sc catalog.Scope, sid, pid, cid string, in catalog.BindingInput) (catalogwire.BoundProduct, error) {
	b, err := catalog.NormalizeBinding(in)
	if err != nil {
		return catalogwire.BoundProduct{}, err
	}
	return s.writeBinding(ctx, sc, sid, pid, cid, b, "rateIds", bindReplace)
}

// PutOptions replaces the bound options (operator v2 PUT, spec doc 3 rule
// 1: replaces, never appends); a new binding gets PRICE_AT_UNKNOWN, no
// price tags and no window, an existing one keeps them.
func (s *Store) PutOptions(ctx context.Context, sc catalog.Scope, sid, pid, cid string, optionIDs []string) (catalogwire.BoundProduct, error) {
	if len(optionIDs) == 0 {
		return catalogwire.BoundProduct{}, catalog.Invalid("optionIds", "must list at least one option; DELETE removes the binding")
	}
	ids, err := catalog.NormalizeIDs("optionIds", optionIDs)
	if err != nil {
		return catalogwire.BoundProduct{}, err
	}
	return s.writeBinding(ctx, sc, sid, pid, cid, catalog.Binding{PriceAt: catalog.PriceAtUnknown, PriceTags: []string{}, RateIDs: ids}, "optionIds", bindOptions)
}

func (s *Store) writeBinding(ctx context.Context, sc catalog.Scope, sid, pid, cid string, next catalog.Binding, ratesField string, mode bindingMode) (catalogwire.BoundProduct, error) {
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return catalogwire.BoundProduct{}, err
	}
	defer s.release(ctx, tx.lock)
	st, err := s.readBindingState(ctx, sid, pid, cid)
	if err != nil {
		return catalogwire.BoundProduct{}, err
	}
	for i, id := range next.RateIDs {
		if _, ok := slices.BinarySearch(st.rates, id); !ok {
			return catalogwire.BoundProduct{}, catalog.Invalidf(idx(ratesField, i), "%q is not a rate of product %s", id, pid)
		}
	}
	switch {
	case st.cur != nil && mode == bindCreate:
		return catalogwire.BoundProduct{}, catalog.Conflict("product %s is already bound to channel %s; use PUT to change the binding", pid, cid)
	case st.cur == nil && mode == bindReplace:
		return catalogwire.BoundProduct{}, catalog.NotFound("binding of channel", cid)
	case st.cur != nil && mode == bindOptions:
		next.PriceAt, next.PriceTags, next.Valid = st.cur.PriceAt, st.cur.PriceTags, st.cur.Valid
	}
	next.SupplierID, next.ProductID, next.ChannelID = sid, pid, cid
	next.PriceTags = orEmpty(next.PriceTags)
	next.RateIDs = orEmpty(next.RateIDs)
	out := catalogwire.BoundProduct{Binding: next, Channel: *st.channel, SupplierName: tx.sup.Name, ProductName: st.product.Name, Rates: st.rates}
	if st.cur != nil && st.cur.SameTerms(next) {
		out.Binding = *st.cur
		return out, nil
	}
	next.Version = st.last + 1
	out.Binding = next
	ev := catalog.Event{Kind: schemas.CatalogKindBinding, SupplierID: sid, ProductID: pid, ChannelID: cid, Binding: &next, PriorBinding: st.cur}
	return out, s.commit(ctx, tx.lock, []change{{ev: ev, version: next.Version}})
}

// DeleteBinding unbinds the product from the channel (both APIs).
func (s *Store) DeleteBinding(ctx context.Context, sc catalog.Scope, sid, pid, cid string) error {
	tx, err := s.lockSupplier(ctx, sc, sid, true)
	if err != nil {
		return err
	}
	defer s.release(ctx, tx.lock)
	st, err := s.readBindingState(ctx, sid, pid, cid)
	if err != nil {
		return err
	}
	if st.cur == nil {
		return catalog.NotFound("binding of channel", cid)
	}
	ev := catalog.Event{Kind: schemas.CatalogKindBinding, SupplierID: sid, ProductID: pid, ChannelID: cid, PriorBinding: st.cur}
	return s.commit(ctx, tx.lock, []change{{ev: ev, version: st.last + 1, deleted: true}})
}

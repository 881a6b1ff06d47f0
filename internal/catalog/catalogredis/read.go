package catalogredis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
)

// ---- channels ----

// Channels lists every sales channel, by id.
func (s *Store) Channels(ctx context.Context) ([]catalog.Channel, error) {
	vals, err := s.rdb.HVals(ctx, s.k.channels()).Result()
	if err != nil {
		return nil, catalog.Unavailable("read channels", err)
	}
	out := make([]catalog.Channel, 0, len(vals))
	for _, v := range vals {
		var c catalog.Channel
		if err := json.Unmarshal([]byte(v), &c); err != nil {
			return nil, fmt.Errorf("decode stored channel: %w", err)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b catalog.Channel) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Channel returns one channel or ErrNotFound.
func (s *Store) Channel(ctx context.Context, cid string) (catalog.Channel, error) {
	if !catalog.ValidID(cid) {
		return catalog.Channel{}, catalog.NotFound("channel", cid)
	}
	raw, err := s.rdb.HGet(ctx, s.k.channels(), cid).Result()
	if errors.Is(err, redis.Nil) {
		return catalog.Channel{}, catalog.NotFound("channel", cid)
	}
	if err != nil {
		return catalog.Channel{}, catalog.Unavailable("read channel", err)
	}
	var c catalog.Channel
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return catalog.Channel{}, fmt.Errorf("decode stored channel: %w", err)
	}
	return c, nil
}

// ---- operator reads (scoped) ----

// Suppliers lists the suppliers p manages (an admin: all), by id.
func (s *Store) Suppliers(ctx context.Context, sc catalog.Scope) ([]catalog.Supplier, error) {
	owner, err := sc.Owner()
	if err != nil {
		return nil, err
	}
	set := s.k.owned(owner)
	if sc.All() {
		set = s.k.all()
	}
	ids, err := s.rdb.SMembers(ctx, set).Result()
	if err != nil {
		return nil, catalog.Unavailable("read suppliers", err)
	}
	slices.Sort(ids)
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.k.supplier(id), fieldRec)
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, catalog.Unavailable("read suppliers", err)
		}
	}
	out := make([]catalog.Supplier, 0, len(ids))
	for _, c := range cmds {
		raw, err := c.Result()
		if err != nil {
			continue // deleted between the two reads
		}
		var sup catalog.Supplier
		if err := json.Unmarshal([]byte(raw), &sup); err != nil {
			return nil, fmt.Errorf("decode stored supplier: %w", err)
		}
		if sc.CanManage(&sup) {
			out = append(out, sup)
		}
	}
	return out, nil
}

// scopedSupplier reads a supplier p manages, alongside extra commands of
// the same round trip (queued by more; they are executed even when the
// supplier is out of scope, but their results are then not used).
func (s *Store) scopedSupplier(ctx context.Context, sc catalog.Scope, sid string, more func(redis.Pipeliner)) (*catalog.Supplier, error) {
	if !catalog.ValidID(sid) {
		return nil, catalog.NotFound("supplier", sid)
	}
	pipe := s.rdb.Pipeline()
	recCmd := pipe.HGet(ctx, s.k.supplier(sid), fieldRec)
	if more != nil {
		more(pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, catalog.Unavailable("read supplier", err)
	}
	raw, err := recCmd.Result()
	if err != nil {
		return nil, catalog.NotFound("supplier", sid)
	}
	var sup catalog.Supplier
	if err := json.Unmarshal([]byte(raw), &sup); err != nil {
		return nil, fmt.Errorf("decode stored supplier: %w", err)
	}
	if !sc.CanManage(&sup) {
		return nil, catalog.NotFound("supplier", sid)
	}
	return &sup, nil
}

// Supplier returns a supplier p manages, its credentials opened (the
// clients of its system read it through here; secrets.go).
func (s *Store) Supplier(ctx context.Context, sc catalog.Scope, sid string) (catalog.Supplier, error) {
	sup, err := s.scopedSupplier(ctx, sc, sid, nil)
	if err != nil {
		return catalog.Supplier{}, err
	}
	if err := s.openCredentials(ctx, sup); err != nil {
		return catalog.Supplier{}, err
	}
	return *sup, nil
}

// Products lists the products of a supplier p manages, by id.
func (s *Store) Products(ctx context.Context, sc catalog.Scope, sid string) ([]catalog.Product, error) {
	var cmd *redis.MapStringStringCmd
	if _, err := s.scopedSupplier(ctx, sc, sid, func(pp redis.Pipeliner) { cmd = pp.HGetAll(ctx, s.k.products(sid)) }); err != nil {
		return nil, err
	}
	out := make([]catalog.Product, 0, len(cmd.Val()))
	for _, raw := range cmd.Val() {
		pr, err := decodeProduct(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, *pr)
	}
	slices.SortFunc(out, func(a, b catalog.Product) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Product returns one product of a supplier p manages.
func (s *Store) Product(ctx context.Context, sc catalog.Scope, sid, pid string) (catalog.Product, error) {
	var cmd *redis.StringCmd
	if _, err := s.scopedSupplier(ctx, sc, sid, func(pp redis.Pipeliner) { cmd = pp.HGet(ctx, s.k.products(sid), pid) }); err != nil {
		return catalog.Product{}, err
	}
	raw, err := cmd.Result()
	if err != nil {
		return catalog.Product{}, catalog.NotFound("product", pid)
	}
	pr, err := decodeProduct(raw)
	if err != nil {
		return catalog.Product{}, err
	}
	return *pr, nil
}

// Rates lists the rates of a product p manages, by id.
func (s *Store) Rates(ctx context.Context, sc catalog.Scope, sid, pid string) ([]catalog.Rate, error) {
	var prod *redis.BoolCmd
	var cmd *redis.MapStringStringCmd
	_, err := s.scopedSupplier(ctx, sc, sid, func(pp redis.Pipeliner) {
		prod = pp.HExists(ctx, s.k.products(sid), pid)
		cmd = pp.HGetAll(ctx, s.k.rates(sid, pid))
	})
	if err != nil {
		return nil, err
	}
	if !prod.Val() {
		return nil, catalog.NotFound("product", pid)
	}
	out := make([]catalog.Rate, 0, len(cmd.Val()))
	for _, raw := range cmd.Val() {
		r, err := decodeRate(sid, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b catalog.Rate) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Rate returns one rate of a product p manages.
func (s *Store) Rate(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.Rate, error) {
	var cmd *redis.StringCmd
	if _, err := s.scopedSupplier(ctx, sc, sid, func(pp redis.Pipeliner) { cmd = pp.HGet(ctx, s.k.rates(sid, pid), rid) }); err != nil {
		return catalog.Rate{}, err
	}
	raw, err := cmd.Result()
	if err != nil {
		return catalog.Rate{}, catalog.NotFound("rate", rid)
	}
	r, err := decodeRate(sid, raw)
	if err != nil {
		return catalog.Rate{}, err
	}
	return *r, nil
}

// Availabilities returns what the operator last pushed for a rate (an
// empty set, version 0, when it never pushed any).
func (s *Store) Availabilities(ctx context.Context, sc catalog.Scope, sid, pid, rid string) (catalog.AvailabilitySet, error) {
	var rate *redis.BoolCmd
	var cmd *redis.StringCmd
	_, err := s.scopedSupplier(ctx, sc, sid, func(pp redis.Pipeliner) {
		rate = pp.HExists(ctx, s.k.rates(sid, pid), rid)
		cmd = pp.HGet(ctx, s.k.avail(sid, pid), rid)
	})
	if err != nil {
		return catalog.AvailabilitySet{}, err
	}
	if !rate.Val() {
		return catalog.AvailabilitySet{}, catalog.NotFound("rate", rid)
	}
	out := catalog.AvailabilitySet{SupplierID: sid, ProductID: pid, RateID: rid, Availabilities: []catalog.Availability{}}
	if raw, err := cmd.Result(); err == nil {
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			return out, fmt.Errorf("decode stored availabilities: %w", err)
		}
	}
	return out, nil
}

// ProductBindings lists the bindings of a product p manages, by channel id.
func (s *Store) ProductBindings(ctx context.Context, sc catalog.Scope, sid, pid string) ([]catalogwire.BoundProduct, error) {
	var prod *redis.StringCmd
	var binds *redis.MapStringStringCmd
	var rates *redis.StringSliceCmd
	sup, err := s.scopedSupplier(ctx, sc, sid, func(pp redis.Pipeliner) {
		prod = pp.HGet(ctx, s.k.products(sid), pid)
		binds = pp.HGetAll(ctx, s.k.bindings(sid, pid))
		rates = pp.HKeys(ctx, s.k.rates(sid, pid))
	})
	if err != nil {
		return nil, err
	}
	praw, err := prod.Result()
	if err != nil {
		return nil, catalog.NotFound("product", pid)
	}
	product, err := decodeProduct(praw)
	if err != nil {
		return nil, err
	}
	rids := rates.Val()
	slices.Sort(rids)
	cids := make([]string, 0, len(binds.Val()))
	for cid := range binds.Val() {
		cids = append(cids, cid)
	}
	slices.Sort(cids)
	out := make([]catalogwire.BoundProduct, 0, len(cids))
	if len(cids) == 0 {
		return out, nil
	}
	chans, err := s.rdb.HMGet(ctx, s.k.channels(), cids...).Result()
	if err != nil {
		return nil, catalog.Unavailable("read channels", err)
	}
	for i, cid := range cids {
		var b catalog.Binding
		if err := json.Unmarshal([]byte(binds.Val()[cid]), &b); err != nil {
			return nil, fmt.Errorf("decode stored binding: %w", err)
		}
		bp := catalogwire.BoundProduct{Binding: b, Channel: catalog.Channel{ID: cid}, SupplierName: sup.Name, ProductName: product.Name, Rates: rids}
		if raw, ok := chans[i].(string); ok {
			if err := json.Unmarshal([]byte(raw), &bp.Channel); err != nil {
				return nil, fmt.Errorf("decode stored channel: %w", err)
			}
		}
		out = append(out, bp)
	}
	return out, nil
}

// ProductBinding returns the binding of a product p manages to one
// channel, or ErrNotFound.
func (s *Store) ProductBinding(ctx context.Context, sc catalog.Scope, sid, pid, cid string) (catalogwire.BoundProduct, error) {
	all, err := s.ProductBindings(ctx, sc, sid, pid)
	if err != nil {
		return catalogwire.BoundProduct{}, err
	}
	for _, b := range all {
		if b.Channel.ID == cid {
			return b, nil
		}
	}
	if _, err := s.Channel(ctx, cid); err != nil {
		return catalogwire.BoundProduct{}, err
	}
	return catalogwire.BoundProduct{}, catalog.NotFound("binding of channel", cid)
}

// OwnsSupplier reports whether the operator principal operatorID owns the
// supplier (false for an unknown supplier): the scope check of other
// operator APIs (query/historyapi's Ownership). One Redis round trip.
func (s *Store) OwnsSupplier(ctx context.Context, operatorID, supplierID string) (bool, error) {
	if operatorID == "" || !catalog.ValidID(supplierID) {
		return false, nil
	}
	owner, err := s.rdb.HGet(ctx, s.k.supplier(supplierID), fieldOwner).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, catalog.Unavailable("read supplier owner", err)
	}
	return owner == operatorID, nil
}

// ---- processor reads (unscoped) ----

// Bindings returns every binding of a product, by channel id.
func (s *Store) Bindings(ctx context.Context, sid, pid string) ([]catalog.Binding, error) {
	raw, err := s.rdb.HGetAll(ctx, s.k.bindings(sid, pid)).Result()
	if err != nil {
		return nil, catalog.Unavailable("read bindings", err)
	}
	return decodeBindings(raw)
}

// BindingsOf returns the bindings of each product named, in their order,
// read in one pipeline: the availability processor asks for every product
// of a consumer batch at once (one round trip, not one each).
func (s *Store) BindingsOf(ctx context.Context, products []catalog.ProductRef) ([][]catalog.Binding, error) {
	if len(products) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(products))
	for i, p := range products {
		cmds[i] = pipe.HGetAll(ctx, s.k.bindings(p.SupplierID, p.ProductID))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, catalog.Unavailable("read bindings", err)
	}
	out := make([][]catalog.Binding, len(products))
	for i, c := range cmds {
		bs, err := decodeBindings(c.Val())
		if err != nil {
			return nil, err
		}
		out[i] = bs
	}
	return out, nil
}

// SupplierChannels returns the channels that see the supplier at now:
// those with at least one of its products bound, inside the binding's
// window. Sorted.
func (s *Store) SupplierChannels(ctx context.Context, sid string, now time.Time) ([]string, error) {
	cids, err := s.rdb.HKeys(ctx, s.k.supplierChannels(sid)).Result()
	if err != nil {
		return nil, catalog.Unavailable("read supplier channels", err)
	}
	slices.Sort(cids)
	if len(cids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(cids))
	for i, cid := range cids {
		cmds[i] = pipe.HVals(ctx, s.k.chanSupplier(cid, sid))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, catalog.Unavailable("read channel index", err)
	}
	out := cids[:0]
	for i, cid := range cids {
		if anyOpen(cmds[i].Val(), millis(now)) {
			out = append(out, cid)
		}
	}
	return out, nil
}

func anyOpen(vals []string, nowMs int64) bool {
	for _, v := range vals {
		if open, _ := catalogwire.IndexOpen(v, nowMs); open {
			return true
		}
	}
	return false
}

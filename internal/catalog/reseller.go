package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reseller reads: the hot path. Visibility is governed by channel binding
// (spec doc 2, binding rules; doc 1, "What the service does" 5): a channel
// sees a supplier with at least one product bound to it, only the bound
// products and rates, only inside the binding's valid window, and a price
// only when all the binding's priceTags are among its labels. Anything
// else is ErrNotFound, whether it exists or not.
//
// Each read is one or two Redis round trips (pipelined) and copies the
// renderings stored at apply time into dst; only a rate read under a
// binding with priceTags decodes and re-encodes (to drop prices).

// SupplierVersion selects a supplier rendering.
type SupplierVersion int

// Supplier renderings: 1.2; 1.3 without content (lists, and the single
// supplier without content=true); 1.3 with content.
const (
	SupplierV12 SupplierVersion = iota
	SupplierV13
	SupplierV13Content
)

func (v SupplierVersion) field() string {
	switch v {
	case SupplierV13:
		return fieldV13
	case SupplierV13Content:
		return fieldV13C
	}
	return fieldV12
}

// AppendSuppliers appends the JSON array of the suppliers the channel
// sees at now, by id, keeping those whose partnerId and code equal the
// filters that are not empty. Two round trips.
func (s *Store) AppendSuppliers(ctx context.Context, dst []byte, channel string, v SupplierVersion, partnerID, code string, now time.Time) ([]byte, error) {
	dst = append(dst, '[')
	if !ValidID(channel) {
		return append(dst, ']'), nil
	}
	ids, err := s.rdb.SMembers(ctx, s.k.chanSuppliers(channel)).Result()
	if err != nil {
		return dst, unavailable("read channel suppliers", err)
	}
	if len(ids) == 0 {
		return append(dst, ']'), nil
	}
	slices.Sort(ids)
	pipe := s.rdb.Pipeline()
	idx := make([]*redis.StringSliceCmd, len(ids))
	sup := make([]*redis.SliceCmd, len(ids))
	field := v.field()
	for i, id := range ids {
		idx[i] = pipe.HVals(ctx, s.k.chanSupplier(channel, id))
		sup[i] = pipe.HMGet(ctx, s.k.supplier(id), field, fieldCode, fieldPartnerID)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return dst, unavailable("read suppliers", err)
	}
	nowMs := millis(now)
	first := true
	for i := range ids {
		if !anyOpen(idx[i].Val(), nowMs) {
			continue
		}
		vals := sup[i].Val()
		body, ok := vals[0].(string)
		if !ok {
			continue // bound but not (yet) in the view: not visible
		}
		if c, _ := vals[1].(string); code != "" && c != code {
			continue
		}
		if p, _ := vals[2].(string); partnerID != "" && p != partnerID {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, body...)
	}
	return append(dst, ']'), nil
}

// AppendSupplier appends the supplier's JSON object if the channel sees
// it at now. One round trip.
func (s *Store) AppendSupplier(ctx context.Context, dst []byte, channel, sid string, v SupplierVersion, now time.Time) ([]byte, error) {
	if !ValidID(channel) || !ValidID(sid) {
		return dst, notFound("supplier", sid)
	}
	pipe := s.rdb.Pipeline()
	idx := pipe.HVals(ctx, s.k.chanSupplier(channel, sid))
	body := pipe.HGet(ctx, s.k.supplier(sid), v.field())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return dst, unavailable("read supplier", err)
	}
	b, err := body.Result()
	if err != nil || !anyOpen(idx.Val(), millis(now)) {
		return dst, notFound("supplier", sid)
	}
	return append(dst, b...), nil
}

// AppendProducts appends the JSON array of the supplier's products bound
// to the channel at now, by id; a supplier the channel does not see is
// ErrNotFound. Two round trips.
func (s *Store) AppendProducts(ctx context.Context, dst []byte, channel, sid string, now time.Time) ([]byte, error) {
	if !ValidID(channel) || !ValidID(sid) {
		return dst, notFound("supplier", sid)
	}
	bound, err := s.rdb.HGetAll(ctx, s.k.chanSupplier(channel, sid)).Result()
	if err != nil {
		return dst, unavailable("read channel index", err)
	}
	nowMs := millis(now)
	pids := make([]string, 0, len(bound))
	for pid, v := range bound {
		if open, _ := indexOpen(v, nowMs); open {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return dst, notFound("supplier", sid)
	}
	slices.Sort(pids)
	vals, err := s.rdb.HMGet(ctx, s.k.products(sid), pids...).Result()
	if err != nil {
		return dst, unavailable("read products", err)
	}
	dst = append(dst, '[')
	first := true
	for _, v := range vals {
		b, ok := v.(string)
		if !ok {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, b...)
	}
	return append(dst, ']'), nil
}

// bindingTerms is the part of a binding that rate reads need.
type bindingTerms struct {
	RateIDs   []string `json:"rateIds"`
	PriceTags []string `json:"priceTags"`
}

func (t bindingTerms) binds(rid string) bool {
	return len(t.RateIDs) == 0 || slices.Contains(t.RateIDs, rid)
}

// boundProduct reads the channel's binding of the product with cmds queued
// by more in the same round trip; not bound (or outside the window) is
// ErrNotFound.
func (s *Store) boundProduct(ctx context.Context, channel, sid, pid string, now time.Time, more func(redis.Pipeliner)) (bindingTerms, error) {
	var t bindingTerms
	if !ValidID(channel) || !ValidID(sid) || !ValidID(pid) {
		return t, notFound("product", pid)
	}
	pipe := s.rdb.Pipeline()
	idx := pipe.HGet(ctx, s.k.chanSupplier(channel, sid), pid)
	more(pipe)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return t, unavailable("read product", err)
	}
	v, err := idx.Result()
	if err != nil {
		return t, notFound("product", pid)
	}
	open, raw := indexOpen(v, millis(now))
	if !open {
		return t, notFound("product", pid)
	}
	return parseTerms(raw)
}

// parseTerms reads rateIds and priceTags from a stored binding. Ids are
// plain (ValidID: no escapes), so rateIds are cut out of the JSON without
// decoding it; priceTags, free text, take the decoder only when present.
func parseTerms(raw string) (bindingTerms, error) {
	var t bindingTerms
	if !strings.Contains(raw, `"priceTags":[]`) {
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return t, fmt.Errorf("decode channel index: %w", err)
		}
		return t, nil
	}
	_, rest, ok := strings.Cut(raw, `"rateIds":[`)
	list, _, ok2 := strings.Cut(rest, "]")
	if !ok || !ok2 {
		return t, fmt.Errorf("decode channel index: no rateIds")
	}
	if list == "" {
		return t, nil
	}
	t.RateIDs = make([]string, 0, strings.Count(list, ",")+1)
	for item := range strings.SplitSeq(list, ",") {
		id := strings.Trim(item, `"`)
		if !ValidID(id) {
			return t, fmt.Errorf("decode channel index: rate id %q", id)
		}
		t.RateIDs = append(t.RateIDs, id)
	}
	return t, nil
}

// AppendProduct appends the product's JSON object if it is bound to the
// channel at now. One round trip.
func (s *Store) AppendProduct(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error) {
	var body *redis.StringCmd
	if _, err := s.boundProduct(ctx, channel, sid, pid, now, func(p redis.Pipeliner) { body = p.HGet(ctx, s.k.products(sid), pid) }); err != nil {
		return dst, err
	}
	b, err := body.Result()
	if err != nil {
		return dst, notFound("product", pid)
	}
	return append(dst, b...), nil
}

// AppendRates appends the JSON array of the product's rates bound to the
// channel at now, by id, with prices filtered by the binding's priceTags.
// One round trip.
func (s *Store) AppendRates(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error) {
	var all *redis.MapStringStringCmd
	t, err := s.boundProduct(ctx, channel, sid, pid, now, func(p redis.Pipeliner) { all = p.HGetAll(ctx, s.k.rates(sid, pid)) })
	if err != nil {
		return dst, err
	}
	rates := all.Val()
	rids := make([]string, 0, len(rates))
	for rid := range rates {
		if t.binds(rid) {
			rids = append(rids, rid)
		}
	}
	slices.Sort(rids)
	dst = append(dst, '[')
	for i, rid := range rids {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendRate(dst, rates[rid], t.PriceTags); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// AppendRate appends the rate's JSON object if it is bound to the channel
// at now. One round trip.
func (s *Store) AppendRate(ctx context.Context, dst []byte, channel, sid, pid, rid string, now time.Time) ([]byte, error) {
	var body *redis.StringCmd
	t, err := s.boundProduct(ctx, channel, sid, pid, now, func(p redis.Pipeliner) { body = p.HGet(ctx, s.k.rates(sid, pid), rid) })
	if err != nil {
		return dst, err
	}
	b, err := body.Result()
	if err != nil || !t.binds(rid) {
		return dst, notFound("rate", rid)
	}
	return appendRate(dst, b, t.PriceTags)
}

func appendRate(dst []byte, raw string, tags []string) ([]byte, error) {
	if len(tags) == 0 {
		return append(dst, raw...), nil
	}
	b, err := filterPrices([]byte(raw), tags)
	if err != nil {
		return dst, fmt.Errorf("decode stored rate: %w", err)
	}
	return append(dst, b...), nil
}

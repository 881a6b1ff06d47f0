package catalogredis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
)

// Reseller reads: the hot path. Visibility is governed by channel binding
// (spec doc 2, binding rules; doc 1, "What the service does" 5): a channel
// sees a supplier with at least one product bound to it, only the bound
// products and rates, only inside the binding's valid window, and a price
// only when all the binding's priceTags are among its labels. Anything
// else is ErrNotFound, whether it exists or not.
//
// Each read is one or two batches of reads (kv.go: a Redis pipeline, or
// the process's copy of the view when it is fresh) and copies the
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
// filters that are not empty. Two batches of reads; the unfiltered list
// answered from the process's copy is memoized (listcache.go).
func (s *Store) AppendSuppliers(ctx context.Context, dst []byte, channel string, v SupplierVersion, partnerID, code string, now time.Time) ([]byte, error) {
	if !catalog.ValidID(channel) {
		return append(dst, '[', ']'), nil
	}
	view := s.view
	if view == nil || partnerID != "" || code != "" || !view.Fresh() {
		return s.appendSuppliers(ctx, dst, s.reads, channel, v, partnerID, code, now, nil)
	}
	// From memory: the same answer as reads() would give while fresh.
	nowMs := millis(now)
	key := listKey{channel: channel, v: v}
	gen := view.kv.gen.Load()
	if body, ok := view.lists.get(key, gen, nowMs); ok {
		view.m.fromMemory.Inc()
		return append(dst, body...), nil
	}
	memory := func() kvBatch {
		view.m.fromMemory.Inc()
		return view.kv.batch()
	}
	edges := newWindowEdges(nowMs)
	start := len(dst)
	dst, err := s.appendSuppliers(ctx, dst, memory, channel, v, "", "", now, edges)
	if err == nil {
		view.lists.put(key, &listEntry{gen: gen, from: edges.from, until: edges.until, body: slices.Clone(dst[start:])})
	}
	return dst, err
}

// appendSuppliers is AppendSuppliers over the batches reads returns; edges,
// when not nil, gathers the binding windows' edges that the answer
// depends on.
func (s *Store) appendSuppliers(ctx context.Context, dst []byte, reads func() kvBatch, channel string, v SupplierVersion, partnerID, code string, now time.Time, edges *windowEdges) ([]byte, error) {
	dst = append(dst, '[')
	b := reads()
	members := b.smembers(s.k.chanSuppliers(channel))
	if err := b.exec(ctx); err != nil {
		return dst, catalog.Unavailable("read channel suppliers", err)
	}
	ids := members.val
	if len(ids) == 0 {
		return append(dst, ']'), nil
	}
	slices.Sort(ids)
	b = reads()
	idx := make([]*kvStrs, len(ids))
	sup := make([][]*kvStr, len(ids))
	field := v.field()
	for i, id := range ids {
		idx[i] = b.hvals(s.k.chanSupplier(channel, id))
		sup[i] = b.hmget(s.k.supplier(id), field, fieldCode, fieldPartnerID)
	}
	if err := b.exec(ctx); err != nil {
		return dst, catalog.Unavailable("read suppliers", err)
	}
	nowMs := millis(now)
	first := true
	for i := range ids {
		if edges != nil {
			edges.add(idx[i].val)
		}
		if !anyOpen(idx[i].val, nowMs) {
			continue
		}
		vals := sup[i]
		if !vals[0].ok {
			continue // bound but not (yet) in the view: not visible
		}
		if code != "" && vals[1].val != code {
			continue
		}
		if partnerID != "" && vals[2].val != partnerID {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, vals[0].val...)
	}
	return append(dst, ']'), nil
}

// AppendSupplier appends the supplier's JSON object if the channel sees
// it at now. One batch.
func (s *Store) AppendSupplier(ctx context.Context, dst []byte, channel, sid string, v SupplierVersion, now time.Time) ([]byte, error) {
	if !catalog.ValidID(channel) || !catalog.ValidID(sid) {
		return dst, catalog.NotFound("supplier", sid)
	}
	b := s.reads()
	idx := b.hvals(s.k.chanSupplier(channel, sid))
	body := b.hget(s.k.supplier(sid), v.field())
	if err := b.exec(ctx); err != nil {
		return dst, catalog.Unavailable("read supplier", err)
	}
	if !body.ok || !anyOpen(idx.val, millis(now)) {
		return dst, catalog.NotFound("supplier", sid)
	}
	return append(dst, body.val...), nil
}

// AppendProducts appends the JSON array of the supplier's products bound
// to the channel at now, by id; a supplier the channel does not see is
// ErrNotFound. Two batches.
func (s *Store) AppendProducts(ctx context.Context, dst []byte, channel, sid string, now time.Time) ([]byte, error) {
	if !catalog.ValidID(channel) || !catalog.ValidID(sid) {
		return dst, catalog.NotFound("supplier", sid)
	}
	b := s.reads()
	boundCmd := b.hgetallSorted(s.k.chanSupplier(channel, sid))
	if err := b.exec(ctx); err != nil {
		return dst, catalog.Unavailable("read channel index", err)
	}
	nowMs := millis(now)
	pids := make([]string, 0, len(boundCmd.val))
	for _, p := range boundCmd.val {
		if open, _ := catalogwire.IndexOpen(p.val, nowMs); open {
			pids = append(pids, p.field)
		}
	}
	if len(pids) == 0 {
		return dst, catalog.NotFound("supplier", sid)
	}
	b = s.reads()
	vals := b.hmget(s.k.products(sid), pids...)
	if err := b.exec(ctx); err != nil {
		return dst, catalog.Unavailable("read products", err)
	}
	dst = append(dst, '[')
	first := true
	for _, v := range vals {
		if !v.ok {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, v.val...)
	}
	return append(dst, ']'), nil
}

// bindingTerms is the part of a binding that rate reads need.
type bindingTerms struct {
	RateIDs   []string `json:"rateIds"`
	PriceTags []string `json:"priceTags"`
	// rateList is, when parseTerms cut it out of the JSON, the content of
	// rateIds' list ("r1","r2"), read in place by binds: the reads of a
	// rate make no slice. RateIDs is then empty.
	rateList string
}

func (t bindingTerms) binds(rid string) bool {
	if t.rateList != "" {
		for item := range strings.SplitSeq(t.rateList, ",") {
			if strings.Trim(item, `"`) == rid {
				return true
			}
		}
		return false
	}
	return len(t.RateIDs) == 0 || slices.Contains(t.RateIDs, rid)
}

// rateIDs are the bound rates' ids (none: all rates).
func (t bindingTerms) rateIDs() []string {
	if t.rateList == "" {
		return t.RateIDs
	}
	var ids []string
	for item := range strings.SplitSeq(t.rateList, ",") {
		ids = append(ids, strings.Trim(item, `"`))
	}
	return ids
}

// boundProduct reads the channel's binding of the product with the reads
// queued by more in the same batch; not bound (or outside the window) is
// ErrNotFound.
func (s *Store) boundProduct(ctx context.Context, channel, sid, pid string, now time.Time, more func(kvBatch)) (string, error) {
	if !catalog.ValidID(channel) || !catalog.ValidID(sid) || !catalog.ValidID(pid) {
		return "", catalog.NotFound("product", pid)
	}
	b := s.reads()
	idx := b.hget(s.k.chanSupplier(channel, sid), pid)
	more(b)
	if err := b.exec(ctx); err != nil {
		return "", catalog.Unavailable("read product", err)
	}
	if !idx.ok {
		return "", catalog.NotFound("product", pid)
	}
	open, raw := catalogwire.IndexOpen(idx.val, millis(now))
	if !open {
		return "", catalog.NotFound("product", pid)
	}
	return raw, nil
}

// boundTerms is boundProduct with the binding's terms, for the reads of
// rates: they answer only the bound rates, with prices filtered by the
// priceTags.
func (s *Store) boundTerms(ctx context.Context, channel, sid, pid string, now time.Time, more func(kvBatch)) (bindingTerms, error) {
	raw, err := s.boundProduct(ctx, channel, sid, pid, now, more)
	if err != nil {
		return bindingTerms{}, err
	}
	return parseTerms(raw)
}

// parseTerms reads rateIds and priceTags from a stored binding. Ids are
// plain (ValidID: no quotes, no escapes), so rateIds are cut out of the
// JSON without decoding it; priceTags, free text, take the decoder only
// when there are some. The searches look for a rare letter ('I', 'T')
// rather than '"', which is every few bytes; every field before priceTags
// is an id or an enum, so the first match is the key (FuzzBindingBody).
func parseTerms(raw string) (bindingTerms, error) {
	var t bindingTerms
	if !emptyPriceTags(raw) {
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return t, fmt.Errorf("decode channel index: %w", err)
		}
		return t, nil
	}
	i := strings.Index(raw, `Ids":[`)
	if i < len(`"rate`) || raw[i-len(`"rate`):i] != `"rate` {
		return t, fmt.Errorf("decode channel index: no rateIds")
	}
	list, _, ok := strings.Cut(raw[i+len(`Ids":[`):], "]")
	if !ok {
		return t, fmt.Errorf("decode channel index: no rateIds")
	}
	if list == "" {
		return t, nil
	}
	for item := range strings.SplitSeq(list, ",") {
		if id := strings.Trim(item, `"`); !catalog.ValidID(id) {
			return t, fmt.Errorf("decode channel index: rate id %q", id)
		}
	}
	t.rateList = list
	return t, nil
}

// emptyPriceTags: the stored binding has "priceTags":[].
func emptyPriceTags(raw string) bool {
	i := strings.Index(raw, `Tags":[`)
	return i >= len(`"price`) && raw[i-len(`"price`):i] == `"price` && strings.HasPrefix(raw[i+len(`Tags":[`):], "]")
}

// AppendProduct appends the product's JSON object if it is bound to the
// channel at now. One batch.
func (s *Store) AppendProduct(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error) {
	var body *kvStr
	if _, err := s.boundProduct(ctx, channel, sid, pid, now, func(b kvBatch) { body = b.hget(s.k.products(sid), pid) }); err != nil {
		return dst, err
	}
	if !body.ok {
		return dst, catalog.NotFound("product", pid)
	}
	return append(dst, body.val...), nil
}

// AppendRates appends the JSON array of the product's rates bound to the
// channel at now, by id, with prices filtered by the binding's priceTags.
// One batch.
func (s *Store) AppendRates(ctx context.Context, dst []byte, channel, sid, pid string, now time.Time) ([]byte, error) {
	var all *kvPairs
	t, err := s.boundTerms(ctx, channel, sid, pid, now, func(b kvBatch) { all = b.hgetallSorted(s.k.rates(sid, pid)) })
	if err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	first := true
	for _, r := range all.val {
		if !t.binds(r.field) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if dst, err = appendRate(dst, r.val, t.PriceTags); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// AppendRate appends the rate's JSON object if it is bound to the channel
// at now. One batch.
func (s *Store) AppendRate(ctx context.Context, dst []byte, channel, sid, pid, rid string, now time.Time) ([]byte, error) {
	var body *kvStr
	t, err := s.boundTerms(ctx, channel, sid, pid, now, func(b kvBatch) { body = b.hget(s.k.rates(sid, pid), rid) })
	if err != nil {
		return dst, err
	}
	if !body.ok || !t.binds(rid) {
		return dst, catalog.NotFound("rate", rid)
	}
	return appendRate(dst, body.val, t.PriceTags)
}

func appendRate(dst []byte, raw string, tags []string) ([]byte, error) {
	if len(tags) == 0 {
		return append(dst, raw...), nil
	}
	b, err := catalogwire.FilterPrices([]byte(raw), tags)
	if err != nil {
		return dst, fmt.Errorf("decode stored rate: %w", err)
	}
	return append(dst, b...), nil
}

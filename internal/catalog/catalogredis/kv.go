package catalogredis

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The reseller reads are written once, against kvBatch: a batch of hash
// and set reads queued, then run together. Redis runs a batch as one
// pipeline (one round trip); the process's own copy of the view (View,
// memview.go) answers it from memory. The keys and values are the same in
// both: the copy is built by applying the same events with the same
// versioned upserts (memkv.go), so that a read answers the same bytes
// from either (TestView_AnswersAsRedisDoes).

type kvStr struct {
	val string
	ok  bool // false: no such key or field
}

type kvBool struct{ val bool }

type kvStrs struct{ val []string }

// kvPairs are a hash's fields and values, sorted by field: the listings
// answer by id.
type kvPairs struct{ val []kvPair }

type kvPair struct{ field, val string }

// sortedPairs are m's pairs, sorted by field.
func sortedPairs(m map[string]string) []kvPair {
	out := make([]kvPair, 0, len(m))
	for f, v := range m {
		out = append(out, kvPair{f, v})
	}
	slices.SortFunc(out, func(a, b kvPair) int { return strings.Compare(a.field, b.field) })
	return out
}

// kvBatch queues reads; their results are set once exec returned nil.
type kvBatch interface {
	hget(key, field string) *kvStr
	hexists(key, field string) *kvBool
	hmget(key string, fields ...string) []*kvStr
	hvals(key string) *kvStrs
	hgetallSorted(key string) *kvPairs
	smembers(key string) *kvStrs
	exec(ctx context.Context) error
}

// redisBatch is a kvBatch over one Redis pipeline.
type redisBatch struct {
	pipe redis.Pipeliner
	fill []func()
}

func newRedisBatch(rdb redis.UniversalClient) *redisBatch { return &redisBatch{pipe: rdb.Pipeline()} }

func (b *redisBatch) hget(key, field string) *kvStr {
	r := &kvStr{}
	c := b.pipe.HGet(context.Background(), key, field)
	b.fill = append(b.fill, func() { r.val, r.ok = c.Val(), c.Err() == nil })
	return r
}

func (b *redisBatch) hexists(key, field string) *kvBool {
	r := &kvBool{}
	c := b.pipe.HExists(context.Background(), key, field)
	b.fill = append(b.fill, func() { r.val = c.Val() })
	return r
}

func (b *redisBatch) hmget(key string, fields ...string) []*kvStr {
	out := make([]*kvStr, len(fields))
	for i := range out {
		out[i] = &kvStr{}
	}
	c := b.pipe.HMGet(context.Background(), key, fields...)
	b.fill = append(b.fill, func() {
		for i, v := range c.Val() {
			if i < len(out) {
				out[i].val, out[i].ok = v.(string)
			}
		}
	})
	return out
}

func (b *redisBatch) hvals(key string) *kvStrs {
	r := &kvStrs{}
	c := b.pipe.HVals(context.Background(), key)
	b.fill = append(b.fill, func() { r.val = c.Val() })
	return r
}

func (b *redisBatch) hgetallSorted(key string) *kvPairs {
	r := &kvPairs{}
	c := b.pipe.HGetAll(context.Background(), key)
	b.fill = append(b.fill, func() { r.val = sortedPairs(c.Val()) })
	return r
}

func (b *redisBatch) smembers(key string) *kvStrs {
	r := &kvStrs{}
	c := b.pipe.SMembers(context.Background(), key)
	b.fill = append(b.fill, func() { r.val = c.Val() })
	return r
}

func (b *redisBatch) exec(ctx context.Context) error {
	// The commands were queued with a background context; the pipeline
	// runs under ctx.
	if _, err := b.pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	for _, f := range b.fill {
		f()
	}
	return nil
}

package cronreport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Options configures NewStore.
type Options struct {
	Redis     redis.UniversalClient
	Publisher stream.Publisher
	// KeyPrefix of the view's keys. The default has a hash tag, so that
	// the script that writes a report touches keys of one cluster slot.
	KeyPrefix string // default "{sb:cronreports}:"
	Clock     func() time.Time
	Logger    *slog.Logger
}

// Store is the cron reports: Kafka first, Redis the view.
//
// The view: r:<id> the record; q:<request key> the id of the request's
// report (how the worker knows a request was done); all and s:<supplier>
// sorted sets of ids by inserted time, newest last. Every key expires with
// the retention of the newest report it holds.
type Store struct {
	rdb    redis.UniversalClient
	pub    stream.Publisher
	prefix string
	now    func() time.Time
	log    *slog.Logger
}

// NewStore returns a store.
func NewStore(o Options) *Store {
	if o.KeyPrefix == "" {
		o.KeyPrefix = "{sb:cronreports}:"
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{rdb: o.Redis, pub: o.Publisher, prefix: o.KeyPrefix, now: o.Clock, log: o.Logger}
}

func (s *Store) recKey(id int64) string   { return s.prefix + "r:" + strconv.FormatInt(id, 10) }
func (s *Store) reqKey(key string) string { return s.prefix + "q:" + key }
func (s *Store) allKey() string           { return s.prefix + "all" }
func (s *Store) supKey(sid string) string { return s.prefix + "s:" + sid }
func (s *Store) cutoff() time.Time        { return s.now().Add(-Retention) }
func member(id int64) string              { return fmt.Sprintf("%019d", id) } // sorts as the number
func unavailable(what string, err error) error {
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
}

// Put records a report: it publishes the record (acks=all), then applies
// it to the view. An error means it may or may not be on the topic: Put
// again with the same report (a record twice is harmless, see apply).
func (s *Store) Put(ctx context.Context, r Report) error {
	rec := r.record()
	env, err := schemas.NewCronReportEvent(rec, "ingest/cronsync")
	if err != nil {
		return err
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode cron report %d: %w", r.ID, err)
	}
	if err := s.pub.Publish(ctx, stream.Message{Topic: schemas.TopicCronReports, Key: []byte(env.Key), Value: raw, Time: env.Time}); err != nil {
		return unavailable("publish cron report", err)
	}
	if err := s.apply(ctx, rec, env.Data); err != nil {
		return fmt.Errorf("cron report %d published: %w: %w", r.ID, ErrNotApplied, unavailable("apply to the view", err))
	}
	return nil
}

// ErrNotApplied: Put published the report but did not apply it to the
// view; Apply it again (publishing it again would only add a copy to the
// topic).
var ErrNotApplied = errors.New("not applied to the view")

// Apply applies a report (as Put recorded it on the topic) to the view.
func (s *Store) Apply(ctx context.Context, r Report) error {
	rec := r.record()
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode cron report %d: %w", r.ID, err)
	}
	if err := s.apply(ctx, rec, data); err != nil {
		return unavailable(fmt.Sprintf("apply cron report %d", r.ID), err)
	}
	return nil
}

// applyScript: KEYS rec req all sup; ARGV json insertedMs member cutoffMs
// ttlMs id. Of two records of one id (a request run twice after a crash
// between the publish and the view), the earlier inserted one is kept,
// the smaller JSON on a tie: the view then holds the same record whatever
// order the records are applied in, live or by a rebuild.
var applyScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local ci = tonumber(cjson.decode(cur)['insertedMs'])
  local ni = tonumber(ARGV[2])
  if ci < ni or (ci == ni and cur <= ARGV[1]) then return 0 end
end
local ttl = tonumber(ARGV[5])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('SET', KEYS[2], ARGV[6], 'PX', ttl)
for i = 3, 4 do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. ARGV[4])
  local t = redis.call('PTTL', KEYS[i])
  if t == -1 or t < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return 1
`)

func (s *Store) apply(ctx context.Context, rec schemas.CronReport, data []byte) error {
	now := s.now()
	ttl := rec.Inserted.Add(Retention).Sub(now)
	if ttl <= 0 {
		return nil // past the retention: not kept
	}
	return applyScript.Run(ctx, s.rdb, []string{s.recKey(rec.ID), s.reqKey(rec.RequestKey), s.allKey(), s.supKey(rec.ExternalSystemID)},
		string(data), rec.InsertedMs, member(rec.ID), now.Add(-Retention).UnixMilli(), max(ttl.Milliseconds(), 1), rec.ID).Err()
}

// ErrUnusable marks a topic record that is not a cron report; Rebuild
// and followers skip it.
var ErrUnusable = errors.New("unusable cron report record")

// HandleMessage applies one record of the topic to the view (idempotent
// and order-insensitive); Rebuild uses it, and so may a follower.
func (s *Store) HandleMessage(ctx context.Context, m stream.Message) (Report, error) {
	rec, err := schemas.DecodeCronReport(m.Value)
	if err != nil {
		return Report{}, fmt.Errorf("offset %d: %w: %w", m.Offset, ErrUnusable, err)
	}
	rec.InsertedMs = rec.Inserted.UnixMilli()
	data, err := json.Marshal(rec)
	if err != nil {
		return Report{}, err
	}
	if err := s.apply(ctx, rec, data); err != nil {
		return reportOf(rec), unavailable("apply cron report", err)
	}
	return reportOf(rec), nil
}

// Rebuild applies the whole topic to the view (a fresh or flushed Redis).
// Run it before the worker starts: the view is also how the worker knows
// which requests are done.
func (s *Store) Rebuild(ctx context.Context, brokers []string) error {
	return stream.ReadAll(ctx, brokers, schemas.TopicCronReports, func(m stream.Message) error {
		_, err := s.HandleMessage(ctx, m)
		if errors.Is(err, ErrUnusable) {
			s.log.Error("skipping an unusable cron report record", "offset", m.Offset, "err", err)
			return nil
		}
		return err
	})
}

// Get returns report id, if it is of the past 60 days.
func (s *Store) Get(ctx context.Context, id int64) (Report, error) {
	raw, err := s.rdb.Get(ctx, s.recKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return Report{}, fmt.Errorf("cron report %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Report{}, unavailable("read cron report", err)
	}
	var rec schemas.CronReport
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		// Not a record this code wrote: as good as absent (the worker may
		// then write the id; the API answers 404), and logged.
		s.log.Error("unreadable cron report in the view; treated as absent", "id", id, "err", err)
		return Report{}, fmt.Errorf("cron report %d: %w", id, ErrNotFound)
	}
	if rec.Inserted.Before(s.cutoff()) {
		return Report{}, fmt.Errorf("cron report %d: %w", id, ErrNotFound)
	}
	return reportOf(rec), nil
}

// ByRequest returns the report of a synchronization request (the run's
// request for one supplier), or ErrNotFound if it has none yet.
func (s *Store) ByRequest(ctx context.Context, requestKey string) (Report, error) {
	id, err := s.rdb.Get(ctx, s.reqKey(requestKey)).Int64()
	if errors.Is(err, redis.Nil) {
		return Report{}, fmt.Errorf("cron report of request %s: %w", requestKey, ErrNotFound)
	}
	if err != nil {
		return Report{}, unavailable("read cron report of a request", err)
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return Report{}, err
	}
	if r.RequestKey != requestKey {
		return Report{}, fmt.Errorf("cron report of request %s: %w", requestKey, ErrNotFound)
	}
	return r, nil
}

// Filter is GET /cron/reports.
type Filter struct {
	// AllSuppliers lists every supplier's reports (admins); otherwise only
	// those of Suppliers (an operator's own).
	AllSuppliers bool
	Suppliers    []string
	// ExternalSystemID keeps one supplier's reports ("" = every one).
	ExternalSystemID string
	Limit, Offset    int
}

// DefaultLimit and MaxLimit bound a page of GET /cron/reports.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	MaxOffset    = 1_000_000
)

// List returns the summaries of the reports of the past 60 days in the
// filter's scope, newest first (by inserted, then by id), then paged.
func (s *Store) List(ctx context.Context, f Filter) ([]Summary, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	f.Limit, f.Offset = min(f.Limit, MaxLimit), max(f.Offset, 0)
	var keys []string
	scope := f.Suppliers
	switch {
	case f.ExternalSystemID != "":
		if !f.AllSuppliers && !slices.Contains(f.Suppliers, f.ExternalSystemID) {
			return []Summary{}, nil
		}
		keys, scope = []string{s.supKey(f.ExternalSystemID)}, []string{f.ExternalSystemID}
	case f.AllSuppliers:
		keys, scope = []string{s.allKey()}, nil
	default:
		for _, sid := range f.Suppliers {
			keys = append(keys, s.supKey(sid))
		}
	}
	if len(keys) == 0 {
		return []Summary{}, nil
	}
	ids, err := s.page(ctx, keys, f.Offset, f.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	recKeys := make([]string, len(ids))
	for i, m := range ids {
		id, _ := strconv.ParseInt(m, 10, 64)
		recKeys[i] = s.recKey(id)
	}
	vals, err := s.rdb.MGet(ctx, recKeys...).Result()
	if err != nil {
		return nil, unavailable("read cron reports", err)
	}
	cutoff := s.cutoff()
	for _, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // expired between the two reads
		}
		var rec schemas.CronReport
		if json.Unmarshal([]byte(str), &rec) != nil || rec.Inserted.Before(cutoff) {
			continue
		}
		// The record, not the set it was found in, says whose it is.
		if scope != nil && !slices.Contains(scope, rec.ExternalSystemID) {
			continue
		}
		out = append(out, reportOf(rec).Summary)
	}
	return out, nil
}

// page returns the members (zero-padded ids) of ranks [offset,
// offset+limit) of the union of the sorted sets keys, newest first, within
// the retention.
func (s *Store) page(ctx context.Context, keys []string, offset, limit int) ([]string, error) {
	lo := strconv.FormatInt(s.cutoff().UnixMilli(), 10)
	if len(keys) == 1 {
		ids, err := s.rdb.ZRevRangeByScore(ctx, keys[0], &redis.ZRangeBy{Min: lo, Max: "+inf", Offset: int64(offset), Count: int64(limit)}).Result()
		if err != nil {
			return nil, unavailable("list cron reports", err)
		}
		return ids, nil
	}
	// Several suppliers: the top offset+limit of each, merged.
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.ZRevRangeByScoreWithScores(ctx, k, &redis.ZRangeBy{Min: lo, Max: "+inf", Count: int64(offset + limit)})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("list cron reports", err)
	}
	var all []redis.Z
	for _, c := range cmds {
		zs, err := c.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, unavailable("list cron reports", err)
		}
		all = append(all, zs...)
	}
	slices.SortFunc(all, func(a, b redis.Z) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		am, bm := a.Member.(string), b.Member.(string)
		switch {
		case am > bm:
			return -1
		case am < bm:
			return 1
		}
		return 0
	})
	all = slices.CompactFunc(all, func(a, b redis.Z) bool { return a.Member == b.Member })
	if offset >= len(all) {
		return nil, nil
	}
	all = all[offset:min(len(all), offset+limit)]
	out := make([]string, len(all))
	for i, z := range all {
		out[i] = z.Member.(string)
	}
	return out, nil
}

package changerequest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/bounds"
	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Retention of the view: the topic keeps 60 days; so does Redis.
const Retention = 60 * 24 * time.Hour

// DefaultWindowDays is the standard mode's window when the operator gives
// no dates (spec doc 3 rule 3 says both "90 days" and "365 days"; 90 is the
// span resellers book ahead in and what one partner read covers).
const DefaultWindowDays = 90

// MaxWindowDays bounds a request's window (the price-schedule mode's
// default is one year; a leap year is 366 days).
const MaxWindowDays = 366

// Options configures NewStore.
type Options struct {
	Redis     redis.UniversalClient
	Publisher stream.Publisher
	KeyPrefix string // default "sb:{cr}:": the scripts keep the record and its indexes in step, so the view is in one Redis Cluster slot
	Clock     func() time.Time
	Logger    *slog.Logger
}

// Store is the change notifications: Kafka first, Redis the view.
type Store struct {
	rdb    redis.UniversalClient
	pub    stream.Publisher
	prefix string
	now    func() time.Time
	log    *slog.Logger
}

// NewStore returns a store.
func NewStore(opts Options) *Store {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "sb:{cr}:"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{rdb: opts.Redis, pub: opts.Publisher, prefix: opts.KeyPrefix, now: opts.Clock, log: opts.Logger}
}

func (s *Store) recKey(id string) string  { return s.prefix + "r:" + id }
func (s *Store) ownerKey(o string) string { return s.prefix + "o:" + o }
func (s *Store) allKey() string           { return s.prefix + "all" }
func invalid(field, reason string) error  { return domainerr.Field(field, reason) }
func unavailable(what string, err error) error {
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
}

// NewInput is a POST /notifications (or /notifications/price-schedule).
type NewInput struct {
	SupplierID, ProductID string
	StartDate, EndDate    string // both or neither
	Mode                  string // ModeStandard or ModePriceSchedule
	Owner                 string // the asking principal
}

// Window checks the dates and fills the defaults: standard today +
// DefaultWindowDays, price-schedule today + one year (spec doc 3 rule 4).
// startDate and endDate only together (rule 3); end after start; at most
// MaxWindowDays.
func (in *NewInput) Window(today time.Time) error {
	switch {
	case in.StartDate == "" && in.EndDate == "":
		start := today.UTC().Truncate(24 * time.Hour)
		end := start.AddDate(0, 0, DefaultWindowDays)
		if in.Mode == ModePriceSchedule {
			end = start.AddDate(1, 0, 0)
		}
		in.StartDate, in.EndDate = start.Format(DateLayout), end.Format(DateLayout)
		return nil
	case in.StartDate == "":
		return invalid("startDate", "is required with endDate (both or neither)")
	case in.EndDate == "":
		return invalid("endDate", "is required with startDate (both or neither)")
	}
	start, err := time.Parse(DateLayout, in.StartDate)
	if err != nil {
		return invalid("startDate", "must be a date YYYY-MM-DD")
	}
	end, err := time.Parse(DateLayout, in.EndDate)
	if err != nil {
		return invalid("endDate", "must be a date YYYY-MM-DD")
	}
	// Within one year back and two years ahead (internal/bounds): the
	// window is read from the supplier's system and recorded in history.
	if err := bounds.Time("startDate", start, today); err != nil {
		return err
	}
	if err := bounds.Time("endDate", end, today); err != nil {
		return err
	}
	if !end.After(start) {
		return invalid("endDate", "must be after startDate (it is exclusive)")
	}
	if end.Sub(start) > MaxWindowDays*24*time.Hour {
		return invalid("endDate", "must be at most "+strconv.Itoa(MaxWindowDays)+" days after startDate")
	}
	return nil
}

// Create records a new request as WAITING and queues it (the topic is its
// queue). The supplier and product must have been checked by the caller.
func (s *Store) Create(ctx context.Context, in NewInput) (Request, error) {
	if in.SupplierID == "" {
		return Request{}, invalid("supplierId", "is required")
	}
	if in.ProductID == "" {
		return Request{}, invalid("productId", "is required")
	}
	if err := in.Window(s.now()); err != nil {
		return Request{}, err
	}
	r := Request{ID: uuid.NewString(), CreateRequest: CreateRequest{SupplierID: in.SupplierID, ProductID: in.ProductID},
		Inserted: s.now().UTC().Truncate(time.Millisecond), Mode: in.Mode, Status: StatusWaiting,
		StartDate: in.StartDate, EndDate: in.EndDate, Owner: in.Owner, Version: 1}
	return r, s.commit(ctx, schemas.ChangeRequestRequested, r)
}

// SetStatus records a status change of r (the next version).
func (s *Store) SetStatus(ctx context.Context, r Request) (Request, error) {
	r.Version++
	return r, s.commit(ctx, schemas.ChangeRequestStatusChanged, r)
}

// commit publishes the record, then applies it to the view (a failed
// apply is repaired by the worker's consumer, which applies every record).
func (s *Store) commit(ctx context.Context, typ string, r Request) error {
	env, err := schemas.NewChangeRequestEvent(typ, r.record(), s.now(), "ingest/changerequest")
	if err != nil {
		return fmt.Errorf("encode change notification: %w", err)
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return err
	}
	if err := s.pub.Publish(ctx, stream.Message{Topic: schemas.TopicChangeRequest, Key: []byte(r.ID), Value: raw, Time: env.Time}); err != nil {
		return unavailable("publish change notification", err)
	}
	if err := s.apply(context.WithoutCancel(ctx), r); err != nil {
		s.log.Warn("change notification published but not yet in Redis", "id", r.ID, "err", err)
	}
	return nil
}

// applyScript: KEYS rec owner all; ARGV version json insertedMs id
// cutoffMs ttlMs. Applies a record newer than the stored one.
var applyScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local v = cjson.decode(cur)['version']
  if v and tonumber(v) >= tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
return 1
`)

func (s *Store) apply(ctx context.Context, r Request) error {
	raw, err := json.Marshal(r.record())
	if err != nil {
		return err
	}
	now := s.now()
	ttl := r.Inserted.Add(Retention).Sub(now)
	if ttl <= 0 {
		return nil // older than the retention: not kept
	}
	return applyScript.Run(ctx, s.rdb, []string{s.recKey(r.ID), s.ownerKey(r.Owner), s.allKey()},
		r.Version, raw, r.Inserted.UnixMilli(), r.ID, now.Add(-Retention).UnixMilli(), ttl.Milliseconds()).Err()
}

// HandleMessage applies one record of the topic to the view (idempotent,
// order-insensitive by version); the worker and Rebuild use it.
func (s *Store) HandleMessage(ctx context.Context, m stream.Message) (Request, string, error) {
	rec, typ, err := schemas.DecodeChangeRequest(m.Value)
	if err != nil {
		return Request{}, typ, fmt.Errorf("offset %d: %w", m.Offset, err)
	}
	r := Request(rec)
	if err := s.apply(ctx, r); err != nil {
		return r, typ, unavailable("apply change notification", err)
	}
	return r, typ, nil
}

// Rebuild applies the whole topic to the view (a fresh or flushed Redis).
func (s *Store) Rebuild(ctx context.Context, brokers []string) error {
	return stream.ReadAll(ctx, brokers, schemas.TopicChangeRequest, func(m stream.Message) error {
		if _, _, err := s.HandleMessage(ctx, m); err != nil && !errors.Is(err, ErrUnavailable) {
			s.log.Error("skipping an unusable change notification record", "offset", m.Offset, "err", err)
			return nil
		} else if err != nil {
			return err
		}
		return nil
	})
}

// Get returns a request of owner ("" = any owner: admins).
func (s *Store) Get(ctx context.Context, owner, id string) (Request, error) {
	raw, err := s.rdb.Get(ctx, s.recKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return Request{}, fmt.Errorf("change notification %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Request{}, unavailable("read change notification", err)
	}
	var rec schemas.ChangeRequest
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return Request{}, fmt.Errorf("decode change notification %s: %w", id, err)
	}
	r := Request(rec)
	if owner != "" && r.Owner != owner {
		return Request{}, fmt.Errorf("change notification %s: %w", id, ErrNotFound)
	}
	return r, nil
}

// Filter is GET /notifications.
type Filter struct {
	Owner                 string // "" = every owner (admins)
	RequestID             string
	SupplierID, ProductID string
	Mode                  string // "" or ModeAny: every mode
	Status                string
	Limit, Offset         int
}

// MaxLimit bounds a page.
const MaxLimit = 500

// List returns the owner's requests, newest first, filtered, then paged.
func (s *Store) List(ctx context.Context, f Filter) ([]Request, error) {
	key := s.allKey()
	if f.Owner != "" {
		key = s.ownerKey(f.Owner)
	}
	ids, err := s.rdb.ZRevRangeByScore(ctx, key, &redis.ZRangeBy{Min: strconv.FormatInt(s.now().Add(-Retention).UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, unavailable("list change notifications", err)
	}
	out := []Request{}
	if len(ids) == 0 {
		return out, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.recKey(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, unavailable("read change notifications", err)
	}
	skipped := 0
	for _, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue
		}
		var rec schemas.ChangeRequest
		if json.Unmarshal([]byte(str), &rec) != nil {
			continue
		}
		r := Request(rec)
		if !f.matches(r) {
			continue
		}
		if skipped < f.Offset {
			skipped++
			continue
		}
		out = append(out, r)
		if len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

func (f Filter) matches(r Request) bool {
	return (f.Owner == "" || r.Owner == f.Owner) && (f.RequestID == "" || r.ID == f.RequestID) &&
		(f.SupplierID == "" || r.CreateRequest.SupplierID == f.SupplierID) && (f.ProductID == "" || r.CreateRequest.ProductID == f.ProductID) &&
		(f.Mode == "" || f.Mode == ModeAny || r.Mode == f.Mode) && (f.Status == "" || r.Status == f.Status)
}

// Statuses lists the valid status filter values.
func Statuses() []string {
	return []string{StatusWaiting, StatusWorking, StatusSucceeded, StatusFailed, StatusPartialFailure}
}

// ValidStatus reports whether s is a status.
func ValidStatus(s string) bool { return slices.Contains(Statuses(), s) }

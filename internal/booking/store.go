package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/redislock"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Redis layout (prefix "switchback:{booking}:": the apply script keeps a
// record, the pending set and its supplier's open set in step, so on a
// Redis Cluster the view is in one slot). Hold and booking ids are
// the reseller's, unique within its channel only (two resellers may use
// the same id and learn nothing of each other): records are keyed by
// their ref, "<channel>/<id>" (neither may contain '/').
//
//	h:<ref>           hash  v (version) | rec (schemas.HoldRecord JSON)
//	b:<ref>           hash  v (version) | rec (schemas.BookingRecord JSON)
//	pending           zset  booking refs awaiting tickets -> next poll (unix ms)
//	open:{<supplier>} zset  "h:<ref>" / "b:<ref>" of the supplier's holds and
//	                        bookings that are not final -> until when (unix ms, or +inf)
//	lock:h:<ref>      string write lock of a hold
//	lock:b:<ref>      string write lock of a booking
//	refs:{<channel>}:r:<reference>  set  hold ids of the channel by reseller
//	                        reference (references.go)
//	refs:{<channel>}:s:<reference>  set  hold ids of the channel by supplier
//	                        reference (SupplierReference)
func (s *Service) holdKey(ref string) string    { return s.opts.KeyPrefix + "h:" + ref }
func (s *Service) bookingKey(ref string) string { return s.opts.KeyPrefix + "b:" + ref }
func (s *Service) pendingKey() string           { return s.opts.KeyPrefix + "pending" }
func (s *Service) openKey(sid string) string    { return s.opts.KeyPrefix + "open:{" + sid + "}" }
func (s *Service) lockKey(kind, ref string) string {
	return s.opts.KeyPrefix + "lock:" + kind + ":" + ref
}

// Ref is the key of a hold or booking: its id within its channel. It is
// the Kafka key of its events and what ClaimDue and Refresh take.
func Ref(channelID, id string) string { return channelID + "/" + id }

// finishedGrace is how long after its last start time a booking that was
// neither cancelled nor redeemed still counts as open (its supplier cannot
// be deleted meanwhile): late cancellations and refunds happen after the
// activity; past it, the booking no longer blocks anything.
const finishedGrace = 30 * 24 * time.Hour

// openUntil is the score of a record in its supplier's open set: until
// when it is not final ("" when it is final now, "+inf" without an end).
func holdOpenUntil(rec schemas.HoldRecord) string {
	switch {
	case rec.Hold.Status != schemas.HoldActive || rec.BookingID != "":
		return "" // released, expired, or its booking counts instead
	case rec.Hold.Expires.IsZero():
		return "+inf"
	}
	return strconv.FormatInt(rec.Hold.Expires.UnixMilli(), 10)
}

func bookingOpenUntil(rec schemas.BookingRecord) string {
	switch rec.Booking.Status {
	case schemas.BookingCancelled, schemas.BookingRedeemed:
		return ""
	}
	var last time.Time
	for _, it := range rec.Booking.Items {
		if it.StartTime.IsZero() {
			return "+inf"
		}
		if it.StartTime.After(last) {
			last = it.StartTime
		}
	}
	if last.IsZero() {
		return "+inf"
	}
	return strconv.FormatInt(last.Add(finishedGrace).UnixMilli(), 10)
}

// applyScript is the versioned upsert: only a newer version is written, so
// redelivered or replayed events are no-ops. For bookings it also keeps
// the pending set (KEYS[2]): added (due at ARGV[4], unless already there)
// while awaiting tickets, removed otherwise; and for both the supplier's
// open set (KEYS[3]): member ARGV[6] scored ARGV[7], removed when final.
// It also adds the hold id ARGV[8] to the reference sets KEYS[4] (its
// reseller reference; the entity again when none) and KEYS[5] (its
// supplier reference). Every key is of the view's one slot (a Redis
// Cluster refuses a script whose keys span slots, "" included).
// KEYS: entity, pending (the entity again for holds), open, reseller
// reference set, supplier reference set. ARGV: version, rec, awaiting,
// due, ref, open member, open until ("" final), hold id.
var applyScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'v')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'rec', ARGV[2])
if KEYS[2] ~= KEYS[1] then
  if ARGV[3] == '1' then
    redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[5])
  else
    redis.call('ZREM', KEYS[2], ARGV[5])
  end
end
if ARGV[7] == '' then
  redis.call('ZREM', KEYS[3], ARGV[6])
else
  redis.call('ZADD', KEYS[3], ARGV[7], ARGV[6])
end
if KEYS[4] ~= KEYS[1] then redis.call('SADD', KEYS[4], ARGV[8]) end
redis.call('SADD', KEYS[5], ARGV[8])
return 1
`)

// Apply upserts one hold or booking event into Redis if it is newer than
// what is there. It reports whether it changed anything.
func (s *Service) Apply(ctx context.Context, env schemas.Envelope) (bool, error) {
	var key, pending, awaiting, ref, member, until, sid string
	var channel, holdID, resellerRef string
	switch env.Type {
	case schemas.EventHold:
		var rec schemas.HoldRecord
		if err := json.Unmarshal(env.Data, &rec); err != nil || rec.Hold.ID == "" {
			return false, fmt.Errorf("hold event %s: %w", env.ID, ErrInvalidEvent)
		}
		ref = Ref(rec.ChannelID, rec.Hold.ID)
		key, awaiting, member, until, sid = s.holdKey(ref), "0", "h:"+ref, holdOpenUntil(rec), rec.SupplierID
		pending = key
		channel, holdID, resellerRef = rec.ChannelID, rec.Hold.ID, rec.Hold.Ext[ExtResellerReference]
	case schemas.EventBooking:
		var rec schemas.BookingRecord
		if err := json.Unmarshal(env.Data, &rec); err != nil || rec.Booking.ID == "" {
			return false, fmt.Errorf("booking event %s: %w", env.ID, ErrInvalidEvent)
		}
		ref = Ref(rec.ChannelID, rec.Booking.ID)
		key, pending, awaiting, member, until, sid = s.bookingKey(ref), s.pendingKey(), "0", "b:"+ref, bookingOpenUntil(rec), rec.SupplierID
		if rec.AwaitingTickets {
			awaiting = "1"
		}
		channel, holdID, resellerRef = rec.ChannelID, rec.Booking.HoldID, rec.Booking.ResellerBookingRef
		if holdID == "" {
			holdID = rec.Booking.ID
		}
	default:
		return false, fmt.Errorf("event type %q: %w", env.Type, ErrInvalidEvent)
	}
	resellerKey := key // none: a key of the slot, which the script skips
	if resellerRef != "" {
		resellerKey = s.refsKey(channel, refReseller, resellerRef)
	}
	n, err := applyScript.Run(ctx, s.rdb, []string{key, pending, s.openKey(sid), resellerKey,
		s.refsKey(channel, refSupplier, SupplierReference(channel, holdID))}, env.Version, string(env.Data), awaiting,
		s.now().UnixMilli(), ref, member, until, holdID).Int()
	if err != nil {
		return false, fmt.Errorf("apply %s %s: %w: %w", env.Type, env.Key, ErrUnavailable, err)
	}
	return n == 1, nil
}

// OpenBookings counts supplier sid's holds and bookings that are not
// final: ACTIVE holds before their expiry and not used by a booking,
// bookings neither CANCELLED nor REDEEMED up to finishedGrace after their
// last start time. *catalog.Store refuses to delete a supplier with any.
func (s *Service) OpenBookings(ctx context.Context, sid string) (int, error) {
	n, err := s.rdb.ZCount(ctx, s.openKey(sid), "("+strconv.FormatInt(s.now().UnixMilli(), 10), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("count the open holds and bookings of %s: %w: %w", sid, ErrUnavailable, err)
	}
	return int(n), nil
}

// HandleMessage applies one record of TopicHolds or TopicBookings; a
// tombstone is skipped.
func (s *Service) HandleMessage(ctx context.Context, m stream.Message) error {
	env, ok, err := DecodeMessage(m)
	if err != nil || !ok {
		return err
	}
	_, err = s.Apply(ctx, env)
	return err
}

// DecodeMessage reads the envelope of a record; ok is false for a
// tombstone.
func DecodeMessage(m stream.Message) (schemas.Envelope, bool, error) {
	var env schemas.Envelope
	if len(m.Value) == 0 {
		return env, false, nil
	}
	if err := json.Unmarshal(m.Value, &env); err != nil {
		return env, false, fmt.Errorf("%s offset %d: %w: %w", m.Topic, m.Offset, ErrInvalidEvent, err)
	}
	if env.Type != schemas.EventHold && env.Type != schemas.EventBooking {
		return env, false, fmt.Errorf("%s offset %d: type %q: %w", m.Topic, m.Offset, env.Type, ErrInvalidEvent)
	}
	return env, true, nil
}

// Topics are the topics of holds and bookings, in apply order.
func Topics() []string { return []string{schemas.TopicHolds, schemas.TopicBookings} }

// Rebuild applies every record of Topics() up to their current end (a
// fresh or flushed Redis). Unusable records are logged and skipped.
func (s *Service) Rebuild(ctx context.Context, brokers []string) error {
	for _, topic := range Topics() {
		err := stream.ReadAll(ctx, brokers, topic, func(m stream.Message) error {
			err := s.HandleMessage(ctx, m)
			if errors.Is(err, ErrInvalidEvent) {
				s.log.Error("booking: skipping an unusable record", "topic", m.Topic, "offset", m.Offset, "err", err)
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("rebuild holds and bookings: %w", err)
		}
	}
	return nil
}

// load reads the record of key into rec; it returns its version, 0 when
// absent.
func (s *Service) load(ctx context.Context, key string, rec any) (int64, error) {
	vals, err := s.rdb.HMGet(ctx, key, "v", "rec").Result()
	if err != nil {
		return 0, fmt.Errorf("read %s: %w: %w", key, ErrUnavailable, err)
	}
	vs, _ := vals[0].(string)
	raw, _ := vals[1].(string)
	if vs == "" || raw == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: bad version %q", key, vs)
	}
	if err := json.Unmarshal([]byte(raw), rec); err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	return v, nil
}

func (s *Service) loadHold(ctx context.Context, ref string) (schemas.HoldRecord, int64, error) {
	var rec schemas.HoldRecord
	v, err := s.load(ctx, s.holdKey(ref), &rec)
	return rec, v, err
}

func (s *Service) loadBooking(ctx context.Context, ref string) (schemas.BookingRecord, int64, error) {
	var rec schemas.BookingRecord
	v, err := s.load(ctx, s.bookingKey(ref), &rec)
	return rec, v, err
}

// change is one new state to publish: the entity's next version.
type change struct {
	typ, topic, key string
	version         int64
	data            any
}

// commit publishes the changes (one Publish: acks=all for all of them)
// and then applies them to Redis. A failed publish changes nothing; a
// failed apply after a publish is logged, the processor applies the event
// from the topic.
func (s *Service) commit(ctx context.Context, now time.Time, changes ...change) error {
	if s.opts.Publisher == nil {
		return fmt.Errorf("no publisher: %w", ErrUnavailable)
	}
	envs := make([]schemas.Envelope, 0, len(changes))
	msgs := make([]stream.Message, 0, len(changes))
	for _, c := range changes {
		data, err := json.Marshal(c.data)
		if err != nil {
			return fmt.Errorf("encode %s: %w", c.typ, err)
		}
		env := schemas.Envelope{ID: uuid.NewString(), Type: c.typ, Key: c.key, Version: c.version, Time: now.UTC(),
			Source: s.opts.Source, Data: data}
		b, err := json.Marshal(env)
		if err != nil {
			return fmt.Errorf("encode %s envelope: %w", c.typ, err)
		}
		envs = append(envs, env)
		msgs = append(msgs, stream.Message{Topic: c.topic, Key: []byte(c.key), Value: b, Time: env.Time})
	}
	pctx, cancel := context.WithTimeout(ctx, PublishTimeout)
	defer cancel()
	if err := s.opts.Publisher.Publish(pctx, msgs...); err != nil {
		return fmt.Errorf("publish %d hold and booking events: %w: %w", len(msgs), ErrUnavailable, err)
	}
	for _, env := range envs {
		if _, err := s.Apply(context.WithoutCancel(ctx), env); err != nil {
			s.log.Warn("booking: a published change is not in Redis yet; the processor will apply it", "key", env.Key, "err", err)
		}
	}
	return nil
}

func holdChange(rec schemas.HoldRecord, version int64) change {
	return change{typ: schemas.EventHold, topic: schemas.TopicHolds, key: Ref(rec.ChannelID, rec.Hold.ID), version: version, data: rec}
}

func bookingChange(rec schemas.BookingRecord, version int64) change {
	return change{typ: schemas.EventBooking, topic: schemas.TopicBookings, key: Ref(rec.ChannelID, rec.Booking.ID), version: version, data: rec}
}

const (
	// LockTTL is how long the write lock of a hold or booking lasts. The
	// supplier's system is called under it: a call still running past it
	// runs beside a retry that took the lock, so the Partner must end its
	// operations well before (ingest/supplierbooking derives its deadline
	// from it).
	LockTTL  = 30 * time.Second
	lockWait = 5 * time.Second
	// PublishTimeout bounds the publish of a change (commit), made under
	// the lock after the Partner answered.
	PublishTimeout = 10 * time.Second
)

// lock takes the write lock of a hold ("h") or booking ("b") by its ref,
// waiting up to lockWait for a writer holding it (a retry racing the
// first request waits for it and then sees its booking). The returned
// func releases it.
func (s *Service) lock(ctx context.Context, kind, ref string) (func(), error) {
	key := s.lockKey(kind, ref)
	l, err := redislock.Acquire(ctx, s.rdb, key, redislock.Options{
		TTL: LockTTL, Wait: lockWait, PollMin: 5 * time.Millisecond, PollMax: 100 * time.Millisecond, ReleaseTimeout: 2 * time.Second,
	})
	switch {
	case errors.Is(err, redislock.ErrBusy):
		return nil, fmt.Errorf("another change of this %s is in progress: %w", map[string]string{"h": "hold", "b": "booking"}[kind], ErrUnavailable)
	case err != nil:
		return nil, fmt.Errorf("lock %s: %w: %w", key, ErrUnavailable, err)
	}
	return func() {
		if err := l.Release(ctx); err != nil {
			s.log.Warn("booking: releasing a lock failed; it expires by itself", "err", err)
		}
	}, nil
}

// claimScript takes up to ARGV[2] pending bookings due at ARGV[1] and
// moves their next poll to ARGV[3], atomically, so that two pollers do
// not ask the partner for the same booking at once.
var claimScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[3], id) end
return ids
`)

// ClaimDue returns up to n bookings awaiting tickets whose poll is due
// (their refs, for Refresh), and pushes their next poll PollLease later.
func (s *Service) ClaimDue(ctx context.Context, n int) ([]string, error) {
	now := s.now()
	ids, err := claimScript.Run(ctx, s.rdb, []string{s.pendingKey()}, now.UnixMilli(), n,
		now.Add(s.opts.PollLease).UnixMilli()).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("claim pending bookings: %w: %w", ErrUnavailable, err)
	}
	return ids, nil
}

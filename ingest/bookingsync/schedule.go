package bookingsync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/redislock"
)

// Refresh intervals by availability status: spec doc 3, booking system
// behaviour rule 8 ("FREESALE at most once per week; AVAILABLE every 12
// hours; LIMITED at least hourly; SOLD_OUT at most hourly; CLOSED at most
// once per 12 hours"). A day is due its interval after it was last read.
const (
	// FreesaleInterval: "FREESALE at most once per week".
	FreesaleInterval = 7 * 24 * time.Hour
	// AvailableInterval: "AVAILABLE every 12 hours".
	AvailableInterval = 12 * time.Hour
	// LimitedInterval: "LIMITED at least hourly". Ten minutes under the
	// hour leave room for the scheduler's poll, the claim and the reads,
	// so the hour is kept even when the round is late.
	LimitedInterval = 50 * time.Minute
	// SoldOutInterval: "SOLD_OUT at most hourly": never sooner.
	SoldOutInterval = time.Hour
	// ClosedInterval: "CLOSED at most once per 12 hours": never sooner.
	ClosedInterval = 12 * time.Hour
	// EmptyDayInterval is for a day with no availability: doc 3 rule 1
	// ("dates that are never bookable MUST be omitted"), so such a day is
	// the least likely to change; it gets the slowest rule, FREESALE's.
	EmptyDayInterval = FreesaleInterval
	// RetryInterval is for the days of a read that failed: soon enough to
	// recover within the LIMITED hour, late enough not to hammer a booking
	// system that is down (its breaker opens for 10 s only).
	RetryInterval = 10 * time.Minute
	// RefusedInterval is for the days of a read the booking system
	// refused (400 or 404: the option, product or dates are not valid
	// there), or that could not be made (the product lacks its
	// availabilityType): asking again in ten minutes would only repeat it.
	RefusedInterval = 12 * time.Hour
)

// StatusInterval is the refresh interval of one availability status
// (doc 3 rule 8). An unknown status gets the shortest interval: the client
// rejects such items, so it is never stored, but a day should not be
// forgotten because of it.
func StatusInterval(status string) time.Duration {
	switch status {
	case bookingsystem.Freesale:
		return FreesaleInterval
	case bookingsystem.Available:
		return AvailableInterval
	case bookingsystem.Limited:
		return LimitedInterval
	case bookingsystem.SoldOut:
		return SoldOutInterval
	case bookingsystem.Closed:
		return ClosedInterval
	}
	return LimitedInterval
}

// DayInterval is the refresh interval of a day holding availabilities of
// these statuses: the shortest of theirs. Rule 8 is stated per
// availability but the availability read is per date range: one call reads
// every slot of a day. The "at most" rules bound how often the booking
// system is called for such slots; when a day also holds a slot that must
// be read sooner (LIMITED next to CLOSED), that call happens anyway and
// the CLOSED slot comes with it at no extra cost, so the most urgent
// status wins. A day with none: EmptyDayInterval.
func DayInterval(statuses []string) time.Duration {
	if len(statuses) == 0 {
		return EmptyDayInterval
	}
	d := StatusInterval(statuses[0])
	for _, st := range statuses[1:] {
		d = min(d, StatusInterval(st))
	}
	return d
}

// Item is one option of a booking-system supplier's product (a catalog
// rate): what the schedule refreshes.
type Item struct{ SupplierID, ProductID, OptionID string }

// key is the item's member in the sorted set: catalog ids have no "/".
func (it Item) key() string { return it.SupplierID + "/" + it.ProductID + "/" + it.OptionID }

func (it Item) String() string { return it.key() }

func parseItem(s string) (Item, bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || !catalog.ValidID(parts[0]) || !catalog.ValidID(parts[1]) || !catalog.ValidID(parts[2]) {
		return Item{}, false
	}
	return Item{parts[0], parts[1], parts[2]}, true
}

// DayRange is the local dates [Start, End) of a product, YYYY-MM-DD, End
// exclusive (the availability read's localDateStart and localDateEnd).
type DayRange struct{ Start, End string }

// days lists the dates of r.
func (r DayRange) days() []string {
	s, err1 := time.Parse(time.DateOnly, r.Start)
	e, err2 := time.Parse(time.DateOnly, r.End)
	if err1 != nil || err2 != nil {
		return nil
	}
	var out []string
	for d := s; d.Before(e); d = d.AddDate(0, 0, 1) {
		out = append(out, d.Format(time.DateOnly))
	}
	return out
}

func (r DayRange) contains(day string) bool { return r.Start <= day && day < r.End }

// addDays is date + n days, YYYY-MM-DD.
func addDays(date string, n int) string {
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return date
	}
	return d.AddDate(0, 0, n).Format(time.DateOnly)
}

// ScheduleOptions configures NewSchedule.
type ScheduleOptions struct {
	Redis redis.UniversalClient // required
	// KeyPrefix of every key. Default "sb:{bookingsync}:": the schedule
	// (due index and each item's days, changed together) in one Redis
	// Cluster slot.
	KeyPrefix string
	// HorizonDays is how many days ahead of each product's local today the
	// schedule keeps refreshed. Default 90 (the change notification's
	// default window and the full synchronization's default horizon).
	HorizonDays int
	// LockTTL bounds how long a crashed process's per-option lock can
	// block others. Default 2 min (above Options.OptionTimeout).
	LockTTL time.Duration
}

// Schedule is the refresh schedule, in Redis:
//
//   - <prefix>due: a sorted set of items (S/P/O), scored by the Unix
//     milliseconds of the item's earliest due day (0: a day in the horizon
//     was never read); a claimed item is pushed to the end of its lease.
//   - <prefix>days:S/P/O: a hash, local date → Unix milliseconds when
//     that day is next due, for the days of the horizon.
//   - <prefix>lock:S/P/O: the per-option refresh lock (token, TTL).
//
// It is derivable: flushed, every option found by Scheduler.Discover is
// due at once (no day read), and one round over them rebuilds it.
type Schedule struct {
	rdb     redis.UniversalClient
	prefix  string
	horizon int
	lockTTL time.Duration
}

// NewSchedule returns a schedule. It panics without Redis (a wiring error).
func NewSchedule(o ScheduleOptions) *Schedule {
	if o.Redis == nil {
		panic("bookingsync.NewSchedule: Redis is required")
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "sb:{bookingsync}:"
	}
	if o.HorizonDays <= 0 {
		o.HorizonDays = 90
	}
	if o.LockTTL <= 0 {
		o.LockTTL = 2 * time.Minute
	}
	return &Schedule{rdb: o.Redis, prefix: o.KeyPrefix, horizon: o.HorizonDays, lockTTL: o.LockTTL}
}

// HorizonDays is the schedule's horizon.
func (s *Schedule) HorizonDays() int { return s.horizon }

func (s *Schedule) dueKey() string         { return s.prefix + "due" }
func (s *Schedule) daysKey(it Item) string { return s.prefix + "days:" + it.key() }
func (s *Schedule) lockKey(it Item) string { return s.prefix + "lock:" + it.key() }
func (s *Schedule) horizonOf(today string) DayRange {
	return DayRange{Start: today, End: addDays(today, s.horizon)}
}

// recordScript stores the given days' due times, drops the days outside
// [today, horizonEnd), and sets the item's score to its earliest due day,
// or 0 when a day of the horizon has never been read (ARGV[4] days are
// expected). One script, so a claim never sees half a record.
var recordScript = redis.NewScript(`
for i = 6, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i+1])
end
local all = redis.call('HGETALL', KEYS[2])
local n, low = 0, nil
for i = 1, #all, 2 do
  local d = all[i]
  if d < ARGV[2] or d >= ARGV[3] then
    redis.call('HDEL', KEYS[2], d)
  else
    n = n + 1
    local v = tonumber(all[i+1])
    if low == nil or v < low then low = v end
  end
end
if n < tonumber(ARGV[4]) or low == nil then low = 0 end
redis.call('ZADD', KEYS[1], low, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return tostring(low)
`)

// Record stores when each given day of it is next due and returns the
// item's next due time (zero: some day of the horizon was never read, so
// it is due now). today is the product's local date; days outside the
// horizon are ignored. An empty due map only recomputes the score.
func (s *Schedule) Record(ctx context.Context, it Item, today string, due map[string]time.Time) (time.Time, error) {
	h := s.horizonOf(today)
	args := []any{it.key(), h.Start, h.End, s.horizon, (time.Duration(s.horizon+7) * 24 * time.Hour).Milliseconds()}
	for d, t := range due {
		if h.contains(d) {
			args = append(args, d, t.UnixMilli())
		}
	}
	res, err := recordScript.Run(ctx, s.rdb, []string{s.dueKey(), s.daysKey(it)}, args...).Text()
	if err != nil {
		return time.Time{}, fmt.Errorf("record schedule of %s: %w", it, err)
	}
	ms, _ := strconv.ParseInt(res, 10, 64)
	if ms == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms), nil
}

// Add puts an item on the schedule, due now, unless it is there already
// (discovery: after a flush, every option comes back due at once).
func (s *Schedule) Add(ctx context.Context, it Item) (bool, error) {
	n, err := s.rdb.ZAddNX(ctx, s.dueKey(), redis.Z{Score: 0, Member: it.key()}).Result()
	if err != nil {
		return false, fmt.Errorf("add %s to the schedule: %w", it, err)
	}
	return n == 1, nil
}

// Forget takes an item off the schedule (its option, product or supplier
// is gone, or no longer a booking system's).
func (s *Schedule) Forget(ctx context.Context, it Item) error {
	pipe := s.rdb.TxPipeline()
	pipe.ZRem(ctx, s.dueKey(), it.key())
	pipe.Del(ctx, s.daysKey(it))
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("forget %s: %w", it, err)
	}
	return nil
}

// Next is when the item is next due (zero: now, some day never read) and
// whether it is on the schedule.
func (s *Schedule) Next(ctx context.Context, it Item) (time.Time, bool, error) {
	score, err := s.rdb.ZScore(ctx, s.dueKey(), it.key()).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	if score == 0 {
		return time.Time{}, true, nil
	}
	return time.UnixMilli(int64(score)), true, nil
}

// Days returns the recorded due time of each day of the item's horizon
// (days never read are absent).
func (s *Schedule) Days(ctx context.Context, it Item) (map[string]time.Time, error) {
	raw, err := s.rdb.HGetAll(ctx, s.daysKey(it)).Result()
	if err != nil {
		return nil, fmt.Errorf("read schedule of %s: %w", it, err)
	}
	out := make(map[string]time.Time, len(raw))
	for d, v := range raw {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[d] = time.UnixMilli(ms)
		}
	}
	return out, nil
}

// DueRuns returns the runs of contiguous due days of the item's horizon
// at now: a day is due when it was never read or its due time has come.
// Only due days are read (never a day before its rule allows, doc 3 rule
// 8), one read per run.
func (s *Schedule) DueRuns(ctx context.Context, it Item, today string, now time.Time) ([]DayRange, error) {
	days, err := s.Days(ctx, it)
	if err != nil {
		return nil, err
	}
	return dueRuns(days, s.horizonOf(today), now), nil
}

func dueRuns(days map[string]time.Time, h DayRange, now time.Time) []DayRange {
	var runs []DayRange
	for _, d := range h.days() {
		t, ok := days[d]
		if ok && t.After(now) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].End == d {
			runs[n-1].End = addDays(d, 1)
			continue
		}
		runs = append(runs, DayRange{Start: d, End: addDays(d, 1)})
	}
	return runs
}

// Claim is an item claimed for a refresh and the due time it had (zero:
// never read).
type Claim struct {
	Item Item
	Due  time.Time
}

// claimScript takes up to ARGV[3] items due at ARGV[1] and pushes each to
// ARGV[2] (the end of the lease) in the same step, so that of several
// schedulers exactly one gets each item. An item whose refresher dies
// comes back when its lease ends.
var claimScript = redis.NewScript(`
local items = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #items, 2 do
  redis.call('ZADD', KEYS[1], ARGV[2], items[i])
end
return items
`)

// Claim takes up to n items due at now, leased until now+lease.
func (s *Schedule) Claim(ctx context.Context, now time.Time, lease time.Duration, n int) ([]Claim, error) {
	raw, err := claimScript.Run(ctx, s.rdb, []string{s.dueKey()}, now.UnixMilli(), now.Add(lease).UnixMilli(), n).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("claim due options: %w", err)
	}
	out := make([]Claim, 0, len(raw)/2)
	for i := 0; i+1 < len(raw); i += 2 {
		it, ok := parseItem(raw[i])
		if !ok {
			// Not one of ours (a key written by hand): drop it, or it
			// would be claimed forever.
			s.rdb.ZRem(ctx, s.dueKey(), raw[i])
			continue
		}
		c := Claim{Item: it}
		if ms, err := strconv.ParseFloat(raw[i+1], 64); err == nil && ms > 0 {
			c.Due = time.UnixMilli(int64(ms))
		}
		out = append(out, c)
	}
	return out, nil
}

// DueCount is the number of items due at now (the backlog).
func (s *Schedule) DueCount(ctx context.Context, now time.Time) (int64, error) {
	return s.rdb.ZCount(ctx, s.dueKey(), "-inf", strconv.FormatInt(now.UnixMilli(), 10)).Result()
}

// Size is the number of items on the schedule.
func (s *Schedule) Size(ctx context.Context) (int64, error) {
	return s.rdb.ZCard(ctx, s.dueKey()).Result()
}

// errBusy: another process is refreshing the option.
var errBusy = errors.New("another refresh of this option is running")

// lock takes the option's refresh lock, waiting up to wait for another
// holder to finish (polling: holders are few and short). The lock keeps
// two processes (the scheduler, a change notification, a full
// synchronization) from interleaving their read-modify-write of one
// option's availabilities, which the catalog's PutAvailabilities, having
// no expected version, cannot detect.
func (s *Schedule) lock(ctx context.Context, it Item, wait time.Duration) (func(), error) {
	l, err := redislock.Acquire(ctx, s.rdb, s.lockKey(it), redislock.Options{
		TTL: s.lockTTL, Wait: wait, PollMin: 100 * time.Millisecond, PollMax: 100 * time.Millisecond, ReleaseTimeout: 5 * time.Second,
	})
	switch {
	case errors.Is(err, redislock.ErrBusy):
		return nil, errBusy
	case err != nil:
		return nil, fmt.Errorf("lock %s: %w", it, err)
	}
	return func() { _ = l.Release(ctx) }, nil
}

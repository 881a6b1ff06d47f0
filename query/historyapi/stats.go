package historyapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// The console's reads (issue 25): aggregates its charts and panels need,
// computed by ClickHouse over the history tables rather than by a browser
// from thousands of rows. Scoped like the lists above: a reseller reads
// its own deliveries only, an operator the suppliers it owns.
//
//	GET /registry/v1.1/deliveries/stats          deliveries per minute by outcome, latency percentiles
//	GET /registry/v1.1/deliveries/auto-disables  when the service set the caller's disableAll, and why
//	GET /operator/v2/history/connections         one supplier's partner calls of the last day, summarised

// Bounds of the stats range: one point per minute, at most a day of them.
const (
	StatsStep        = time.Minute
	DefaultStatsSpan = time.Hour
	MaxStatsSpan     = 24 * time.Hour
	// ConnectionsWindow is how far back the connection summary looks.
	ConnectionsWindow = 24 * time.Hour
	// MaxAutoDisables bounds the auto-disable list.
	MaxAutoDisables = 100
)

// Latency is the delivery latency percentiles of a set of attempts, in
// milliseconds (ClickHouse quantileTiming: exact below 30 s, 16 ms steps
// above).
type Latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// Counts is how many delivery rows had each outcome. Attempts is the POSTs
// among them (delivered, retry, failed); Latency their percentiles, nil
// when there were none.
type Counts struct {
	Delivered  int      `json:"delivered"`
	Retry      int      `json:"retry"`
	Failed     int      `json:"failed"`
	Suppressed int      `json:"suppressed"`
	Dropped    int      `json:"dropped"`
	Attempts   int      `json:"attempts"`
	Latency    *Latency `json:"latencyMs"`
}

// StatsPoint is one minute of a reseller's deliveries.
type StatsPoint struct {
	At time.Time `json:"at"`
	Counts
}

type statsResponse struct {
	httpapi.Meta `json:"meta"`
	From         time.Time    `json:"from"`
	To           time.Time    `json:"to"`
	StepSeconds  int          `json:"stepSeconds"`
	Type         string       `json:"type,omitempty"`
	Points       []StatsPoint `json:"points"`
	Totals       Counts       `json:"totals"`
}

type statsFilter struct {
	subscriber, typ string
	from, to        time.Time
}

// parseStatsFilter reads from, to (RFC 3339; default the last hour) and
// type. The range is widened to whole minutes and may span at most a day.
func parseStatsFilter(args *fasthttp.Args, now time.Time) (statsFilter, error) {
	var f statsFilter
	var err error
	if f.from, err = timeArg(args, "from"); err != nil {
		return f, err
	}
	if f.to, err = timeArg(args, "to"); err != nil {
		return f, err
	}
	if v := args.Peek("type"); len(v) > 0 {
		f.typ = string(v)
		if !slices.Contains(schemas.NotificationTypes(), f.typ) {
			return f, apierror.Invalid("type", "must be one of channelbinding, supplier, product, rate, availability, priceschedule, booking")
		}
	}
	if f.to.IsZero() {
		f.to = now.UTC()
	}
	if f.from.IsZero() {
		f.from = f.to.Add(-DefaultStatsSpan)
	}
	f.from = f.from.Truncate(StatsStep)
	if t := f.to.Truncate(StatsStep); t.Before(f.to) {
		f.to = t.Add(StatsStep)
	}
	switch {
	case !f.from.Before(f.to):
		return f, apierror.Invalid("to", "must be after from")
	case f.to.Sub(f.from) > MaxStatsSpan:
		return f, apierror.Invalid("from", "the range must be at most 24 hours (one point per minute)")
	}
	return f, nil
}

func (h handlers) stats(r *httpapi.Request) error {
	f, err := parseStatsFilter(r.Ctx.QueryArgs(), h.now())
	if err != nil {
		return err
	}
	f.subscriber = r.Principal.ID
	var points []StatsPoint
	var totals Counts
	if err := h.run(r, func(ctx context.Context) (err error) {
		points, totals, err = h.store.stats(ctx, f)
		return err
	}); err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &statsResponse{From: f.from, To: f.to, StepSeconds: int(StatsStep / time.Second), Type: f.typ,
		Points: points, Totals: totals})
}

// countColumns are the aggregates of one Counts, in scan order (see
// scanCounts). Outcome literals rather than bound slices: ClickHouse 18.16
// cannot bind a slice to IN.
const countColumns = `countIf(outcome = 'delivered'), countIf(outcome = 'retry'), countIf(outcome = 'failed'),
	countIf(outcome = 'suppressed'), countIf(outcome = 'dropped'),
	countIf(outcome IN ('delivered', 'retry', 'failed')),
	quantilesTimingIf(0.5, 0.9, 0.99)(latency_ms, outcome IN ('delivered', 'retry', 'failed'))`

// countsDest holds one row of countColumns.
type countsDest struct {
	delivered, retry, failed, suppressed, dropped, attempts uint64
	q                                                       []float32
}

func (d *countsDest) ptrs() []any {
	return []any{&d.delivered, &d.retry, &d.failed, &d.suppressed, &d.dropped, &d.attempts, &d.q}
}

func (d *countsDest) counts() Counts {
	c := Counts{Delivered: int(d.delivered), Retry: int(d.retry), Failed: int(d.failed), Suppressed: int(d.suppressed),
		Dropped: int(d.dropped), Attempts: int(d.attempts)}
	// quantileTiming of no value is NaN.
	if d.attempts > 0 && len(d.q) == 3 && !math.IsNaN(float64(d.q[0])) {
		c.Latency = &Latency{P50: float64(d.q[0]), P90: float64(d.q[1]), P99: float64(d.q[2])}
	}
	return c
}

// stats reads the minutes of [from, to) that have rows, then fills the
// others with zeros so that a chart gets one point per minute; the totals
// (percentiles over the whole range) are a second query.
func (s store) stats(ctx context.Context, f statsFilter) ([]StatsPoint, Counts, error) {
	var w where
	w.add("subscriber = ?", f.subscriber)
	if f.typ != "" {
		w.add("type = ?", f.typ)
	}
	// Whole minutes: occurred_at (seconds) is exact enough, and it is the
	// partition and sorting column.
	w.add("occurred_at >= toDateTime(?) AND occurred_at < toDateTime(?)", f.from.Unix(), f.to.Unix())
	q := `SELECT toStartOfMinute(occurred_at) AS minute, ` + countColumns + `
		FROM history_deliveries FINAL WHERE ` + w.sql() + `
		GROUP BY minute ORDER BY minute`
	rows, err := s.conn.Query(ctx, q, w.args...)
	if err != nil {
		return nil, Counts{}, fmt.Errorf("query delivery stats: %w", err)
	}
	defer rows.Close()
	byMinute := map[int64]Counts{}
	for rows.Next() {
		var minute time.Time
		var d countsDest
		if err := rows.Scan(append([]any{&minute}, d.ptrs()...)...); err != nil {
			return nil, Counts{}, fmt.Errorf("read delivery stats: %w", err)
		}
		byMinute[minute.Unix()] = d.counts()
	}
	if err := rows.Err(); err != nil {
		return nil, Counts{}, fmt.Errorf("read delivery stats: %w", err)
	}
	points := make([]StatsPoint, 0, int(f.to.Sub(f.from)/StatsStep))
	for t := f.from; t.Before(f.to); t = t.Add(StatsStep) {
		points = append(points, StatsPoint{At: t, Counts: byMinute[t.Unix()]})
	}
	var d countsDest
	if err := s.conn.QueryRow(ctx, `SELECT `+countColumns+` FROM history_deliveries FINAL WHERE `+w.sql(), w.args...).Scan(d.ptrs()...); err != nil {
		return nil, Counts{}, fmt.Errorf("query delivery totals: %w", err)
	}
	return points, d.counts(), nil
}

// AutoDisable is one time the dispatcher set a subscriber's disableAll
// (spec doc 1, "States and transitions": its backend queue reached the
// maximum size): when, why, and its backlog against the bound then.
type AutoDisable struct {
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	Backlog int64     `json:"backlog"`
	Limit   int       `json:"limit"`
}

type autoDisablesResponse struct {
	httpapi.Meta `json:"meta"`
	Items        []AutoDisable `json:"items"`
}

// autoDisables lists the caller's subscriber.auto_disabled events, newest
// first: the metadata object has no reason field (spec doc 1 lists its
// fields), so this is where the console reads why disableAll was set.
func (h handlers) autoDisables(r *httpapi.Request) error {
	n, err := intArg(r.Ctx.QueryArgs(), "limit", 10, 1, MaxAutoDisables)
	if err != nil {
		return err
	}
	var items []AutoDisable
	if err := h.run(r, func(ctx context.Context) (err error) {
		items, err = h.store.autoDisables(ctx, r.Principal.ID, n)
		return err
	}); err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &autoDisablesResponse{Items: items})
}

// autoDisables reads history_events, where the event is kept by design
// (it has no table of its own), keyed by subscriber.
func (s store) autoDisables(ctx context.Context, subscriber string, limit int) ([]AutoDisable, error) {
	q := fmt.Sprintf(`SELECT occurred_ms, payload FROM history_events FINAL
		WHERE type = ? AND key = ? ORDER BY occurred_ms DESC, event_id DESC LIMIT %d`, limit)
	rows, err := s.conn.Query(ctx, q, schemas.HistorySubscriberAutoDisabled, subscriber)
	if err != nil {
		return nil, fmt.Errorf("query auto-disables: %w", err)
	}
	defer rows.Close()
	items := []AutoDisable{}
	for rows.Next() {
		var ms int64
		var payload string
		if err := rows.Scan(&ms, &payload); err != nil {
			return nil, fmt.Errorf("read auto-disables: %w", err)
		}
		var rec schemas.SubscriberAutoDisabled // what the dispatcher writes
		// A record that does not decode still says when: keep it.
		_ = json.Unmarshal([]byte(payload), &rec)
		items = append(items, AutoDisable{At: time.UnixMilli(ms).UTC(), Reason: rec.Reason, Backlog: rec.Backlog, Limit: rec.Limit})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read auto-disables: %w", err)
	}
	return items, nil
}

// PartnerCallSummary is one call of a connection summary.
type PartnerCallSummary struct {
	At        time.Time `json:"at"`
	System    string    `json:"system"`
	Operation string    `json:"operation"`
	Status    int       `json:"status"`
	Outcome   string    `json:"outcome"`
	LatencyMs int64     `json:"latencyMs"`
	Error     string    `json:"error,omitempty"`
}

// Connection summarises a supplier's calls of the last day to its partner
// or booking system (history_partner_calls): what the console shows as its
// connection state.
type Connection struct {
	SupplierID  string              `json:"supplierId"`
	Since       time.Time           `json:"since"`
	Calls       int                 `json:"calls"`
	OK          int                 `json:"ok"`
	Errors      int                 `json:"errors"`
	Timeouts    int                 `json:"timeouts"`
	BreakerOpen int                 `json:"breakerOpen"`
	Last        *PartnerCallSummary `json:"last"`
	LastOKAt    *time.Time          `json:"lastOkAt"`
	LastFailure *PartnerCallSummary `json:"lastFailure"`
}

type connectionResponse struct {
	httpapi.Meta `json:"meta"`
	Connection   Connection `json:"connection"`
}

func (h handlers) connections(r *httpapi.Request) error {
	sid := string(r.Ctx.QueryArgs().Peek("supplierId"))
	if sid == "" {
		return apierror.Invalid("supplierId", "is required")
	}
	if err := h.owned(r, sid); err != nil {
		return err
	}
	var c Connection
	if err := h.run(r, func(ctx context.Context) (err error) {
		c, err = h.store.connection(ctx, sid, h.now().UTC().Add(-ConnectionsWindow).Truncate(time.Second))
		return err
	}); err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &connectionResponse{Connection: c})
}

// owned is the operator scope of the operator history routes: 403 when the
// caller does not own sid, whether it exists or not.
func (h handlers) owned(r *httpapi.Request, sid string) error {
	if h.own == nil {
		return apierror.New(apierror.Forbidden, "supplier ownership is not known yet: operator history is not available")
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	owns, err := h.own.OwnsSupplier(ctx, r.Principal.OperatorID(), sid)
	if err != nil {
		return err
	}
	if !owns {
		return apierror.New(apierror.Forbidden, "supplierId is not a supplier of this operator")
	}
	return nil
}

func (s store) connection(ctx context.Context, sid string, since time.Time) (Connection, error) {
	c := Connection{SupplierID: sid, Since: since}
	var calls, ok, errs, timeouts, open uint64
	var lastMs, lastOKMs, lastFailMs int64
	var last, fail PartnerCallSummary
	var lastStatus, failStatus uint16
	var lastLatency, failLatency uint32
	q := `SELECT count(), countIf(outcome = 'ok'), countIf(outcome = 'error'), countIf(outcome = 'timeout'),
			countIf(outcome = 'breaker_open'),
			max(occurred_ms), argMax(system, occurred_ms), argMax(operation, occurred_ms), argMax(status, occurred_ms),
			argMax(outcome, occurred_ms), argMax(latency_ms, occurred_ms), argMax(error, occurred_ms),
			maxIf(occurred_ms, outcome = 'ok'),
			maxIf(occurred_ms, outcome != 'ok'), argMaxIf(system, occurred_ms, outcome != 'ok'),
			argMaxIf(operation, occurred_ms, outcome != 'ok'), argMaxIf(status, occurred_ms, outcome != 'ok'),
			argMaxIf(outcome, occurred_ms, outcome != 'ok'), argMaxIf(latency_ms, occurred_ms, outcome != 'ok'),
			argMaxIf(error, occurred_ms, outcome != 'ok')
		FROM history_partner_calls FINAL
		WHERE supplier_id = ? AND occurred_at >= toDateTime(?)`
	err := s.conn.QueryRow(ctx, q, sid, since.Unix()).Scan(&calls, &ok, &errs, &timeouts, &open,
		&lastMs, &last.System, &last.Operation, &lastStatus, &last.Outcome, &lastLatency, &last.Error,
		&lastOKMs,
		&lastFailMs, &fail.System, &fail.Operation, &failStatus, &fail.Outcome, &failLatency, &fail.Error)
	if err != nil {
		return c, fmt.Errorf("query partner calls: %w", err)
	}
	c.Calls, c.OK, c.Errors, c.Timeouts, c.BreakerOpen = int(calls), int(ok), int(errs), int(timeouts), int(open)
	if calls > 0 {
		last.At, last.Status, last.LatencyMs = time.UnixMilli(lastMs).UTC(), int(lastStatus), int64(lastLatency)
		c.Last = &last
	}
	if ok > 0 {
		t := time.UnixMilli(lastOKMs).UTC()
		c.LastOKAt = &t
	}
	if calls > ok {
		fail.At, fail.Status, fail.LatencyMs = time.UnixMilli(lastFailMs).UTC(), int(failStatus), int64(failLatency)
		c.LastFailure = &fail
	}
	return c, nil
}

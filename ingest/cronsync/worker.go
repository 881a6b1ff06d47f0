package cronsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/cronreport"
	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// WorkerOptions configures NewWorker.
type WorkerOptions struct {
	Brokers []string
	// Dial connects to the brokers (nil: TCP; stream.Dial).
	Dial    stream.Dial
	GroupID string // default "switchback-ingest-cronsync"
	Store   *cronreport.Store
	Syncer  Syncer
	// Publisher receives the history events (schemas.HistorySyncReport).
	Publisher stream.Publisher
	// Redis keeps each run's progress, for the "run finished" log line.
	Redis     redis.UniversalClient
	KeyPrefix string // default "sb:cronsync:"
	// Timeout bounds one supplier's synchronization; past it the report
	// says so. Default 15 min.
	Timeout time.Duration
	// StaleAfter: a request enqueued longer ago than this is not run (a
	// worker down for that long finds newer runs queued behind it).
	// Default 24h.
	StaleAfter time.Duration
	// Fence, when set, makes Run work a request again when the Redis
	// views (the catalog, the reports' view that says which requests are
	// done) were lost while it ran (stream.ConsumerConfig.Fence); Handle
	// checks it before recording the report, which a redelivery would
	// take as done.
	Fence      stream.Fence
	Clock      func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Worker takes the requests in order (one partition, one at a time) and
// reports each.
type Worker struct {
	o           WorkerOptions
	log         *slog.Logger
	requests    *prometheus.CounterVec
	syncSecs    prometheus.Histogram
	runSecs     prometheus.Histogram
	errorItems  prometheus.Counter
	lastSuccess prometheus.Gauge
}

// Outcomes of a request (label of switchback_cronsync_requests_total).
const (
	OutcomeOK        = "ok"        // reported without errors
	OutcomeErrors    = "errors"    // reported with errors of some items
	OutcomeFailed    = "failed"    // reported: the synchronization failed as a whole
	OutcomeDuplicate = "duplicate" // its key was reported already (enqueued twice)
	OutcomeStale     = "stale"     // not run: older than StaleAfter
	OutcomeUnusable  = "unusable"  // not a request; skipped
	OutcomeCollision = "collision" // a candidate id was another report's; the next was taken (counted besides the outcome)
)

// NewWorker returns a worker; Run starts it.
func NewWorker(o WorkerOptions) *Worker {
	if o.GroupID == "" {
		o.GroupID = "switchback-ingest-cronsync"
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "sb:cronsync:"
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Minute
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 24 * time.Hour
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	reg := o.Registerer
	return &Worker{o: o, log: o.Logger.With("part", "cronsync"),
		requests: instrument.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_cronsync_requests_total",
			Help: "Per-supplier synchronization requests handled, by outcome (ok, errors, failed, duplicate, stale, unusable, collision)."},
			[]string{"outcome"})),
		syncSecs: instrument.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchback_cronsync_sync_seconds",
			Help: "Duration of one supplier's full synchronization.", Buckets: prometheus.ExponentialBuckets(0.05, 4, 9)})),
		runSecs: instrument.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchback_cronsync_run_seconds",
			Help: "Duration of a run, from its enqueueing to its last supplier's report.", Buckets: prometheus.ExponentialBuckets(1, 4, 9)})),
		errorItems: instrument.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "switchback_cronsync_report_errors_total",
			Help: "Errors recorded in cron reports (errorCount summed)."})),
		lastSuccess: instrument.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchback_cronsync_last_success_timestamp_seconds",
			Help: "Unix time of the last supplier synchronization reported without errors."})),
	}
}

// Run consumes the requests until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	return stream.NewConsumer(stream.ConsumerConfig{Brokers: w.o.Brokers, Dial: w.o.Dial, GroupID: w.o.GroupID, Topics: []string{schemas.TopicCronSync},
		Handler: w.Handle, MaxRetryDelay: 5 * time.Second, Logger: w.o.Logger, Fence: w.o.Fence}).Run(ctx)
}

// Handle works one request: it has the supplier synchronized, records the
// report and its history event, and returns nil only then (the consumer
// commits the offset after that). The report id is opaque
// (cronreport.ID: from the request's key; the next candidate when another
// report holds it), the same when the request is redelivered, and says
// nothing of other operators' reports.
//
//   - Redelivered after its report was recorded (a crash before the
//     commit): not run again; the history event is published again (same
//     event id, one row in ClickHouse).
//   - Enqueued twice (same key, another offset): not run again.
//   - Interrupted by shutdown: not committed, so run again after restart.
func (w *Worker) Handle(ctx context.Context, m stream.Message) error {
	req, err := decodeRequest(m)
	if err != nil {
		w.requests.WithLabelValues(OutcomeUnusable).Inc()
		w.log.Error("skipping an unusable synchronization request", "offset", m.Offset, "err", err)
		return nil
	}
	if m.Partition != 0 {
		// Requests are worked in order off partition 0 only; the topic is
		// created with one.
		w.requests.WithLabelValues(OutcomeUnusable).Inc()
		w.log.Error("skipping a synchronization request off partition 0 (the topic must have one partition)", "partition", m.Partition, "offset", m.Offset)
		return nil
	}
	done, err := w.o.Store.ByRequest(ctx, req.Key)
	switch {
	case err == nil && (done.Offset == m.Offset || done.Offset == 0 && done.ID == m.Offset+1):
		// This very request (reports written before ids were opaque were
		// the offset + 1).
		if err := w.history(ctx, done); err != nil {
			return err
		}
		w.progress(ctx, req, done)
		return nil
	case err == nil:
		w.requests.WithLabelValues(OutcomeDuplicate).Inc()
		w.log.Info("synchronization request enqueued twice; reported once", "key", req.Key, "report", done.ID)
		return nil
	case !errors.Is(err, cronreport.ErrNotFound):
		return err
	}
	id, err := w.freeID(ctx, req.Key)
	if err != nil {
		return err
	}
	now := w.o.Clock()
	if age := now.Sub(req.Enqueued); age > w.o.StaleAfter {
		w.requests.WithLabelValues(OutcomeStale).Inc()
		w.log.Warn("synchronization request not run: too old, newer runs follow", "run", req.RunID, "supplier", req.SupplierID,
			"age", age.Round(time.Second))
		return nil
	}

	from, to, _ := req.Window() // checked by decodeRequest
	w.log.Info("supplier synchronization started", "run", req.RunID, "supplier", req.SupplierID, "n", req.Index, "of", req.Of,
		"from", req.From, "until", req.To)
	sctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	res, serr := w.o.Syncer.SyncSupplier(sctx, req.SupplierID, from, to)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err() // shutting down: run again after the restart
	}
	finished := w.o.Clock().UTC().Truncate(time.Millisecond)
	texts := res.Errors
	if serr != nil {
		if errors.Is(serr, context.DeadlineExceeded) {
			serr = fmt.Errorf("synchronization did not finish within %s: %w", w.o.Timeout, serr)
		}
		text := serr.Error()
		if cronreport.ParseError(text).Entity == "" {
			text = cronreport.EntitySupplier + " " + req.SupplierID + ": " + text
		}
		texts = append(append([]string(nil), texts...), text)
	}
	r := cronreport.Report{
		Summary:     cronreport.Summary{ID: id, Inserted: finished, ExternalSystemID: req.SupplierID, ErrorCount: len(texts)},
		ErrorReport: cronreport.NewErrorReport(texts), RunID: req.RunID, RequestKey: req.Key, Offset: m.Offset, Began: now.UTC().Truncate(time.Millisecond),
		Products: res.Products, Options: res.Options, Availabilities: res.Availabilities,
	}
	// The report is the record of this request: a redelivery finds it and
	// does not run again. If Redis lost its views during the run (the
	// catalog read as empty), the report would record that loss as
	// errors; run it again instead, once the views are back.
	if err := stream.CheckFence(ctx); err != nil {
		return err
	}
	if err := w.put(ctx, r); err != nil {
		return err
	}
	took := finished.Sub(r.Began)
	outcome := OutcomeOK
	switch {
	case serr != nil:
		outcome = OutcomeFailed
	case r.ErrorCount > 0:
		outcome = OutcomeErrors
	default:
		w.lastSuccess.Set(float64(finished.UnixMilli()) / 1000)
	}
	w.requests.WithLabelValues(outcome).Inc()
	w.syncSecs.Observe(took.Seconds())
	w.errorItems.Add(float64(r.ErrorCount))
	w.log.Info("supplier synchronization finished", "run", req.RunID, "supplier", req.SupplierID, "report", r.ID, "outcome", outcome,
		"products", r.Products, "options", r.Options, "availabilities", r.Availabilities, "errors", r.ErrorCount,
		"took", took.Round(time.Millisecond))
	if err := w.history(ctx, r); err != nil {
		return err // retried: the report is found, the event published again
	}
	w.progress(ctx, req, r)
	return nil
}

// put records the report, retrying until it is recorded or ctx ends: a
// synchronization that ran is not run again because Kafka or Redis blinked.
// Once the report is on the topic, only its view write is retried.
func (w *Worker) put(ctx context.Context, r cronreport.Report) error {
	retry := backoff.New(100*time.Millisecond, 5*time.Second)
	record := w.o.Store.Put
	for {
		err := record(ctx, r)
		if err == nil {
			return nil
		}
		if errors.Is(err, cronreport.ErrNotApplied) {
			record = w.o.Store.Apply
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.log.Warn("cron report not recorded yet, retrying", "report", r.ID, "err", err)
		if err := retry.Wait(ctx); err != nil {
			return err
		}
	}
}

// freeID is the first candidate id of request key's report that no other
// report holds (a report is never overwritten by another request's).
func (w *Worker) freeID(ctx context.Context, key string) (int64, error) {
	for n := 0; ; n++ {
		id := cronreport.ID(key, n)
		other, err := w.o.Store.Get(ctx, id)
		if errors.Is(err, cronreport.ErrNotFound) {
			return id, nil
		}
		if err != nil {
			return 0, err
		}
		w.requests.WithLabelValues(OutcomeCollision).Inc()
		w.log.Warn("synchronization report id held by another request; taking the next", "id", id, "key", key, "holder", other.RequestKey)
	}
}

// historyNamespace makes a report's history event id from its id, so a
// redone publish is one row in ClickHouse (ReplacingMergeTree).
var historyNamespace = uuid.MustParse("1c0a7a52-5d53-4c2e-9f0e-6a1b7f3c2d10")

// history publishes the report's schemas.HistorySyncReport event.
func (w *Worker) history(ctx context.Context, r cronreport.Report) error {
	if w.o.Publisher == nil {
		return nil
	}
	p := schemas.SyncReport{ID: r.ID, ExternalSystemID: r.ExternalSystemID, SupplierID: r.ExternalSystemID, Inserted: r.Inserted,
		ErrorCount: r.ErrorCount, Items: r.Items()}
	for _, e := range r.ErrorReport {
		raw, err := json.Marshal(e)
		if err != nil {
			return err
		}
		p.ErrorReport = append(p.ErrorReport, raw)
	}
	env, err := schemas.NewHistoryEvent(schemas.HistorySyncReport, r.ExternalSystemID, p, r.Inserted)
	if err != nil {
		return err
	}
	env.ID = uuid.NewSHA1(historyNamespace, []byte(fmt.Sprintf("%d/%d", r.ID, r.Inserted.UnixMilli()))).String()
	env.Source = "ingest/cronsync"
	raw, err := json.Marshal(env)
	if err != nil {
		return err
	}
	if err := w.o.Publisher.Publish(ctx, stream.Message{Topic: schemas.TopicHistory, Key: []byte(env.Key), Value: raw, Time: env.Time}); err != nil {
		return fmt.Errorf("publish history of cron report %d: %w", r.ID, err)
	}
	return nil
}

// progress counts the run's reported suppliers (sets, so a redelivery
// counts once) and logs the run's end when the last one is in. It is for
// the log and the run duration only: a failure here is logged, not retried.
func (w *Worker) progress(ctx context.Context, req Request, r cronreport.Report) {
	if w.o.Redis == nil {
		return
	}
	// One hash tag: the transaction's keys are in one cluster slot.
	run := w.o.KeyPrefix + "run:{" + req.RunID + "}:"
	done, failed := run+"done", run+"errors"
	keep := 7 * 24 * time.Hour
	pipe := w.o.Redis.TxPipeline()
	added := pipe.SAdd(ctx, done, req.SupplierID)
	if r.ErrorCount > 0 {
		pipe.SAdd(ctx, failed, req.SupplierID)
	}
	pipe.Expire(ctx, done, keep)
	pipe.Expire(ctx, failed, keep)
	ndone := pipe.SCard(ctx, done)
	nfailed := pipe.SCard(ctx, failed)
	if _, err := pipe.Exec(ctx); err != nil {
		w.log.Warn("run progress not recorded", "run", req.RunID, "err", err)
		return
	}
	if added.Val() == 0 || int(ndone.Val()) < req.Of {
		return
	}
	took := r.Inserted.Sub(req.Enqueued)
	w.runSecs.Observe(took.Seconds())
	w.log.Info("full synchronization run finished", "run", req.RunID, "trigger", req.Trigger, "suppliers", req.Of,
		"withErrors", nfailed.Val(), "took", took.Round(time.Millisecond))
}

// Package changeworker works the operator's change notifications (spec
// doc 3) first in, first out: it consumes schemas.TopicChangeRequest (one
// partition), has each request refreshed by a Syncer, and records its
// statuses in internal/changerequest.
package changeworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/internal/changerequest"
	"github.com/switchbackhq/switchback/internal/platform/instrument"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Syncer refreshes what Switchback caches of one supplier's product from
// the operator's system, for a request's mode and window, so that the
// usual notifications reach subscribers. cmd/switchback/internal/app implements it per
// connection kind.
type Syncer interface {
	Sync(ctx context.Context, r changerequest.Request) (changerequest.Result, error)
}

// WorkerOptions configures NewWorker.
type WorkerOptions struct {
	Brokers   []string
	Dial      stream.Dial // connects to the brokers (nil: TCP)
	GroupID   string      // default "switchback-ingest-changerequests"
	Store     *changerequest.Store
	Syncer    Syncer
	Publisher stream.Publisher // history events
	Timeout   time.Duration    // bound of one sync; default 5 min
	// Fence, when set, makes Run work a request again when the Redis
	// views (the catalog, the requests' own view) were lost while it ran
	// (stream.ConsumerConfig.Fence); Handle checks it before recording a
	// final status, which a redelivery would not redo.
	Fence      stream.Fence
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Worker takes requests first in, first out (the topic has one
// partition, the consumer handles one message at a time).
type Worker struct {
	o    WorkerOptions
	log  *slog.Logger
	runs *prometheus.CounterVec
	secs prometheus.Histogram
}

// NewWorker returns a worker; Run starts it.
func NewWorker(o WorkerOptions) *Worker {
	if o.GroupID == "" {
		o.GroupID = "switchback-ingest-changerequests"
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Worker{o: o, log: o.Logger.With("part", "changerequests"),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchback_ingest_changerequest_runs_total",
			Help: "Change notifications worked, by mode and final status."}, []string{"mode", "status"}),
		secs: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchback_ingest_changerequest_seconds",
			Help: "Duration of one change notification's refresh.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 9)}),
	}
	w.runs = instrument.Register(o.Registerer, w.runs)
	w.secs = instrument.Register(o.Registerer, w.secs)
	return w
}

// Run consumes the requests until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	return stream.NewConsumer(stream.ConsumerConfig{Brokers: w.o.Brokers, Dial: w.o.Dial, GroupID: w.o.GroupID, Topics: []string{schemas.TopicChangeRequest},
		Handler: w.Handle, MaxRetryDelay: 5 * time.Second, Logger: w.o.Logger, Fence: w.o.Fence}).Run(ctx)
}

// Handle applies a record and works a request that is not finished. A
// request found WORKING (a crash mid-run) is worked again: a refresh is
// idempotent. An unusable record is logged and skipped.
func (w *Worker) Handle(ctx context.Context, m stream.Message) error {
	r, typ, err := w.o.Store.HandleMessage(ctx, m)
	switch {
	case errors.Is(err, changerequest.ErrUnavailable):
		return err
	case err != nil:
		w.log.Error("skipping an unusable change notification record", "offset", m.Offset, "err", err)
		return nil
	case typ != changerequest.EventRequested:
		return nil
	}
	cur, err := w.o.Store.Get(ctx, "", r.ID)
	if errors.Is(err, changerequest.ErrNotFound) {
		w.log.Warn("change notification past the retention; not worked", "id", r.ID, "inserted", r.Inserted)
		return nil
	}
	if err != nil {
		return err
	}
	if cur.Finished() {
		return nil // redelivered after it was worked
	}
	began := time.Now().UTC().Truncate(time.Millisecond)
	cur.Status, cur.BeganWorking = changerequest.StatusWorking, &began
	if cur, err = w.o.Store.SetStatus(ctx, cur); err != nil {
		return err
	}
	w.log.Info("change notification working", "id", cur.ID, "supplier", cur.CreateRequest.SupplierID, "product", cur.CreateRequest.ProductID,
		"mode", cur.Mode, "from", cur.StartDate, "until", cur.EndDate)
	sctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	res, serr := w.o.Syncer.Sync(sctx, cur)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err() // shutting down: worked again after the restart
	}
	// A final status is the record of this request: a redelivery finds it
	// finished and does not work it again. If Redis lost its views during
	// the run (the product read as missing), work it again instead, once
	// they are back.
	if err := stream.CheckFence(ctx); err != nil {
		return err
	}
	finished := time.Now().UTC().Truncate(time.Millisecond)
	cur.Status, cur.FinishedWorking, cur.Errors = res.Status(serr), &finished, res.Failures
	if serr != nil {
		cur.Errors = append(cur.Errors, serr.Error())
	}
	if cur, err = w.o.Store.SetStatus(ctx, cur); err != nil {
		return err
	}
	w.runs.WithLabelValues(cur.Mode, cur.Status).Inc()
	w.secs.Observe(finished.Sub(began).Seconds())
	w.log.Info("change notification finished", "id", cur.ID, "status", cur.Status, "items", res.Items, "errors", len(cur.Errors),
		"took", finished.Sub(began).Round(time.Millisecond))
	return w.history(ctx, cur)
}

// history records the run for analysts (history_change_requests).
func (w *Worker) history(ctx context.Context, r changerequest.Request) error {
	if w.o.Publisher == nil {
		return nil
	}
	run := schemas.ChangeRequestRun{ID: r.ID, SupplierID: r.CreateRequest.SupplierID, ProductID: r.CreateRequest.ProductID,
		Mode: r.Mode, Status: r.Status, Inserted: r.Inserted}
	if r.BeganWorking != nil {
		run.Began = *r.BeganWorking
	}
	if r.FinishedWorking != nil {
		run.Finished = *r.FinishedWorking
	}
	if len(r.Errors) > 0 {
		run.Error = fmt.Sprintf("%d errors; first: %s", len(r.Errors), r.Errors[0])
	}
	env, err := schemas.NewHistoryEvent(schemas.HistoryChangeRequestRun, r.CreateRequest.SupplierID, run, run.Finished)
	if err != nil {
		return err
	}
	env.ID = uuid.NewSHA1(uuid.NameSpaceOID, []byte("changerequest/"+r.ID)).String()
	env.Source = "ingest/changerequest"
	raw, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return w.o.Publisher.Publish(ctx, stream.Message{Topic: schemas.TopicHistory, Key: []byte(env.Key), Value: raw, Time: env.Time})
}

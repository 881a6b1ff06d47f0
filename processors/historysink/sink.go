// Package historysink is the history sink: it consumes the history topic
// (schemas.TopicHistory, envelopes of schemas/history.go) and loads every
// event into its ClickHouse table (schemas/clickhouse/0002) in batches
// bounded by size and time. It also enforces retention by dropping old
// month partitions (DropOlderThan).
//
// Guarantees:
//   - At least once, nothing lost: a batch's offsets are committed only
//     after every row of it was inserted. While ClickHouse is down the
//     insert is retried with backoff and nothing is committed; the sink
//     stops fetching once one batch waits and one more is full, and catches
//     up when ClickHouse answers again. A crash redelivers what was not
//     committed.
//   - No double counts: every row carries the event id and every table is
//     a ReplacingMergeTree ending its sorting key with it, so a redelivered
//     or replayed event collapses into one row; queries read with FINAL
//     (docs/analytics.md).
//   - Nothing dropped: records of unknown types, undecodable payloads and
//     non-envelopes go to the generic history_events table.
//
// It does not create topics or tables (the app does, at start: EnsureTopics
// and warehouse.Migrate) and it does not read history back: query/historyapi
// serves it.
package historysink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// GroupID is the sink's consumer group.
const GroupID = "switchback-history"

// Defaults of Options.
const (
	DefaultBatchSize         = 10_000
	DefaultFlushInterval     = time.Second
	DefaultRetentionInterval = time.Hour
	DefaultShutdownTimeout   = 10 * time.Second
)

// commitTimeout bounds handing a commit to the reader (it blocks while the
// group rebalances).
const commitTimeout = 10 * time.Second

// Options configure NewSink. Zero values take the defaults.
type Options struct {
	Brokers []string
	// Dial connects to the brokers (nil: TCP; stream.Dial).
	Dial stream.Dial
	// Conn is the ClickHouse connection (warehouse.Open), migrated.
	Conn driver.Conn
	// GroupID defaults to GroupID; Topic to schemas.TopicHistory.
	GroupID string
	Topic   string
	// BatchSize bounds the events of one insert batch (all tables
	// together). Default 10 000.
	BatchSize int
	// FlushInterval bounds how long an event waits in a batch before the
	// batch is inserted, so history is at most this late when the topic is
	// quiet. Default 1 s.
	FlushInterval time.Duration
	// RetryDelay is the wait after the first failed insert; it doubles up to
	// MaxRetryDelay. Defaults 200 ms and 10 s.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// RetentionMonths > 0 drops month partitions older than that many
	// months (DropOlderThan) at start and every RetentionInterval (default
	// 1 h). 0 keeps everything.
	RetentionMonths   int
	RetentionInterval time.Duration
	// ShutdownTimeout bounds the last flush when Run's ctx ends. Default 10 s.
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
	Registerer      prometheus.Registerer
}

// Sink is the history sink; Run runs it.
type Sink struct {
	opts Options
	log  *slog.Logger
	m    *metrics

	mu      sync.Mutex
	pending []time.Time // first fetch time of each uncommitted batch, oldest first
}

// NewSink creates a sink. Its metrics are registered on opts.Registerer now,
// so they are scraped (at zero) before the first event.
func NewSink(opts Options) *Sink {
	if opts.GroupID == "" {
		opts.GroupID = GroupID
	}
	if opts.Topic == "" {
		opts.Topic = schemas.TopicHistory
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = 200 * time.Millisecond
	}
	if opts.MaxRetryDelay <= 0 {
		opts.MaxRetryDelay = 10 * time.Second
	}
	if opts.RetentionInterval <= 0 {
		opts.RetentionInterval = DefaultRetentionInterval
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sink{opts: opts, log: opts.Logger.With("group", opts.GroupID), m: newMetrics(opts.Registerer)}
}

// Run consumes the history topic until ctx ends, then inserts and commits
// what it holds (within ShutdownTimeout; what does not make it is
// delivered again after a restart) and returns nil. It returns an error
// only for a misconfiguration or when the reader closed under it.
func (s *Sink) Run(ctx context.Context) error {
	switch {
	case len(s.opts.Brokers) == 0:
		return errors.New("history sink: no brokers")
	case s.opts.Conn == nil:
		return errors.New("history sink: no ClickHouse connection")
	}
	r := stream.NewGroupReader(stream.GroupReaderOptions{
		Brokers: s.opts.Brokers,
		Dial:    s.opts.Dial,
		GroupID: s.opts.GroupID,
		Topics:  []string{s.opts.Topic},
		// A new group reads the whole retained topic: history that waited
		// while ClickHouse was parked is loaded once it is configured.
		StartOffset: kafka.FirstOffset,
		MaxWait:     500 * time.Millisecond,
		// Records keep arriving while a full batch is decoded.
		QueueCapacity: 10_000,
		// 0: Commit commits synchronously, so "committed" really means
		// committed once it returns.
		CommitInterval: 0,
		RetryDelay:     s.opts.RetryDelay,
		MaxRetryDelay:  s.opts.MaxRetryDelay,
		Logger:         s.log,
	})
	s.log.Info("history sink started", "topic", s.opts.Topic, "batchSize", s.opts.BatchSize, "flushInterval", s.opts.FlushInterval, "retentionMonths", s.opts.RetentionMonths)

	// The writer keeps inserting after ctx ended, for the last flush only,
	// until ShutdownTimeout.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	stopAfterGrace := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(s.opts.ShutdownTimeout, wcancel)
		context.AfterFunc(wctx, func() { t.Stop() })
	})
	defer stopAfterGrace()

	// Two batches: one filling while the other inserts. A full batch waits
	// for the writer, and the fetch loop with it: that is the backpressure
	// while ClickHouse is down.
	full := make(chan *batch, 1)
	free := make(chan *batch, 2)
	free <- newBatch(decoders())
	free <- newBatch(decoders())
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.write(ctx, wctx, r, full, free)
	}()

	var wg sync.WaitGroup
	if s.opts.RetentionMonths > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.retain(ctx)
		}()
	}

	runErr := s.fetch(ctx, r, full, free)
	close(full)
	<-writerDone
	wg.Wait()
	if err := r.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("history sink: close reader: %w", err)
	}
	s.log.Info("history sink stopped")
	return runErr
}

// fetch fills batches and hands them to the writer when full or when the
// oldest event has waited FlushInterval. On return, the batch being filled
// (if any) has been handed over.
func (s *Sink) fetch(ctx context.Context, r *stream.GroupReader, full chan<- *batch, free <-chan *batch) error {
	var cur *batch
	select {
	case cur = <-free:
	case <-ctx.Done():
		return nil
	}
	// A batch is inserted FlushInterval after its first event, or once it
	// holds BatchSize events.
	window := stream.Window{Max: s.opts.BatchSize, Wait: s.opts.FlushInterval}
	add := func(m kafka.Message) {
		s.m.observeLag(m.Partition, m.HighWaterMark-m.Offset-1)
		if cur.events() == 0 {
			cur.first = time.Now()
			s.markPending(cur.first)
		}
		cur.add(m)
		s.m.pendingEvents.Inc()
	}
	for {
		n, err := r.FetchBatch(ctx, window, add)
		if n == 0 {
			if err != nil {
				return fmt.Errorf("history sink: %w", err)
			}
			return nil // ctx ended with nothing fetched
		}
		s.decode(cur)
		full <- cur // the writer always drains full until it is closed
		if ctx.Err() != nil {
			return nil // the last batch is handed over
		}
		select {
		case cur = <-free:
		case <-ctx.Done():
			return nil
		}
	}
}

// decode turns b's records into rows. Records stored generically are
// logged once per batch and reason (a producer that sends a new type would
// otherwise log a line per record), with the first one's coordinates.
func (s *Sink) decode(b *batch) {
	type first struct {
		n   int
		ref recordRef
	}
	var mu sync.Mutex
	var unrouted map[string]*first
	b.decode(func(reason string, r *record) {
		s.m.unrouted.WithLabelValues(reason).Inc()
		mu.Lock()
		defer mu.Unlock()
		if unrouted == nil {
			unrouted = map[string]*first{}
		}
		if f, ok := unrouted[reason]; ok {
			f.n++
		} else {
			unrouted[reason] = &first{n: 1, ref: r.ref}
		}
	})
	for reason, f := range unrouted {
		s.log.Warn("history records stored in history_events", "reason", reason, "count", f.n, "partition", f.ref.partition, "offset", f.ref.offset)
	}
}

// write inserts each full batch, retrying until it succeeds, then commits
// its offsets and recycles it. After ctx ended it makes one last attempt
// per batch (bounded by wctx) and does not retry.
func (s *Sink) write(ctx, wctx context.Context, r *stream.GroupReader, full <-chan *batch, free chan<- *batch) {
	for b := range full {
		if s.insertWithRetry(ctx, wctx, b) {
			s.commit(wctx, r, b)
		}
		s.m.pendingEvents.Sub(float64(b.events()))
		s.donePending()
		b.reset()
		free <- b
	}
}

// insertWithRetry reports whether every table of b was inserted.
func (s *Sink) insertWithRetry(ctx, wctx context.Context, b *batch) bool {
	retry := backoff.New(s.opts.RetryDelay, s.opts.MaxRetryDelay)
	for attempt := 1; ; attempt++ {
		start := time.Now()
		table, err := b.insert(wctx, s.opts.Conn, func(table string, rows int) {
			s.m.rowsInserted.WithLabelValues(table).Add(float64(rows))
		})
		if err == nil {
			s.m.batchSeconds.Observe(time.Since(start).Seconds())
			s.m.batchEvents.Observe(float64(b.events()))
			s.m.lastFlush.Set(unixSeconds(time.Now()))
			if attempt > 1 {
				s.log.Info("history insert succeeded after retries", "attempts", attempt, "events", b.events())
			}
			return true
		}
		s.m.insertErrors.WithLabelValues(table).Inc()
		if ctx.Err() != nil {
			// Shutting down: not committed, delivered again after restart.
			s.log.Warn("history insert failed at shutdown; the batch will be delivered again", "table", table, "events", b.events(), "error", err)
			return false
		}
		// The first attempts, then about every 5 minutes at the longest
		// delay: a long outage must not flood the log.
		delay := retry.Next()
		if attempt <= 5 || attempt%30 == 0 {
			s.log.Error("history insert failed, retrying; nothing is committed meanwhile", "table", table, "events", b.events(), "attempt", attempt, "retryIn", delay, "error", err)
		}
		if backoff.Sleep(ctx, delay) != nil {
			return false
		}
	}
}

// commit commits the last offset of each partition in b. A failure is not
// fatal: the events are delivered again and collapse with their rows.
func (s *Sink) commit(ctx context.Context, r *stream.GroupReader, b *batch) {
	for _, m := range b.last {
		b.commit = append(b.commit, m)
	}
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	if err := r.Commit(cctx, b.commit...); err != nil {
		s.m.commitErrors.Inc()
		s.log.Warn("commit failed after insert; the batch will be delivered again", "events", b.events(), "error", err)
	}
}

// markPending and donePending keep switchback_history_oldest_pending_*:
// batches are committed in the order they were started.
func (s *Sink) markPending(first time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, first)
	s.m.oldestPending.Set(unixSeconds(s.pending[0]))
}

func (s *Sink) donePending() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		s.pending = s.pending[1:]
	}
	if len(s.pending) == 0 {
		s.m.oldestPending.Set(0)
		return
	}
	s.m.oldestPending.Set(unixSeconds(s.pending[0]))
}

// retain runs DropOlderThan at start and every RetentionInterval.
func (s *Sink) retain(ctx context.Context) {
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		dropped, err := DropOlderThan(rctx, s.opts.Conn, s.opts.RetentionMonths)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			s.m.retentionErrs.Inc()
			s.log.Error("history retention failed", "months", s.opts.RetentionMonths, "error", err)
		case len(dropped) > 0:
			s.m.dropped.Add(float64(len(dropped)))
			s.log.Info("history retention dropped partitions", "months", s.opts.RetentionMonths, "partitions", dropped)
		}
		if backoff.Sleep(ctx, s.opts.RetentionInterval) != nil {
			return
		}
	}
}

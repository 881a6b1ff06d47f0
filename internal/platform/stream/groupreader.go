package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
)

// GroupReaderOptions configure NewGroupReader. Zero values take the
// defaults.
type GroupReaderOptions struct {
	Brokers []string
	// Dial connects to the brokers (nil: TCP).
	Dial    Dial
	GroupID string
	Topics  []string
	// StartOffset is where a group with no committed offset starts:
	// kafka.FirstOffset (the default) or kafka.LastOffset.
	StartOffset int64
	// MaxWait bounds how long the broker holds a fetch that finds nothing
	// new. Default 500ms.
	MaxWait time.Duration
	// QueueCapacity is how many fetched records the reader buffers ahead
	// of FetchBatch. Default kafka-go's (100).
	QueueCapacity int
	// CommitInterval > 0 makes Commit hand offsets to the reader, which
	// commits them every interval and at Close (a crash loses at most one
	// interval of commits: redelivery, never a skip); 0 makes Commit
	// synchronous: committed once it returned nil.
	CommitInterval time.Duration
	// Group membership timeouts. kafka-go's defaults (30s session and
	// rebalance, 5s join backoff) make a restarted or crashed member hold
	// its partitions for long; ours keep failover within seconds while
	// staying above brokers' default group.min.session.timeout.ms (6s).
	// Defaults: session 10s, heartbeat 1s, rebalance 10s, join backoff 500ms.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	JoinGroupBackoff  time.Duration
	// RetryDelay and MaxRetryDelay pace FetchBatch's retries of a failed
	// fetch (backoff.New). Defaults 100ms and 5s.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	Logger        *slog.Logger
}

// GroupReader reads a consumer group's records in batches, and commits
// only what its user says it is done with (Commit): nothing is committed
// by reading. It is the reader of every group member of the service (a
// Consumer's, the dispatcher's intake, the history sink), so they share
// one reader configuration and one fetch-and-retry loop. Not safe for
// concurrent FetchBatch calls; Commit may be called from another
// goroutine.
type GroupReader struct {
	r     *kafka.Reader
	log   *slog.Logger
	retry backoff.Backoff
}

// NewGroupReader creates a reader; it joins the group at its first fetch.
func NewGroupReader(o GroupReaderOptions) *GroupReader {
	if o.StartOffset == 0 {
		o.StartOffset = kafka.FirstOffset
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 500 * time.Millisecond
	}
	if o.CommitInterval < 0 {
		o.CommitInterval = 0
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 10 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = time.Second
	}
	if o.RebalanceTimeout <= 0 {
		o.RebalanceTimeout = 10 * time.Second
	}
	if o.JoinGroupBackoff <= 0 {
		o.JoinGroupBackoff = 500 * time.Millisecond
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 100 * time.Millisecond
	}
	if o.MaxRetryDelay <= 0 {
		o.MaxRetryDelay = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &GroupReader{
		r: kafka.NewReader(kafka.ReaderConfig{
			Brokers:           o.Brokers,
			Dialer:            dialer(o.Dial),
			GroupID:           o.GroupID,
			GroupTopics:       o.Topics,
			StartOffset:       o.StartOffset,
			MinBytes:          1,
			MaxBytes:          10 << 20,
			MaxWait:           o.MaxWait,
			QueueCapacity:     o.QueueCapacity,
			CommitInterval:    o.CommitInterval,
			SessionTimeout:    o.SessionTimeout,
			HeartbeatInterval: o.HeartbeatInterval,
			RebalanceTimeout:  o.RebalanceTimeout,
			JoinGroupBackoff:  o.JoinGroupBackoff,
			ReadBackoffMin:    50 * time.Millisecond,
			ReadBackoffMax:    time.Second,
			ErrorLogger:       ReaderErrorLogger(o.Logger),
		}),
		log:   o.Logger,
		retry: backoff.New(o.RetryDelay, o.MaxRetryDelay),
	}
}

// Window bounds a batch once its first record is there: the batch ends
// at Max records, Wait after its first record, or when no record came
// within Gap of the one before, whichever is first. A zero Wait or Gap
// does not bound; set at least one, or the batch waits for Max records.
type Window struct {
	Max  int
	Wait time.Duration
	Gap  time.Duration
}

// FetchBatch waits for a first record, then takes more while w allows,
// and hands each to add, in the order read (each partition's in offset
// order). It returns how many it handed to add. A failed fetch of the
// first record is logged and retried with backoff (the reader heals
// itself: a broker restarting, a coordinator moving); one while filling
// ends the batch, and the next call reports it. n is 0 only when ctx
// ended (err nil) or the reader was closed (err wraps io.EOF). A batch
// that ctx interrupted is returned as it is: the caller decides whether
// it still finishes it.
func (g *GroupReader) FetchBatch(ctx context.Context, w Window, add func(kafka.Message)) (n int, err error) {
	for {
		m, err := g.r.FetchMessage(ctx)
		if err == nil {
			g.retry.Reset()
			add(m)
			break
		}
		if ctx.Err() != nil {
			return 0, nil
		}
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("reader closed: %w", err)
		}
		g.log.Warn("fetch failed, retrying", "error", truncate(err.Error()))
		if g.retry.Wait(ctx) != nil {
			return 0, nil
		}
	}
	n = 1
	wctx := ctx
	if w.Wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, w.Wait)
		defer cancel()
	}
	for n < w.Max {
		m, ended, err := g.fetchWithin(wctx, w.Gap)
		if err != nil {
			// The window is over (or ctx ended, or the reader failed:
			// the next call reports it and backs off). What was fetched
			// is the batch.
			if !ended {
				g.log.Warn("fetch failed while filling a batch", "error", truncate(err.Error()))
			}
			return n, nil
		}
		add(m)
		n++
	}
	return n, nil
}

// fetchWithin fetches one record, waiting at most gap (0: as long as ctx
// allows); ended says the wait or ctx was over.
func (g *GroupReader) fetchWithin(ctx context.Context, gap time.Duration) (kafka.Message, bool, error) {
	if gap <= 0 {
		m, err := g.r.FetchMessage(ctx)
		return m, ctx.Err() != nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, gap)
	defer cancel()
	m, err := g.r.FetchMessage(fctx)
	return m, fctx.Err() != nil, err
}

// Commit commits msgs' offsets (each partition's last one counts): at
// once with a CommitInterval of 0, else at the next interval or Close.
// Commit only what is durably done: a crash redelivers what was not
// committed.
func (g *GroupReader) Commit(ctx context.Context, msgs ...kafka.Message) error {
	return g.r.CommitMessages(ctx, msgs...)
}

// Close flushes the pending commits, leaves the group and closes the
// reader; a FetchBatch blocked on it returns an io.EOF error.
func (g *GroupReader) Close() error {
	return g.r.Close()
}

package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
)

// Follow reads every partition of topic from its first offset, then keeps
// following new records until ctx ends, and returns nil then. It uses no
// consumer group and commits nothing: it is how an instance rebuilds an
// in-memory view (the principal table, say) from a compacted topic. fn is
// never called concurrently, so the view needs no lock of its own against
// Follow; records of one partition reach fn in offset order, each once.
// An error from fn stops Follow and is returned. Partitions added after
// the start are not followed.
//
// The brokers being unreachable is not an error: a follower outlives a
// broker restart. Each partition's reader is replaced with backoff and
// resumes after the last record it handed to fn, so nothing is skipped or
// handed twice; the failures are logged with FollowLogger, if given. (A
// follower that gave up on the first failed fetch took the whole query
// process down with it when the broker restarted: the catalog view's
// error was a tier failure. The registry and the principal followers each
// had their own retry loop, re-reading their topic from the start.)
func Follow(ctx context.Context, brokers []string, topic string, fn func(Message) error, opts ...FollowOption) error {
	var o followOptions
	for _, opt := range opts {
		opt(&o)
	}
	var (
		parts []int
		err   error
		retry = newRetry(o.log, topic, -1)
	)
	for {
		if parts, err = topicPartitions(ctx, brokers, topic); err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if !retry.wait(ctx, fmt.Errorf("read metadata: %w", err)) {
			return nil
		}
	}
	ranges := make([]partitionRange, len(parts))
	for i, p := range parts {
		ranges[i] = partitionRange{partition: p, end: -1}
	}
	err = readPartitions(ctx, brokers, topic, ranges, fn, o.log)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("follow %s: %w", topic, err)
	}
	return nil
}

// FollowOption configures Follow.
type FollowOption func(*followOptions)

type followOptions struct {
	log *slog.Logger
}

// FollowLogger makes Follow log the broker failures it rides out.
func FollowLogger(l *slog.Logger) FollowOption {
	return func(o *followOptions) { o.log = l }
}

// retry paces a follower's attempts after broker failures: 100 ms doubling
// to 5 s, reset once a fetch succeeds, and logs the first failure of a
// streak, every 20th after it, and the recovery.
type retry struct {
	log       *slog.Logger
	topic     string
	partition int
	backoff   backoff.Backoff
	failures  int
}

func newRetry(log *slog.Logger, topic string, partition int) *retry {
	return &retry{log: log, topic: topic, partition: partition, backoff: backoff.New(followBackoffMin, followBackoffMax)}
}

const (
	followBackoffMin = 100 * time.Millisecond
	followBackoffMax = 5 * time.Second
	followLogEvery   = 20
)

// wait notes a failure and sleeps the backoff; false if ctx ended.
func (r *retry) wait(ctx context.Context, err error) bool {
	r.failures++
	d := r.backoff.Next()
	if r.log != nil && (r.failures == 1 || r.failures%followLogEvery == 0) {
		r.log.Warn("following a topic: the broker failed; retrying", "topic", r.topic, "partition", r.partition,
			"failures", r.failures, "retry_in", d, "err", err)
	}
	return backoff.Sleep(ctx, d) == nil
}

// ok notes a successful fetch.
func (r *retry) ok() {
	if r.failures > 0 && r.log != nil {
		r.log.Info("following a topic: reading again", "topic", r.topic, "partition", r.partition, "after_failures", r.failures)
	}
	r.failures = 0
	r.backoff.Reset()
}

// ReadAll reads every partition of topic from its first offset up to the
// high watermark as of the call, then returns: a rebuild reads what was
// there when it started, and Follow (or a consumer) takes it from there.
// fn is called as in Follow. If ctx ends first, ReadAll returns ctx's error.
func ReadAll(ctx context.Context, brokers []string, topic string, fn func(Message) error) error {
	ranges, err := readRanges(ctx, brokers, topic)
	if err != nil {
		return fmt.Errorf("read all of %s: %w", topic, err)
	}
	if err := readPartitions(ctx, brokers, topic, ranges, fn, nil); err != nil {
		return fmt.Errorf("read all of %s: %w", topic, err)
	}
	return nil
}

// ReadCommitted reads every partition of topic from its first offset up
// to the offset that consumer group has committed on it (exclusive), as of
// the call: exactly what the group's members have handled and committed, so
// that state folded from it is the state the group's next message expects.
// A partition the group has no offset for is not read. fn is called as in
// Follow. It is how a processor's Redis state is rebuilt after Redis lost
// it (processors/availchange.RebuildState).
func ReadCommitted(ctx context.Context, brokers []string, topic, group string, fn func(Message) error) error {
	ranges, err := committedRanges(ctx, brokers, topic, group)
	if err != nil {
		return fmt.Errorf("read %s up to the offsets of %s: %w", topic, group, err)
	}
	if err := readPartitions(ctx, brokers, topic, ranges, fn, nil); err != nil {
		return fmt.Errorf("read %s up to the offsets of %s: %w", topic, group, err)
	}
	return nil
}

// committedRanges returns the partitions of topic on which group has
// committed an offset and that hold records below it, with that offset as
// the end. (A partition whose records before the offset are all gone would
// otherwise make the read wait for a new record.)
func committedRanges(ctx context.Context, brokers []string, topic, group string) ([]partitionRange, error) {
	parts, err := topicPartitions(ctx, brokers, topic)
	if err != nil {
		return nil, err
	}
	client, release := newClient(brokers)
	defer release()
	reqs := make([]kafka.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	first := make(map[int]int64, len(parts))
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("list offsets of partition %d: %w", po.Partition, po.Error)
		}
		if po.LastOffset > po.FirstOffset {
			first[po.Partition] = po.FirstOffset
		}
	}
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return nil, fmt.Errorf("fetch committed offsets: %w", err)
	}
	if errors.Is(resp.Error, kafka.GroupIdNotFound) {
		return nil, nil // the group never committed anything
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("fetch committed offsets: %w", resp.Error)
	}
	var ranges []partitionRange
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("committed offset of partition %d: %w", po.Partition, po.Error)
		}
		if f, ok := first[po.Partition]; ok && po.CommittedOffset > f {
			ranges = append(ranges, partitionRange{partition: po.Partition, end: po.CommittedOffset})
		}
	}
	return ranges, nil
}

// partitionRange is a partition to read and where to stop: end is the
// offset to reach (records at end and after are not read: the high
// watermark, or a group's committed offset), or -1 to follow forever.
type partitionRange struct {
	partition int
	end       int64
}

func topicPartitions(ctx context.Context, brokers []string, topic string) ([]int, error) {
	client, release := newClient(brokers)
	defer release()
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("read metadata: %w", err)
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("topic metadata: %w", t.Error)
		}
		parts := make([]int, len(t.Partitions))
		for i, p := range t.Partitions {
			parts[i] = p.ID
		}
		return parts, nil
	}
	return nil, fmt.Errorf("topic metadata: %w", kafka.UnknownTopicOrPartition)
}

// readRanges returns the non-empty partitions of topic with their current
// high watermarks.
func readRanges(ctx context.Context, brokers []string, topic string) ([]partitionRange, error) {
	parts, err := topicPartitions(ctx, brokers, topic)
	if err != nil {
		return nil, err
	}
	reqs := make([]kafka.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	client, release := newClient(brokers)
	defer release()
	resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	var ranges []partitionRange
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("list offsets of partition %d: %w", po.Partition, po.Error)
		}
		// Empty, or emptied by retention: nothing to read. The last record
		// below the watermark always exists: compaction keeps the active
		// segment, and kafka-go writes no transaction markers.
		if po.LastOffset > po.FirstOffset {
			ranges = append(ranges, partitionRange{partition: po.Partition, end: po.LastOffset})
		}
	}
	return ranges, nil
}

// readPartitions reads the ranges concurrently, one reader per partition,
// and serialises the calls to fn. It returns the first error. log is for
// followers' retries (see Follow).
func readPartitions(ctx context.Context, brokers []string, topic string, ranges []partitionRange, fn func(Message) error, log *slog.Logger) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		mu sync.Mutex // serialises fn
		wg sync.WaitGroup
	)
	for _, pr := range ranges {
		wg.Go(func() {
			read := readPartition
			if pr.end < 0 {
				read = func(ctx context.Context, brokers []string, topic string, pr partitionRange, mu *sync.Mutex, fn func(Message) error) error {
					return followPartition(ctx, brokers, topic, pr.partition, mu, fn, log)
				}
			}
			if err := read(ctx, brokers, topic, pr, &mu, fn); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// readPartition reads one bounded range (a rebuild). A broker failure is
// returned: the rebuild's caller decides (the views guard retries it).
func readPartition(ctx context.Context, brokers []string, topic string, pr partitionRange, mu *sync.Mutex, fn func(Message) error) error {
	// MaxWait bounds how long an idle fetch waits for new records. A
	// bounded read (a rebuild) knows its records are there, yet each of
	// its readers' first fetch was measured to take ~0.75 × MaxWait
	// (~380 ms per topic with 500 ms; the embedded broker and kafka-go):
	// with a short wait a rebuild of the views, which every process runs
	// at start and after Redis lost them (answering 503 meanwhile), takes
	// ~40 ms per topic instead. A follower, idle most of the time, keeps
	// the long wait (followPartition).
	r := newPartitionReader(brokers, topic, pr.partition, 50*time.Millisecond)
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		return fmt.Errorf("partition %d: seek to first offset: %w", pr.partition, err)
	}
	for {
		km, err := r.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("partition %d: fetch: %w", pr.partition, err)
		}
		if km.Offset >= pr.end {
			// The record before end was compacted away (or retention
			// removed everything before end): this one is past the range.
			return nil
		}
		if err := handle(mu, fn, km); err != nil {
			return err
		}
		if km.Offset >= pr.end-1 {
			return nil
		}
	}
}

// followPartition follows one partition until ctx ends or fn fails. A
// broker failure replaces the reader (with backoff), resuming after the
// last record handed to fn.
func followPartition(ctx context.Context, brokers []string, topic string, partition int, mu *sync.Mutex, fn func(Message) error, log *slog.Logger) error {
	next := kafka.FirstOffset
	retry := newRetry(log, topic, partition)
	for {
		err := followFrom(ctx, brokers, topic, partition, &next, mu, fn, retry)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var hf handlerFailure
		if errors.As(err, &hf) {
			return hf.err
		}
		if !retry.wait(ctx, err) {
			return ctx.Err()
		}
	}
}

// followFrom reads partition from *next with one reader until an error;
// *next moves past every record handed to fn.
func followFrom(ctx context.Context, brokers []string, topic string, partition int, next *int64, mu *sync.Mutex, fn func(Message) error, retry *retry) error {
	r := newPartitionReader(brokers, topic, partition, 500*time.Millisecond)
	defer r.Close()
	if err := r.SetOffset(*next); err != nil {
		return fmt.Errorf("partition %d: seek to offset %d: %w", partition, *next, err)
	}
	for {
		km, err := r.FetchMessage(ctx)
		if err != nil {
			return fmt.Errorf("partition %d: fetch: %w", partition, err)
		}
		retry.ok()
		if err := handle(mu, fn, km); err != nil {
			return handlerFailure{err}
		}
		*next = km.Offset + 1
	}
}

// handlerFailure marks fn's own error, which stops a follower, apart from
// the broker's, which a follower rides out.
type handlerFailure struct{ err error }

func (h handlerFailure) Error() string { return h.err.Error() }

func handle(mu *sync.Mutex, fn func(Message) error, km kafka.Message) error {
	mu.Lock()
	err := fn(fromKafka(km))
	mu.Unlock()
	if err != nil {
		return fmt.Errorf("partition %d offset %d: %w", km.Partition, km.Offset, err)
	}
	return nil
}

func newPartitionReader(brokers []string, topic string, partition int, maxWait time.Duration) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:        brokers,
		Topic:          topic,
		Partition:      partition,
		MinBytes:       1,
		MaxBytes:       10 << 20,
		MaxWait:        maxWait,
		ReadBackoffMin: 50 * time.Millisecond,
		ReadBackoffMax: time.Second,
	})
}

// OffsetProbe reads the end offsets (high watermarks) of every partition
// of some topics: what a follower must have read to have seen everything
// acknowledged before the probe was asked. It keeps one client and the
// topics' partitions (read once); safe for one goroutine at a time.
type OffsetProbe struct {
	client  *kafka.Client
	release func()
	topics  map[string][]int
}

// NewOffsetProbe reads the partitions of topics.
func NewOffsetProbe(ctx context.Context, brokers []string, topics []string) (*OffsetProbe, error) {
	p := &OffsetProbe{topics: map[string][]int{}}
	for _, t := range topics {
		parts, err := topicPartitions(ctx, brokers, t)
		if err != nil {
			return nil, fmt.Errorf("offset probe of %s: %w", t, err)
		}
		p.topics[t] = parts
	}
	p.client, p.release = newClient(brokers)
	return p, nil
}

// End returns, per topic and partition, the offset after the last record
// (0 for an empty partition).
func (p *OffsetProbe) End(ctx context.Context) (map[string]map[int]int64, error) {
	req := map[string][]kafka.OffsetRequest{}
	for t, parts := range p.topics {
		for _, part := range parts {
			req[t] = append(req[t], kafka.LastOffsetOf(part))
		}
	}
	resp, err := p.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req})
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	out := make(map[string]map[int]int64, len(resp.Topics))
	for t, pos := range resp.Topics {
		m := make(map[int]int64, len(pos))
		for _, po := range pos {
			if po.Error != nil {
				return nil, fmt.Errorf("list offsets of %s/%d: %w", t, po.Partition, po.Error)
			}
			m[po.Partition] = po.LastOffset
		}
		out[t] = m
	}
	return out, nil
}

// Close releases the probe's connections.
func (p *OffsetProbe) Close() { p.release() }

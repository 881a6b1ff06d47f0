package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/backoff"
	"github.com/switchbackhq/switchback/schemas"
)

// adminTimeout bounds one admin round trip (metadata, create, list offsets)
// so that an unreachable broker is retried rather than waited on forever.
const adminTimeout = 10 * time.Second

// newClient returns a kafka-go client on a transport of its own, and the
// function that releases the transport's connections. A private transport
// matters: kafka-go serves Metadata requests from the transport's cache,
// and kafka.DefaultTransport's cache is shared by the whole process.
func newClient(brokers []string) (*kafka.Client, func()) {
	t := &kafka.Transport{}
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: t, Timeout: adminTimeout}
	return c, t.CloseIdleConnections
}

// EnsureTopics creates the topics that do not exist yet, with their
// settings: cleanup.policy=compact for compacted topics, retention.ms for
// the others. Existing topics are left as they are (their partition count
// and configs are not changed), so calling it at every start is safe, from
// several instances at once too. While the brokers are unreachable it
// retries with backoff until ctx ends; a topic the brokers refuse (invalid
// config, policy) is an error at once.
func EnsureTopics(ctx context.Context, brokers []string, topics []schemas.Topic) error {
	if len(brokers) == 0 {
		return errors.New("ensure topics: no brokers")
	}
	b := backoff.New(100*time.Millisecond, 5*time.Second)
	for {
		retry, err := ensureTopicsOnce(ctx, brokers, topics)
		if err == nil {
			return nil
		}
		if !retry {
			return fmt.Errorf("ensure topics: %w", err)
		}
		if werr := b.Wait(ctx); werr != nil {
			return fmt.Errorf("ensure topics: gave up: %w (last error: %w)", werr, err)
		}
	}
}

// ensureTopicsOnce makes one attempt and says whether a failure is worth
// retrying.
func ensureTopicsOnce(ctx context.Context, brokers []string, topics []schemas.Topic) (retry bool, err error) {
	// A fresh client per attempt: a transport whose first metadata load
	// failed keeps failing.
	client, release := newClient(brokers)
	defer release()

	actx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()

	md, err := client.Metadata(actx, &kafka.MetadataRequest{})
	if err != nil {
		return true, fmt.Errorf("read metadata: %w", err)
	}
	existing := make(map[string]bool, len(md.Topics))
	for _, t := range md.Topics {
		if t.Error == nil {
			existing[t.Name] = true
		}
	}

	var missing []kafka.TopicConfig
	for _, t := range topics {
		if existing[t.Name] {
			continue
		}
		missing = append(missing, topicConfig(t))
	}
	if len(missing) == 0 {
		return false, nil
	}

	resp, err := client.CreateTopics(actx, &kafka.CreateTopicsRequest{Topics: missing})
	if err != nil {
		return true, fmt.Errorf("create topics: %w", err)
	}
	var errs []error
	retry = false
	for _, t := range missing {
		terr := resp.Errors[t.Topic]
		switch {
		case terr == nil, errors.Is(terr, kafka.TopicAlreadyExists):
			// Already there: another instance won the race.
		default:
			var kerr kafka.Error
			if errors.As(terr, &kerr) && kerr.Temporary() {
				retry = true
			}
			errs = append(errs, fmt.Errorf("create topic %s: %w", t.Topic, terr))
		}
	}
	return retry, errors.Join(errs...)
}

func topicConfig(t schemas.Topic) kafka.TopicConfig {
	tc := kafka.TopicConfig{
		Topic:         t.Name,
		NumPartitions: t.Partitions,
		// -1: the cluster's default.replication.factor (CreateTopics v4+),
		// so the same code serves one embedded node and a real cluster.
		ReplicationFactor: -1,
	}
	if tc.NumPartitions <= 0 {
		tc.NumPartitions = 1
	}
	switch {
	case t.Compacted:
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
	case t.RetentionHours > 0:
		ms := int64(t.RetentionHours) * int64(time.Hour/time.Millisecond)
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: strconv.FormatInt(ms, 10)})
	}
	return tc
}

// Ping reports whether at least one broker answers a metadata request. It
// dials rather than using a kafka.Client, whose metadata answers come from
// a cache and would hide a broker that went away.
func Ping(ctx context.Context, brokers []string) error {
	if len(brokers) == 0 {
		return errors.New("ping kafka: no brokers")
	}
	var errs []error
	for _, addr := range brokers {
		err := pingOne(ctx, addr)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("ping kafka: %w", errors.Join(errs...))
}

func pingOne(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Brokers(); err != nil {
		return fmt.Errorf("metadata from %s: %w", addr, err)
	}
	return nil
}

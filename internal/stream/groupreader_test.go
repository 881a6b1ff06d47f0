package stream_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// fetchBatch runs one FetchBatch with a deadline, returning the values read.
func fetchBatch(t *testing.T, r *stream.GroupReader, w stream.Window) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got []string
	n, err := r.FetchBatch(ctx, w, func(m kafka.Message) { got = append(got, string(m.Value)) })
	if err != nil || n == 0 {
		t.Fatalf("FetchBatch = %d, %v; want records", n, err)
	}
	if n != len(got) {
		t.Fatalf("FetchBatch returned %d but handed %d records", n, len(got))
	}
	return got
}

func newGroupReader(t *testing.T, brokers []string, group, topic string, commitInterval time.Duration) *stream.GroupReader {
	t.Helper()
	r := stream.NewGroupReader(stream.GroupReaderOptions{Brokers: brokers, GroupID: group, Topics: []string{topic}, CommitInterval: commitInterval})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// newTopic starts a broker with one single-partition topic and a producer.
func newTopic(t *testing.T) ([]string, string, *stream.Producer) {
	t.Helper()
	b := startBroker(t, "")
	brokers := []string{b.Addr()}
	topic := topicName(t, "events")
	ensureTopics(t, brokers, schemas.Topic{Name: topic, Partitions: 1})
	return brokers, topic, newProducer(t, brokers, nil)
}

func TestGroupReader_ResumesAfterTheLastCommitAndRedeliversTheRest(t *testing.T) {
	tests := []struct {
		name           string
		commitInterval time.Duration
	}{
		{"synchronous commits", 0},
		{"interval commits flushed at Close", 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			brokers, topic, p := newTopic(t)
			for i := range 6 {
				publish(t, p, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
			}

			// A new group starts at the first offset; Max ends the batch.
			r1 := newGroupReader(t, brokers, "g", topic, tt.commitInterval)
			var read []kafka.Message
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			n, err := r1.FetchBatch(ctx, stream.Window{Max: 4, Wait: 10 * time.Second}, func(m kafka.Message) { read = append(read, m) })
			if err != nil || n != 4 {
				t.Fatalf("first batch: %d records, %v; want 4", n, err)
			}
			if string(read[0].Value) != "0" || string(read[3].Value) != "3" {
				t.Fatalf("first batch = %q..%q, want 0..3", read[0].Value, read[3].Value)
			}
			// Only the first two are done: the other two were read, not committed.
			if err := r1.Commit(ctx, read[:2]...); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if err := r1.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if got := committedOffsets(t, brokers, "g", topic, 1)[0]; got != 2 {
				t.Fatalf("committed offset after Close = %d, want 2", got)
			}

			r2 := newGroupReader(t, brokers, "g", topic, tt.commitInterval)
			got := fetchBatch(t, r2, stream.Window{Max: 4, Wait: 10 * time.Second})
			if want := []string{"2", "3", "4", "5"}; !slices.Equal(got, want) {
				t.Fatalf("after restart = %v, want %v (redelivered from the commit, nothing skipped)", got, want)
			}
		})
	}
}

func TestGroupReader_GapEndsTheBatchWhenRecordsStopComing(t *testing.T) {
	brokers, topic, p := newTopic(t)
	var msgs []stream.Message
	for i := range 5 {
		msgs = append(msgs, stream.Message{Topic: topic, Key: []byte("k"), Value: []byte(strconv.Itoa(i))})
	}
	publish(t, p, msgs...)

	r := newGroupReader(t, brokers, "g", topic, 0)
	// Max is far above what is there: the batch ends once no record came
	// within the gap, with everything there was.
	got := fetchBatch(t, r, stream.Window{Max: 1000, Gap: time.Second})
	if want := []string{"0", "1", "2", "3", "4"}; !slices.Equal(got, want) {
		t.Fatalf("batch = %v, want %v", got, want)
	}
}

func TestGroupReader_FetchBatchEndsWithCtxAndWithClose(t *testing.T) {
	brokers, topic, _ := newTopic(t)
	r := newGroupReader(t, brokers, "g", topic, 0)
	add := func(kafka.Message) { t.Error("a record handed from an empty topic") }

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if n, err := r.FetchBatch(ctx, stream.Window{Max: 10, Gap: time.Millisecond}, add); n != 0 || err != nil {
		t.Fatalf("ended ctx: FetchBatch = %d, %v; want 0, nil", n, err)
	}

	if err := r.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	n, err := r.FetchBatch(t.Context(), stream.Window{Max: 10, Gap: time.Millisecond}, add)
	if n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("closed reader: FetchBatch = %d, %v; want 0 and io.EOF", n, err)
	}
}

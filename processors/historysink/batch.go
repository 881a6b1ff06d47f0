package historysink

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/segmentio/kafka-go"
)

// minParallelDecode is the batch size under which one goroutine decodes:
// below it, starting more costs more than it saves.
const minParallelDecode = 512

// record is one fetched record awaiting decoding.
type record struct {
	value []byte
	ref   recordRef
	time  time.Time
}

// batch is one insert's worth of events and the offsets it covers. The
// fetch loop appends raw records; decode turns them into rows, split over
// parts (one per decoding goroutine: JSON decoding is most of the sink's
// CPU); insert sends each table once, its columns gathered from the parts.
type batch struct {
	recs   []record
	parts  []*tables
	sent   []bool                // by table index: inserted by an earlier attempt
	first  time.Time             // when its first record was fetched
	last   map[int]kafka.Message // last record per partition: what to commit
	commit []kafka.Message       // reused by commit
}

func newBatch(decoders int) *batch {
	b := &batch{last: map[int]kafka.Message{}}
	for range max(decoders, 1) {
		b.parts = append(b.parts, newTables())
	}
	b.sent = make([]bool, len(b.parts[0].all))
	return b
}

// decoders is how many goroutines decode a batch.
func decoders() int { return min(runtime.GOMAXPROCS(0), 8) }

func (b *batch) events() int { return len(b.recs) }

func (b *batch) add(m kafka.Message) {
	b.recs = append(b.recs, record{value: m.Value, ref: recordRef{m.Topic, m.Partition, m.Offset}, time: m.Time})
	b.last[m.Partition] = m
}

// decode decodes every record into the parts, contiguous slices of recs in
// parallel, and calls unrouted (from any goroutine) for each record that
// went to history_events.
func (b *batch) decode(unrouted func(reason string, r *record)) {
	n := len(b.parts)
	if len(b.recs) < minParallelDecode {
		n = 1
	}
	chunk := (len(b.recs) + n - 1) / n
	var wg sync.WaitGroup
	for i := range n {
		lo, hi := i*chunk, min((i+1)*chunk, len(b.recs))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(t *tables, recs []record) {
			defer wg.Done()
			for j := range recs {
				r := &recs[j]
				if reason := t.addRecord(r.value, r.ref, r.time); reason != "" {
					unrouted(reason, r)
				}
			}
		}(b.parts[i], b.recs[lo:hi])
	}
	wg.Wait()
}

func (b *batch) reset() {
	clear(b.recs) // let the values be collected
	b.recs = b.recs[:0]
	for _, t := range b.parts {
		t.reset()
	}
	clear(b.sent)
	b.first = time.Time{}
	clear(b.last)
	b.commit = b.commit[:0]
}

// insert sends every table that has rows and was not sent by an earlier
// attempt, and reports the rows it inserted per table. It returns the table
// that failed.
func (b *batch) insert(ctx context.Context, conn driver.Conn, inserted func(table string, rows int)) (string, error) {
	for ti := range b.sent {
		if b.sent[ti] {
			continue
		}
		parts := make([]*table, 0, len(b.parts))
		rows := 0
		for _, p := range b.parts {
			if t := p.all[ti]; t.n > 0 {
				parts = append(parts, t)
				rows += t.n
			}
		}
		if rows == 0 {
			continue
		}
		if err := sendTable(ctx, conn, parts, rows); err != nil {
			return parts[0].name, err
		}
		b.sent[ti] = true
		inserted(parts[0].name, rows)
	}
	return "", nil
}

// sendTable inserts the rows of one table, held in parts, as one batch,
// column by column: each column gets every part's values in turn.
func sendTable(ctx context.Context, conn driver.Conn, parts []*table, rows int) error {
	t := parts[0]
	batch, err := conn.PrepareBatch(ctx, t.insert)
	if err != nil {
		return fmt.Errorf("prepare insert into %s: %w", t.name, err)
	}
	for i, c := range t.cols {
		for _, p := range parts {
			if err := p.cols[i].col.send(batch.Column(i)); err != nil {
				_ = batch.Abort()
				return fmt.Errorf("insert into %s, column %s: %w", t.name, c.name, err)
			}
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("insert %d rows into %s: %w", rows, t.name, err)
	}
	return nil
}

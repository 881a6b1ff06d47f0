package availchange

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// StateOptions configures RebuildState.
type StateOptions struct {
	Brokers []string
	// GroupID is the processor's consumer group, whose committed offsets
	// bound the fold. Default "switchback-processors-availability" (as
	// Options.GroupID).
	GroupID string
	Redis   redis.UniversalClient
	// KeyPrefix of the state keys, as Options.KeyPrefix. Default "sb:".
	KeyPrefix string
	// Marker is the key of the views marker (internal/platform/views.Guard.Key):
	// states are written only while it is absent, checked by the write's
	// script. On a Redis Cluster there is no one marker a script could
	// check beside a state key of any slot (Guard.Key is ""): Fence is
	// then read before every chunk of writes instead. One of them is
	// required.
	Marker string
	// Fence reads the views' epoch (*views.Guard): "" while they are lost.
	Fence interface {
		Epoch(ctx context.Context) (string, error)
	}
	Clock  func() time.Time
	Logger *slog.Logger
}

// foldWriteScript writes a rebuilt state only while the views are marked
// lost. KEYS: state, marker (absent on a cluster: checked before). ARGV: state ("" deletes). Once any process
// finished the rebuild and set the marker, the processors resume and move
// the states on; a slower rebuild writing after that would set them back
// (and a change back to an earlier value would go unnotified).
var foldWriteScript = redis.NewScript(`
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if ARGV[1] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`)

// RebuildState rebuilds the processor's diff state in Redis after Redis
// lost it (FLUSHALL, a restart without data): it folds every record of
// TopicAvailability that the consumer group has committed, in partition
// order (one rate's records are on one partition), through the same state
// transition as the processor (step), publishes nothing, and writes each
// rate's resulting state.
//
// Why up to the committed offsets and not to the end of the topic: a
// record past them has not been handled yet; folding it would make its
// change part of the baseline, and the processor, finding its version
// already applied, would never notify it. Why not start empty (a first
// snapshot is a baseline): a change that straddles the loss (before: 5,
// after: 1) would be taken for a baseline and not notified. The processor's
// consumer commits synchronously after every batch, and its fence keeps
// it from committing while the views are lost, so the committed offsets
// are exactly what it handled before the loss.
//
// Run it only while the views are marked lost (internal/platform/views registers it
// OnlyWhenLost): every write is conditional on the marker's absence.
func RebuildState(ctx context.Context, o StateOptions) error {
	if o.Redis == nil || (o.Marker == "" && o.Fence == nil) {
		return fmt.Errorf("availability: RebuildState needs Redis and Marker or Fence")
	}
	if o.GroupID == "" {
		o.GroupID = defaultGroupID
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "sb:"
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Processor{opts: Options{KeyPrefix: o.KeyPrefix}}
	now := o.Clock()
	states := map[string]*stored{}
	var order []string // first-seen order, for deterministic writes
	records, skipped := 0, 0
	err := stream.ReadCommitted(ctx, o.Brokers, schemas.TopicAvailability, o.GroupID, func(m stream.Message) error {
		if len(m.Value) == 0 {
			return nil
		}
		in, ok, _, err := decode(m.Value)
		if err != nil {
			skipped++
			return nil
		}
		if !ok {
			return nil
		}
		records++
		key := p.stateKey(in.sid, in.pid, in.rid)
		st := states[key]
		if st == nil {
			st = &stored{Versions: map[string]int64{}}
			states[key] = st
			order = append(order, key)
		}
		step(st, in, now)
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuild availability states: %w", err)
	}

	const chunk = 1000
	written := 0
	for lo := 0; lo < len(order); lo += chunk {
		keys := order[lo:min(lo+chunk, len(order))]
		if o.Marker == "" {
			// A cluster: the epoch before the chunk. A process that
			// completes the views between this read and the chunk's writes
			// could see a state set back by them (the one window the
			// script closes on one server; docs/decisions.md).
			e, err := o.Fence.Epoch(ctx)
			if err != nil {
				return fmt.Errorf("write rebuilt availability states: %w", err)
			}
			if e != "" {
				o.Logger.Info("availability states: the views were completed by another process; stopping", "written", written)
				return nil
			}
		}
		cmds := make([]*redis.Cmd, len(keys))
		_, err := o.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, k := range keys {
				var val []byte
				if st := states[k]; len(st.Versions) > 0 {
					val = encodeState(make([]byte, 0, 16+16*len(st.Slots)+8*len(st.Coverage)), *st)
				}
				if o.Marker == "" {
					cmds[i] = foldWriteScript.Eval(ctx, pipe, []string{k}, val)
				} else {
					cmds[i] = foldWriteScript.Eval(ctx, pipe, []string{k, o.Marker}, val)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("write rebuilt availability states: %w", err)
		}
		for _, c := range cmds {
			n, err := c.Int()
			if err != nil {
				return fmt.Errorf("write rebuilt availability state: %w", err)
			}
			if n == 0 {
				// The marker is back: another process finished first and
				// the processors run again. Stop writing.
				o.Logger.Info("availability states: the views were completed by another process; stopping", "written", written)
				return nil
			}
			written++
		}
	}
	o.Logger.Info("availability states rebuilt from the processor's committed records", "records", records, "rates", len(order),
		"written", written, "unreadable", skipped)
	return nil
}

package catalogredis

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogwire"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Apply materializes one catalog event into Redis: idempotent and
// order-insensitive (the versioned upsert ignores an event that is not
// newer than the entity's last one). It reports whether the event changed
// the view. An unusable event is ErrInvalidEvent; a Redis failure
// ErrUnavailable (retry).
func (s *Store) Apply(ctx context.Context, env schemas.Envelope) (bool, error) {
	ev, err := catalog.DecodeEvent(env)
	if err != nil {
		return false, err
	}
	return s.applyEvent(ctx, env, &ev)
}

func (s *Store) applyEvent(ctx context.Context, env schemas.Envelope, ev *catalog.Event) (bool, error) {
	c, err := s.applyCall(env, ev)
	if err != nil {
		return false, err
	}
	n, err := c.script.Run(ctx, s.rdb, c.keys, c.args...).Int()
	if err != nil {
		return false, catalog.Unavailable("apply "+string(ev.Kind)+" "+env.Key, err)
	}
	return n == 1, nil
}

// scriptCall is one versioned upsert: the script, its keys and arguments.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// applyCall is the versioned upsert that materializes ev.
func (s *Store) applyCall(env schemas.Envelope, ev *catalog.Event) (scriptCall, error) {
	return applyCallOf(s.k, env, ev)
}

// applyCallOf is the versioned upsert that materializes ev in the view
// whose keys are k (Redis, or a process's copy: memkv.go).
func applyCallOf(k keys, env schemas.Envelope, ev *catalog.Event) (scriptCall, error) {
	v, t := versionArgs(env.Version, env.Time)
	del := "0"
	if env.Deleted {
		del = "1"
	}
	switch ev.Kind {
	case schemas.CatalogKindChannel:
		return scriptCall{applyFieldScript, []string{k.channelVersions(), k.channels()},
			[]any{ev.ChannelID, v, t, del, ev.ChannelID, string(catalogwire.MustJSON(ev.Channel))}}, nil
	case schemas.CatalogKindSupplier:
		sid := ev.SupplierID
		args := []any{v, t, del, sid, "", "", "", "", "", "", ""}
		owner := ev.Owner
		if sup := ev.Supplier; sup != nil {
			owner = sup.Owner
			args = []any{v, t, del, sid, string(catalogwire.MustJSON(sup)), string(catalogwire.RenderV12(sup)), string(catalogwire.RenderV13(sup, false)),
				string(catalogwire.RenderV13(sup, true)), sup.Code, sup.PartnerID, sup.Owner}
		}
		if ev.Supplier == nil {
			args[10] = owner // the tombstone's owner
		}
		return scriptCall{applySupplierScript, []string{k.versions(sid), k.supplier(sid), k.all(), k.owned(owner), k.tombstone(sid)}, args}, nil
	case schemas.CatalogKindProduct:
		val := ""
		if ev.Product != nil {
			val = string(catalogwire.MustJSON(ev.Product))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.products(ev.SupplierID)},
			[]any{verProduct(ev.ProductID), v, t, del, ev.ProductID, val}}, nil
	case schemas.CatalogKindRate:
		val := ""
		if ev.Rate != nil {
			val = string(catalogwire.RenderRate(ev.Rate))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.rates(ev.SupplierID, ev.ProductID)},
			[]any{verRate(ev.ProductID, ev.RateID), v, t, del, ev.RateID, val}}, nil
	case schemas.CatalogKindAvailability:
		val := ""
		if ev.Availability != nil {
			val = string(catalogwire.MustJSON(ev.Availability))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.avail(ev.SupplierID, ev.ProductID)},
			[]any{verAvail(ev.ProductID, ev.RateID), v, t, del, ev.RateID, val}}, nil
	case schemas.CatalogKindPriceSchedule:
		val := ""
		if ev.PriceSchedule != nil {
			val = string(catalogwire.MustJSON(ev.PriceSchedule))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.prices(ev.SupplierID, ev.ProductID)},
			[]any{verPrices(ev.ProductID, ev.RateID), v, t, del, ev.RateID, val}}, nil
	case schemas.CatalogKindBinding:
		sid, pid, cid := ev.SupplierID, ev.ProductID, ev.ChannelID
		val, idxv := "", ""
		if ev.Binding != nil {
			val, idxv = string(catalogwire.MustJSON(ev.Binding)), catalogwire.IndexValue(ev.Binding)
		}
		return scriptCall{applyBindingScript,
			[]string{k.versions(sid), k.bindings(sid, pid), k.supplierChannels(sid), k.chanSupplier(cid, sid), k.chanSuppliers(cid)},
			[]any{verBinding(pid, cid), v, t, del, cid, pid, sid, val, idxv}}, nil
	default:
		return scriptCall{}, fmt.Errorf("event %s: kind %q: %w", env.ID, ev.Kind, catalog.ErrInvalidEvent)
	}
}

// ApplyBatch materializes several events (Apply's rules, each event on
// its own) with one Redis pipeline, in their order. It reports, per event,
// whether it changed the view. An unusable event is ErrInvalidEvent, and
// nothing of the batch is applied then.
func (s *Store) ApplyBatch(ctx context.Context, envs []schemas.Envelope) ([]bool, error) {
	evs := make([]*catalog.Event, len(envs))
	for i, env := range envs {
		ev, err := catalog.DecodeEvent(env)
		if err != nil {
			return nil, err
		}
		evs[i] = &ev
	}
	return s.applyEvents(ctx, envs, evs)
}

// applyEvents applies several events in one pipeline (a write's batch);
// when the pipeline fails as a whole or any script is not loaded yet
// (pipelined EVALSHA does not fall back to EVAL), each event is applied
// on its own instead (the upserts are idempotent). It reports, per event,
// whether it changed the view.
func (s *Store) applyEvents(ctx context.Context, envs []schemas.Envelope, evs []*catalog.Event) ([]bool, error) {
	applied := make([]bool, len(envs))
	if len(envs) == 1 {
		ok, err := s.applyEvent(ctx, envs[0], evs[0])
		applied[0] = ok
		return applied, err
	}
	calls := make([]scriptCall, len(envs))
	for i := range envs {
		c, err := s.applyCall(envs[i], evs[i])
		if err != nil {
			return nil, err
		}
		calls[i] = c
	}
	return s.runCalls(ctx, calls)
}

// runCalls runs versioned upserts in one pipeline, one version hash's
// fields in one call (queueFields); when the pipeline fails as a whole, or
// a script is still not loaded once applyFields was (pipelined EVALSHA
// does not fall back to EVAL), each runs on its own instead (they are
// idempotent).
// It reports, per call, whether it changed the view.
func (s *Store) runCalls(ctx context.Context, calls []scriptCall) ([]bool, error) {
	applied := make([]bool, len(calls))
	if len(calls) == 0 {
		return applied, nil
	}
	for try := 0; try < 2; try++ {
		pipe := s.rdb.Pipeline()
		read := queueFields(ctx, pipe, calls, nil, "")
		cmds, err := pipe.Exec(ctx)
		if err == nil {
			return read(), nil
		}
		if try > 0 || !hasNoScript(cmds) || applyFieldsScript.Load(ctx, s.rdb).Err() != nil {
			break
		}
	}
	var first error
	for i, c := range calls {
		n, err := c.script.Run(ctx, s.rdb, c.keys, c.args...).Int()
		if err != nil && first == nil {
			first = catalog.Unavailable("apply catalog events", err)
		}
		applied[i] = n == 1
	}
	return applied, first
}

// HandleMessage applies one record of schemas.CatalogTopics(); it is a stream.Handler
// for a consumer that only materializes the view. Records of other types
// on the shared availability topic are not the catalog's and are skipped.
// A Kafka tombstone (no value) is skipped: Switchback deletes with
// versioned "deleted" events, never tombstones, so that an older record
// cannot resurrect what was deleted.
func (s *Store) HandleMessage(ctx context.Context, m stream.Message) error {
	env, ok, err := DecodeMessage(m)
	if err != nil || !ok {
		return err
	}
	_, err = s.Apply(ctx, env)
	return err
}

// DecodeMessage reads the envelope of a record of schemas.CatalogTopics(). ok is false
// for a record that is not a catalog event (a tombstone, another stage's
// availability snapshot): skip it.
func DecodeMessage(m stream.Message) (schemas.Envelope, bool, error) {
	var env schemas.Envelope
	if len(m.Value) == 0 {
		return env, false, nil
	}
	if err := json.Unmarshal(m.Value, &env); err != nil {
		return env, false, fmt.Errorf("%s offset %d: %w: %w", m.Topic, m.Offset, catalog.ErrInvalidEvent, err)
	}
	if !strings.HasPrefix(env.Type, "catalog.") {
		if m.Topic == schemas.TopicAvailability {
			return env, false, nil
		}
		return env, false, fmt.Errorf("%s offset %d: type %q: %w", m.Topic, m.Offset, env.Type, catalog.ErrInvalidEvent)
	}
	return env, true, nil
}

// Rebuild applies every record of schemas.CatalogTopics() up to their current end: what
// a process runs at start against a fresh or flushed Redis (the consumer
// group of processors/catalogchange then carries on from its own offsets).
// Unusable records are logged and skipped; Redis failures are retried
// until ctx ends.
func (s *Store) Rebuild(ctx context.Context, brokers []string) error {
	for _, topic := range schemas.CatalogTopics() {
		err := stream.ReadAll(ctx, brokers, topic, stream.Retrying(ctx, s.log, "catalog", catalog.ErrInvalidEvent, s.HandleMessage))
		if err != nil {
			return fmt.Errorf("rebuild catalog: %w", err)
		}
	}
	return nil
}

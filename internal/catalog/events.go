package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// The records of the catalog's topics are schemas.CatalogEvent (schemas
// owns the payload: kinds, topics, types, keys). This file holds what the
// catalog does with them: Event, a payload with its states decoded into
// the catalog's model, the checks an event must pass before it is
// applied (DecodeEvent), and applying it to the view (Apply).

// Event is a catalog event with its states decoded: what a write
// publishes (encoded as schemas.CatalogEvent, MarshalJSON) and what
// DecodeEvent gives the view and the processors. The fields are those of
// schemas.CatalogEvent, which documents them.
type Event struct {
	Kind       schemas.CatalogKind
	SupplierID string
	ProductID  string
	RateID     string
	ChannelID  string

	Channel       *Channel
	Supplier      *Supplier
	Product       *Product
	Rate          *Rate
	Binding       *Binding
	Availability  *AvailabilitySet
	PriceSchedule *PriceSchedule
	PriorPrices   []PriceScheduleEntry
	Batch         string

	Prior         *schemas.CatalogPrior
	PriorBinding  *Binding
	Owner         string
	BoundChannels []string
}

// EntityKey is the Kafka key of the event's entity
// (schemas.CatalogEntityKey).
func (e *Event) EntityKey() string {
	return schemas.CatalogEntityKey(e.Kind, e.SupplierID, e.ProductID, e.RateID, e.ChannelID)
}

// MarshalJSON writes the event as its record, schemas.CatalogEvent: the
// states as the catalog's records, absent when nil (and PriorPrices when
// empty), as the record's omitempty fields say.
func (e Event) MarshalJSON() ([]byte, error) {
	r := schemas.CatalogEvent{Kind: e.Kind, SupplierID: e.SupplierID, ProductID: e.ProductID, RateID: e.RateID,
		ChannelID: e.ChannelID, Batch: e.Batch, Prior: e.Prior, Owner: e.Owner, BoundChannels: e.BoundChannels}
	states := []struct {
		dst  *json.RawMessage
		v    any
		skip bool
	}{
		{&r.Channel, e.Channel, e.Channel == nil},
		{&r.Supplier, e.Supplier, e.Supplier == nil},
		{&r.Product, e.Product, e.Product == nil},
		{&r.Rate, e.Rate, e.Rate == nil},
		{&r.Binding, e.Binding, e.Binding == nil},
		{&r.Availability, e.Availability, e.Availability == nil},
		{&r.PriceSchedule, e.PriceSchedule, e.PriceSchedule == nil},
		{&r.PriorPrices, e.PriorPrices, len(e.PriorPrices) == 0},
		{&r.PriorBinding, e.PriorBinding, e.PriorBinding == nil},
	}
	for _, st := range states {
		if st.skip {
			continue
		}
		b, err := json.Marshal(st.v)
		if err != nil {
			return nil, fmt.Errorf("encode %s event state: %w", e.Kind, err)
		}
		*st.dst = b
	}
	return json.Marshal(&r)
}

// UnmarshalJSON reads a record (schemas.CatalogEvent) and decodes its
// states. It checks nothing beyond the JSON: DecodeEvent does.
func (e *Event) UnmarshalJSON(b []byte) error {
	var r schemas.CatalogEvent
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	*e = Event{Kind: r.Kind, SupplierID: r.SupplierID, ProductID: r.ProductID, RateID: r.RateID, ChannelID: r.ChannelID,
		Batch: r.Batch, Prior: r.Prior, Owner: r.Owner, BoundChannels: r.BoundChannels}
	states := []struct {
		raw json.RawMessage
		dst any
	}{
		{r.Channel, &e.Channel},
		{r.Supplier, &e.Supplier},
		{r.Product, &e.Product},
		{r.Rate, &e.Rate},
		{r.Binding, &e.Binding},
		{r.Availability, &e.Availability},
		{r.PriceSchedule, &e.PriceSchedule},
		{r.PriorPrices, &e.PriorPrices},
		{r.PriorBinding, &e.PriorBinding},
	}
	for _, st := range states {
		if len(st.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(st.raw, st.dst); err != nil {
			return err
		}
	}
	return nil
}

// DecodeEvent reads a catalog envelope and checks that it is usable: a
// known type, a positive version, ids that match the key, and the state
// of an upsert present and consistent with the ids.
func DecodeEvent(env schemas.Envelope) (Event, error) {
	var ev Event
	kind, deleted, err := parseEventType(env)
	if err != nil {
		return ev, err
	}
	if err := json.Unmarshal(env.Data, &ev); err != nil {
		return ev, fmt.Errorf("event %s: %w: %w", env.ID, ErrInvalidEvent, err)
	}
	if ev.Kind != kind || deleted != env.Deleted || ev.EntityKey() != env.Key || env.Key == "" {
		return ev, fmt.Errorf("event %s: kind %q, key %q: %w", env.ID, ev.Kind, env.Key, ErrInvalidEvent)
	}
	if !ev.stateMatches(env.Version, deleted) {
		return ev, fmt.Errorf("event %s: %s state does not match key %q: %w", env.ID, ev.Kind, env.Key, ErrInvalidEvent)
	}
	return ev, nil
}

// parseEventType reads the kind and the operation from the envelope's
// type (schemas.ParseCatalogEventType) and checks its version: the
// envelope alone, before the payload is decoded.
func parseEventType(env schemas.Envelope) (kind schemas.CatalogKind, deleted bool, err error) {
	kind, deleted, ok := schemas.ParseCatalogEventType(env.Type)
	if !ok {
		return "", false, fmt.Errorf("event %s: type %q: %w", env.ID, env.Type, ErrInvalidEvent)
	}
	if env.Version <= 0 {
		return "", false, fmt.Errorf("event %s: version %d: %w", env.ID, env.Version, ErrInvalidEvent)
	}
	return kind, deleted, nil
}

// stateMatches reports whether the event's ids are valid and, for an
// upsert, its state is present, names the same entity and carries the
// envelope's version (a consumer applies the state under the ids, so a
// mismatch would file it under another entity). A channel is never
// deleted by an event.
func (e *Event) stateMatches(version int64, deleted bool) bool {
	switch e.Kind {
	case schemas.CatalogKindChannel:
		return validIDs(e.ChannelID) && !deleted && e.channelMatches(version)
	case schemas.CatalogKindSupplier:
		return validIDs(e.SupplierID) && (deleted || e.supplierMatches(version))
	case schemas.CatalogKindProduct:
		return validIDs(e.SupplierID, e.ProductID) && (deleted || e.productMatches(version))
	case schemas.CatalogKindRate:
		return validIDs(e.SupplierID, e.ProductID, e.RateID) && (deleted || e.rateMatches(version))
	case schemas.CatalogKindBinding:
		return validIDs(e.SupplierID, e.ProductID, e.ChannelID) && (deleted || e.bindingMatches(version))
	case schemas.CatalogKindAvailability:
		return validIDs(e.SupplierID, e.ProductID, e.RateID) && (deleted || e.availabilityMatches(version))
	case schemas.CatalogKindPriceSchedule:
		return validIDs(e.SupplierID, e.ProductID, e.RateID) && (deleted || e.priceScheduleMatches(version))
	}
	return false
}

// validIDs reports whether every id is a valid id (ValidID).
func validIDs(ids ...string) bool {
	for _, id := range ids {
		if !ValidID(id) {
			return false
		}
	}
	return true
}

func (e *Event) channelMatches(version int64) bool {
	c := e.Channel
	return c != nil && c.ID == e.ChannelID && c.Version == version
}

func (e *Event) supplierMatches(version int64) bool {
	s := e.Supplier
	return s != nil && s.ID == e.SupplierID && s.Version == version
}

func (e *Event) productMatches(version int64) bool {
	p := e.Product
	return p != nil && p.ID == e.ProductID && p.SupplierID == e.SupplierID && p.Version == version
}

func (e *Event) rateMatches(version int64) bool {
	r := e.Rate
	return r != nil && r.ID == e.RateID && r.ProductID == e.ProductID && r.SupplierID == e.SupplierID && r.Version == version
}

func (e *Event) bindingMatches(version int64) bool {
	b := e.Binding
	return b != nil && b.SupplierID == e.SupplierID && b.ProductID == e.ProductID && b.ChannelID == e.ChannelID && b.Version == version
}

func (e *Event) availabilityMatches(version int64) bool {
	a := e.Availability
	return a != nil && a.SupplierID == e.SupplierID && a.ProductID == e.ProductID && a.RateID == e.RateID && a.Version == version
}

func (e *Event) priceScheduleMatches(version int64) bool {
	ps := e.PriceSchedule
	return ps != nil && ps.SupplierID == e.SupplierID && ps.ProductID == e.ProductID && ps.RateID == e.RateID && ps.Version == version
}

// Apply materializes one catalog event into Redis: idempotent and
// order-insensitive (the versioned upsert ignores an event that is not
// newer than the entity's last one). It reports whether the event changed
// the view. An unusable event is ErrInvalidEvent; a Redis failure
// ErrUnavailable (retry).
func (s *Store) Apply(ctx context.Context, env schemas.Envelope) (bool, error) {
	ev, err := DecodeEvent(env)
	if err != nil {
		return false, err
	}
	return s.applyEvent(ctx, env, &ev)
}

func (s *Store) applyEvent(ctx context.Context, env schemas.Envelope, ev *Event) (bool, error) {
	c, err := s.applyCall(env, ev)
	if err != nil {
		return false, err
	}
	n, err := c.script.Run(ctx, s.rdb, c.keys, c.args...).Int()
	if err != nil {
		return false, unavailable("apply "+string(ev.Kind)+" "+env.Key, err)
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
func (s *Store) applyCall(env schemas.Envelope, ev *Event) (scriptCall, error) {
	return applyCallOf(s.k, env, ev)
}

// applyCallOf is the versioned upsert that materializes ev in the view
// whose keys are k (Redis, or a process's copy: memkv.go).
func applyCallOf(k keys, env schemas.Envelope, ev *Event) (scriptCall, error) {
	v, t := versionArgs(env.Version, env.Time)
	del := "0"
	if env.Deleted {
		del = "1"
	}
	switch ev.Kind {
	case schemas.CatalogKindChannel:
		return scriptCall{applyFieldScript, []string{k.channelVersions(), k.channels()},
			[]any{ev.ChannelID, v, t, del, ev.ChannelID, string(mustJSON(ev.Channel))}}, nil
	case schemas.CatalogKindSupplier:
		sid := ev.SupplierID
		args := []any{v, t, del, sid, "", "", "", "", "", "", ""}
		owner := ev.Owner
		if sup := ev.Supplier; sup != nil {
			owner = sup.Owner
			args = []any{v, t, del, sid, string(mustJSON(sup)), string(renderV12(sup)), string(renderV13(sup, false)),
				string(renderV13(sup, true)), sup.Code, sup.PartnerID, sup.Owner}
		}
		if ev.Supplier == nil {
			args[10] = owner // the tombstone's owner
		}
		return scriptCall{applySupplierScript, []string{k.versions(sid), k.supplier(sid), k.all(), k.owned(owner), k.tombstone(sid)}, args}, nil
	case schemas.CatalogKindProduct:
		val := ""
		if ev.Product != nil {
			val = string(mustJSON(ev.Product))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.products(ev.SupplierID)},
			[]any{verProduct(ev.ProductID), v, t, del, ev.ProductID, val}}, nil
	case schemas.CatalogKindRate:
		val := ""
		if ev.Rate != nil {
			val = string(renderRate(ev.Rate))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.rates(ev.SupplierID, ev.ProductID)},
			[]any{verRate(ev.ProductID, ev.RateID), v, t, del, ev.RateID, val}}, nil
	case schemas.CatalogKindAvailability:
		val := ""
		if ev.Availability != nil {
			val = string(mustJSON(ev.Availability))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.avail(ev.SupplierID, ev.ProductID)},
			[]any{verAvail(ev.ProductID, ev.RateID), v, t, del, ev.RateID, val}}, nil
	case schemas.CatalogKindPriceSchedule:
		val := ""
		if ev.PriceSchedule != nil {
			val = string(mustJSON(ev.PriceSchedule))
		}
		return scriptCall{applyFieldScript, []string{k.versions(ev.SupplierID), k.prices(ev.SupplierID, ev.ProductID)},
			[]any{verPrices(ev.ProductID, ev.RateID), v, t, del, ev.RateID, val}}, nil
	case schemas.CatalogKindBinding:
		sid, pid, cid := ev.SupplierID, ev.ProductID, ev.ChannelID
		val, idxv := "", ""
		if ev.Binding != nil {
			val, idxv = string(mustJSON(ev.Binding)), indexValue(ev.Binding)
		}
		return scriptCall{applyBindingScript,
			[]string{k.versions(sid), k.bindings(sid, pid), k.supplierChannels(sid), k.chanSupplier(cid, sid), k.chanSuppliers(cid)},
			[]any{verBinding(pid, cid), v, t, del, cid, pid, sid, val, idxv}}, nil
	default:
		return scriptCall{}, fmt.Errorf("event %s: kind %q: %w", env.ID, ev.Kind, ErrInvalidEvent)
	}
}

// ApplyBatch materializes several events (Apply's rules, each event on
// its own) with one Redis pipeline, in their order. It reports, per event,
// whether it changed the view. An unusable event is ErrInvalidEvent, and
// nothing of the batch is applied then.
func (s *Store) ApplyBatch(ctx context.Context, envs []schemas.Envelope) ([]bool, error) {
	evs := make([]*Event, len(envs))
	for i, env := range envs {
		ev, err := DecodeEvent(env)
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
func (s *Store) applyEvents(ctx context.Context, envs []schemas.Envelope, evs []*Event) ([]bool, error) {
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

// runCalls runs versioned upserts in one pipeline; when the pipeline fails
// as a whole or any script is not loaded yet (pipelined EVALSHA does not
// fall back to EVAL), each runs on its own instead (they are idempotent).
// It reports, per call, whether it changed the view.
func (s *Store) runCalls(ctx context.Context, calls []scriptCall) ([]bool, error) {
	applied := make([]bool, len(calls))
	if len(calls) == 0 {
		return applied, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = pipe.EvalSha(ctx, c.script.Hash(), c.keys, c.args...)
	}
	if _, err := pipe.Exec(ctx); err == nil {
		for i, c := range cmds {
			n, _ := c.Int()
			applied[i] = n == 1
		}
		return applied, nil
	}
	var first error
	for i, c := range calls {
		n, err := c.script.Run(ctx, s.rdb, c.keys, c.args...).Int()
		if err != nil && first == nil {
			first = unavailable("apply catalog events", err)
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
		return env, false, fmt.Errorf("%s offset %d: %w: %w", m.Topic, m.Offset, ErrInvalidEvent, err)
	}
	if !strings.HasPrefix(env.Type, "catalog.") {
		if m.Topic == schemas.TopicAvailability {
			return env, false, nil
		}
		return env, false, fmt.Errorf("%s offset %d: type %q: %w", m.Topic, m.Offset, env.Type, ErrInvalidEvent)
	}
	return env, true, nil
}

// Rebuild applies every record of schemas.CatalogTopics() up to their current end: what
// a process runs at start against a fresh or flushed Redis (the consumer
// group of processors/catalog then carries on from its own offsets).
// Unusable records are logged and skipped; Redis failures are retried
// until ctx ends.
func (s *Store) Rebuild(ctx context.Context, brokers []string) error {
	for _, topic := range schemas.CatalogTopics() {
		err := stream.ReadAll(ctx, brokers, topic, func(m stream.Message) error {
			backoff := 50 * time.Millisecond
			for {
				err := s.HandleMessage(ctx, m)
				switch {
				case err == nil:
					return nil
				case errors.Is(err, ErrInvalidEvent):
					s.log.Error("catalog: skipping an unusable record", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
					return nil
				}
				s.log.Warn("catalog: applying a record failed; retrying", "topic", m.Topic, "offset", m.Offset, "err", err)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
			}
		})
		if err != nil {
			return fmt.Errorf("rebuild catalog: %w", err)
		}
	}
	return nil
}

package catalog

import (
	"encoding/json"
	"fmt"

	"github.com/switchbackhq/switchback/schemas"
)

// The records of the catalog's topics are schemas.CatalogEvent (schemas
// owns the payload: kinds, topics, types, keys). This file holds what the
// catalog does with them: Event, a payload with its states decoded into
// the catalog's model, the checks an event must pass before it is
// applied (DecodeEvent). Applying it to the view is the Redis adapter's
// (internal/catalog/catalogredis, Store.Apply).

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

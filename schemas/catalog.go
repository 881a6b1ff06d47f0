package schemas

import (
	"encoding/json"
	"strings"
)

// Catalog events: the records of the catalog's compacted topics
// (TopicChannels, TopicSuppliers, TopicProducts, TopicRates,
// TopicBindings, TopicPrices, and the operator pushes on
// TopicAvailability). internal/catalog writes them and applies them to
// its view; processors/catalogchange and processors/availchange read them.
// The entity states inside are the catalog's records (internal/catalog's
// model: their JSON tags are the wire names), carried here as JSON so
// that this package, under every stage, does not own the catalog's model
// and its validation.

// CatalogKind is the entity a catalog event is about.
type CatalogKind string

// The catalog's entities, each on its compacted topic.
const (
	CatalogKindChannel      CatalogKind = "channel"
	CatalogKindSupplier     CatalogKind = "supplier"
	CatalogKindProduct      CatalogKind = "product"
	CatalogKindRate         CatalogKind = "rate"
	CatalogKindBinding      CatalogKind = "binding"
	CatalogKindAvailability CatalogKind = "availability"
	// CatalogKindPriceSchedule is a rate's price schedule.
	CatalogKindPriceSchedule CatalogKind = "priceschedule"
)

// Topic is the compacted topic of the kind ("" for an unknown kind).
func (k CatalogKind) Topic() string {
	switch k {
	case CatalogKindChannel:
		return TopicChannels
	case CatalogKindSupplier:
		return TopicSuppliers
	case CatalogKindProduct:
		return TopicProducts
	case CatalogKindRate:
		return TopicRates
	case CatalogKindBinding:
		return TopicBindings
	case CatalogKindAvailability:
		return TopicAvailability
	case CatalogKindPriceSchedule:
		return TopicPrices
	}
	return ""
}

// CatalogTopics are the topics the catalog's view is materialized from.
func CatalogTopics() []string {
	return []string{TopicChannels, TopicSuppliers, TopicProducts, TopicRates,
		TopicBindings, TopicAvailability, TopicPrices}
}

// Catalog event types: "catalog.<kind>.upserted" with the full new state,
// or "catalog.<kind>.deleted" (Envelope.Deleted) without it.
const (
	catalogTypePrefix = "catalog."
	catalogUpserted   = "upserted"
	catalogDeleted    = "deleted"
)

// CatalogEventType is the Envelope.Type of an event of the kind.
func CatalogEventType(k CatalogKind, deleted bool) string {
	if deleted {
		return catalogTypePrefix + string(k) + "." + catalogDeleted
	}
	return catalogTypePrefix + string(k) + "." + catalogUpserted
}

// ParseCatalogEventType reads the kind and the operation of a catalog
// event's Envelope.Type; ok is false for a type that is not
// "catalog.<kind>.upserted|deleted". The kind is not checked against the
// known ones: the payload's checks (internal/catalog) do.
func ParseCatalogEventType(typ string) (kind CatalogKind, deleted, ok bool) {
	rest, ok := strings.CutPrefix(typ, catalogTypePrefix)
	if !ok {
		return "", false, false
	}
	k, op, _ := strings.Cut(rest, ".")
	if op != catalogUpserted && op != catalogDeleted {
		return "", false, false
	}
	return CatalogKind(k), op == catalogDeleted, true
}

// CatalogPrior is what an event replaced: its version and fingerprint
// (internal/catalog.Fingerprint). Nil when the entity did not exist.
type CatalogPrior struct {
	Version     int64  `json:"version"`
	Fingerprint string `json:"fingerprint"`
}

// CatalogEvent is Envelope.Data of every catalog event: the ids of the
// entity, its full new state (absent when deleted) and what it replaced.
// Kafka keys (and Envelope.Key) are per entity, see CatalogEntityKey.
// The states are internal/catalog's records as JSON (Channel, Supplier,
// Product, Rate, Binding, AvailabilitySet, PriceSchedule, and
// []PriceScheduleEntry for PriorPrices).
type CatalogEvent struct {
	Kind       CatalogKind `json:"kind"`
	SupplierID string      `json:"supplierId,omitempty"`
	ProductID  string      `json:"productId,omitempty"`
	RateID     string      `json:"rateId,omitempty"`
	ChannelID  string      `json:"channelId,omitempty"`

	Channel      json.RawMessage `json:"channel,omitempty"`
	Supplier     json.RawMessage `json:"supplier,omitempty"`
	Product      json.RawMessage `json:"product,omitempty"`
	Rate         json.RawMessage `json:"rate,omitempty"`
	Binding      json.RawMessage `json:"binding,omitempty"`
	Availability json.RawMessage `json:"availability,omitempty"`
	// PriceSchedule is the new schedule; PriorPrices the entries it
	// replaced (absent when there were none), read under the supplier's
	// lock so that the changed days follow from the event alone.
	PriceSchedule json.RawMessage `json:"priceSchedule,omitempty"`
	PriorPrices   json.RawMessage `json:"priorPrices,omitempty"`
	// Batch names the write a price schedule event is part of, when one
	// write changed the schedules of several rates of a product (a
	// booking system's price-schedule refresh): the notifications of its
	// events are one per product, subscriber and window
	// (processors/catalogchange), not one per rate with identical payloads.
	Batch string `json:"batch,omitempty"`

	// Prior is the replaced supplier, product or rate (nil: created).
	Prior *CatalogPrior `json:"prior,omitempty"`
	// PriorBinding is the replaced binding (absent: created).
	PriorBinding json.RawMessage `json:"priorBinding,omitempty"`
	// Owner of a deleted supplier (its record is gone from the event).
	Owner string `json:"owner,omitempty"`
	// BoundChannels, on a rate created or deleted, are the channels whose
	// binding of the product granted the rate when it was written, read
	// by the writer under the supplier's lock, sorted: the channels whose
	// bound product gained or lost the rate (channelbinding updated, spec
	// doc 1). The processor consumes the rate and binding topics in no
	// guaranteed relative order, so it cannot tell from the view whether a
	// binding existed when the rate was created; the event says. Non-nil
	// (possibly empty, encoded []) on every rate creation and deletion
	// written since this field exists; nil (absent: omitzero) on other
	// events and on older rate events, for which the processor falls back
	// to the bindings of the view.
	BoundChannels []string `json:"boundChannels,omitzero"`
}

// EntityKey is the Kafka key of the event's entity (CatalogEntityKey).
func (e *CatalogEvent) EntityKey() string {
	return CatalogEntityKey(e.Kind, e.SupplierID, e.ProductID, e.RateID, e.ChannelID)
}

// CatalogEntityKey is the Kafka key of a catalog entity: one key per
// entity, because the topics are compacted (a key per supplier would
// compact away all but one product of a supplier). Supplier S; product
// S/P; rate, availability and price schedule S/P/R; binding S/P/C;
// channel C. "" for an unknown kind.
func CatalogEntityKey(k CatalogKind, sid, pid, rid, cid string) string {
	switch k {
	case CatalogKindChannel:
		return cid
	case CatalogKindSupplier:
		return sid
	case CatalogKindProduct:
		return sid + "/" + pid
	case CatalogKindRate, CatalogKindAvailability, CatalogKindPriceSchedule:
		return sid + "/" + pid + "/" + rid
	case CatalogKindBinding:
		return sid + "/" + pid + "/" + cid
	}
	return ""
}

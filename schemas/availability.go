package schemas

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/platform/jsonwire"
)

// Availability of the partner interface v1.2 (spec doc 2, "Availability
// (partner interface)"). The same shapes are the partner client's wire
// format (ingest/partner parses a partner's answer into them), what the
// availability cache stores and serves (internal/availcache,
// query/availapi, query/octo) and the payload of the snapshots on
// TopicAvailability (processors/availchange diffs them).

// Availability is one availability window of a rate.
type Availability struct {
	ID          string    `json:"id"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Capacity    int       `json:"capacity"`
	MaxCapacity *int      `json:"maxCapacity,omitempty"`
}

// AppendMembers appends a's members (id, start, end, capacity,
// maxCapacity) with the bytes encoding/json writes for them, without the
// braces, for hand-written encoders of objects that carry them and more
// (the catalog's stored sets, the single availability answer; each fuzzed
// against encoding/json where it is used). ok is false, and b unusable,
// when a time is one encoding/json refuses.
func (a Availability) AppendMembers(b []byte) (_ []byte, ok bool) {
	b = append(b, `"id":`...)
	b = jsonwire.AppendString(b, a.ID)
	b = append(b, `,"start":`...)
	if b, ok = jsonwire.AppendTime(b, a.Start); !ok {
		return b, false
	}
	b = append(b, `,"end":`...)
	if b, ok = jsonwire.AppendTime(b, a.End); !ok {
		return b, false
	}
	b = append(b, `,"capacity":`...)
	b = strconv.AppendInt(b, int64(a.Capacity), 10)
	if a.MaxCapacity != nil {
		b = append(b, `,"maxCapacity":`...)
		b = strconv.AppendInt(b, int64(*a.MaxCapacity), 10)
	}
	return b, true
}

// AvailabilityList is a list of availabilities.
type AvailabilityList struct {
	Availability []Availability `json:"availability"`
}

// AvailabilityWrapper is the spec's "availability list wrapper": byProduct
// and/or byRate, expires, productId, retrieved.
type AvailabilityWrapper struct {
	ByProduct *AvailabilityList           `json:"byProduct,omitempty"`
	ByRate    map[string]AvailabilityList `json:"byRate,omitempty"`
	Expires   time.Time                   `json:"expires"`
	ProductID string                      `json:"productId"`
	Retrieved time.Time                   `json:"retrieved"`
}

// ForRate returns the availabilities of one rate: byRate[rateID] when the
// partner aggregated by rate. A partner that answered only byProduct for a
// request with rate_id answered for that rate (ok is true); without
// byRate and without rate_id the rate is unknown (ok false).
func (l AvailabilityWrapper) ForRate(rateID string, askedForRate bool) ([]Availability, bool) {
	if l.ByRate != nil {
		al, ok := l.ByRate[rateID]
		if !ok {
			return []Availability{}, true // the partner has nothing for it
		}
		return al.Availability, true
	}
	if l.ByProduct != nil && askedForRate {
		return l.ByProduct.Availability, true
	}
	return nil, false
}

// SnapshotEventType is the Envelope.Type of an availability snapshot read
// from a partner: what a stale read fetched, published on
// TopicAvailability next to the catalog's own "catalog.availability.*"
// events (which the catalog materializer keeps; it skips this type).
// processors/availchange diffs both.
const SnapshotEventType = "availability.snapshot"

// SnapshotSource is Envelope.Source of snapshots. It names the partner
// client, whose answers they are; the value predates the cache's move to
// internal/availcache and is kept so that every stored snapshot has one
// source.
const SnapshotSource = "ingest/partner"

// Snapshot is Envelope.Data of a snapshot: every availability of one rate
// that overlaps the asked window [Start, End), as the partner answered at
// Retrieved. A window of the rate inside [Start, End) that is absent is
// gone (sold out or closed).
type Snapshot struct {
	SupplierID     string         `json:"supplierId"`
	ProductID      string         `json:"productId"`
	RateID         string         `json:"rateId"`
	Start          time.Time      `json:"start"`
	End            time.Time      `json:"end"`
	Retrieved      time.Time      `json:"retrieved"`
	Expires        time.Time      `json:"expires"`
	Availabilities []Availability `json:"availabilities"`
}

// SnapshotKey is the Kafka key of a rate's snapshots: "partner/S/P/R".
// One key per rate keeps a rate's snapshots on one partition, in order;
// it differs from the catalog's availability key S/P/R so that compaction
// never drops an operator push for a partner read (or the reverse).
func SnapshotKey(sid, pid, rid string) string { return "partner/" + sid + "/" + pid + "/" + rid }

// snapshotNamespace is the UUIDv5 namespace of snapshot event ids.
var snapshotNamespace = uuid.MustParse("6f1d1c9e-3a57-4b0e-9d1e-0c5a7f0b2e61")

// NewSnapshotEvent is the envelope of a snapshot, keyed by SnapshotKey, for
// TopicAvailability. The event id is derived from the rate, the window and
// the partner's retrieved time, so the same answer published twice (two
// processes that raced past the lock) is one event for consumers that
// deduplicate; Version is the retrieved time (ns).
func NewSnapshotEvent(s Snapshot, now time.Time) (Envelope, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode snapshot: %w", err)
	}
	key := SnapshotKey(s.SupplierID, s.ProductID, s.RateID)
	id := uuid.NewSHA1(snapshotNamespace, fmt.Appendf(nil, "%s\x00%d\x00%d\x00%d", key, s.Start.Unix(), s.End.Unix(), s.Retrieved.UnixNano()))
	return Envelope{ID: id.String(), Type: SnapshotEventType, Key: key, Version: s.Retrieved.UnixNano(),
		Time: now.UTC(), Source: SnapshotSource, Data: data}, nil
}

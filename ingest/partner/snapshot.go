package partner

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// SnapshotEventType is the Envelope.Type of an availability snapshot read
// from a partner: what a stale read fetched, published on
// schemas.TopicAvailability next to the catalog's own
// "catalog.availability.*" events (which the catalog materializer keeps;
// it skips this type). processors/availability diffs both.
const SnapshotEventType = "availability.snapshot"

// SnapshotSource is Envelope.Source of snapshots.
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

// SnapshotMessage encodes a snapshot as a record of TopicAvailability. The
// event id is derived from the rate, the window and the partner's
// retrieved time, so the same answer published twice (two processes that
// raced past the lock) is one event for consumers that deduplicate.
func SnapshotMessage(s Snapshot, now time.Time) (stream.Message, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode snapshot: %w", err)
	}
	key := SnapshotKey(s.SupplierID, s.ProductID, s.RateID)
	id := uuid.NewSHA1(snapshotNamespace, fmt.Appendf(nil, "%s\x00%d\x00%d\x00%d", key, s.Start.Unix(), s.End.Unix(), s.Retrieved.UnixNano()))
	env := schemas.Envelope{ID: id.String(), Type: SnapshotEventType, Key: key, Version: s.Retrieved.UnixNano(),
		Time: now.UTC(), Source: SnapshotSource, Data: data}
	b, err := json.Marshal(env)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode snapshot envelope: %w", err)
	}
	return stream.Message{Topic: schemas.TopicAvailability, Key: []byte(key), Value: b, Time: env.Time}, nil
}

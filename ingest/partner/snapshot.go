package partner

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchbackhq/switchback/internal/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// SnapshotMessage encodes a snapshot (schemas.NewSnapshotEvent) as a
// record of TopicAvailability.
func SnapshotMessage(s schemas.Snapshot, now time.Time) (stream.Message, error) {
	env, err := schemas.NewSnapshotEvent(s, now)
	if err != nil {
		return stream.Message{}, err
	}
	b, err := json.Marshal(env)
	if err != nil {
		return stream.Message{}, fmt.Errorf("encode snapshot envelope: %w", err)
	}
	return stream.Message{Topic: schemas.TopicAvailability, Key: []byte(env.Key), Value: b, Time: env.Time}, nil
}

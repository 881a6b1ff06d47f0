package schemas

import (
	"encoding/json"
	"time"
)

// Envelope wraps every event Switchback writes to Kafka. ID is unique per
// event and is what consumers deduplicate on (the history sink stores it as
// the row key); Version orders successive states of one entity so that a
// redelivered older state never overwrites a newer one.
type Envelope struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Key     string          `json:"key"`
	Version int64           `json:"version,omitempty"`
	Time    time.Time       `json:"time"`
	Source  string          `json:"source,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

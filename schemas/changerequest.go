package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Change requests (spec doc 3, "Operator channel management and change
// notifications"): an operator's request to refresh a product, and each of
// its status changes, as records of TopicChangeRequest keyed by the request
// id (one partition: the topic is the requests' queue, first in, first
// out). internal/changerequest publishes them and applies them to its Redis
// view (which stores the same ChangeRequest JSON); ingest/changerequest's
// worker takes the requested ones in order.
const (
	// ChangeRequestRequested: a new request (status WAITING). Data is a
	// ChangeRequest.
	ChangeRequestRequested = "changerequest.requested"
	// ChangeRequestStatusChanged: a status change of a request, with the
	// whole request. Data is a ChangeRequest.
	ChangeRequestStatusChanged = "changerequest.status"
)

// ErrInvalidChangeRequest: a TopicChangeRequest record that is not a change
// request (unreadable, another type, or without its id or version).
var ErrInvalidChangeRequest = errors.New("invalid change request record")

// ChangeRequestCreate is what the operator asked (spec doc 3:
// createRequest).
type ChangeRequestCreate struct {
	SupplierID string `json:"supplierId"`
	ProductID  string `json:"productId"`
}

// ChangeRequest is a change request with every field: the API's change
// notification (spec doc 3), the window it covers and its errors, then the
// operator principal that asked (Owner, its scope) and the version that
// orders the records of one request (newer wins). StartDate (inclusive)
// and EndDate (exclusive) are YYYY-MM-DD.
type ChangeRequest struct {
	ID              string              `json:"id"`
	CreateRequest   ChangeRequestCreate `json:"createRequest"`
	Inserted        time.Time           `json:"inserted"`
	BeganWorking    *time.Time          `json:"beganWorking"`
	FinishedWorking *time.Time          `json:"finishedWorking"`
	Mode            string              `json:"mode"`
	Status          string              `json:"status"`
	StartDate       string              `json:"startDate"`
	EndDate         string              `json:"endDate"`
	Errors          []string            `json:"errors,omitempty"`
	Owner           string              `json:"owner"`
	Version         int64               `json:"version"`
}

// Validate reports a record no reader can order or find: no id, or no
// positive version.
func (r ChangeRequest) Validate() error {
	if r.ID == "" || r.Version <= 0 {
		return fmt.Errorf("%w %q: an id and a positive version are required", ErrInvalidChangeRequest, r.ID)
	}
	return nil
}

// NewChangeRequestEvent is r as the envelope of its TopicChangeRequest
// record: a new UUID as its id, typ (ChangeRequestRequested or
// ChangeRequestStatusChanged), keyed by the request id, r.Version as its
// version, at (when it was recorded) in UTC, the producer's source, and r
// as Data. Publish it keyed by Key.
func NewChangeRequestEvent(typ string, r ChangeRequest, at time.Time, source string) (Envelope, error) {
	if typ != ChangeRequestRequested && typ != ChangeRequestStatusChanged {
		return Envelope{}, fmt.Errorf("%w: type %q", ErrInvalidChangeRequest, typ)
	}
	if err := r.Validate(); err != nil {
		return Envelope{}, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode change request %s: %w", r.ID, err)
	}
	return Envelope{ID: uuid.NewString(), Type: typ, Key: r.ID, Version: r.Version, Time: at.UTC(), Source: source, Data: data}, nil
}

// DecodeChangeRequest reads a TopicChangeRequest record (what
// NewChangeRequestEvent made) and returns the request and the record's
// type. The type is returned whenever the envelope was read, also with an
// error; anything that is not a change request is ErrInvalidChangeRequest.
func DecodeChangeRequest(value []byte) (ChangeRequest, string, error) {
	var env Envelope
	if err := json.Unmarshal(value, &env); err != nil {
		return ChangeRequest{}, "", fmt.Errorf("%w: %w", ErrInvalidChangeRequest, err)
	}
	if env.Type != ChangeRequestRequested && env.Type != ChangeRequestStatusChanged {
		return ChangeRequest{}, env.Type, fmt.Errorf("%w: unknown type %q", ErrInvalidChangeRequest, env.Type)
	}
	var r ChangeRequest
	if err := json.Unmarshal(env.Data, &r); err != nil {
		return ChangeRequest{}, env.Type, fmt.Errorf("%w: %w", ErrInvalidChangeRequest, err)
	}
	if err := r.Validate(); err != nil {
		return ChangeRequest{}, env.Type, err
	}
	return r, env.Type, nil
}

package principals

import (
	"errors"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound: no principal with that id.
	ErrNotFound error = domainerr.New("NOT_FOUND", "principal not found")
	// ErrInvalid: the request breaks a rule; a *FieldError names the field.
	ErrInvalid error = domainerr.New("INVALID_FIELD", "invalid principal")
	// ErrUnavailable: the principals topic could not be written, so nothing
	// changed (Kafka first: no local-only change is ever made).
	ErrUnavailable error = domainerr.New("UNAVAILABLE", "principal log unavailable")
	// ErrInvalidEvent: Apply was given a record it cannot use. It is not an
	// API error: the follower dead-letters such a record.
	ErrInvalidEvent = errors.New("invalid principal event")
)

// FieldError is an ErrInvalid that names the offending field, with the
// field spelled as in the API body (channelId, not ChannelID).
type FieldError = domainerr.FieldError

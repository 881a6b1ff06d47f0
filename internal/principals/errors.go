package principals

import "errors"

// codedError is a sentinel that carries one of the API's error codes
// (query/apierror lists them). This package does not import query/ (the
// dependency points the other way); it only names the kind of failure, and
// query/apierror alone decides the HTTP status of each code.
type codedError struct{ code, msg string }

func (e *codedError) Error() string     { return e.msg }
func (e *codedError) ErrorCode() string { return e.code }

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound: no principal with that id.
	ErrNotFound error = &codedError{"NOT_FOUND", "principal not found"}
	// ErrInvalid: the request breaks a rule; a *FieldError names the field.
	ErrInvalid error = &codedError{"INVALID_FIELD", "invalid principal"}
	// ErrUnavailable: the principals topic could not be written, so nothing
	// changed (Kafka first: no local-only change is ever made).
	ErrUnavailable error = &codedError{"UNAVAILABLE", "principal log unavailable"}
	// ErrInvalidEvent: Apply was given a record it cannot use. It is not an
	// API error: the follower dead-letters such a record.
	ErrInvalidEvent = errors.New("invalid principal event")
)

// FieldError is an ErrInvalid that names the offending field, with the
// field spelled as in the API body (channelId, not ChannelID).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string        { return e.Field + " " + e.Reason }
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }
func (e *FieldError) ErrorCode() string    { return "INVALID_FIELD" }
func (e *FieldError) ErrorField() string   { return e.Field }

package registry

import "errors"

// codedError is a sentinel that carries one of the API's error codes
// (query/apierror lists them). This package does not import query/ (the
// dependency points the other way); it names the kind of failure, and
// query/apierror alone decides the HTTP status of each code.
type codedError struct{ code, msg string }

func (e *codedError) Error() string     { return e.msg }
func (e *codedError) ErrorCode() string { return e.code }

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound: the subscriber has no rule of that type with that id
	// (spec doc 1, "Errors": 404 rule not found).
	ErrNotFound error = &codedError{"NOT_FOUND", "rule not found"}
	// ErrConflict: the subscriber already has a rule of that type (spec doc
	// 1, Behaviour rule 2: a second rule of a type is 409).
	ErrConflict error = &codedError{"CONFLICT", "a rule of this type already exists"}
	// ErrInvalid: the request breaks a rule; a *FieldError names the field.
	ErrInvalid error = &codedError{"INVALID_FIELD", "invalid rule"}
	// ErrUnavailable: Kafka or Redis could not be reached, so nothing was
	// changed (or, for a read, nothing could be read).
	ErrUnavailable error = &codedError{"UNAVAILABLE", "registry storage unavailable"}
	// ErrInvalidEvent: Apply was given a record it cannot use. It is not an
	// API error: a follower skips (dead-letters) such a record.
	ErrInvalidEvent = errors.New("invalid registry event")
)

// FieldError is an ErrInvalid that names the offending field, spelled as
// in the API body, with dots for nesting (config.maxLookAheadDays).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string        { return e.Field + " " + e.Reason }
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }
func (e *FieldError) ErrorCode() string    { return "INVALID_FIELD" }
func (e *FieldError) ErrorField() string   { return e.Field }

func invalid(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

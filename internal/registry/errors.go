package registry

import (
	"errors"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound: the subscriber has no rule of that type with that id
	// (spec doc 1, "Errors": 404 rule not found).
	ErrNotFound error = domainerr.New("NOT_FOUND", "rule not found")
	// ErrConflict: the subscriber already has a rule of that type (spec doc
	// 1, Behaviour rule 2: a second rule of a type is 409).
	ErrConflict error = domainerr.New("CONFLICT", "a rule of this type already exists")
	// ErrInvalid: the request breaks a rule; a *FieldError names the field.
	ErrInvalid error = domainerr.New("INVALID_FIELD", "invalid rule")
	// ErrUnavailable: Kafka or Redis could not be reached, so nothing was
	// changed (or, for a read, nothing could be read).
	ErrUnavailable error = domainerr.New("UNAVAILABLE", "registry storage unavailable")
	// ErrInvalidEvent: Apply was given a record it cannot use. It is not an
	// API error: a follower skips (dead-letters) such a record.
	ErrInvalidEvent = errors.New("invalid registry event")
)

// FieldError is an ErrInvalid that names the offending field, spelled as
// in the API body, with dots for nesting (config.maxLookAheadDays).
type FieldError = domainerr.FieldError

func invalid(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

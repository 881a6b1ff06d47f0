package catalog

import (
	"errors"
	"fmt"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound: no such supplier, product, rate, channel or binding, or
	// one the caller may not see (never a leak of existence).
	ErrNotFound = domainerr.New("NOT_FOUND", "not found")
	// ErrConflict: it already exists (POST of an existing binding or id),
	// it is still in use (delete of a bound product), or the version given
	// is not the current one.
	ErrConflict = domainerr.New("CONFLICT", "conflict")
	// ErrInvalid: the request breaks a rule; a *FieldError names the field.
	ErrInvalid = domainerr.New("INVALID_FIELD", "invalid request")
	// ErrForbidden: the principal's role has no catalog scope.
	ErrForbidden = domainerr.New("FORBIDDEN", "not allowed for this principal")
	// ErrUnavailable: Kafka or Redis could not be reached, or another
	// change of the same supplier holds the lock too long; nothing changed.
	ErrUnavailable = domainerr.New("UNAVAILABLE", "catalog storage unavailable")
	// ErrInvalidEvent: Apply was given a record it cannot use. Not an API
	// error: consumers dead-letter or skip such a record.
	ErrInvalidEvent = errors.New("invalid catalog event")
)

// FieldError is an ErrInvalid that names the offending field, spelled as
// in the API body with dots and indexes (products[2].hours[0].timezone).
type FieldError = domainerr.FieldError

// Invalid is a FieldError: field breaks a rule, said by reason.
func Invalid(field, reason string) error { return domainerr.Field(field, reason) }

// Invalidf is Invalid with a formatted reason.
func Invalidf(field, format string, args ...any) error {
	return domainerr.Field(field, fmt.Sprintf(format, args...))
}

// NotFound wraps ErrNotFound with what was looked for (the id is the
// caller's own input, so naming it leaks nothing).
func NotFound(what, id string) error { return fmt.Errorf("%s %s: %w", what, id, ErrNotFound) }

// Conflict wraps ErrConflict with what conflicts.
func Conflict(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrConflict)...)
}

// Unavailable wraps ErrUnavailable and the storage error that caused it.
func Unavailable(what string, err error) error {
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
}

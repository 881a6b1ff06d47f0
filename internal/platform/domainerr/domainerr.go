// Package domainerr gives domain packages (principals, registry, catalog…)
// errors that carry one of the API's error codes without importing query/:
// the dependency points from query/ to the domain, and query/apierror alone
// decides the HTTP status of each code. It holds no codes' meanings itself.
package domainerr

// CodeInvalidField is the code of a request that breaks a validation rule.
const CodeInvalidField = "INVALID_FIELD"

// Coded is a sentinel error with an API error code; compare with errors.Is.
type Coded struct{ code, msg string }

// New returns a sentinel with code (one of query/apierror's codes) and a
// message safe to show to API callers.
func New(code, msg string) error { return &Coded{code: code, msg: msg} }

func (e *Coded) Error() string     { return e.msg }
func (e *Coded) ErrorCode() string { return e.code }

// Notice is a Coded error whose message is shown as it is even where the
// API otherwise replaces messages by a generic one (UNAVAILABLE,
// INTERNAL: their causes may name dependencies): it tells the caller why
// and what would get the request through, and holds nothing else.
type Notice struct{ Coded }

// NewNotice returns a *Notice.
func NewNotice(code, msg string) error { return &Notice{Coded{code: code, msg: msg}} }

// Notice is the message to show.
func (e *Notice) Notice() string { return e.msg }

// FieldError is an invalid request that names the offending field, spelled
// as in the API body, with dots for nesting (config.maxLookAheadDays).
// errors.Is matches it against any INVALID_FIELD sentinel, so each package
// can keep its own ErrInvalid.
type FieldError struct {
	Field  string
	Reason string
}

// Field returns a *FieldError.
func Field(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

func (e *FieldError) Error() string      { return e.Field + " " + e.Reason }
func (e *FieldError) ErrorCode() string  { return CodeInvalidField }
func (e *FieldError) ErrorField() string { return e.Field }

// Is reports whether target is an INVALID_FIELD sentinel.
func (e *FieldError) Is(target error) bool {
	c, ok := target.(*Coded)
	return ok && c.code == CodeInvalidField
}

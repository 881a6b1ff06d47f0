// Package apierror owns the error object every Switchback API answers with
// (spec doc 2, "Error object"; ARCHITECTURE.md: "Error body everywhere"):
//
//	{"code": "NOT_FOUND", "message": "principal x: principal not found",
//	 "data": {"field": "channelId"}, "meta": {"reqId": "..."}}
//
// data is a map of string to string and is omitted when empty. meta.reqId
// mirrors the X-Request-ID response header; it is in error bodies too (the
// spec puts meta.reqId on its success bodies, and a client reporting an
// error needs it most), so every JSON body of the query tier carries it.
//
// It is also the ONE place where an error becomes an HTTP status: a handler
// returns an error, and From maps it. The spec leaves the list of codes
// open ("Allowed error code values: not shown"); ours is fixed, and each
// code has exactly one status:
//
//	BAD_REQUEST            400  the request is wrong in a way no field names (bad query, bad header)
//	INVALID_FIELD          400  a field is missing or invalid; data.field names it
//	MALFORMED_JSON         400  the body is not JSON or not the expected shape; data.offset when known
//	UNAUTHORIZED           401  credentials missing, wrong, unknown or revoked (never says which)
//	FORBIDDEN              403  authenticated, but the role or scope does not allow it
//	NOT_FOUND              404  no such route or entity
//	METHOD_NOT_ALLOWED     405  route exists, method does not (Allow header lists the methods)
//	REQUEST_TIMEOUT        408  the request was not received in time
//	CONFLICT               409  already exists (e.g. a second rule of a type, spec doc 1)
//	PAYLOAD_TOO_LARGE      413  body over SWITCHBACK_MAX_BODY_BYTES
//	RATE_LIMITED           429  too many requests
//	HEADERS_TOO_LARGE      431  request headers over the server's buffer
//	INTERNAL               500  a bug or unexpected failure; the message is generic, the cause is logged
//	UNAVAILABLE            503  a dependency (Kafka, Redis, partner) is down or overloaded
//
// Domain packages do not import this package (the dependency points from
// query/ to them). Their errors take part by having an ErrorCode() string
// method returning one of the codes above, and optionally ErrorField()
// string; see internal/principals for the pattern. Anything else is
// INTERNAL.
package apierror

import (
	"errors"
	"net/http"
)

// Code is one of the fixed list of error codes.
type Code string

// The fixed list; keep Codes and the package comment in step.
const (
	BadRequest       Code = "BAD_REQUEST"
	InvalidField     Code = "INVALID_FIELD"
	MalformedJSON    Code = "MALFORMED_JSON"
	Unauthorized     Code = "UNAUTHORIZED"
	Forbidden        Code = "FORBIDDEN"
	NotFound         Code = "NOT_FOUND"
	MethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	RequestTimeout   Code = "REQUEST_TIMEOUT"
	Conflict         Code = "CONFLICT"
	PayloadTooLarge  Code = "PAYLOAD_TOO_LARGE"
	RateLimited      Code = "RATE_LIMITED"
	HeadersTooLarge  Code = "HEADERS_TOO_LARGE"
	Internal         Code = "INTERNAL"
	Unavailable      Code = "UNAVAILABLE"
)

// statuses is the one code -> status table.
var statuses = map[Code]int{
	BadRequest:       http.StatusBadRequest,
	InvalidField:     http.StatusBadRequest,
	MalformedJSON:    http.StatusBadRequest,
	Unauthorized:     http.StatusUnauthorized,
	Forbidden:        http.StatusForbidden,
	NotFound:         http.StatusNotFound,
	MethodNotAllowed: http.StatusMethodNotAllowed,
	RequestTimeout:   http.StatusRequestTimeout,
	Conflict:         http.StatusConflict,
	PayloadTooLarge:  http.StatusRequestEntityTooLarge,
	RateLimited:      http.StatusTooManyRequests,
	HeadersTooLarge:  http.StatusRequestHeaderFieldsTooLarge,
	Internal:         http.StatusInternalServerError,
	Unavailable:      http.StatusServiceUnavailable,
}

// Codes returns the fixed list, in status order.
func Codes() []Code {
	return []Code{BadRequest, InvalidField, MalformedJSON, Unauthorized, Forbidden, NotFound,
		MethodNotAllowed, RequestTimeout, Conflict, PayloadTooLarge, RateLimited, HeadersTooLarge,
		Internal, Unavailable}
}

// Status is the HTTP status of the code; an unknown code is a bug and 500.
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Valid reports whether c is in the fixed list.
func (c Code) Valid() bool { _, ok := statuses[c]; return ok }

// Error is an API error: what the client sees (Code, Message, Data) and,
// for the log only, the Cause.
type Error struct {
	Code    Code
	Message string
	Data    map[string]string
	// Cause is the error this one was made from; logged, never sent.
	Cause error
}

// Status is the HTTP status of e.Code.
func (e *Error) Status() int { return e.Code.Status() }

// Error is the client-facing message, so that wrapping a sentinel with
// fmt.Errorf("rule %s: %w", id, ErrNotFound) reads well as a message.
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Unwrap returns the cause, so errors.Is sees through to domain sentinels.
func (e *Error) Unwrap() error { return e.Cause }

// ErrorCode lets an *Error be classified like any coded domain error.
func (e *Error) ErrorCode() string { return string(e.Code) }

// Is makes every *Error of a code match the sentinel of that code:
// errors.Is(apierror.Invalid("x", "bad"), apierror.ErrInvalid) is true.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.sentinel() && t.Code == e.Code
}

func (e *Error) sentinel() bool {
	switch e {
	case ErrNotFound, ErrConflict, ErrInvalid, ErrForbidden, ErrUnavailable, ErrUnauthorized, ErrRateLimited, ErrBadRequest:
		return true
	}
	return false
}

// Sentinels for handlers; wrap them with fmt.Errorf("...: %w", ErrX) to add
// context, or use New/Invalid for a message of your own. Compare with
// errors.Is. Never modify them.
var (
	ErrBadRequest   = &Error{Code: BadRequest, Message: "bad request"}
	ErrInvalid      = &Error{Code: InvalidField, Message: "invalid field"}
	ErrUnauthorized = &Error{Code: Unauthorized, Message: "missing or invalid credentials"}
	ErrForbidden    = &Error{Code: Forbidden, Message: "not allowed for this principal"}
	ErrNotFound     = &Error{Code: NotFound, Message: "not found"}
	ErrConflict     = &Error{Code: Conflict, Message: "already exists"}
	ErrRateLimited  = &Error{Code: RateLimited, Message: "too many requests"}
	ErrUnavailable  = &Error{Code: Unavailable, Message: "service temporarily unavailable"}
)

// New returns an error with a code and a client-facing message.
func New(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// Invalid returns an INVALID_FIELD error naming the field (spelled as on
// the wire) in data.field.
func Invalid(field, reason string) *Error {
	return &Error{Code: InvalidField, Message: field + " " + reason, Data: map[string]string{"field": field}}
}

// Generic messages of server-side failures: the client learns that it
// failed and the request id to report, not our internals.
const (
	messageInternal    = "internal error"
	messageUnavailable = "service temporarily unavailable"
)

type coded interface{ ErrorCode() string }
type fielded interface{ ErrorField() string }

// From maps any error to the API error the client gets. It is the one place
// errors become statuses:
//   - an *Error anywhere in the chain is used as is (with the wrapping
//     text as its message when it was wrapped);
//   - an error with an ErrorCode() from the fixed list gets that code, its
//     full text as message and data.field from ErrorField();
//   - anything else is INTERNAL with a generic message.
//
// 5xx errors never carry the cause's text to the client; Cause keeps it
// for the log.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	if ae, ok := err.(*Error); ok && !ae.sentinel() && ae.Code.Valid() {
		return ae
	}
	var out *Error
	var ae *Error
	var c coded
	switch {
	case errors.As(err, &c) && Code(c.ErrorCode()).Valid():
		out = &Error{Code: Code(c.ErrorCode()), Message: err.Error(), Cause: err}
		if errors.As(err, &ae) && len(ae.Data) > 0 {
			out.Data = ae.Data
		}
		var f fielded
		if errors.As(err, &f) && f.ErrorField() != "" {
			out.Data = map[string]string{"field": f.ErrorField()}
		}
	default:
		out = &Error{Code: Internal, Cause: err}
	}
	var notice interface{ Notice() string }
	switch {
	case (out.Code == Internal || out.Code == Unavailable) && errors.As(err, &notice):
		// A message meant for the caller (domainerr.Notice).
		out.Message, out.Data = notice.Notice(), nil
	case out.Code == Internal:
		out.Message, out.Data = messageInternal, nil
	case out.Code == Unavailable:
		out.Message, out.Data = messageUnavailable, nil
	}
	return out
}

// Body is the wire form of the error object.
type Body struct {
	Code    Code              `json:"code"`
	Message string            `json:"message"`
	Data    map[string]string `json:"data,omitempty"`
	Meta    Meta              `json:"meta"`
}

// Meta is the meta object of every JSON body of the query tier.
type Meta struct {
	ReqID string `json:"reqId"`
}

// Body returns the wire form of e for the request with that id.
func (e *Error) Body(reqID string) Body {
	return Body{Code: e.Code, Message: e.Message, Data: e.Data, Meta: Meta{ReqID: reqID}}
}

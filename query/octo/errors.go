package octo

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// OCTO's error names (src/openapi.yaml, the Error* schemas; the list every
// OCTO supplier documents).
const (
	ErrNameInvalidProductID      = "INVALID_PRODUCT_ID"
	ErrNameInvalidOptionID       = "INVALID_OPTION_ID"
	ErrNameInvalidUnitID         = "INVALID_UNIT_ID"
	ErrNameInvalidAvailabilityID = "INVALID_AVAILABILITY_ID"
	ErrNameInvalidBookingUUID    = "INVALID_BOOKING_UUID"
	ErrNameBadRequest            = "BAD_REQUEST"
	ErrNameUnprocessableEntity   = "UNPROCESSABLE_ENTITY"
	ErrNameInternalServerError   = "INTERNAL_SERVER_ERROR"
	ErrNameUnauthorized          = "UNAUTHORIZED"
	ErrNameForbidden             = "FORBIDDEN"
)

// ErrorStatus is the HTTP status of every OCTO error: src/openapi.yaml
// lists, for every operation, 200 and 400 only, with every error schema
// (UNAUTHORIZED, FORBIDDEN and INTERNAL_SERVER_ERROR included) under 400,
// and OCTO's documentation says it answers every request with 200 OK or
// 400 Bad Request. docs/decisions.md, "Selling through OCTO", says why we
// keep to it.
const ErrorStatus = http.StatusBadRequest

// Error is an OCTO error: its name, the errorMessage (safe to show), and
// for the INVALID_* errors the field OCTO adds (productId, optionId,
// unitId, availabilityId, uuid) with the value that was sent. Cause is
// for the log only.
type Error struct {
	Name    string
	Message string
	Field   string
	Value   string
	Cause   error
}

// Error is the message and, for the log, the cause.
func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// ErrorCode classifies the error for the shared middleware
// (query/apierror): it logs the causes of INTERNAL_SERVER_ERROR like
// every 5xx of our own APIs, and counts the rest as client errors.
func (e *Error) ErrorCode() string {
	switch e.Name {
	case ErrNameInternalServerError:
		return string(apierror.Unavailable)
	case ErrNameUnauthorized:
		return string(apierror.Unauthorized)
	case ErrNameForbidden:
		return string(apierror.Forbidden)
	}
	return string(apierror.BadRequest)
}

func newError(name, msg string) *Error { return &Error{Name: name, Message: msg} }

func invalidID(name, field, value, msg string) *Error {
	return &Error{Name: name, Message: msg, Field: field, Value: value}
}

func badRequest(msg string) *Error    { return newError(ErrNameBadRequest, msg) }
func unprocessable(msg string) *Error { return newError(ErrNameUnprocessableEntity, msg) }

func invalidProduct(id string) *Error {
	return invalidID(ErrNameInvalidProductID, "productId", id, "The productId was missing or invalid")
}

func invalidOption(id string) *Error {
	return invalidID(ErrNameInvalidOptionID, "optionId", id, "The optionId was missing or invalid")
}

func invalidUnit(id string) *Error {
	return invalidID(ErrNameInvalidUnitID, "unitId", id, "The unitId was missing or invalid")
}

func invalidAvailability(id string) *Error {
	return invalidID(ErrNameInvalidAvailabilityID, "availabilityId", id, "The availabilityId was missing or invalid")
}

func invalidUUID(id, msg string) *Error {
	if msg == "" {
		msg = "The uuid was already used, missing or invalid"
	}
	return invalidID(ErrNameInvalidBookingUUID, "uuid", id, msg)
}

// internal is INTERNAL_SERVER_ERROR with a generic message: the cause
// (a dependency, the supplier's system) is logged, never shown.
func internal(cause error) *Error {
	return &Error{Name: ErrNameInternalServerError, Message: "There was an un-recoverable error, please try again", Cause: cause}
}

// fromAPI maps what the shared middleware and the domain packages answer
// (apierror codes) to OCTO's names; hasCredentials tells a request that
// sent none (UNAUTHORIZED) from one whose key is unknown, wrong or revoked
// (FORBIDDEN), as OCTO distinguishes them.
func fromAPI(e *apierror.Error, hasCredentials bool) *Error {
	switch e.Code {
	case apierror.Unauthorized:
		if !hasCredentials {
			return newError(ErrNameUnauthorized, "Send the reseller's API key and secret: Authorization: Bearer <key>:<secret> (or X-API-Key and X-API-Secret)")
		}
		return newError(ErrNameForbidden, "The API key was invalid or has been revoked")
	case apierror.Forbidden:
		return newError(ErrNameForbidden, "Only resellers sell through OCTO: "+e.Message)
	case apierror.NotFound:
		return badRequest("No OCTO endpoint matches this path")
	case apierror.MethodNotAllowed, apierror.BadRequest, apierror.InvalidField, apierror.MalformedJSON,
		apierror.PayloadTooLarge, apierror.HeadersTooLarge, apierror.RequestTimeout:
		return badRequest(e.Message)
	case apierror.Conflict:
		return unprocessable(e.Message)
	case apierror.RateLimited:
		return newError(ErrNameInternalServerError, e.Message)
	}
	return internal(e.Cause)
}

// errorBody is BaseError plus the INVALID_* errors' field.
func errorBody(e *Error) []byte {
	m := map[string]string{"error": e.Name, "errorMessage": e.Message}
	if e.Field != "" {
		m[e.Field] = e.Value
	}
	b, err := json.Marshal(m)
	if err != nil { // strings only: cannot happen; stay valid JSON anyway
		return []byte(`{"error":"INTERNAL_SERVER_ERROR","errorMessage":"internal error"}`)
	}
	return b
}

// dialect is httpapi's Dialect for OCTO: Bearer credentials (or ours),
// OCTO's error shape and status.
type dialect struct{ metrics *metrics }

var _ httpapi.Dialect = dialect{}

var bearer = []byte("bearer ")

// Credentials reads "Authorization: Bearer <key>:<secret>" (OCTO's
// scheme, the reseller principal's key and secret joined by a colon),
// else X-API-Key and X-API-Secret. A Bearer token without a colon is a
// key without a secret: it fails authentication like a wrong secret.
func (dialect) Credentials(ctx *fasthttp.RequestCtx) (key, secret []byte) {
	if auth := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization); len(auth) > 0 {
		if len(auth) < len(bearer) || !bytes.EqualFold(auth[:len(bearer)], bearer) {
			return auth[:0], nil // present but not Bearer: a wrong credential
		}
		tok := bytes.TrimSpace(auth[len(bearer):])
		if i := bytes.IndexByte(tok, ':'); i >= 0 {
			return tok[:i], tok[i+1:]
		}
		return tok, nil
	}
	return ctx.Request.Header.Peek(httpapi.HeaderAPIKey), ctx.Request.Header.Peek(httpapi.HeaderAPISecret)
}

// hasCredentials reports whether the request sent any credential at all.
func hasCredentials(ctx *fasthttp.RequestCtx) bool {
	return len(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)) > 0 ||
		len(ctx.Request.Header.Peek(httpapi.HeaderAPIKey)) > 0 || len(ctx.Request.Header.Peek(httpapi.HeaderAPISecret)) > 0
}

// WriteError writes the OCTO error of err: an *Error as it is, anything
// else mapped from its API code (fromAPI).
func (d dialect) WriteError(ctx *fasthttp.RequestCtx, _ string, err error, e *apierror.Error) {
	var oe *Error
	if !errors.As(err, &oe) {
		oe = fromAPI(e, hasCredentials(ctx))
	}
	if d.metrics != nil {
		d.metrics.errors.WithLabelValues(oe.Name).Inc()
	}
	resp := &ctx.Response
	resp.ResetBody()
	resp.SetStatusCode(ErrorStatus)
	resp.Header.SetContentType("application/json")
	resp.SetBody(errorBody(oe))
}

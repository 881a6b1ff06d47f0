// Package partnerapi is the partner interface v1.2 (spec doc 2) as its
// callers see a call, apart from the client that makes it: how to reach a
// partner (Connection), what an availabilities read asks (AvailabilitiesRequest),
// the failure kinds of a call and the domain errors a failure maps to. The
// answer's shapes are schemas' (schemas.AvailabilityWrapper).
//
// ingest/partner's client takes and returns these types (it aliases them),
// so a domain package below the stages (internal/availcache) can declare
// the small interface of the client it needs and classify its failures
// without importing a stage. It holds no behaviour: no HTTP, no breaker (internal/platform/remotecall, whose
// failure kinds these are, makes the call).
package partnerapi

import (
	"time"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/internal/platform/remotecall"
)

// Connection is how to reach one partner: catalog.Connection of a
// supplier whose kind is "partner". Its String never shows the secret.
type Connection struct {
	BaseURL   string
	APIKey    string
	APISecret string
}

func (c Connection) String() string { return "partner{" + c.BaseURL + "}" }

// AvailabilitiesRequest is GET /suppliers/{s}/products/{p}/availabilities.
type AvailabilitiesRequest struct {
	SupplierID, ProductID string
	Start, End            time.Time
	RateID                string // optional
	// RequestID is sent as X-Request-ID and must come back as meta.reqId.
	RequestID string
}

// Domain errors of partner calls. The reseller sees the code and this
// message only; the partner's status, body and address stay in the log.
var (
	// ErrUnavailable: the partner failed, timed out, answered garbage or
	// its breaker is open (UNAVAILABLE, 503).
	ErrUnavailable = domainerr.New("UNAVAILABLE", "the supplier's system is temporarily unavailable")
	// ErrRejected: the partner answered 400 to the request (BAD_REQUEST).
	ErrRejected = domainerr.New("BAD_REQUEST", "the supplier's system rejected the request")
	// ErrNotFound: the partner answered 404 (NOT_FOUND).
	ErrNotFound = domainerr.New("NOT_FOUND", "not found at the supplier's system")
)

// Failure kinds of a call (internal/platform/remotecall's, which makes it): the
// label of switchback_ingest_partner_errors_total and the error of a
// partner call's history event (schemas.PartnerCall).
const (
	KindTimeout   = remotecall.KindTimeout
	KindTransport = remotecall.KindTransport
	KindStatus    = remotecall.KindStatus
	KindMalformed = remotecall.KindMalformed
	KindAuth      = remotecall.KindAuth
	KindBreaker   = remotecall.KindBreaker
	// KindRefused: the outbound policy refused the partner's url or the
	// address its name resolved to; nothing was sent.
	KindRefused = remotecall.KindRefused
	// KindRequest: our request could not be built (a stored baseUrl that
	// is no url); nothing was sent.
	KindRequest = remotecall.KindRequest
)

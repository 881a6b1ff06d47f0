// Package changerequest holds the operator's change notifications (spec
// doc 3, "Operator channel management and change notifications"): a
// request to refresh what Switchback caches of one supplier's product
// (standard mode: products and availabilities; price-schedule mode: the
// price schedule) from the operator's system. Requests are events on
// schemas.TopicChangeRequest (one partition: first in, first out); a
// Redis view answers the API (query/operator); ingest/changeworker's
// worker takes them in order, has them refreshed, and records WAITING →
// WORKING → SUCCEEDED / FAILED / PARTIAL_FAILURE with their timestamps.
//
// It must not know how a supplier's system is reached: that is the
// worker's Syncer (ingest/changeworker.Refresher, wired by cmd/switchback/internal/app).
package changerequest

import (
	"time"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/schemas"
)

// Statuses (spec doc 3).
const (
	StatusWaiting        = "WAITING"
	StatusWorking        = "WORKING"
	StatusSucceeded      = "SUCCEEDED"
	StatusFailed         = "FAILED"
	StatusPartialFailure = "PARTIAL_FAILURE"
)

// Modes (spec doc 3). ModeAny is a list filter only.
const (
	ModeAny           = "any"
	ModeStandard      = "standard"
	ModePriceSchedule = "price-schedule"
)

// EventRequested is schemas.ChangeRequestRequested, the type of a new
// request's record, named here for ingest/changerequest's worker (which
// works only those); schemas owns the topic's types and payload.
const EventRequested = schemas.ChangeRequestRequested

// DateLayout of StartDate and EndDate.
const DateLayout = time.DateOnly

// CreateRequest is what was asked (spec doc 3: createRequest), as the
// topic's record carries it (schemas owns the payload).
type CreateRequest = schemas.ChangeRequestCreate

// Request is a change notification as the API shows it (spec doc 3,
// "Change notification"), plus the window it covers and, once finished,
// its errors (beyond the spec: what PARTIAL_FAILURE and FAILED were).
type Request struct {
	ID              string        `json:"id"`
	CreateRequest   CreateRequest `json:"createRequest"`
	Inserted        time.Time     `json:"inserted"`
	BeganWorking    *time.Time    `json:"beganWorking"`
	FinishedWorking *time.Time    `json:"finishedWorking"`
	Mode            string        `json:"mode"`
	Status          string        `json:"status"`
	// StartDate (inclusive) and EndDate (exclusive), YYYY-MM-DD.
	StartDate string   `json:"startDate"`
	EndDate   string   `json:"endDate"`
	Errors    []string `json:"errors,omitempty"`

	// Owner is the operator principal that asked (scope; not shown).
	Owner string `json:"-"`
	// Version orders the records of one request (not shown).
	Version int64 `json:"-"`
}

// record is r as the topic and the view hold it: every field, Owner and
// Version included. A Go conversion: Request and schemas.ChangeRequest
// have the same fields (their tags differ), so a field added to one and
// not the other fails to compile.
func (r Request) record() schemas.ChangeRequest { return schemas.ChangeRequest(r) }

// Finished reports whether the request has its final status.
func (r Request) Finished() bool {
	return r.Status == StatusSucceeded || r.Status == StatusFailed || r.Status == StatusPartialFailure
}

// Window is the request's [start, end) in UTC.
func (r Request) Window() (time.Time, time.Time) {
	s, _ := time.Parse(DateLayout, r.StartDate)
	e, _ := time.Parse(DateLayout, r.EndDate)
	return s, e
}

// Result is what a Syncer did: how many items (products, rates, days)
// it refreshed and the ones that failed, each as a readable reason.
type Result struct {
	Items    int
	Failures []string
}

// Status is the final status of a run (spec doc 3 statuses): an error of
// the whole run, or nothing refreshed and something failed, is FAILED;
// some refreshed and some failed is PARTIAL_FAILURE.
func (res Result) Status(err error) string {
	switch {
	case err != nil:
		return StatusFailed
	case len(res.Failures) > 0 && res.Items == 0:
		return StatusFailed
	case len(res.Failures) > 0:
		return StatusPartialFailure
	}
	return StatusSucceeded
}

// Errors of the package, mapped to the API's error object.
var (
	ErrNotFound    = domainerr.New("NOT_FOUND", "change notification not found")
	ErrUnavailable = domainerr.New("UNAVAILABLE", "change notifications temporarily unavailable")
)

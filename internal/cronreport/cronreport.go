// Package cronreport holds the cron reports of spec doc 3: one report per
// supplier per scheduled full synchronization, with its id, when it was
// inserted, the supplier it is about (externalSystemID), its error count
// and, for the full report, its errors. Reports are Kafka first: each is a
// record on schemas.TopicCronReports (kept 60 days, spec doc 3 Limits),
// then applied to a Redis view that answers the API (query/operator) and
// can be rebuilt from the topic at any time.
//
// It must not run synchronizations nor decide who may see a report: the
// runs are ingest/cronsync's, the scope (an operator's suppliers) is the
// caller's, passed in as a list of supplier ids.
package cronreport

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchbackhq/switchback/internal/platform/domainerr"
	"github.com/switchbackhq/switchback/schemas"
)

// Retention is how long a report is listed and found: spec doc 3, Limits
// ("cron report history: 60 days") and rule 6 ("the past 60 days").
const Retention = 60 * 24 * time.Hour

// Bounds of a report's errorReport: a supplier whose every availability
// fails must not make a record larger than a Kafka message may be (1 MiB
// by default). errorCount stays the true count; errorReport then holds the
// first MaxErrorItems errors and a last element saying how many were left
// out.
const (
	MaxErrorItems   = 500
	MaxErrorMessage = 512 // bytes of one element's message
)

// Entities an error element may name (the things a full synchronization
// reads: spec doc 3, Supplier, Product, Option, Availability).
const (
	EntitySupplier     = "supplier"
	EntityProduct      = "product"
	EntityOption       = "option"
	EntityAvailability = "availability"
)

// ErrorItem is one element of errorReport: one error of the
// synchronization, as ParseError reads it ("option o-1: ..." names its
// entity). It is the topic's element (schemas owns the payload), named
// here for the API and the callers that build reports.
type ErrorItem = schemas.CronReportError

// Summary is a cron report summary (spec doc 3): what GET /cron/reports
// lists, without the errors.
type Summary struct {
	ID               int64     `json:"id"`
	Inserted         time.Time `json:"inserted"`
	ExternalSystemID string    `json:"externalSystemID"`
	ErrorCount       int       `json:"errorCount"`
}

// Report is a cron report (spec doc 3): the summary plus errorReport,
// absent when there were no errors. The fields after ErrorReport are kept
// on the topic (for history and operations) but are not part of the API.
type Report struct {
	Summary
	ErrorReport []ErrorItem `json:"errorReport,omitempty"`

	// RunID names the run (one per schedule slot, or per manual trigger);
	// RequestKey the run's request for this supplier (RunID/supplier).
	RunID      string `json:"-"`
	RequestKey string `json:"-"`
	// Offset of the request on its topic: a redelivery of the request is
	// told from the same request enqueued twice by it.
	Offset int64     `json:"-"`
	Began  time.Time `json:"-"`
	// What the synchronization read.
	Products, Options, Availabilities int `json:"-"`
}

// Items is how many records the synchronization read.
func (r Report) Items() int { return r.Products + r.Options + r.Availabilities }

// record is r as the topic and the view hold it: every field (a Go
// conversion of each field, so a field added to one and not the other
// fails to compile).
func (r Report) record() schemas.CronReport {
	return schemas.CronReport{ID: r.ID, Inserted: r.Inserted, InsertedMs: r.Inserted.UnixMilli(), ExternalSystemID: r.ExternalSystemID,
		ErrorCount: r.ErrorCount, ErrorReport: r.ErrorReport, RunID: r.RunID, RequestKey: r.RequestKey, Offset: r.Offset, Began: r.Began,
		Products: r.Products, Options: r.Options, Availabilities: r.Availabilities}
}

// reportOf is the Report of a record of the topic or the view.
func reportOf(rec schemas.CronReport) Report {
	return Report{Summary: Summary{ID: rec.ID, Inserted: rec.Inserted, ExternalSystemID: rec.ExternalSystemID, ErrorCount: rec.ErrorCount},
		ErrorReport: rec.ErrorReport, RunID: rec.RunID, RequestKey: rec.RequestKey, Offset: rec.Offset, Began: rec.Began,
		Products: rec.Products, Options: rec.Options, Availabilities: rec.Availabilities}
}

// maxID bounds report ids to the integers JSON readers hold exactly
// (2^53 - 1): spec doc 3 types the id as an integer.
const maxID = 1<<53 - 1

// ID is the n-th candidate id of the report of synchronization request
// requestKey (n is 0 unless an earlier candidate is another report's): a
// positive integer below 2^53 taken from SHA-256 of the key, so that
// report ids are opaque, tell an operator nothing of how many reports
// other operators have (they were one global sequence, issue 18), and are
// the same when the request is redelivered, without Redis.
func ID(requestKey string, n int) int64 {
	h := sha256.Sum256([]byte("cronreport/" + requestKey + "/" + strconv.Itoa(n)))
	id := int64(binary.BigEndian.Uint64(h[:8]) & maxID)
	if id == 0 {
		return 1
	}
	return id
}

// NewErrorReport turns a synchronization's error texts into errorReport
// elements, bounded by MaxErrorItems and MaxErrorMessage. It returns nil
// for no errors (errorReport is then absent).
func NewErrorReport(texts []string) []ErrorItem {
	if len(texts) == 0 {
		return nil
	}
	n := min(len(texts), MaxErrorItems)
	out := make([]ErrorItem, 0, n+1)
	for _, t := range texts[:n] {
		out = append(out, ParseError(t))
	}
	if left := len(texts) - n; left > 0 {
		out = append(out, ErrorItem{Message: "… and " + strconv.Itoa(left) + " more errors, not listed"})
	}
	return out
}

// ParseError makes one errorReport element of an error text. A text
// starting "<entity> <id>: " (entity one of supplier, product, option,
// availability; id a catalog id, which has no spaces or colons) names its
// entity; the message is always the whole text.
func ParseError(text string) ErrorItem {
	it := ErrorItem{Message: cut(text, MaxErrorMessage)}
	head, _, ok := strings.Cut(text, ": ")
	if !ok {
		return it
	}
	entity, id, ok := strings.Cut(head, " ")
	if !ok || id == "" || strings.ContainsAny(id, " :") {
		return it
	}
	switch entity {
	case EntitySupplier, EntityProduct, EntityOption, EntityAvailability:
		it.Entity, it.ID = entity, cut(id, MaxErrorMessage)
	}
	return it
}

// cut bounds s to n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ParseID reads a report id from a path (spec doc 3 rule 6: "id must be a
// positive integer, otherwise 400"): decimal digits only (no sign,
// fraction or exponent), not zero. Anything else is an INVALID_FIELD error
// on "id"; a positive integer beyond the largest int64 is ErrNotFound (no
// report has it).
func ParseID(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errInvalidID
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) && strings.TrimLeft(s, "0") != "" {
		// A positive integer no report can have: unknown (404), not
		// malformed.
		return 0, fmt.Errorf("cron report %s: %w", s, ErrNotFound)
	}
	if err != nil || n < 1 {
		return 0, errInvalidID
	}
	return n, nil
}

var errInvalidID = domainerr.Field("id", "must be a positive integer")

// Errors of the package, mapped to the API's error object.
var (
	ErrNotFound    = domainerr.New("NOT_FOUND", "cron report not found")
	ErrUnavailable = domainerr.New("UNAVAILABLE", "cron reports temporarily unavailable")
)

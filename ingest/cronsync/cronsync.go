// Package cronsync runs the scheduled full synchronizations of spec doc 3
// ("Cron report endpoints report the outcome of full synchronizations that
// the service runs at regular intervals"): every booking-system supplier's
// supplier, product and availability data is pulled again at a configured
// interval (price schedules are not: spec doc 3, "What the service does"
// 4), and each supplier's run leaves one cron report (internal/cronreport)
// and one history event.
//
// The Scheduler decides when: one instance among several (a Redis claim
// per schedule slot) puts one request per supplier on
// schemas.TopicCronSync. The Worker does it: a consumer group takes the
// requests in order, has a Syncer pull each supplier, records the report,
// and only then commits the request's offset, so a crash redoes a run and
// never loses it, and a redone run never makes a second report.
//
// It must not know how a booking system is read (that is the Syncer, wired
// by cmd/switchback/internal/app) nor serve the reports (query/operator does).
package cronsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/schemas"
)

// Syncer pulls one supplier's supplier, product and availability data from
// its booking system into the catalog, availabilities over [from, to).
type Syncer interface {
	SyncSupplier(ctx context.Context, sid string, from, to time.Time) (Result, error)
}

// Result is what a Syncer read and the errors it met, one text per error
// ("option o-1: ..."; see cronreport.ParseError).
type Result struct {
	Products, Options, Availabilities int
	Errors                            []string
}

// Suppliers lists the catalog's suppliers; *catalogredis.Store implements it.
type Suppliers interface {
	Suppliers(ctx context.Context, sc catalog.Scope) ([]catalog.Supplier, error)
}

// Synced reports whether the scheduled full sync covers s: suppliers
// reached through a booking system (spec doc 3). Partner suppliers (spec
// doc 2) have no "list everything" read; their cache is refreshed on reads.
func Synced(s catalog.Supplier) bool {
	return s.Connection.Kind == catalog.ConnectionBookingSystem || s.Connection.Kind == catalog.ConnectionOCTO
}

// Triggers of a run.
const (
	TriggerSchedule  = "schedule"
	TriggerManual    = "manual"
	TriggerConnected = "connected" // a supplier's first synchronization (Scheduler.Connected)
)

// EventRequested is the envelope type of a request on TopicCronSync.
const EventRequested = "cronsync.requested"

// Request is one supplier's synchronization in a run. Key is RunID/
// SupplierID: a run enqueued twice (two claims of one slot after a crash)
// has the same keys, and the worker makes one report per key.
type Request struct {
	Key        string `json:"key"`
	RunID      string `json:"runId"`
	Trigger    string `json:"trigger"`
	SupplierID string `json:"supplierId"`
	// From (inclusive) and To (exclusive) bound the availability read,
	// YYYY-MM-DD.
	From string `json:"from"`
	To   string `json:"to"`
	// Enqueued is when the run was enqueued; Index (from 1) and Of place
	// the request in its run.
	Enqueued time.Time `json:"enqueued"`
	Index    int       `json:"index"`
	Of       int       `json:"of"`
}

// Window is the request's [from, to) in UTC.
func (r Request) Window() (time.Time, time.Time, error) {
	from, err := time.Parse(time.DateOnly, r.From)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("from: %w", err)
	}
	to, err := time.Parse(time.DateOnly, r.To)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("to: %w", err)
	}
	if !to.After(from) {
		return time.Time{}, time.Time{}, errors.New("to must be after from")
	}
	return from, to, nil
}

// message is r as a record of TopicCronSync.
func (r Request) message() (stream.Message, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return stream.Message{}, err
	}
	env := schemas.Envelope{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte("cronsync/"+r.Key)).String(), Type: EventRequested,
		Key: r.Key, Time: r.Enqueued, Source: "ingest/cronsync", Data: data}
	raw, err := json.Marshal(env)
	if err != nil {
		return stream.Message{}, err
	}
	return stream.Message{Topic: schemas.TopicCronSync, Key: []byte(r.Key), Value: raw, Time: r.Enqueued}, nil
}

// decodeRequest reads a record of TopicCronSync.
func decodeRequest(m stream.Message) (Request, error) {
	var env schemas.Envelope
	if err := json.Unmarshal(m.Value, &env); err != nil {
		return Request{}, err
	}
	if env.Type != EventRequested {
		return Request{}, fmt.Errorf("unknown type %q", env.Type)
	}
	var r Request
	if err := json.Unmarshal(env.Data, &r); err != nil {
		return Request{}, err
	}
	if r.Key == "" || r.RunID == "" || r.SupplierID == "" || r.Enqueued.IsZero() {
		return Request{}, errors.New("key, runId, supplierId and enqueued are required")
	}
	if _, _, err := r.Window(); err != nil {
		return Request{}, err
	}
	return r, nil
}

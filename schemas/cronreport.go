package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Cron reports (spec doc 3, "cron report"): one record per supplier per
// scheduled full synchronization on TopicCronReports, keyed by the report
// id, which internal/cronreport publishes and applies to its Redis view
// (the view stores the same CronReport JSON).

// CronReportInserted is the Envelope type of every TopicCronReports record:
// its Data is one CronReport.
const CronReportInserted = "cronreport.inserted"

// ErrInvalidCronReport: a TopicCronReports record that is not a cron
// report (another type, unreadable, or without its id, supplier, time or
// request key).
var ErrInvalidCronReport = errors.New("invalid cron report record")

// CronReportError is one element of a report's errorReport: one error of
// the synchronization (spec doc 3: "each element is one error"; its shape
// is not shown). Message is the error as the synchronization reported it;
// Entity and ID name the supplier, product, option or availability it is
// about when the message names one, and are absent otherwise.
type CronReportError struct {
	Entity  string `json:"entity,omitempty"`
	ID      string `json:"id,omitempty"`
	Message string `json:"message"`
}

// CronReport is a cron report with every field: the API's summary and
// errorReport (spec doc 3), then what the topic keeps for history and
// operations. InsertedMs is Inserted in Unix milliseconds, which the view's
// Lua script compares two records of one id by.
type CronReport struct {
	ID               int64             `json:"id"`
	Inserted         time.Time         `json:"inserted"`
	InsertedMs       int64             `json:"insertedMs"`
	ExternalSystemID string            `json:"externalSystemID"`
	ErrorCount       int               `json:"errorCount"`
	ErrorReport      []CronReportError `json:"errorReport,omitempty"`
	RunID            string            `json:"runId"`
	RequestKey       string            `json:"requestKey"`
	Offset           int64             `json:"offset,omitempty"`
	Began            time.Time         `json:"began"`
	Products         int               `json:"products"`
	Options          int               `json:"options"`
	Availabilities   int               `json:"availabilities"`
}

// Validate reports a record no reader can use: no id, supplier
// (externalSystemID), inserted time or request key.
func (r CronReport) Validate() error {
	if r.ID <= 0 || r.ExternalSystemID == "" || r.Inserted.IsZero() || r.RequestKey == "" {
		return fmt.Errorf("%w %d: id, externalSystemID, inserted and request key are required", ErrInvalidCronReport, r.ID)
	}
	return nil
}

// NewCronReportEvent is r as the envelope of its TopicCronReports record: a
// new UUID as its id, type CronReportInserted, keyed by the report id
// (decimal), Version 1 (a report is written once), Time r.Inserted in UTC,
// source the producer's, and r as Data. Publish it keyed by Key.
func NewCronReportEvent(r CronReport, source string) (Envelope, error) {
	if err := r.Validate(); err != nil {
		return Envelope{}, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return Envelope{}, fmt.Errorf("encode cron report %d: %w", r.ID, err)
	}
	return Envelope{ID: uuid.NewString(), Type: CronReportInserted, Key: strconv.FormatInt(r.ID, 10), Version: 1,
		Time: r.Inserted.UTC(), Source: source, Data: data}, nil
}

// DecodeCronReport reads a TopicCronReports record (what NewCronReportEvent
// made). Anything else is ErrInvalidCronReport.
func DecodeCronReport(value []byte) (CronReport, error) {
	var env Envelope
	if err := json.Unmarshal(value, &env); err != nil {
		return CronReport{}, fmt.Errorf("%w: %w", ErrInvalidCronReport, err)
	}
	if env.Type != CronReportInserted {
		return CronReport{}, fmt.Errorf("%w: type %q", ErrInvalidCronReport, env.Type)
	}
	var r CronReport
	if err := json.Unmarshal(env.Data, &r); err != nil {
		return CronReport{}, fmt.Errorf("%w: %w", ErrInvalidCronReport, err)
	}
	return r, r.Validate()
}

package historyapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/schemas"
)

// Replayer republishes notifications to the dispatcher (dispatcher.Replay,
// wired by cmd/switchback/internal/app: query/ does not import a stage). It sends them
// again under their own delivery ids, even if sent before.
type Replayer interface {
	Replay(ctx context.Context, subscriber, typ string, from, to time.Time, ns []schemas.Notification) (int, error)
}

// Replay bounds: the range is at most MaxReplaySpan long and yields at most
// MaxReplay notifications, so one request is bounded work; a larger backlog
// is replayed in several ranges.
const (
	MaxReplaySpan = 31 * 24 * time.Hour
	MaxReplay     = 100_000
	// replayTail is how long after its creation a notification may still be
	// attempted (the retry schedule spans about 16 h): attempt rows are
	// searched up to this long after `to`.
	replayTail = 24 * time.Hour
)

// replayable are the outcomes whose rows carry the notification (the
// dispatcher includes it so that history alone can replay it).
var replayable = []string{schemas.OutcomeSuppressed, schemas.OutcomeFailed, schemas.OutcomeDropped}

type replayBody struct {
	Type     string    `json:"type"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Outcomes []string  `json:"outcomes"`
}

type replayResponse struct {
	httpapi.Meta `json:"meta"`
	Replayed     int `json:"replayed"`
}

// replay is POST /registry/v1.1/deliveries/replay {type, from, to,
// outcomes?}: the caller's notifications of one type created in [from, to)
// that were never delivered (outcome suppressed, failed or dropped, or the
// ones given) are sent again. 202 with the count: delivery is asynchronous
// and shows in GET /deliveries.
func (h handlers) replay(r *httpapi.Request) error {
	var in replayBody
	if err := r.DecodeJSON(&in); err != nil {
		return err
	}
	if err := in.validate(); err != nil {
		return err
	}
	if h.store.conn == nil {
		return errParked
	}
	if h.rep == nil {
		return apierror.New(apierror.Unavailable, "replay is not available in this process")
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	ns, err := h.store.undelivered(ctx, r.Principal.ID, in)
	if err != nil {
		return unavailable(err)
	}
	if len(ns) > MaxReplay {
		return apierror.Invalid("from", fmt.Sprintf("the range holds more than %d notifications to replay; narrow from/to", MaxReplay))
	}
	n, err := h.rep.Replay(ctx, r.Principal.ID, in.Type, in.From, in.To, ns)
	if err != nil {
		return apierror.New(apierror.Unavailable, fmt.Sprintf("replay stopped after %d notifications: the broker is unavailable; retry the same range (delivery ids are stable)", n))
	}
	return r.JSON(http.StatusAccepted, &replayResponse{Replayed: n})
}

func (in *replayBody) validate() error {
	switch {
	case in.Type == "":
		return apierror.Invalid("type", "is required")
	case !slices.Contains(schemas.NotificationTypes(), in.Type):
		return apierror.Invalid("type", "must be one of the notification types")
	case in.From.IsZero():
		return apierror.Invalid("from", "is required (RFC 3339)")
	case in.To.IsZero():
		return apierror.Invalid("to", "is required (RFC 3339)")
	case !in.From.Before(in.To):
		return apierror.Invalid("to", "must be after from")
	case in.To.Sub(in.From) > MaxReplaySpan:
		return apierror.Invalid("to", "the range must be at most 31 days")
	}
	if len(in.Outcomes) == 0 {
		in.Outcomes = replayable
	}
	for i, o := range in.Outcomes {
		if !slices.Contains(replayable, o) {
			return apierror.Invalid(fmt.Sprintf("outcomes[%d]", i), "must be suppressed, failed or dropped (only those rows carry the notification)")
		}
	}
	return nil
}

// undelivered returns the subscriber's notifications of in.Type whose rows
// have one of in.Outcomes and that were never delivered since, one per
// delivery id. CreatedAt is checked against [from, to) by the Replayer; the
// attempt rows are searched from `from` to `to` plus the retry tail.
func (s store) undelivered(ctx context.Context, subscriber string, in replayBody) ([]schemas.Notification, error) {
	// has(?, outcome) rather than IN (?): ClickHouse 18.16 cannot bind a
	// slice to IN.
	//
	// Rows are found by when they happened (the table's order), up to
	// replayTail after `to`, but counted by when their notification was
	// created: a narrow range late in a long outage must not count every
	// suppression after it, or "narrow from/to" could never be obeyed. The
	// creation time is read from the notification's JSON to the second
	// (ClickHouse's DateTime), so the range's boundary seconds are
	// included here and cut exactly by the replayer (dispatcher.Replay
	// filters on CreatedAt). Rows without a notification (delivered
	// attempts) are kept: they mark a delivery id as delivered.
	q := `SELECT delivery_id, anyIf(notification, notification != '' AND has(?, outcome)) AS n,
			max(outcome = 'delivered') AS delivered
		FROM history_deliveries FINAL
		WHERE subscriber = ? AND type = ? AND occurred_at >= ? AND occurred_at < ?
			AND (notification = '' OR
				ifNull(parseDateTimeBestEffortOrNull(visitParamExtractString(notification, 'createdAt')) BETWEEN ? AND ?, 1))
		GROUP BY delivery_id
		HAVING delivered = 0 AND n != ''
		ORDER BY delivery_id
		LIMIT ?`
	rows, err := s.conn.Query(ctx, q, in.Outcomes, subscriber, in.Type, in.From, in.To.Add(replayTail),
		in.From.UTC().Truncate(time.Second), in.To.UTC().Truncate(time.Second), MaxReplay+1)
	if err != nil {
		return nil, fmt.Errorf("query undelivered notifications: %w", err)
	}
	defer rows.Close()
	var out []schemas.Notification
	for rows.Next() {
		var id, raw string
		var delivered uint8
		if err := rows.Scan(&id, &raw, &delivered); err != nil {
			return nil, fmt.Errorf("read undelivered notifications: %w", err)
		}
		var n schemas.Notification
		if err := json.Unmarshal([]byte(raw), &n); err != nil || n.ID != id {
			continue // a row whose notification cannot be replayed as written
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read undelivered notifications: %w", err)
	}
	return out, nil
}

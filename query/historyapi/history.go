// Package historyapi maps the read-only history endpoints to queries on the
// ClickHouse history tables (docs/analytics.md):
//
//	GET /registry/v1.1/deliveries             resellers: their own delivery log
//	GET /operator/v2/history/availability     operators: availability changes of their suppliers
//
// and the aggregates of the console (stats.go).
//
// Both page with limit (default 100, at most 1000) and offset (at most
// 100 000), newest first, over a from (inclusive) .. to (exclusive) range of
// RFC 3339 times, and read with FINAL so that a replayed event is listed
// once. When no ClickHouse is configured (history parked on its topic) they
// answer 503 UNAVAILABLE saying so.
//
// It must not write history (the sink in processors/historysink does) and holds
// no rules beyond scoping: a reseller sees the deliveries whose subscriber is
// its principal id; an operator sees suppliers that Ownership says it owns.
package historyapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/query/apierror"
	"github.com/switchbackhq/switchback/query/httpapi"
)

// Ownership says whether an operator owns a supplier. The catalog provides
// it; until it is wired (nil), operators are denied.
type Ownership interface {
	OwnsSupplier(ctx context.Context, operatorID, supplierID string) (bool, error)
}

// queryTimeout bounds one history query, so that a ClickHouse that stopped
// answering gives a 503 rather than a hung request.
const queryTimeout = 10 * time.Second

var (
	resellers = []principals.Role{principals.RoleReseller}
	operators = []principals.Role{principals.RoleOperator}
)

// Register adds the history routes to s, and the replay of undelivered
// notifications through rep (nil: 503). conn nil means history is parked
// (no ClickHouse configured): the routes exist and answer 503. own nil
// denies every operator request (403).
//
// The registry engineer owns /registry/v1.1 for rules; this package adds
// only /registry/v1.1/deliveries there.
func Register(s *httpapi.Server, conn driver.Conn, own Ownership, rep Replayer) {
	h := handlers{store: store{conn: conn}, own: own, rep: rep, now: time.Now}
	// History scans ClickHouse: costly routes, with their own smaller
	// budget per key and a concurrency bound (query/httpapi, costly.go).
	// The console's aggregates (stats.go) scan too.
	s.Group(httpapi.BaseRegistryV11).HandleCostly(http.MethodGet, "/deliveries", resellers, h.deliveries)
	s.Group(httpapi.BaseRegistryV11).HandleCostly(http.MethodPost, "/deliveries/replay", resellers, h.replay)
	s.Group(httpapi.BaseRegistryV11).HandleCostly(http.MethodGet, "/deliveries/stats", resellers, h.stats)
	s.Group(httpapi.BaseRegistryV11).HandleCostly(http.MethodGet, "/deliveries/auto-disables", resellers, h.autoDisables)
	s.Group(httpapi.BaseOperatorV2).HandleCostly(http.MethodGet, "/history/availability", operators, h.availability)
	s.Group(httpapi.BaseOperatorV2).HandleCostly(http.MethodGet, "/history/connections", operators, h.connections)
}

type handlers struct {
	store store
	own   Ownership
	rep   Replayer
	// now is the default end of the stats range.
	now func() time.Time
}

// errParked is the answer while no ClickHouse is configured.
var errParked = apierror.New(apierror.Unavailable,
	"history is not available: no ClickHouse is configured, history events wait on their topic until one is (SWITCHBACK_CLICKHOUSE_URL)")

// Paging is the paging object of every list answer. More says whether a
// next page (offset + limit) has items.
type Paging struct {
	Limit  int  `json:"limit"`
	Offset int  `json:"offset"`
	Count  int  `json:"count"`
	More   bool `json:"more"`
}

// Delivery is one row of a reseller's delivery log.
type Delivery struct {
	DeliveryID string    `json:"deliveryId"`
	Type       string    `json:"type"`
	Attempt    int       `json:"attempt"`
	Status     int       `json:"status"`
	LatencyMs  int64     `json:"latencyMs"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	At         time.Time `json:"at"`
}

// listResponse is the answer of a list route: a page of items.
type listResponse[T any] struct {
	httpapi.Meta `json:"meta"`
	Items        []T    `json:"items"`
	Paging       Paging `json:"paging"`
}

func (h handlers) deliveries(r *httpapi.Request) error {
	f, err := parseDeliveryFilter(r.Ctx.QueryArgs())
	if err != nil {
		return err
	}
	f.subscriber = r.Principal.ID
	var items []Delivery
	var more bool
	if err := h.run(r, func(ctx context.Context) (err error) {
		items, more, err = h.store.deliveries(ctx, f)
		return err
	}); err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &listResponse[Delivery]{Items: items, Paging: f.page.paging(len(items), more)})
}

// AvailabilityChange is one row of an operator's availability change log.
type AvailabilityChange struct {
	SupplierID   string    `json:"supplierId"`
	ProductID    string    `json:"productId"`
	RateID       string    `json:"rateId"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	OldVacancies int       `json:"oldVacancies"`
	NewVacancies int       `json:"newVacancies"`
	OldStatus    string    `json:"oldStatus,omitempty"`
	NewStatus    string    `json:"newStatus,omitempty"`
	Source       string    `json:"source"`
	At           time.Time `json:"at"`
}

func (h handlers) availability(r *httpapi.Request) error {
	f, err := parseAvailabilityFilter(r.Ctx.QueryArgs())
	if err != nil {
		return err
	}
	// 403 whether the supplier exists or not: a prober learns nothing.
	if err := h.owned(r, f.supplierID); err != nil {
		return err
	}
	var items []AvailabilityChange
	var more bool
	if err := h.run(r, func(ctx context.Context) (err error) {
		items, more, err = h.store.availability(ctx, f)
		return err
	}); err != nil {
		return err
	}
	return r.JSON(http.StatusOK, &listResponse[AvailabilityChange]{Items: items, Paging: f.page.paging(len(items), more)})
}

// run runs the query q of a validated request: errParked while no
// ClickHouse is configured, q bounded by queryTimeout, and its failure
// answered as unavailable.
func (h handlers) run(r *httpapi.Request, q func(ctx context.Context) error) error {
	if h.store.conn == nil {
		return errParked
	}
	ctx, cancel := context.WithTimeout(r.Context(), queryTimeout)
	defer cancel()
	if err := q(ctx); err != nil {
		return unavailable(err)
	}
	return nil
}

// unavailable turns a ClickHouse failure into a 503 with our own message;
// the cause is logged by the server, never sent.
func unavailable(err error) error {
	msg := "history store did not answer; retry later"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "history query timed out; narrow from/to or retry later"
	}
	return &apierror.Error{Code: apierror.Unavailable, Message: msg, Cause: err}
}

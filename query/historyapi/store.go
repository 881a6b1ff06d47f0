package historyapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// store reads the history tables. Values go into queries through the
// driver's client-side binding (`?`, quoted and escaped by clickhouse-go):
// ClickHouse 18.16 has no server-side parameters.
type store struct{ conn driver.Conn }

// where builds a conjunction of conditions and their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) sql() string { return strings.Join(w.conds, " AND ") }

// timeRange restricts occurred_at (the partition and primary key column,
// whole seconds) and occurred_ms (exact) to [from, to).
func (w *where) timeRange(p page) {
	if !p.from.IsZero() {
		w.add("occurred_at >= toDateTime(?) AND occurred_ms >= ?", p.from.Unix(), p.from.UnixMilli())
	}
	if !p.to.IsZero() {
		// occurred_at <= the second of `to`: the second itself may hold
		// rows before `to`'s milliseconds.
		w.add("occurred_at <= toDateTime(?) AND occurred_ms < ?", p.to.Unix(), p.to.UnixMilli())
	}
}

// limit asks for one row more than the page, to tell whether another
// page follows. LIMIT offset, count is the form 18.16 knows.
func limit(p page) string { return fmt.Sprintf(" LIMIT %d, %d", p.offset, p.limit+1) }

func (s store) deliveries(ctx context.Context, f deliveryFilter) ([]Delivery, bool, error) {
	var w where
	w.add("subscriber = ?", f.subscriber)
	if f.typ != "" {
		w.add("type = ?", f.typ)
	}
	if f.status >= 0 {
		w.add("status = ?", f.status)
	}
	if f.outcome != "" {
		w.add("outcome = ?", f.outcome)
	}
	if f.deliveryID != "" {
		w.add("delivery_id = ?", f.deliveryID)
	}
	w.timeRange(f.page)
	q := `SELECT delivery_id, type, attempt, status, latency_ms, outcome, error, occurred_ms
		FROM history_deliveries FINAL WHERE ` + w.sql() + `
		ORDER BY occurred_ms DESC, event_id DESC` + limit(f.page)
	rows, err := s.conn.Query(ctx, q, w.args...)
	if err != nil {
		return nil, false, fmt.Errorf("query deliveries: %w", err)
	}
	defer rows.Close()
	items := make([]Delivery, 0, min(f.limit, 64))
	for rows.Next() {
		var d Delivery
		var attempt, status uint16
		var latency uint32
		var ms int64
		if err := rows.Scan(&d.DeliveryID, &d.Type, &attempt, &status, &latency, &d.Outcome, &d.Error, &ms); err != nil {
			return nil, false, fmt.Errorf("read deliveries: %w", err)
		}
		d.Attempt, d.Status, d.LatencyMs, d.At = int(attempt), int(status), int64(latency), time.UnixMilli(ms).UTC()
		items = append(items, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read deliveries: %w", err)
	}
	more := len(items) > f.limit
	if more {
		items = items[:f.limit]
	}
	return items, more, nil
}

func (s store) availability(ctx context.Context, f availabilityFilter) ([]AvailabilityChange, bool, error) {
	var w where
	w.add("supplier_id = ?", f.supplierID)
	if f.productID != "" {
		w.add("product_id = ?", f.productID)
	}
	w.timeRange(f.page)
	q := `SELECT supplier_id, product_id, rate_id, window_start, window_end, old_vacancies, new_vacancies,
			old_status, new_status, source, occurred_ms
		FROM history_availability_changes FINAL WHERE ` + w.sql() + `
		ORDER BY occurred_ms DESC, event_id DESC` + limit(f.page)
	rows, err := s.conn.Query(ctx, q, w.args...)
	if err != nil {
		return nil, false, fmt.Errorf("query availability changes: %w", err)
	}
	defer rows.Close()
	items := make([]AvailabilityChange, 0, min(f.limit, 64))
	for rows.Next() {
		var c AvailabilityChange
		var oldVac, newVac int32
		var ms int64
		if err := rows.Scan(&c.SupplierID, &c.ProductID, &c.RateID, &c.Start, &c.End, &oldVac, &newVac, &c.OldStatus, &c.NewStatus, &c.Source, &ms); err != nil {
			return nil, false, fmt.Errorf("read availability changes: %w", err)
		}
		c.OldVacancies, c.NewVacancies, c.At = int(oldVac), int(newVac), time.UnixMilli(ms).UTC()
		c.Start, c.End = c.Start.UTC(), c.End.UTC()
		items = append(items, c)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read availability changes: %w", err)
	}
	more := len(items) > f.limit
	if more {
		items = items[:f.limit]
	}
	return items, more, nil
}

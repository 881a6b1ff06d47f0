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
	return readPage(ctx, s.conn, "deliveries", f.page, q, w.args, func(rows driver.Rows) (Delivery, error) {
		var d Delivery
		var attempt, status uint16
		var latency uint32
		var ms int64
		err := rows.Scan(&d.DeliveryID, &d.Type, &attempt, &status, &latency, &d.Outcome, &d.Error, &ms)
		d.Attempt, d.Status, d.LatencyMs, d.At = int(attempt), int(status), int64(latency), time.UnixMilli(ms).UTC()
		return d, err
	})
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
	return readPage(ctx, s.conn, "availability changes", f.page, q, w.args, func(rows driver.Rows) (AvailabilityChange, error) {
		var c AvailabilityChange
		var oldVac, newVac int32
		var ms int64
		err := rows.Scan(&c.SupplierID, &c.ProductID, &c.RateID, &c.Start, &c.End, &oldVac, &newVac, &c.OldStatus, &c.NewStatus, &c.Source, &ms)
		c.OldVacancies, c.NewVacancies, c.At = int(oldVac), int(newVac), time.UnixMilli(ms).UTC()
		c.Start, c.End = c.Start.UTC(), c.End.UTC()
		return c, err
	})
}

// readPage runs q (a page's query, see limit) and scans each row with
// scan: the page's items, and whether another page follows.
func readPage[T any](ctx context.Context, conn driver.Conn, what string, p page, q string, args []any, scan func(driver.Rows) (T, error)) ([]T, bool, error) {
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("query %s: %w", what, err)
	}
	defer rows.Close()
	items := make([]T, 0, min(p.limit, 64))
	for rows.Next() {
		x, err := scan(rows)
		if err != nil {
			return nil, false, fmt.Errorf("read %s: %w", what, err)
		}
		items = append(items, x)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", what, err)
	}
	more := len(items) > p.limit
	if more {
		items = items[:p.limit]
	}
	return items, more, nil
}

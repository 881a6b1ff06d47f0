package historysink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// DropOlderThan enforces retention on the history tables (Tables()) of
// conn's database: it drops every month partition older than months full
// months, so that at least the last `months` months are kept. With months
// 12 in March 2026, partitions before March 2025 go; March 2025 stays.
//
// Dropping a partition is how retention works on ClickHouse 18.16, which
// has no TTL; it is cheap (files are unlinked) and safe to run from several
// sinks at once (a partition already gone is not an error). It returns the
// partitions it dropped as "table/YYYYMM".
func DropOlderThan(ctx context.Context, conn driver.Conn, months int) ([]string, error) {
	return dropOlderThan(ctx, conn, months, time.Now())
}

func dropOlderThan(ctx context.Context, conn driver.Conn, months int, now time.Time) ([]string, error) {
	if months < 1 {
		return nil, fmt.Errorf("history retention: months must be at least 1, got %d", months)
	}
	cutoff := retentionCutoff(now, months)
	rows, err := conn.Query(ctx, `SELECT DISTINCT table, partition FROM system.parts
		WHERE database = currentDatabase() AND active AND has(?, table)`, Tables())
	if err != nil {
		return nil, fmt.Errorf("history retention: list partitions: %w", err)
	}
	type part struct {
		table string
		month int
	}
	var old []part
	for rows.Next() {
		var table, partition string
		if err := rows.Scan(&table, &partition); err != nil {
			rows.Close()
			return nil, fmt.Errorf("history retention: list partitions: %w", err)
		}
		month, err := strconv.Atoi(partition)
		if err != nil {
			// Not a toYYYYMM partition: not ours to judge.
			continue
		}
		if month < cutoff {
			old = append(old, part{table, month})
		}
	}
	err = errors.Join(rows.Err(), rows.Close())
	if err != nil {
		return nil, fmt.Errorf("history retention: list partitions: %w", err)
	}
	var dropped []string
	for _, p := range old {
		// The partition value of toYYYYMM is a number; table names come
		// from Tables(), not from input.
		if err := conn.Exec(ctx, "ALTER TABLE "+p.table+" DROP PARTITION "+strconv.Itoa(p.month)); err != nil {
			return dropped, fmt.Errorf("history retention: drop %s partition %d: %w", p.table, p.month, err)
		}
		dropped = append(dropped, p.table+"/"+strconv.Itoa(p.month))
	}
	return dropped, nil
}

// retentionCutoff is the first month (YYYYMM) kept.
func retentionCutoff(now time.Time, months int) int {
	now = now.UTC()
	first := time.Date(now.Year(), now.Month()-time.Month(months), 1, 0, 0, 0, 0, time.UTC)
	return first.Year()*100 + int(first.Month())
}

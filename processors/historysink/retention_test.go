package historysink

import (
	"context"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/schemas"
)

func TestRetentionCutoff(t *testing.T) {
	tests := []struct {
		name   string
		now    time.Time
		months int
		want   int
	}{
		{"twelve months keep the same month last year", time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC), 12, 202503},
		{"one month keeps last month", time.Date(2026, 3, 31, 23, 0, 0, 0, time.UTC), 1, 202602},
		{"crossing a year", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 3, 202510},
		{"end of a long month does not skip February", time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC), 1, 202602},
		{"other zones count in UTC", time.Date(2026, 4, 1, 1, 0, 0, 0, time.FixedZone("CEST", 2*3600)), 1, 202602},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retentionCutoff(tt.now, tt.months); got != tt.want {
				t.Fatalf("retentionCutoff(%v, %d) = %d, want %d", tt.now, tt.months, got, tt.want)
			}
		})
	}
}

// seedMonths inserts one availability change and one delivery per month
// given, directly (not through Kafka).
func seedMonths(t *testing.T, conn driver.Conn, months ...time.Time) {
	t.Helper()
	b := newTables()
	for i, m := range months {
		e := &event{id: "e" + strconv.Itoa(i), typ: schemas.HistoryAvailabilityChanged, at: m}
		if err := b.route(e, mustJSON(t, schemas.AvailabilityChanged{SupplierID: "s1"})); err != nil {
			t.Fatal(err)
		}
		e = &event{id: "d" + strconv.Itoa(i), typ: schemas.HistoryDeliveryAttempt, at: m}
		if err := b.route(e, mustJSON(t, schemas.DeliveryAttempt{Subscriber: "sub"})); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range b.all {
		if tb.n > 0 {
			if err := sendTable(context.Background(), conn, []*table{tb}, tb.n); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func partitions(t *testing.T, conn driver.Conn, table string) []string {
	t.Helper()
	var out []string
	for _, r := range query(t, conn, "SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() AND active AND table = ? ORDER BY partition", table) {
		out = append(out, r[0])
	}
	return out
}

func TestDropOlderThan_DropsOnlyExpiredMonths(t *testing.T) {
	conn := openClickHouse(t, testharness.ClickHouse(t))
	month := func(y int, m time.Month) time.Time { return time.Date(y, m, 10, 12, 0, 0, 0, time.UTC) }
	seedMonths(t, conn, month(2024, 1), month(2025, 2), month(2025, 3), month(2026, 2), month(2026, 3))
	now := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)

	dropped, err := dropOlderThan(context.Background(), conn, 12, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(dropped)
	wantDropped := []string{"history_availability_changes/202401", "history_availability_changes/202502", "history_deliveries/202401", "history_deliveries/202502"}
	if !slices.Equal(dropped, wantDropped) {
		t.Errorf("dropped %v, want %v", dropped, wantDropped)
	}
	for _, table := range []string{TableAvailability, TableDeliveries} {
		if got, want := partitions(t, conn, table), []string{"202503", "202602", "202603"}; !slices.Equal(got, want) {
			t.Errorf("%s partitions = %v, want %v", table, got, want)
		}
	}
	// A second run has nothing left to drop.
	if again, err := dropOlderThan(context.Background(), conn, 12, now); err != nil || len(again) != 0 {
		t.Errorf("second run dropped %v (err %v), want nothing", again, err)
	}
}

func TestDropOlderThan_RejectsLessThanOneMonth(t *testing.T) {
	for _, months := range []int{0, -1} {
		if _, err := DropOlderThan(context.Background(), nil, months); err == nil || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("DropOlderThan(%d) err = %v, want a refusal", months, err)
		}
	}
}

// TestSink_RetentionDropsOldPartitions: a sink with RetentionMonths runs
// retention at start.
func TestSink_RetentionDropsOldPartitions(t *testing.T) {
	e := newEnv(t)
	now := time.Now().UTC()
	old := now.AddDate(-3, 0, 0)
	seedMonths(t, e.conn, old, now)
	run := runSink(t, e.brokers, e.conn, Options{RetentionMonths: 24})
	testharness.Eventually(t, 30*time.Second, "old partitions dropped", func() bool {
		return counterValue(t, run.reg, "switchback_history_partitions_dropped_total", nil) == 2
	})
	if got := query(t, e.conn, "SELECT count() FROM history_deliveries FINAL"); got[0][0] != "1" {
		t.Errorf("rows left = %s, want the current month's 1", got[0][0])
	}
}

// TestHistoryTables_MigrationRunsTwice: two tiers starting together may
// both apply 0002 (ClickHouse has no locks); every statement must be safe
// to run again.
func TestHistoryTables_MigrationRunsTwice(t *testing.T) {
	conn := openClickHouse(t, testharness.ClickHouse(t))
	body, err := fs.ReadFile(schemas.ClickHouseFS(), "0002_history_tables.sql")
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, s := range strings.Split(string(body), ";\n") {
		var kept []string
		for _, line := range strings.Split(s, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				kept = append(kept, line)
			}
		}
		if s := strings.TrimSpace(strings.Join(kept, "\n")); s != "" {
			stmts = append(stmts, s)
		}
	}
	if len(stmts) != len(Tables())-1 {
		t.Fatalf("0002 has %d statements, want one per table besides history_events (%d)", len(stmts), len(Tables())-1)
	}
	for _, s := range stmts {
		if err := conn.Exec(context.Background(), s); err != nil {
			t.Errorf("second run of %.60q: %v", s, err)
		}
	}
}

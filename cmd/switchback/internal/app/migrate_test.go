package app

import (
	"bytes"
	"context"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/config"
	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
	"github.com/switchbackhq/switchback/schemas"
)

// One clickhouse-server for the package's integration tests, a database
// per test.
func TestMain(m *testing.M) { testharness.Main(m) }

// TestMigrate_AppliesEverySchemaFileThenReportsUpToDate is `switchback
// migrate` against a real clickhouse-server: the configuration as the
// command loads it, every file of schemas/clickhouse applied and named in
// the output, every table they create present, and a second run that
// applies nothing and says so.
func TestMigrate_AppliesEverySchemaFileThenReportsUpToDate(t *testing.T) {
	url := testharness.ClickHouse(t)
	cfg, err := config.Load("switchback migrate", nil, func(k string) string {
		if k == "SWITCHBACK_CLICKHOUSE_URL" {
			return url
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var out bytes.Buffer
	if err := Migrate(ctx, cfg, &out); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	files, err := fs.Glob(schemas.ClickHouseFS(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("schema files: %v %v", files, err)
	}
	var wantTables []string
	createTable := regexp.MustCompile(`(?i)CREATE TABLE IF NOT EXISTS\s+([a-z0-9_]+)`)
	for _, f := range files {
		if !strings.Contains(out.String(), "applied "+f+"\n") {
			t.Errorf("output does not say %s was applied:\n%s", f, out.String())
		}
		b, err := fs.ReadFile(schemas.ClickHouseFS(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createTable.FindAllStringSubmatch(string(b), -1) {
			wantTables = append(wantTables, m[1])
		}
	}
	if len(wantTables) == 0 {
		t.Fatal("no CREATE TABLE found in the schema files")
	}

	conn, err := warehouse.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	have := map[string]bool{}
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase()")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		have[n] = true
	}
	rows.Close()
	for _, tbl := range append(wantTables, "schema_migrations") {
		if !have[tbl] {
			t.Errorf("table %s missing after migrate (have %v)", tbl, have)
		}
	}

	out.Reset()
	if err := Migrate(ctx, cfg, &out); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if got := out.String(); got != "ClickHouse schema is up to date; nothing applied\n" {
		t.Errorf("second migrate printed %q", got)
	}
}

func TestMigrate_WithoutClickHouseURLExplainsEmbeddedMode(t *testing.T) {
	err := Migrate(context.Background(), config.Config{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "SWITCHBACK_CLICKHOUSE_URL") {
		t.Fatalf("err = %v, want one naming SWITCHBACK_CLICKHOUSE_URL", err)
	}
}

package warehouse_test

import (
	"context"
	"io/fs"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
	"github.com/switchbackhq/switchback/schemas"
)

// One clickhouse-server for the whole package, a database per test.
func TestMain(m *testing.M) { testharness.Main(m) }

func open(t *testing.T) driver.Conn {
	t.Helper()
	url := testharness.ClickHouse(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := warehouse.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func migrate(t *testing.T, conn driver.Conn, fsys fs.FS) []string {
	t.Helper()
	applied, err := warehouse.Migrate(context.Background(), conn, fsys)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return applied
}

func tables(t *testing.T, conn driver.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

func TestMigrate_AppliesHistoryEvents(t *testing.T) {
	conn := open(t)
	applied := migrate(t, conn, schemas.ClickHouseFS())
	if want := migrationFiles(t); !reflect.DeepEqual(applied, want) {
		t.Fatalf("applied = %v, want every file of schemas/clickhouse in order: %v", applied, want)
	}
	got := tables(t, conn)
	for _, want := range []string{"history_events", "schema_migrations"} {
		if !slices.Contains(got, want) {
			t.Errorf("tables = %v, want %s among them", got, want)
		}
	}
}

// migrationFiles lists the project's DDL files, sorted as Migrate applies
// them, so these tests follow the schema as it grows.
func migrationFiles(t *testing.T) []string {
	t.Helper()
	files, err := fs.Glob(schemas.ClickHouseFS(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations in schemas/clickhouse: %v", err)
	}
	sort.Strings(files)
	return files
}

func TestMigrate_SecondRunIsNoOp(t *testing.T) {
	conn := open(t)
	migrate(t, conn, schemas.ClickHouseFS())
	if applied := migrate(t, conn, schemas.ClickHouseFS()); len(applied) != 0 {
		t.Fatalf("second run applied %v, want nothing", applied)
	}
	var n uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := uint64(len(migrationFiles(t))); n != want {
		t.Fatalf("schema_migrations has %d rows, want %d (one per file)", n, want)
	}
}

func TestMigrate_ChangedChecksumIsErrorNamingTheFile(t *testing.T) {
	conn := open(t)
	fsys := fstest.MapFS{
		"0001_a.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS a (x UInt8) ENGINE = Memory;\n")},
	}
	migrate(t, conn, fsys)
	fsys["0001_a.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS a (x UInt16) ENGINE = Memory;\n")}
	fsys["0002_b.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS b (x UInt8) ENGINE = Memory;\n")}
	applied, err := warehouse.Migrate(context.Background(), conn, fsys)
	if err == nil || !strings.Contains(err.Error(), "0001_a.sql") {
		t.Fatalf("Migrate of a changed file: applied %v, err %v; want an error naming 0001_a.sql", applied, err)
	}
	// The check runs before anything new is applied.
	if got, want := tables(t, conn), []string{"a", "schema_migrations"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("0002_b.sql applied despite the changed 0001: %v", got)
	}
}

func TestMigrate_AppliesFilesInNumericOrderWithSeveralStatements(t *testing.T) {
	conn := open(t)
	fsys := fstest.MapFS{
		// 10 after 9: numeric, not lexical, order. 10 depends on 9's table.
		"10_second.sql": {Data: []byte("INSERT INTO t (x) SELECT max(x) + 1 FROM t;\n")},
		"9_first.sql": {Data: []byte(`-- two statements, comments, a ';' inside a line
CREATE TABLE IF NOT EXISTS t (x UInt32, s String DEFAULT 'a;b') ENGINE = MergeTree ORDER BY x;
-- seed
INSERT INTO t (x) SELECT 41;
`)},
		"README.md": {Data: []byte("not a migration")},
	}
	applied := migrate(t, conn, fsys)
	if want := []string{"9_first.sql", "10_second.sql"}; !reflect.DeepEqual(applied, want) {
		t.Fatalf("applied = %v, want %v", applied, want)
	}
	var got uint32
	if err := conn.QueryRow(context.Background(), "SELECT max(x) FROM t").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != 42 {
		t.Fatalf("max(x) = %d, want 42 (statements ran in order)", got)
	}
}

func TestMigrate_FailedStatementIsNotRecorded(t *testing.T) {
	conn := open(t)
	fsys := fstest.MapFS{
		"0001_bad.sql": {Data: []byte("CREATE TABLE bad (x DateTime64(3)) ENGINE = Memory;\n")},
	}
	if _, err := warehouse.Migrate(context.Background(), conn, fsys); err == nil || !strings.Contains(err.Error(), "0001_bad.sql") {
		t.Fatalf("err = %v, want an error naming 0001_bad.sql", err)
	}
	fsys["0001_bad.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE IF NOT EXISTS bad (x DateTime) ENGINE = Memory;\n")}
	if applied := migrate(t, conn, fsys); len(applied) != 1 {
		t.Fatalf("fixed file not applied after a failure: %v", applied)
	}
}

func TestMigrate_RerunAfterHalfwayFailureSkipsDoneAlters(t *testing.T) {
	conn := open(t)
	migrate(t, conn, fstest.MapFS{"0001_t.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS t (x UInt8, old String) ENGINE = MergeTree ORDER BY x;\n")}})
	// Both ALTERs take effect, then the third statement fails: the file is
	// not recorded and runs again from its start once fixed.
	fsys := fstest.MapFS{"0001_t.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS t (x UInt8, old String) ENGINE = MergeTree ORDER BY x;\n")},
		"0002_cols.sql": {Data: []byte("ALTER TABLE t ADD COLUMN y String;\nALTER TABLE t DROP COLUMN old;\nSELECT no_such_column FROM t;\n")}}
	if _, err := warehouse.Migrate(context.Background(), conn, fsys); err == nil || !strings.Contains(err.Error(), "0002_cols.sql, statement 3") {
		t.Fatalf("err = %v, want statement 3 of 0002_cols.sql", err)
	}
	fsys["0002_cols.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE t ADD COLUMN y String;\nALTER TABLE t DROP COLUMN old;\nSELECT y FROM t;\n")}
	if applied := migrate(t, conn, fsys); !reflect.DeepEqual(applied, []string{"0002_cols.sql"}) {
		t.Fatalf("applied = %v, want [0002_cols.sql]", applied)
	}
}

func TestMigrate_RejectsBadFiles(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"name without number", fstest.MapFS{"history.sql": {Data: []byte("SELECT 1;")}}, "history.sql"},
		{"duplicate version", fstest.MapFS{"0001_a.sql": {Data: []byte("SELECT 1;")}, "1_b.sql": {Data: []byte("SELECT 1;")}}, "share version 1"},
		{"only comments", fstest.MapFS{"0001_a.sql": {Data: []byte("-- nothing\n")}}, "no statement"},
		{"insert values hangs on 18.16", fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS a (x UInt8) ENGINE = Memory;\ninsert into a (x) values (1);\n")}}, "statement 2: INSERT ... VALUES"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Files are checked before the connection is used.
			_, err := warehouse.Migrate(context.Background(), nil, tt.fsys)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one without semicolon", "SELECT 1", []string{"SELECT 1"}},
		{"two", "SELECT 1;\nSELECT 2;\n", []string{"SELECT 1", "SELECT 2"}},
		{"trailing spaces and CRLF", "SELECT 1;  \r\nSELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"semicolon inside a line stays", "SELECT ';' AS s;\n", []string{"SELECT ';' AS s"}},
		{"comment lines dropped", "-- a;\nSELECT 1; -- b;\n  -- c\nSELECT 2 -- d\n", []string{"SELECT 1", "SELECT 2 -- d"}},
		{"multi-line statement", "CREATE TABLE t\n(\n  x UInt8\n)\nENGINE = Memory;\n", []string{"CREATE TABLE t\n(\n  x UInt8\n)\nENGINE = Memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := warehouse.SplitStatements(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHistoryEvents_BatchInsertReadsBackAndReplayDoesNotDouble(t *testing.T) {
	conn := open(t)
	migrate(t, conn, schemas.ClickHouseFS())
	ctx := context.Background()
	type event struct {
		ID, Type, Key string
		At            time.Time
		Ms            int64
		Source        string
		Payload       string
	}
	at := time.Date(2026, 3, 31, 23, 59, 59, 0, time.UTC)
	events := []event{
		{"e1", "availability.changed", "sup1/prod1", at, at.UnixMilli() + 123, "processor", `{"vacancies":3}`},
		{"e2", "notification.delivered", "sub9", at.Add(time.Second), at.Add(time.Second).UnixMilli(), "dispatcher", `{"status":200}`},
	}
	insert := func(evs []event) {
		t.Helper()
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO history_events (event_id, type, key, occurred_at, occurred_ms, source, payload)")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if err := batch.Append(e.ID, e.Type, e.Key, e.At, e.Ms, e.Source, e.Payload); err != nil {
				t.Fatal(err)
			}
		}
		if err := batch.Send(); err != nil {
			t.Fatal(err)
		}
	}
	insert(events)
	insert(events[:1]) // the history topic redelivered e1

	rows, err := conn.Query(ctx, "SELECT event_id, type, key, occurred_at, occurred_ms, source, payload FROM history_events FINAL ORDER BY event_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []event
	for rows.Next() {
		var e event
		if err := rows.Scan(&e.ID, &e.Type, &e.Key, &e.At, &e.Ms, &e.Source, &e.Payload); err != nil {
			t.Fatal(err)
		}
		e.At = e.At.UTC()
		got = append(got, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, events) {
		t.Fatalf("read back (FINAL)\n got %+v\nwant %+v", got, events)
	}
	// After a merge the replayed row is gone without FINAL too.
	if err := conn.Exec(ctx, "OPTIMIZE TABLE history_events FINAL"); err != nil {
		t.Fatal(err)
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM history_events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("count() after OPTIMIZE FINAL = %d, want 2", n)
	}
}

func TestOpen_CreatesMissingDatabase(t *testing.T) {
	base := testharness.ClickHouse(t)
	url := base + "_created"
	ctx := context.Background()
	conn, err := warehouse.Open(ctx, url)
	if err != nil {
		t.Fatalf("Open of a missing database: %v", err)
	}
	defer conn.Close()
	t.Cleanup(func() { _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+url[strings.LastIndex(url, "/")+1:]+"`") })
	var db string
	if err := conn.QueryRow(ctx, "SELECT currentDatabase()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(db, "_created") {
		t.Fatalf("currentDatabase() = %q", db)
	}
	if err := warehouse.Ping(ctx, url); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestOpen_RejectsBadURLsWithoutLeakingPasswords(t *testing.T) {
	tests := []struct {
		name, url, want string
	}{
		{"http scheme", "http://u:s3cret@127.0.0.1:8123/db", "clickhouse://"},
		{"bad database name", "clickhouse://u:s3cret@127.0.0.1:9000/a-b", "database name"},
		{"unreachable", "clickhouse://u:s3cret@127.0.0.1:1/db?dial_timeout=500ms", "ping clickhouse"},
		{"garbage", "clickhouse://u:s3cret@[::1/db", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := warehouse.Open(ctx, tt.url)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"clickhouse://u:pw@h:9000/db", "clickhouse://u:xxxxx@h:9000/db"},
		{"clickhouse://u@h:9000/db", "clickhouse://u@h:9000/db"},
		{"clickhouse://h1:9000,h2:9000/db", "clickhouse://h1:9000,h2:9000/db"},
		{"clickhouse://u:p@ss@h1:9000,h2:9000/db", "clickhouse://u:xxxxx@h1:9000,h2:9000/db"},
		{"nonsense", "(unparsable URL)"},
	}
	for _, tt := range tests {
		if got := warehouse.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

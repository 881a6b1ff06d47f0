package warehouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// The record of applied migrations. Plain MergeTree: ClickHouse has no
// transactions or locks, so two tiers starting together may both apply and
// record a file; every row is kept (an audit of who applied what) and all of
// a version's rows are checked. The ORDER BY clause form (rather than the
// MergeTree(date, key, 8192) form) is accepted by 18.16 and current
// releases alike.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version String,
    name String,
    checksum String,
    applied_at DateTime
) ENGINE = MergeTree ORDER BY version`

// migrationName is NNNN_name.sql; the number orders the files.
var migrationName = regexp.MustCompile(`^([0-9]+)_([A-Za-z0-9_]+)\.sql$`)

// statementEnd is a ';' that ends a line (a trailing "-- comment" allowed):
// how a file separates statements. ClickHouse runs one statement per query.
var statementEnd = regexp.MustCompile(`;[ \t]*(--[^\n]*)?(\r?\n|$)`)

// insertWithData is an INSERT carrying its rows in the query text. Over the
// native protocol ClickHouse 18.16 never answers one sent by clickhouse-go's
// Exec (the connection waits until its deadline), so migrations seed data
// with INSERT ... SELECT instead, which both versions run.
var insertWithData = regexp.MustCompile(`(?is)^INSERT\s+INTO\s+[^\s(]+(\s*\([^)]*\))?\s*(VALUES|FORMAT)\b`)

// ClickHouse 18.16 has no ALTER ... ADD COLUMN IF NOT EXISTS nor DROP
// COLUMN IF EXISTS, so a file re-run after a half-way failure would stop at
// its own earlier ALTER. These say that such an ALTER already took effect
// (same messages on 18.16 and current releases).
var (
	addColumn  = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+\S+\s+ADD\s+COLUMN\s`)
	dropColumn = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+\S+\s+DROP\s+COLUMN\s`)
)

type migration struct {
	version  string
	number   int
	file     string
	checksum string
	stmts    []string
}

// Migrate applies, in order, the NNNN_name.sql files of migrations that the
// schema_migrations table of conn's database does not record yet, and
// returns the names of the files it applied. A second run applies nothing.
// A recorded file whose content changed since is an error naming the file:
// applied migrations are history, a change goes into a new file.
//
// A file holds one or more statements, each ended by ';' at the end of a
// line; lines that start with "--" are comments. A file is recorded only
// after all its statements succeeded, so a file that failed half-way is run
// again from its start: write statements that can run twice
// (CREATE TABLE IF NOT EXISTS), which also covers two tiers migrating at
// the same moment. ALTER TABLE ... ADD COLUMN / DROP COLUMN, which have no
// IF [NOT] EXISTS on 18.16, are treated as done when the server says the
// column already exists / is already gone. Rows are seeded with
// INSERT ... SELECT: INSERT ... VALUES is rejected (it hangs on 18.16).
func Migrate(ctx context.Context, conn driver.Conn, migrations fs.FS) (applied []string, err error) {
	files, err := loadMigrations(migrations)
	if err != nil {
		return nil, err
	}
	if err := conn.Exec(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	done, err := appliedChecksums(ctx, conn)
	if err != nil {
		return nil, err
	}
	// Every applied file is checked before anything runs, so a tampered
	// file stops the migration before the schema moves further.
	var pending []migration
	for _, m := range files {
		sums, ok := done[m.version]
		if !ok {
			pending = append(pending, m)
			continue
		}
		for _, sum := range sums {
			if sum != m.checksum {
				return nil, fmt.Errorf("migration %s was changed after it was applied (recorded checksum %.12s, file now %.12s): add a new migration instead", m.file, sum, m.checksum)
			}
		}
	}
	for _, m := range pending {
		for i, stmt := range m.stmts {
			if err := conn.Exec(ctx, stmt); err != nil && !alreadyDone(stmt, err) {
				return applied, fmt.Errorf("migration %s, statement %d: %w", m.file, i+1, err)
			}
		}
		if err := record(ctx, conn, m); err != nil {
			return applied, fmt.Errorf("record migration %s: %w", m.file, err)
		}
		applied = append(applied, m.file)
	}
	return applied, nil
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		// A .sql file that does not follow the pattern would otherwise be
		// skipped silently and its schema never created.
		sm := migrationName.FindStringSubmatch(e.Name())
		if sm == nil {
			return nil, fmt.Errorf("migration file %s: name must be NNNN_name.sql", e.Name())
		}
		n, err := strconv.Atoi(sm[1])
		if err != nil {
			return nil, fmt.Errorf("migration file %s: %w", e.Name(), err)
		}
		if other, dup := seen[n]; dup {
			return nil, fmt.Errorf("migration files %s and %s share version %d", other, e.Name(), n)
		}
		seen[n] = e.Name()
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(body)
		stmts := splitStatements(string(body))
		if len(stmts) == 0 {
			return nil, fmt.Errorf("migration %s has no statement", e.Name())
		}
		for i, st := range stmts {
			if insertWithData.MatchString(st) {
				return nil, fmt.Errorf("migration %s, statement %d: INSERT ... VALUES/FORMAT hangs on ClickHouse 18.16 over the native protocol; use INSERT ... SELECT", e.Name(), i+1)
			}
		}
		out = append(out, migration{version: sm[1], number: n, file: e.Name(), checksum: hex.EncodeToString(sum[:]), stmts: stmts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	return out, nil
}

// splitStatements drops whole-line comments (a statement made only of
// comments is an "Empty query" error) and splits at ';' line ends.
func splitStatements(body string) []string {
	var kept []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		kept = append(kept, line)
	}
	var stmts []string
	for _, s := range statementEnd.Split(strings.Join(kept, "\n"), -1) {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// alreadyDone reports whether err says that stmt's ALTER had taken effect in
// an earlier, interrupted run of its file.
func alreadyDone(stmt string, err error) bool {
	msg := err.Error()
	switch {
	case addColumn.MatchString(stmt):
		return strings.Contains(msg, "column with this name already exists")
	case dropColumn.MatchString(stmt):
		return strings.Contains(msg, "Cannot find column")
	}
	return false
}

// appliedChecksums maps each recorded version to the checksums recorded
// for it (more than one row when two processes applied it at once).
func appliedChecksums(ctx context.Context, conn driver.Conn) (map[string][]string, error) {
	rows, err := conn.Query(ctx, "SELECT version, checksum FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	done := map[string][]string{}
	for rows.Next() {
		var version, sum string
		if err := rows.Scan(&version, &sum); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		done[version] = append(done[version], sum)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return done, nil
}

func record(ctx context.Context, conn driver.Conn, m migration) error {
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO schema_migrations (version, name, checksum, applied_at)")
	if err != nil {
		return err
	}
	if err := batch.Append(m.version, m.file, m.checksum, time.Now().UTC()); err != nil {
		_ = batch.Abort()
		return err
	}
	return batch.Send()
}

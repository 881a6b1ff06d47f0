package schemas

import (
	"embed"
	"io/fs"
)

// ClickHouseMigrations holds the ClickHouse DDL as numbered files,
// clickhouse/NNNN_name.sql, applied in order by warehouse.Migrate. An
// applied file is never edited (Migrate rejects a changed checksum): a
// schema change is a new file. Statements must run on ClickHouse 18.16 (what
// Debian ships) and current releases alike, and must be safe to run twice
// (IF NOT EXISTS): see warehouse.Migrate.
//
//go:embed clickhouse/*.sql
var ClickHouseMigrations embed.FS

// ClickHouseFS is ClickHouseMigrations rooted at the clickhouse directory,
// the shape warehouse.Migrate reads.
func ClickHouseFS() fs.FS {
	sub, err := fs.Sub(ClickHouseMigrations, "clickhouse")
	if err != nil {
		// Only an invalid literal path can fail here.
		panic(err)
	}
	return sub
}

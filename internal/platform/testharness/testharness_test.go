package testharness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/testharness"
)

func TestMain(m *testing.M) { testharness.Main(m) }

func TestRedis_URLAnswersPing(t *testing.T) {
	opts, err := redis.ParseURL(testharness.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestClickHouse_TestsShareOneServerWithADatabaseEach(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	var urls []string
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			u := testharness.ClickHouse(t)
			urls = append(urls, u)
			opts, err := clickhouse.ParseDSN(u)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := clickhouse.Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The database exists: the URL is usable without warehouse.Open.
			if err := conn.Exec(ctx, "CREATE TABLE x (a UInt8) ENGINE = Memory"); err != nil {
				t.Fatal(err)
			}
		})
	}
	if len(urls) != 2 {
		t.Fatalf("urls = %v", urls)
	}
	server := func(u string) string { return u[:strings.LastIndex(u, "/")] }
	if server(urls[0]) != server(urls[1]) || urls[0] == urls[1] {
		t.Fatalf("want one server, two databases: %v", urls)
	}
	// Each subtest's database was dropped when it ended.
	opts, _ := clickhouse.ParseDSN(server(urls[0]) + "/default")
	conn, err := clickhouse.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	db := urls[0][strings.LastIndex(urls[0], "/")+1:]
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM system.databases WHERE name = ?", db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s left behind", db)
	}
}

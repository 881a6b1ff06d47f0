package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchbackhq/switchback/internal/platform/backoff"
	"github.com/switchbackhq/switchback/internal/platform/config"
	"github.com/switchbackhq/switchback/internal/platform/embedded"
	"github.com/switchbackhq/switchback/internal/platform/kafkabroker"
	"github.com/switchbackhq/switchback/internal/platform/ops"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/views"
	"github.com/switchbackhq/switchback/internal/platform/warehouse"
	"github.com/switchbackhq/switchback/schemas"
)

// ClusterStateReload is how often the cluster client re-reads the slot
// map (see newRedisClient).
const ClusterStateReload = time.Second

// minRedisPool is the least Redis connection pool of a process (see
// startDeps).
const minRedisPool = 256

// deps are the servers and clients every tier shares.
type deps struct {
	brokers     []string
	kafkaDial   stream.Dial // the embedded broker's in-process dial; nil: TCP
	kafkaMode   ops.Mode
	redisURL    string
	redisAddr   string // what the banner and /readyz show: no password; the cluster's seeds or the sentinels
	redisKind   string
	redisMode   ops.Mode
	redis       redis.UniversalClient
	clickhouse  driver.Conn // nil when history is parked on its topic
	chMode      ops.Mode
	chURL       string
	producer    *stream.Producer
	streamStats *stream.Metrics
	// views guards the Redis views (rebuilt from Kafka at start and after
	// Redis lost them); its OnConnect hook is on the Redis client.
	views *views.Guard
}

// startDeps brings up (embedded) or reaches (external) Kafka, Redis and
// ClickHouse. External servers are retried with backoff until ctx ends, with
// /readyz saying what is still down meanwhile.
func startDeps(ctx context.Context, cfg config.Config, allowEmbedded, needClickHouse bool, log *slog.Logger, reg prometheus.Registerer, ready *ops.Readiness, closers *closeStack) (*deps, error) {
	d := &deps{streamStats: stream.NewMetrics(reg)}
	st := depStarter{cfg: cfg, allowEmbedded: allowEmbedded, log: log, reg: reg, ready: ready, closers: closers}
	// Declare every dependency before reaching any, so that /readyz never
	// says ready while one is still being started.
	ready.Set("kafka", ops.Component{Kind: "kafka", Required: true}, nil)
	ready.Set("redis", ops.Component{Kind: "redis", Required: true}, nil)
	ready.Set("views", ops.Component{Kind: "views", Required: true}, nil)
	if needClickHouse {
		ready.Set("clickhouse", ops.Component{Kind: "clickhouse", Required: true}, nil)
	}
	if err := st.reachKafka(ctx, d); err != nil {
		return nil, err
	}
	if err := st.reachRedis(ctx, d); err != nil {
		return nil, err
	}
	// ClickHouse: only the tiers that write or read history (process, query)
	// use it, so ingest and dispatch neither wait for it nor migrate.
	if !needClickHouse {
		return d, nil
	}
	if err := st.reachClickHouse(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// depStarter is what startDeps's steps share: the configuration, where
// they report (log, metrics, /readyz) and the stack their closers go on.
type depStarter struct {
	cfg           config.Config
	allowEmbedded bool
	log           *slog.Logger
	reg           prometheus.Registerer
	ready         *ops.Readiness
	closers       *closeStack
}

// reachKafka starts the embedded broker or takes the configured ones, waits
// until the topics exist and makes the producer.
func (st depStarter) reachKafka(ctx context.Context, d *deps) error {
	if err := st.kafkaBrokers(ctx, d); err != nil {
		return err
	}
	brokers := d.brokers
	st.ready.Set("kafka", ops.Component{Mode: d.kafkaMode, Kind: "kafka", Address: brokers[0], Required: true},
		func(ctx context.Context) error { return stream.Ping(ctx, brokers) })
	st.log.Info("creating topics", "brokers", brokers, "topics", len(schemas.Topics()))
	if err := retry(ctx, st.log, "kafka", func(ctx context.Context) error {
		return stream.EnsureTopics(ctx, brokers, schemas.Topics())
	}); err != nil {
		return err
	}
	d.streamStats.DeclareTopics(schemas.TopicNames())
	d.producer = stream.NewProducer(stream.ProducerConfig{Brokers: brokers, Dial: d.kafkaDial, Logger: st.log.With("part", "producer"), Metrics: d.streamStats})
	st.closers.push("kafka producer (flush)", func(context.Context) error { return d.producer.Close() })
	return nil
}

// kafkaBrokers sets d.brokers and d.kafkaMode: the embedded broker's
// address once started, or the configured brokers.
func (st depStarter) kafkaBrokers(ctx context.Context, d *deps) error {
	cfg := st.cfg
	if !cfg.EmbeddedKafka() || !st.allowEmbedded {
		d.brokers, d.kafkaMode = cfg.KafkaBrokers, ops.ModeExternal
		return nil
	}
	dir, err := dataPath(cfg, "kafka")
	if err != nil {
		return err
	}
	// Development only: loopback, and the principals topic written by
	// this process alone (kafkabroker's guard).
	b, err := kafkabroker.Start(ctx, kafkabroker.Options{Addr: cfg.EmbeddedKafkaAddr, DataDir: dir, Logger: st.log.With("part", "kafka"),
		Protected: []string{schemas.TopicPrincipals}, Trust: kafkabroker.TrustProcess})
	if err != nil {
		return fmt.Errorf("embedded Kafka broker on SWITCHBACK_EMBEDDED_KAFKA_ADDR %s: %w", cfg.EmbeddedKafkaAddr, err)
	}
	st.closers.push("embedded kafka broker", func(context.Context) error { b.Close(); return nil })
	// This process's clients reach the broker in-process (no TCP); other
	// processes (the tiers apart, tools) over its address.
	d.brokers, d.kafkaDial, d.kafkaMode = []string{b.Addr()}, b.Dial, ops.ModeEmbedded
	return nil
}

// reachRedis starts the embedded server or takes the configured one, makes the
// client with the views guard on it, and waits until Redis answers.
func (st depStarter) reachRedis(ctx context.Context, d *deps) error {
	if err := st.redisServer(ctx, d); err != nil {
		return err
	}
	// The views guard reads its marker on every new connection before the
	// connection serves: a Redis restarted without its data (or from an
	// older snapshot) is seen on the first reconnect, not at the next
	// poll. /readyz says "rebuilding" until the views are complete.
	d.views = views.New(views.Options{Logger: st.log.With("part", "views"), Registerer: st.reg})
	rc, addr, err := newRedisClient(st.cfg, d.redisURL, d.views)
	if err != nil {
		return err
	}
	d.redis, d.redisAddr = rc, addr
	d.views.Bind(d.redis)
	guard := d.views
	st.ready.Set("views", ops.Component{Mode: d.redisMode, Kind: "views", Required: true}, func(ctx context.Context) error {
		if err := guard.Check(ctx); err != nil {
			return fmt.Errorf("%w: %w", ops.ErrRebuilding, err)
		}
		return nil
	})
	st.closers.push("redis client", func(context.Context) error { return d.redis.Close() })
	st.ready.Set("redis", ops.Component{Mode: d.redisMode, Kind: d.redisKind, Address: addr, Required: true},
		func(ctx context.Context) error { return rc.Ping(ctx).Err() })
	return retry(ctx, st.log, "redis", func(ctx context.Context) error { return rc.Ping(ctx).Err() })
}

// redisServer sets d.redisURL, d.redisKind and d.redisMode: the embedded
// server's once started, or the configured one.
func (st depStarter) redisServer(ctx context.Context, d *deps) error {
	cfg := st.cfg
	if !cfg.EmbeddedRedis() || !st.allowEmbedded {
		d.redisURL, d.redisKind, d.redisMode = cfg.RedisURL, "redis", ops.ModeExternal
		if cfg.RedisMode != "single" {
			d.redisKind = "redis-" + cfg.RedisMode
		}
		return nil
	}
	dir, err := dataPath(cfg, "redis")
	if err != nil {
		return err
	}
	r, err := embedded.StartRedis(ctx, embedded.RedisOptions{DataDir: dir, Logger: st.log.With("part", "redis"), PreferMiniredis: !cfg.EmbeddedChildren})
	if err != nil {
		return fmt.Errorf("embedded Redis: %w", err)
	}
	st.closers.push("embedded redis", func(context.Context) error { return r.Close() })
	d.redisURL, d.redisKind, d.redisMode = r.URL(), r.Kind(), ops.ModeEmbedded
	return nil
}

// reachClickHouse reaches ClickHouse and migrates it. It is optional: without
// it history waits on its topic (parked).
func (st depStarter) reachClickHouse(ctx context.Context, d *deps) error {
	d.chURL = st.cfg.ClickHouseURL
	d.chMode = ops.ModeExternal
	if d.chURL == "" && st.allowEmbedded && st.cfg.EmbeddedChildren {
		if err := st.embeddedClickHouse(ctx, d); err != nil {
			return err
		}
	}
	if d.chURL == "" {
		d.chMode = ops.ModeParked
		st.ready.Set("clickhouse", ops.Component{Mode: ops.ModeParked, Kind: "clickhouse", Required: false}, nil)
		st.log.Warn("no ClickHouse: history is parked on its topic until SWITCHBACK_CLICKHOUSE_URL is set or clickhouse-server is installed", "topic", schemas.TopicHistory)
		return nil
	}
	return st.connectClickHouse(ctx, d)
}

// embeddedClickHouse starts a clickhouse-server child and sets d.chURL
// and d.chMode; when it is not installed or fails to start, history is
// parked (d.chURL stays empty).
func (st depStarter) embeddedClickHouse(ctx context.Context, d *deps) error {
	cfg := st.cfg
	dir, err := dataPath(cfg, "")
	if err != nil {
		return err
	}
	st.log.Info("starting embedded clickhouse-server (first start can take several seconds)")
	ch, err := embedded.StartClickHouse(ctx, embedded.ClickHouseOptions{DataDir: dir, Port: cfg.EmbeddedClickHousePort(), Logger: st.log.With("part", "clickhouse")})
	switch {
	case errors.Is(err, embedded.ErrNotInstalled):
		d.chMode = ops.ModeParked
	case err != nil:
		// ClickHouse is for analysts; the pipeline runs without it and
		// history waits on its topic, so a failed child is not fatal.
		st.log.Error("embedded clickhouse-server failed to start; history is parked on its topic", "setting", "SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR", "addr", cfg.EmbeddedClickHouseAddr, "err", err)
		d.chMode = ops.ModeParked
	default:
		st.closers.push("embedded clickhouse", func(context.Context) error { return ch.Close() })
		d.chURL, d.chMode = ch.URL(), ops.ModeEmbedded
	}
	return nil
}

// connectClickHouse opens d.chURL and applies the migrations, retrying
// until it succeeds or ctx ends; /readyz says "not connected yet" until
// then.
func (st depStarter) connectClickHouse(ctx context.Context, d *deps) error {
	chURL := d.chURL
	var conn driver.Conn
	st.ready.Set("clickhouse", ops.Component{Mode: d.chMode, Kind: "clickhouse", Address: config.RedactURL(chURL), Required: true},
		func(ctx context.Context) error {
			if conn == nil {
				return errors.New("not connected yet")
			}
			return conn.Ping(ctx)
		})
	if err := retry(ctx, st.log, "clickhouse", func(ctx context.Context) error {
		c, err := warehouse.Open(ctx, chURL)
		if err != nil {
			return err
		}
		applied, err := warehouse.Migrate(ctx, c, schemas.ClickHouseFS())
		if err != nil {
			_ = c.Close()
			return err
		}
		if len(applied) > 0 {
			st.log.Info("clickhouse migrations applied", "files", applied)
		}
		conn = c
		return nil
	}); err != nil {
		return err
	}
	d.clickhouse = conn
	st.ready.Set("clickhouse", ops.Component{Mode: d.chMode, Kind: "clickhouse", Address: config.RedactURL(chURL), Required: true},
		func(ctx context.Context) error { return conn.Ping(ctx) })
	st.closers.push("clickhouse client", func(context.Context) error { return conn.Close() })
	return nil
}

// retry calls fn until it succeeds or ctx ends, backing off from 250 ms to
// 10 s and logging each failure, so that an external server that is down at
// start is waited for rather than crashing the tier.
func retry(ctx context.Context, log *slog.Logger, what string, fn func(ctx context.Context) error) error {
	b := backoff.New(250*time.Millisecond, 10*time.Second)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := fn(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				log.Info("dependency reachable", "dependency", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := b.Next()
		log.Warn("dependency not reachable; retrying", "dependency", what, "attempt", attempt, "retry_in", delay, "err", err)
		if err := backoff.Sleep(ctx, delay); err != nil {
			return err
		}
	}
}

// newRedisClient makes the Redis client of cfg.RedisMode over url (the
// embedded server's in single mode when SWITCHBACK_REDIS_URL is unset),
// with the views guard's OnConnect hook on every connection (every node's,
// on a cluster), and the address /readyz shows (no password).
//
// go-redis sizes its pool at 10 connections per CPU: on a 2-core box 20,
// which every API write, the processors and the dispatcher share. Under
// load the commands then wait for a connection rather than for Redis
// (measured: availability pushes at ~1,100/s with Redis at a third of a
// core). A pool_size in the URL still wins. On a cluster the pool is per
// node.
func newRedisClient(cfg config.Config, url string, g *views.Guard) (redis.UniversalClient, string, error) {
	pool := func(n int) int {
		if strings.Contains(url, "pool_size=") {
			return n
		}
		return max(n, minRedisPool)
	}
	switch cfg.RedisMode {
	case "cluster":
		copts, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, "", fmt.Errorf("invalid SWITCHBACK_REDIS_URL (cluster form redis://host1:port?addr=host2:port): %w", err)
		}
		copts.PoolSize = pool(copts.PoolSize)
		// go-redis re-reads the slot map every minute, or on a MOVED
		// answer; a dead master answers nothing, so without a shorter
		// interval its slots stay routed to it (every command failing,
		// 503) for up to a minute after its replica took over. One CLUSTER
		// SLOTS a second is cheap.
		copts.ClusterStateReloadInterval = ClusterStateReload
		// Each node's client gets the guard's hook with the node's address:
		// the guard keeps one marker per shard and a run id per node.
		copts.NewClient = func(o *redis.Options) *redis.Client {
			o.OnConnect = g.OnConnectNode(o.Addr)
			return redis.NewClient(o)
		}
		return redis.NewClusterClient(copts), "cluster " + strings.Join(copts.Addrs, ","), nil
	case "sentinel":
		fopts := &redis.FailoverOptions{MasterName: cfg.RedisSentinelMaster, SentinelAddrs: cfg.RedisSentinelAddrs}
		if url != "" {
			ropts, err := redis.ParseURL(url)
			if err != nil {
				return nil, "", fmt.Errorf("invalid SWITCHBACK_REDIS_URL: %w", err)
			}
			fopts.Username, fopts.Password, fopts.DB, fopts.TLSConfig = ropts.Username, ropts.Password, ropts.DB, ropts.TLSConfig
			fopts.PoolSize, fopts.DialTimeout, fopts.ReadTimeout, fopts.WriteTimeout = ropts.PoolSize, ropts.DialTimeout, ropts.ReadTimeout, ropts.WriteTimeout
		}
		fopts.PoolSize = pool(fopts.PoolSize)
		// The failover client talks to whichever server is the master now:
		// a promoted replica has a run id of its own, so the guard takes its
		// marker (written by the old master) for one of another server run
		// and rebuilds, as after a restart.
		fopts.OnConnect = g.OnConnect
		return redis.NewFailoverClient(fopts), "sentinel " + cfg.RedisSentinelMaster + "@" + strings.Join(cfg.RedisSentinelAddrs, ","), nil
	}
	ropts, err := redis.ParseURL(url)
	if err != nil {
		return nil, "", fmt.Errorf("invalid SWITCHBACK_REDIS_URL: %w", err)
	}
	ropts.OnConnect = g.OnConnect
	ropts.PoolSize = pool(ropts.PoolSize)
	return redis.NewClient(ropts), config.RedactURL(url), nil
}

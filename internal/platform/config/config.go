// Package config reads Switchback's settings from SWITCHBACK_* environment
// variables and the equivalent command-line flags (a flag wins over the
// environment), and validates them at start with a message naming the bad
// setting. It holds no global state: Load returns a value.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/outbound"
)

// Config is every setting of the binary. Unset external addresses mean
// embedded mode for that part.
type Config struct {
	KafkaBrokers []string
	RedisURL     string
	// RedisMode is how RedisURL is read: "single" (one server, or the
	// embedded one when RedisURL is unset), "cluster" (Redis Cluster:
	// RedisURL names seed nodes) or "sentinel" (a Sentinel-managed
	// master: RedisSentinelMaster and RedisSentinelAddrs).
	RedisMode string
	// RedisSentinelMaster and RedisSentinelAddrs find the master in
	// sentinel mode.
	RedisSentinelMaster string
	RedisSentinelAddrs  []string
	ClickHouseURL       string
	DataDir             string
	EmbeddedKafkaAddr   string
	// EmbeddedClickHouseAddr is the native address of the clickhouse-server
	// child (loopback only); port 0 picks a free one at every start.
	EmbeddedClickHouseAddr string
	// EmbeddedChildren: start redis-server and clickhouse-server children
	// when they are installed; false runs on miniredis with ClickHouse
	// parked, as a machine with only Go does.
	EmbeddedChildren bool

	HTTPAddr string
	OpsAddr  string

	Demo bool
	// DemoData, with Demo: the simulated partner, demo data, rules of
	// every type at a built-in webhook sink, and changes every few seconds.
	DemoData bool
	// DemoSinkAddr, DemoBookingSystemAddr and DemoPartnerAddr are where
	// the demo's webhook sink and simulated booking system and partner
	// listen: fixed, so that the README can point at them and a restart
	// finds its suppliers' systems where they were.
	DemoSinkAddr          string
	DemoBookingSystemAddr string
	DemoPartnerAddr       string
	AdminKey              string
	AdminSecret           string

	// SecretsKey seals secrets at rest (suppliers' credentials, rules'
	// securityKeys: internal/platform/keyring); SecretsKeyPrevious opens what the
	// key before it sealed. Nil: unset.
	SecretsKey         []byte
	SecretsKeyPrevious []byte

	// OutboundAllowHTTP and OutboundAllowPrivate relax the outbound
	// policy (internal/platform/outbound) of every call leaving the process:
	// webhooks, partners, booking systems, OCTO.
	OutboundAllowHTTP    bool
	OutboundAllowPrivate bool
	// DemoSet lists the settings the demo turned on because they were not
	// given (DemoNeeds); the banner says so.
	DemoSet []string

	LogLevel  string
	LogFormat string
	// AccessLog is the level of the API's one line per request: debug,
	// info or off.
	AccessLog string

	MaxBodyBytes    int
	ShutdownTimeout time.Duration

	ConsumerMaxAttempts int
	ConsumerRetryDelay  time.Duration

	DispatchRetrySchedule []time.Duration
	DispatchBacklogLimit  int
	DispatchConcurrency   int
	WebhookTimeout        time.Duration

	HistoryRetentionMonths int

	// SyncInterval is the period of the scheduled full synchronization of
	// every booking-system supplier (spec doc 3, cron reports); 0 turns it
	// off. SyncHorizonDays is how far ahead its availability read goes.
	SyncInterval    time.Duration
	SyncHorizonDays int
	// SyncConcurrency is how many options one full synchronization reads
	// from a supplier's booking system at once.
	SyncConcurrency int

	// RateLimit is the sustained requests per second allowed to one API
	// key, RateBurst the bucket size; over it the answer is 429 with
	// Retry-After. 0 turns limiting off.
	RateLimit int
	RateBurst int
	// CatalogViewBound: the query tier answers reseller catalog reads
	// from its own copy of the catalog while it is at most this stale;
	// 0 reads Redis only.
	CatalogViewBound time.Duration

	// HistoryRateLimit and HistoryRateBurst are the second, smaller budget
	// of one key on the history routes (ClickHouse scans: deliveries,
	// replay, availability history); HistoryConcurrency and
	// HistoryConcurrencyTotal bound those in flight, per key and in all.
	HistoryRateLimit        int
	HistoryRateBurst        int
	HistoryConcurrency      int
	HistoryConcurrencyTotal int
}

// Setting describes one configuration variable: its environment name, flag
// name, default and meaning. The README's configuration table is generated
// from the same list (see `switchback config`), so they cannot drift.
type Setting struct {
	Env     string
	Flag    string
	Default string
	Usage   string
	apply   func(c *Config, v string) error
}

// Settings returns the table of every setting, in documentation order.
func Settings() []Setting {
	return []Setting{
		{"SWITCHBACK_KAFKA_BROKERS", "kafka-brokers", "", "comma-separated Kafka bootstrap brokers; unset: embedded broker", func(c *Config, v string) error {
			c.KafkaBrokers = nil
			for _, b := range strings.Split(v, ",") {
				b = strings.TrimSpace(b)
				if b == "" {
					continue
				}
				if _, _, err := net.SplitHostPort(b); err != nil {
					return fmt.Errorf("broker %q is not host:port", b)
				}
				c.KafkaBrokers = append(c.KafkaBrokers, b)
			}
			return nil
		}},
		{"SWITCHBACK_REDIS_URL", "redis-url", "", "redis:// URL of an external Redis; unset: redis-server child if on PATH, else in-process miniredis. cluster mode: the seed nodes, redis://[user:password@]host1:port?addr=host2:port&addr=host3:port (no database; go-redis options as query parameters); sentinel mode: optional, the master's credentials, database and options, redis://[user:password@]master/0 (the host is the sentinels' to say)", func(c *Config, v string) error {
			if v != "" {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
					return errors.New("must be a redis://, rediss:// or unix:// URL")
				}
			}
			c.RedisURL = v
			return nil
		}},
		{"SWITCHBACK_REDIS_MODE", "redis-mode", "single", "single (one Redis server, or the embedded one), cluster (Redis Cluster, seed nodes in SWITCHBACK_REDIS_URL) or sentinel (failover through Redis Sentinel: SWITCHBACK_REDIS_SENTINEL_MASTER and SWITCHBACK_REDIS_SENTINEL_ADDRS)", func(c *Config, v string) error {
			switch v {
			case "single", "cluster", "sentinel":
				c.RedisMode = v
				return nil
			}
			return errors.New("must be single, cluster or sentinel")
		}},
		{"SWITCHBACK_REDIS_SENTINEL_MASTER", "redis-sentinel-master", "", "sentinel mode: the name the sentinels monitor the master under (sentinel monitor <name> ...)", func(c *Config, v string) error {
			c.RedisSentinelMaster = strings.TrimSpace(v)
			return nil
		}},
		{"SWITCHBACK_REDIS_SENTINEL_ADDRS", "redis-sentinel-addrs", "", "sentinel mode: comma-separated host:port of the sentinels", func(c *Config, v string) error {
			c.RedisSentinelAddrs = nil
			for _, a := range strings.Split(v, ",") {
				a = strings.TrimSpace(a)
				if a == "" {
					continue
				}
				if _, _, err := net.SplitHostPort(a); err != nil {
					return fmt.Errorf("sentinel %q is not host:port", a)
				}
				c.RedisSentinelAddrs = append(c.RedisSentinelAddrs, a)
			}
			return nil
		}},
		{"SWITCHBACK_CLICKHOUSE_URL", "clickhouse-url", "", "clickhouse:// URL (native protocol) of an external ClickHouse; unset: clickhouse-server child if on PATH, else history parked on its topic", func(c *Config, v string) error {
			if v != "" {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "clickhouse" && u.Scheme != "tcp") || u.Host == "" {
					return errors.New("must be a clickhouse://host:port/database URL (native protocol)")
				}
			}
			c.ClickHouseURL = v
			return nil
		}},
		{"SWITCHBACK_DATA_DIR", "data-dir", "./var", "directory of embedded servers' data (broker log, Redis, ClickHouse)", func(c *Config, v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("must not be empty")
			}
			c.DataDir = v
			return nil
		}},
		{"SWITCHBACK_EMBEDDED_KAFKA_ADDR", "embedded-kafka-addr", "127.0.0.1:19092", "listen address of the embedded Kafka-protocol broker", hostPort(func(c *Config) *string { return &c.EmbeddedKafkaAddr })},
		{"SWITCHBACK_EMBEDDED_CLICKHOUSE_ADDR", "embedded-clickhouse-addr", "127.0.0.1:19000", "native-protocol address of the embedded clickhouse-server, for clickhouse-client (loopback only; port 0: a free one at every start)", func(c *Config, v string) error {
			host, port, err := net.SplitHostPort(v)
			if err != nil || port == "" {
				return errors.New("must be host:port")
			}
			if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
				return errors.New("port must be 0 to 65535")
			}
			if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return errors.New("must be a loopback address: the embedded server's user has no password")
			}
			c.EmbeddedClickHouseAddr = v
			return nil
		}},
		{"SWITCHBACK_EMBEDDED_CHILDREN", "embedded-children", "true", "embedded mode: run installed redis-server / clickhouse-server as children; false: in-process miniredis, history parked", boolean(func(c *Config) *bool { return &c.EmbeddedChildren })},
		{"SWITCHBACK_HTTP_ADDR", "http-addr", "127.0.0.1:8080", "API listener (reseller, channel, registry, operator, admin)", hostPort(func(c *Config) *string { return &c.HTTPAddr })},
		{"SWITCHBACK_OPS_ADDR", "ops-addr", "127.0.0.1:9090", "ops listener: /metrics, /healthz, /readyz", hostPort(func(c *Config) *string { return &c.OpsAddr })},
		{"SWITCHBACK_DEMO", "demo", "false", "demo mode: fixed demo principals (make run sets true)", boolean(func(c *Config) *bool { return &c.Demo })},
		{"SWITCHBACK_DEMO_DATA", "demo-data", "true", "with SWITCHBACK_DEMO: simulated partner, demo supplier, rules of every type at a built-in webhook sink, changes every few seconds", boolean(func(c *Config) *bool { return &c.DemoData })},
		{"SWITCHBACK_DEMO_SINK_ADDR", "demo-sink-addr", "127.0.0.1:18081", "with the demo data: listen address of the built-in webhook sink (any path; your own rules may point at it)", hostPort(func(c *Config) *string { return &c.DemoSinkAddr })},
		{"SWITCHBACK_DEMO_BOOKINGSYSTEM_ADDR", "demo-bookingsystem-addr", "127.0.0.1:18082", "with the demo data: listen address of the simulated booking system (spec doc 3; bearer token demo-booking-token, suppliers S1 and S2)", hostPort(func(c *Config) *string { return &c.DemoBookingSystemAddr })},
		{"SWITCHBACK_DEMO_PARTNER_ADDR", "demo-partner-addr", "127.0.0.1:18083", "with the demo data: listen address of the simulated partner (spec doc 2) behind the demo supplier; fixed, so that bookings made before a restart still reach it", hostPort(func(c *Config) *string { return &c.DemoPartnerAddr })},
		{"SWITCHBACK_ADMIN_KEY", "admin-key", "", "bootstrap an admin principal with this key (with SWITCHBACK_ADMIN_SECRET)", func(c *Config, v string) error { c.AdminKey = v; return nil }},
		{"SWITCHBACK_ADMIN_SECRET", "admin-secret", "", "secret of the bootstrap admin principal (at least 16 characters)", func(c *Config, v string) error { c.AdminSecret = v; return nil }},
		{"SWITCHBACK_SECRETS_KEY", "secrets-key", "", "base64 of 32 random bytes: the AES-256-GCM key sealing partner credentials, booking-system tokens and rules' securityKeys before they reach Kafka or Redis; unset outside demo mode, such writes are refused (demo mode uses a fixed, public key)", secretsKey(func(c *Config) *[]byte { return &c.SecretsKey })},
		{"SWITCHBACK_SECRETS_KEY_PREVIOUS", "secrets-key-previous", "", "the key before SWITCHBACK_SECRETS_KEY, while records it sealed remain (they are read with it and rewritten with the current key)", secretsKey(func(c *Config) *[]byte { return &c.SecretsKeyPrevious })},
		{"SWITCHBACK_OUTBOUND_ALLOW_HTTP", "outbound-allow-http", "false", "allow http:// urls for every outbound call: webhooks, partners, booking systems, OCTO (demo and tests only; former name SWITCHBACK_WEBHOOK_ALLOW_HTTP, still read)", boolean(func(c *Config) *bool { return &c.OutboundAllowHTTP })},
		{"SWITCHBACK_OUTBOUND_ALLOW_PRIVATE", "outbound-allow-private", "false", "allow loopback, private, link-local and metadata targets for every outbound call (demo and tests only; former name SWITCHBACK_WEBHOOK_ALLOW_PRIVATE, still read)", boolean(func(c *Config) *bool { return &c.OutboundAllowPrivate })},
		{"SWITCHBACK_LOG_LEVEL", "log-level", "info", "debug, info, warn or error", func(c *Config, v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.LogLevel = v
				return nil
			}
			return errors.New("must be one of debug, info, warn, error")
		}},
		{"SWITCHBACK_LOG_FORMAT", "log-format", "text", "text or json", func(c *Config, v string) error {
			if v != "text" && v != "json" {
				return errors.New("must be text or json")
			}
			c.LogFormat = v
			return nil
		}},
		{"SWITCHBACK_ACCESS_LOG", "access-log", "debug", "level of the API's one log line per request: debug (seen with SWITCHBACK_LOG_LEVEL=debug), info or off", func(c *Config, v string) error {
			switch v {
			case "debug", "info", "off":
				c.AccessLog = v
				return nil
			}
			return errors.New("must be one of debug, info, off")
		}},
		{"SWITCHBACK_MAX_BODY_BYTES", "max-body-bytes", "1048576", "largest accepted request body; larger is 413", positiveInt(func(c *Config) *int { return &c.MaxBodyBytes })},
		{"SWITCHBACK_SHUTDOWN_TIMEOUT", "shutdown-timeout", "15s", "time allowed for a graceful stop", positiveDuration(func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
		{"SWITCHBACK_CONSUMER_MAX_ATTEMPTS", "consumer-max-attempts", "5", "attempts of a consumer handler before the message is dead-lettered", positiveInt(func(c *Config) *int { return &c.ConsumerMaxAttempts })},
		{"SWITCHBACK_CONSUMER_RETRY_DELAY", "consumer-retry-delay", "200ms", "first delay between handler attempts (doubles each time)", positiveDuration(func(c *Config) *time.Duration { return &c.ConsumerRetryDelay })},
		{"SWITCHBACK_DISPATCH_RETRY_SCHEDULE", "dispatch-retry-schedule", "10s,30s,1m,5m,15m,30m,1h,2h,4h,8h", "waits before each webhook retry (jittered); attempts = entries + 1, then the delivery is failed", func(c *Config, v string) error {
			c.DispatchRetrySchedule = nil
			for _, part := range strings.Split(v, ",") {
				d, err := time.ParseDuration(strings.TrimSpace(part))
				if err != nil || d <= 0 {
					return fmt.Errorf("entry %q must be a positive duration", part)
				}
				c.DispatchRetrySchedule = append(c.DispatchRetrySchedule, d)
			}
			return nil
		}},
		{"SWITCHBACK_DISPATCH_BACKLOG_LIMIT", "dispatch-backlog-limit", "10000", "pending deliveries per subscriber at which its disableAll is set automatically if it is failing (most of its attempts of the last minute got no 2xx)", positiveInt(func(c *Config) *int { return &c.DispatchBacklogLimit })},
		{"SWITCHBACK_DISPATCH_CONCURRENCY", "dispatch-concurrency", "64", "webhook POSTs in flight at once per subscriber without a throttleDelay (one per entity: an entity's notifications stay in order)", positiveInt(func(c *Config) *int { return &c.DispatchConcurrency })},
		{"SWITCHBACK_HISTORY_RETENTION_MONTHS", "history-retention-months", "13", "months of history kept in ClickHouse (older month partitions are dropped); 0 keeps everything", func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return errors.New("must be a whole number of months, 0 or more")
			}
			c.HistoryRetentionMonths = n
			return nil
		}},
		{"SWITCHBACK_WEBHOOK_TIMEOUT", "webhook-timeout", "10s", "time allowed for one webhook POST, connect to last byte", positiveDuration(func(c *Config) *time.Duration { return &c.WebhookTimeout })},
		{"SWITCHBACK_SYNC_INTERVAL", "sync-interval", "6h", "period of the scheduled full sync of every booking-system supplier (cron reports); 0 turns it off", func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || (d > 0 && d < time.Second) {
				return errors.New("must be 0 or a duration of at least 1s")
			}
			c.SyncInterval = d
			return nil
		}},
		{"SWITCHBACK_SYNC_HORIZON_DAYS", "sync-horizon-days", "90", "days of availability the scheduled full sync reads ahead (1 to 366)",
			intBetween(1, 366, " of days", func(c *Config) *int { return &c.SyncHorizonDays })},
		{"SWITCHBACK_SYNC_CONCURRENCY", "sync-concurrency", "4", "options one full sync reads from a supplier's booking system at once (1 to 64); doc 3 states no rate limit, so the default stays polite",
			intBetween(1, 64, "", func(c *Config) *int { return &c.SyncConcurrency })},
		{"SWITCHBACK_RATE_LIMIT", "rate-limit", "5000", "sustained API requests per second allowed to one API key; more is 429 with Retry-After; 0 turns limiting off", nonNegativeInt(func(c *Config) *int { return &c.RateLimit })},
		{"SWITCHBACK_RATE_BURST", "rate-burst", "10000", "requests one API key may send at once above the sustained rate", positiveInt(func(c *Config) *int { return &c.RateBurst })},
		{"SWITCHBACK_CATALOG_VIEW_BOUND", "catalog-view-bound", "1s", "the query tier answers reseller catalog reads from its own copy of the catalog (followed from Kafka) while every write acknowledged before now minus this is in it, else from Redis; 0 reads Redis only", func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > time.Minute {
				return errors.New("must be a duration from 0 to 1m")
			}
			c.CatalogViewBound = d
			return nil
		}},
		{"SWITCHBACK_HISTORY_RATE_LIMIT", "history-rate-limit", "20", "sustained requests per second one API key may make to the history routes (ClickHouse scans: deliveries, replay, availability history), besides SWITCHBACK_RATE_LIMIT; 0 turns this budget off", nonNegativeInt(func(c *Config) *int { return &c.HistoryRateLimit })},
		{"SWITCHBACK_HISTORY_RATE_BURST", "history-rate-burst", "40", "history requests one API key may send at once above its sustained history rate", positiveInt(func(c *Config) *int { return &c.HistoryRateBurst })},
		{"SWITCHBACK_HISTORY_CONCURRENCY", "history-concurrency", "2", "history requests of one API key in flight at once; more is 429", positiveInt(func(c *Config) *int { return &c.HistoryConcurrency })},
		{"SWITCHBACK_HISTORY_CONCURRENCY_TOTAL", "history-concurrency-total", "8", "history requests of all keys in flight at once (per query process); more is 429", positiveInt(func(c *Config) *int { return &c.HistoryConcurrencyTotal })},
	}
}

// Rename is a setting's former environment name and flag, still read so
// that deployments written for it keep working.
type Rename struct {
	OldEnv, OldFlag string
	Env             string // the current name
}

// Renames lists the former names. The webhook allow settings were renamed
// when they came to cover every outbound call (issue 18).
func Renames() []Rename {
	return []Rename{
		{"SWITCHBACK_WEBHOOK_ALLOW_HTTP", "webhook-allow-http", "SWITCHBACK_OUTBOUND_ALLOW_HTTP"},
		{"SWITCHBACK_WEBHOOK_ALLOW_PRIVATE", "webhook-allow-private", "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE"},
	}
}

// Load builds the Config from defaults, then the environment (getenv), then
// the flags in args. It returns an error naming the first bad setting. A
// former name (Renames) is read where the current one is not set; both set
// to different values is an error rather than a silent choice.
func Load(name string, args []string, getenv func(string) string) (Config, error) {
	var c Config
	settings := Settings()
	values := make(map[string]string, len(settings))
	for _, s := range settings {
		values[s.Env] = s.Default
		if v := getenv(s.Env); v != "" {
			values[s.Env] = v
		}
	}
	for _, r := range Renames() {
		old := getenv(r.OldEnv)
		if old == "" {
			continue
		}
		if cur := getenv(r.Env); cur != "" && cur != old {
			return c, fmt.Errorf("invalid %s: set to %q while its former name %s is %q; set one", r.Env, cur, r.OldEnv, old)
		}
		values[r.Env] = old
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	flagValues := make(map[string]*string, len(settings))
	for _, s := range settings {
		flagValues[s.Env] = fs.String(s.Flag, "", s.Usage+" (env "+s.Env+", default "+quoteDefault(s.Default)+")")
	}
	oldFlags := make(map[string]Rename)
	oldValues := make(map[string]*string)
	for _, r := range Renames() {
		oldFlags[r.OldFlag] = r
		oldValues[r.OldFlag] = fs.String(r.OldFlag, "", "former name of --"+flagOf(settings, r.Env))
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	fs.Visit(func(f *flag.Flag) {
		if r, ok := oldFlags[f.Name]; ok {
			values[r.Env] = *oldValues[f.Name]
		}
	})
	fs.Visit(func(f *flag.Flag) {
		for _, s := range settings {
			if s.Flag == f.Name {
				values[s.Env] = *flagValues[s.Env]
			}
		}
	})
	for _, s := range settings {
		if err := s.apply(&c, values[s.Env]); err != nil {
			return c, fmt.Errorf("invalid %s (--%s) %q: %w", s.Env, s.Flag, redact(s.Env, values[s.Env]), err)
		}
	}
	given := func(env string) bool {
		if getenv(env) != "" {
			return true
		}
		for _, s := range settings {
			if s.Env == env && flagValues[env] != nil && *flagValues[env] != "" {
				return true
			}
		}
		for _, r := range Renames() { // given under its former name
			if r.Env == env && (getenv(r.OldEnv) != "" || *oldValues[r.OldFlag] != "") {
				return true
			}
		}
		return false
	}
	if err := c.demoNeeds(given); err != nil {
		return c, err
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	return c, nil
}

// DemoNeeds are the settings the demo data needs on (its sink and its
// simulators listen on http://127.0.0.1): `switchback run --demo` turns
// them on when they are not given, and refuses to start when one is given
// as false, naming it, rather than looping on a refused setup.
func DemoNeeds() []string {
	return []string{"SWITCHBACK_OUTBOUND_ALLOW_HTTP", "SWITCHBACK_OUTBOUND_ALLOW_PRIVATE"}
}

func (c *Config) demoNeeds(given func(env string) bool) error {
	if !c.Demo || !c.DemoData {
		return nil
	}
	for _, env := range DemoNeeds() {
		field := map[string]*bool{
			"SWITCHBACK_OUTBOUND_ALLOW_HTTP":    &c.OutboundAllowHTTP,
			"SWITCHBACK_OUTBOUND_ALLOW_PRIVATE": &c.OutboundAllowPrivate,
		}[env]
		switch {
		case field == nil:
			continue
		case *field:
		case given(env):
			return fmt.Errorf("invalid %s: the demo data (SWITCHBACK_DEMO=true, SWITCHBACK_DEMO_DATA=true) delivers to its sink and calls its simulators on http://127.0.0.1; set %s=true, or SWITCHBACK_DEMO_DATA=false", env, env)
		default:
			*field = true
			c.DemoSet = append(c.DemoSet, env)
		}
	}
	return nil
}

func (c Config) validate() error {
	if err := c.validateRedis(); err != nil {
		return err
	}
	if (c.AdminKey == "") != (c.AdminSecret == "") {
		return errors.New("invalid SWITCHBACK_ADMIN_KEY/SWITCHBACK_ADMIN_SECRET: set both or neither")
	}
	if c.AdminSecret != "" && len(c.AdminSecret) < 16 {
		return errors.New("invalid SWITCHBACK_ADMIN_SECRET: must be at least 16 characters")
	}
	if c.SecretsKeyPrevious != nil && c.SecretsKey == nil {
		return errors.New("invalid SWITCHBACK_SECRETS_KEY_PREVIOUS: set only with SWITCHBACK_SECRETS_KEY (the key that replaced it)")
	}
	if c.HTTPAddr == c.OpsAddr && !strings.HasSuffix(c.HTTPAddr, ":0") {
		return errors.New("invalid SWITCHBACK_OPS_ADDR: must differ from SWITCHBACK_HTTP_ADDR")
	}
	return nil
}

// validateRedis checks that the Redis settings fit their mode: a cluster
// or a sentinel-managed master is never embedded.
func (c Config) validateRedis() error {
	switch c.RedisMode {
	case "cluster":
		if c.RedisURL == "" {
			return errors.New("invalid SWITCHBACK_REDIS_URL: SWITCHBACK_REDIS_MODE=cluster needs the seed nodes, redis://host1:port?addr=host2:port&addr=host3:port")
		}
		if u, err := url.Parse(c.RedisURL); err == nil && strings.Trim(u.Path, "/") != "" && strings.Trim(u.Path, "/") != "0" {
			return errors.New("invalid SWITCHBACK_REDIS_URL: a Redis Cluster has only database 0")
		}
	case "sentinel":
		if c.RedisSentinelMaster == "" {
			return errors.New("invalid SWITCHBACK_REDIS_SENTINEL_MASTER: SWITCHBACK_REDIS_MODE=sentinel needs the master's name")
		}
		if len(c.RedisSentinelAddrs) == 0 {
			return errors.New("invalid SWITCHBACK_REDIS_SENTINEL_ADDRS: SWITCHBACK_REDIS_MODE=sentinel needs the sentinels' host:port")
		}
	default:
		if c.RedisSentinelMaster != "" || len(c.RedisSentinelAddrs) > 0 {
			return errors.New("invalid SWITCHBACK_REDIS_SENTINEL_MASTER/SWITCHBACK_REDIS_SENTINEL_ADDRS: set only with SWITCHBACK_REDIS_MODE=sentinel")
		}
	}
	return nil
}

// EmbeddedRedis reports whether the embedded Redis is used.
func (c Config) EmbeddedRedis() bool { return c.RedisMode == "single" && c.RedisURL == "" }

func flagOf(settings []Setting, env string) string {
	for _, s := range settings {
		if s.Env == env {
			return s.Flag
		}
	}
	return ""
}

// Outbound is the outbound policy of every call leaving the process.
func (c Config) Outbound() outbound.Policy {
	return outbound.Policy{AllowHTTP: c.OutboundAllowHTTP, AllowPrivate: c.OutboundAllowPrivate}
}

// EmbeddedClickHousePort is the port of EmbeddedClickHouseAddr (0: a free
// one).
func (c Config) EmbeddedClickHousePort() int {
	_, port, _ := net.SplitHostPort(c.EmbeddedClickHouseAddr)
	n, _ := strconv.Atoi(port)
	return n
}

// EmbeddedKafka reports whether the embedded broker is used.
func (c Config) EmbeddedKafka() bool { return len(c.KafkaBrokers) == 0 }

// Redact hides secret values in messages: secrets never appear in logs or
// errors, not even when they are invalid.
func redact(env, v string) string {
	if strings.Contains(env, "SECRET") || strings.Contains(env, "PASSWORD") {
		return "<redacted>"
	}
	if strings.HasSuffix(env, "_URL") {
		if u, err := url.Parse(v); err == nil && u.User != nil {
			u.User = url.User(u.User.Username())
			return u.String()
		}
	}
	return v
}

// RedactURL returns u without its password, for logs and banners.
func RedactURL(u string) string { return redact("X_URL", u) }

func quoteDefault(d string) string {
	if d == "" {
		return "unset"
	}
	return d
}

func hostPort(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return errors.New("must be host:port")
		}
		*field(c) = v
		return nil
	}
}

func secretsKey(field func(*Config) *[]byte) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v == "" {
			*field(c) = nil
			return nil
		}
		k, err := keyring.ParseKey(v)
		if err != nil {
			return err
		}
		*field(c) = k
		return nil
	}
}

func boolean(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		*field(c) = b
		return nil
	}
}

func nonNegativeInt(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errors.New("must be a whole number, 0 or more")
		}
		*field(c) = n
		return nil
	}
}

// intBetween reads a whole number from lo to hi; unit words the error
// (" of days": "must be a whole number of days from 1 to 366").
func intBetween(lo, hi int, unit string, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be a whole number%s from %d to %d", unit, lo, hi)
		}
		*field(c) = n
		return nil
	}
}

func positiveInt(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return errors.New("must be a positive integer")
		}
		*field(c) = n
		return nil
	}
}

func positiveDuration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return errors.New("must be a positive duration such as 500ms or 15s")
		}
		*field(c) = d
		return nil
	}
}

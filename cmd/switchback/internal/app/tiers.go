package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchbackhq/switchback/dispatcher"
	"github.com/switchbackhq/switchback/ingest/bookingsync"
	"github.com/switchbackhq/switchback/ingest/bookingsystem"
	"github.com/switchbackhq/switchback/ingest/changeworker"
	"github.com/switchbackhq/switchback/ingest/cronsync"
	"github.com/switchbackhq/switchback/ingest/partner"
	"github.com/switchbackhq/switchback/ingest/supplierbooking"
	"github.com/switchbackhq/switchback/internal/availcache"
	"github.com/switchbackhq/switchback/internal/booking"
	"github.com/switchbackhq/switchback/internal/catalog"
	"github.com/switchbackhq/switchback/internal/catalog/catalogredis"
	"github.com/switchbackhq/switchback/internal/changerequest"
	"github.com/switchbackhq/switchback/internal/cronreport"
	"github.com/switchbackhq/switchback/internal/platform/config"
	"github.com/switchbackhq/switchback/internal/platform/keyring"
	"github.com/switchbackhq/switchback/internal/platform/stream"
	"github.com/switchbackhq/switchback/internal/platform/views"
	"github.com/switchbackhq/switchback/internal/principals"
	"github.com/switchbackhq/switchback/internal/registry"
	"github.com/switchbackhq/switchback/internal/webhook"
	"github.com/switchbackhq/switchback/processors/availchange"
	"github.com/switchbackhq/switchback/processors/bookingchange"
	"github.com/switchbackhq/switchback/processors/catalogchange"
	"github.com/switchbackhq/switchback/processors/historysink"
	"github.com/switchbackhq/switchback/query/admin"
	"github.com/switchbackhq/switchback/query/apidocs"
	"github.com/switchbackhq/switchback/query/availapi"
	"github.com/switchbackhq/switchback/query/bookingapi"
	"github.com/switchbackhq/switchback/query/channel"
	"github.com/switchbackhq/switchback/query/console"
	"github.com/switchbackhq/switchback/query/historyapi"
	"github.com/switchbackhq/switchback/query/httpapi"
	"github.com/switchbackhq/switchback/query/octo"
	"github.com/switchbackhq/switchback/query/operator"
	"github.com/switchbackhq/switchback/query/registryapi"
	"github.com/switchbackhq/switchback/query/reseller"
	"github.com/switchbackhq/switchback/schemas"
	"github.com/switchbackhq/switchback/schemas/openapi"
)

// started is what startTiers hands back to Run.
type started struct {
	httpAddr string
	// failed receives the first error of a tier that stopped on its own.
	failed chan error
}

// startTiers builds and starts each requested tier. Every tier registers
// its stop on closers so that Run's deferred closeAll stops them before the
// dependencies they use.
func startTiers(ctx context.Context, cfg config.Config, tiers []string, d *deps, log *slog.Logger, reg prometheus.Registerer, closers *closeStack) (*started, error) {
	st := &started{failed: make(chan error, len(tiers)+1)}
	sh, err := startShared(ctx, cfg, slices.Contains(tiers, TierQuery), d, log, reg, closers)
	if err != nil {
		return nil, err
	}
	// One partner client per process: one circuit breaker per partner,
	// whichever tier calls it.
	// Partners, booking systems and webhooks are judged by one outbound
	// policy (internal/platform/outbound).
	sh.partner = partner.NewClient(partner.Options{Registerer: reg, Outbound: cfg.Outbound()})
	// One availability cache service per process too: the query tier's
	// reads and the ingest tier's refreshes share its in-process copy and
	// its singleflight.
	sh.avail = availcache.New(availcache.Options{Redis: d.redis, Catalog: sh.catalog, Partner: sh.partner,
		Publisher: d.producer, Logger: log.With("part", "availability"), Registerer: reg})
	// One booking-system client per process, likewise (one breaker per
	// booking system), and one router of holds and bookings over both
	// kinds of supplier, for the query tier's writes and the process
	// tier's ticket poller.
	sh.bookingSystem = bookingsystem.NewClient(bookingsystem.Options{Registerer: reg, Outbound: cfg.Outbound()})
	sh.suppliers = supplierbooking.NewRouter(supplierbooking.Options{Catalog: sh.catalog, Partner: sh.partner,
		BookingSystem: sh.bookingSystem, Registerer: reg, Logger: log})
	if err := startViews(ctx, d, sh, log, closers, st.failed); err != nil {
		return nil, err
	}
	for _, tier := range tiers {
		tlog := log.With("tier", tier)
		switch tier {
		case TierQuery:
			addr, err := startQuery(ctx, cfg, d, sh, tlog, reg, closers, st.failed)
			if err != nil {
				return nil, fmt.Errorf("query tier: %w", err)
			}
			st.httpAddr = addr
		case TierDispatch:
			if err := startDispatch(cfg, d, sh, tlog, reg, closers, st.failed); err != nil {
				return nil, fmt.Errorf("dispatch tier: %w", err)
			}
		case TierProcess:
			startProcess(cfg, d, sh, tlog, reg, closers, st.failed)
		case TierIngest:
			startIngest(cfg, d, sh, tlog, reg, closers, st.failed)
			tlog.Info("tier started")
		}
	}
	return st, nil
}

// costlyRate maps SWITCHBACK_HISTORY_RATE_LIMIT to httpapi's option: 0
// (off) is httpapi's negative, its 0 being the default.
func costlyRate(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// startQuery starts the API tier: the principal table rebuilt from its
// topic, the fasthttp server and its routes.
func startQuery(ctx context.Context, cfg config.Config, d *deps, sh *shared, log *slog.Logger, reg prometheus.Registerer, closers *closeStack, failed chan<- error) (string, error) {
	store := sh.principals
	if err := ensureFixedPrincipals(ctx, cfg, store, log); err != nil {
		return "", err
	}
	if cfg.Demo {
		if _, err := sh.catalog.EnsureChannel(ctx, catalog.Channel{ID: DemoChannelID, Name: "Demo channel", CompanyName: "Switchback demo reseller"}); err != nil {
			return "", fmt.Errorf("demo channel: %w", err)
		}
	}

	srv := httpapi.New(httpapi.Options{
		Addr:           cfg.HTTPAddr,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		Logger:         log,
		AccessLogLevel: accessLogLevel(cfg.AccessLog),
		Registry:       reg,
		Principals:     store,
		RateLimit:      cfg.RateLimit,
		RateBurst:      cfg.RateBurst,
		// History scans: their own budget and concurrency bound.
		CostlyRateLimit: costlyRate(cfg.HistoryRateLimit),
		CostlyRateBurst: cfg.HistoryRateBurst,
		CostlyPerKey:    cfg.HistoryConcurrency,
		CostlyTotal:     cfg.HistoryConcurrencyTotal,
		// 503 while the Redis views are rebuilt; a 4xx is confirmed
		// against them before it is served.
		Views: d.views,
	})
	// The reseller reads answer from the query tier's copy of the catalog
	// while it is fresh (issue 21); registerAPI only adds routes.
	if sh.catalogView != nil {
		runWorker(closers, "catalog view", failed, sh.catalogView.Run)
	}
	if err := registerAPI(srv, d, sh, log, reg); err != nil {
		return "", err
	}

	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return "", fmt.Errorf("API listener on SWITCHBACK_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil {
			failed <- fmt.Errorf("API server: %w", err)
		}
	}()
	closers.push("API server (finish in-flight requests)", func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		<-done
		return err
	})
	return ln.Addr().String(), nil
}

// registerAPI adds every route of the API listener to srv: the families
// that schemas/openapi documents (TestRegisterAPI_ServesWhatTheDocumentsList
// holds the two to each other) and the reference that serves them.
func registerAPI(srv *httpapi.Server, d *deps, sh *shared, log *slog.Logger, reg prometheus.Registerer) error {
	admin.Register(srv, sh.principals, sh.catalog)
	registryapi.Register(srv, sh.registry, testSender{s: sh.sender, history: d.producer, log: log})
	channel.Register(srv, sh.catalog)
	channel.RegisterAdmin(srv, sh.catalog)
	operator.Register(srv, sh.catalog)
	operator.RegisterNotifications(srv, sh.catalog, sh.changes)
	operator.RegisterCronReports(srv, sh.catalog, sh.cronReports)
	reseller.Register(srv, sh.catalog)
	// Availability reads: the 5-minute cache in Redis, refreshed from the
	// supplier's partner (or the operator's pushes) and published as
	// snapshots for the availability processor.
	availapi.Register(srv, sh.avail)
	historyapi.Register(srv, d.clickhouse, sh.catalog, replayer{d.producer})
	// Holds and bookings, forwarded to the supplier's partner or booking
	// system; their states go to TopicHolds/TopicBookings
	// (processors/bookingchange notifies).
	bookings := booking.New(booking.Options{
		Redis:     d.redis,
		Publisher: d.producer,
		Partner:   sh.suppliers,
		Catalog:   sh.catalog,
		Logger:    log,
	})
	bookingapi.Register(srv, bookings)
	// The same catalog, availability cache, holds and bookings in OCTO's
	// dialect, one OCTO supplier endpoint per supplier (issue 26).
	octo.Register(srv, octo.New(octo.Options{Catalog: sh.catalog, Availability: sh.avail, Bookings: bookings, Registerer: reg}))

	// The web console: its page and scripts, without credentials; it calls
	// the routes above like any client (query/console).
	if err := console.Register(srv); err != nil {
		return err
	}
	// The contract itself: GET /, /docs, /openapi/{family}.json, without
	// credentials (query/apidocs; the documents are bundled on first use).
	return apidocs.Register(srv, openapi.Load)
}

// accessLogLevel maps SWITCHBACK_ACCESS_LOG to the API's access log level.
func accessLogLevel(v string) slog.Level {
	switch v {
	case "info":
		return slog.LevelInfo
	case "off":
		return httpapi.AccessLogOff
	}
	return slog.LevelDebug
}

// loadPrincipals rebuilds the principal table from its compacted topic
// before the API serves (so no valid credential is refused after a restart),
// then follows the topic so that principals created or revoked through
// another query instance take effect here too.
func loadPrincipals(ctx context.Context, d *deps, log *slog.Logger, closers *closeStack) (*principals.Store, error) {
	store := principals.NewStore(d.producer)
	apply := func(m stream.Message) error {
		var env schemas.Envelope
		if err := json.Unmarshal(m.Value, &env); err != nil {
			log.Error("skipping unreadable principal record", "partition", m.Partition, "offset", m.Offset, "err", err)
			return nil
		}
		if err := store.Apply(env); err != nil {
			log.Error("skipping unusable principal record", "partition", m.Partition, "offset", m.Offset, "err", err)
		}
		return nil
	}
	start := time.Now()
	if err := stream.ReadAll(ctx, d.brokers, schemas.TopicPrincipals, apply); err != nil {
		return nil, fmt.Errorf("rebuild principals from %s: %w", schemas.TopicPrincipals, err)
	}
	log.Info("principals loaded", "count", store.Len(), "took", time.Since(start).Round(time.Millisecond))

	fctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Follow re-reads from the start (Apply is idempotent by version,
		// so the records already applied are no-ops) and rides out broker
		// failures; apply never fails, so it returns when fctx ends.
		if err := stream.Follow(fctx, d.brokers, schemas.TopicPrincipals, apply, stream.FollowLogger(log.With("part", "principals"))); err != nil {
			log.Error("principals follower stopped", "err", err)
		}
	}()
	closers.push("principals follower", func(context.Context) error { cancel(); <-done; return nil })
	return store, nil
}

// ensureFixedPrincipals creates the demo principals (demo mode only) and the
// SWITCHBACK_ADMIN_KEY bootstrap admin. EnsureFixed publishes only when the
// principal is absent or its secret changed, so restarts add no records.
func ensureFixedPrincipals(ctx context.Context, cfg config.Config, store *principals.Store, log *slog.Logger) error {
	if cfg.Demo {
		for _, p := range DemoPrincipals() {
			if _, err := store.EnsureFixed(ctx, p.Key, p.Secret, principals.Role(p.Role), p.Name, p.ChannelID); err != nil {
				return fmt.Errorf("demo principal %s: %w", p.Key, err)
			}
		}
		log.Warn("demo mode: the fixed demo principals are enabled (publicly known credentials)")
	}
	if cfg.AdminKey != "" {
		if _, err := store.EnsureFixed(ctx, cfg.AdminKey, cfg.AdminSecret, principals.RoleAdmin, "Bootstrap admin", ""); err != nil {
			return fmt.Errorf("bootstrap admin from SWITCHBACK_ADMIN_KEY: %w", err)
		}
		log.Info("bootstrap admin principal ensured", "key", cfg.AdminKey)
	}
	return nil
}

// shared holds what several tiers use: the registry view of rules and
// metadata, and the webhook sender (the dispatcher's deliveries and the
// registry's test notifications go through the same SSRF-safe client).
type shared struct {
	principals *principals.Store
	registry   *registry.Registry
	catalog    *catalogredis.Store
	// catalogView is the query tier's copy of the catalog (nil without it).
	catalogView *catalogredis.View
	sender      *webhook.Sender
	partner     *partner.Client
	avail       *availcache.Service
	changes     *changerequest.Store
	// bookingSystem is the one booking-system client of the process,
	// suppliers the one router of holds and bookings.
	bookingSystem *bookingsystem.Client
	suppliers     *supplierbooking.Router
	cronReports   *cronreport.Store
}

// startShared builds what several tiers read and write: the principal
// table (rebuilt from its topic, followed), and the registry, catalog,
// change notifications and cron reports over their Redis views. The views
// are rebuilt by startViews, before any tier reads them.
func startShared(ctx context.Context, cfg config.Config, query bool, d *deps, log *slog.Logger, reg prometheus.Registerer, closers *closeStack) (*shared, error) {
	pstore, err := loadPrincipals(ctx, d, log, closers)
	if err != nil {
		return nil, err
	}
	secrets, err := secretsKeyring(cfg, log)
	if err != nil {
		return nil, err
	}
	// Writers of the registry and the catalog read the view before they
	// publish: the views guard's epoch fences them (refused while the
	// views are rebuilt, or if they were lost in between).
	registryStore := registry.New(registry.Options{
		Redis:        d.redis,
		Publisher:    d.producer,
		AllowHTTP:    cfg.OutboundAllowHTTP,
		AllowPrivate: cfg.OutboundAllowPrivate,
		Logger:       log.With("part", "registry"),
		Fence:        d.views,
		Secrets:      secrets,
	})
	// The query tier answers reseller catalog reads from its own copy of
	// the catalog while it is fresh (issue 21; startQuery runs it).
	var view *catalogredis.View
	if query && cfg.CatalogViewBound > 0 {
		view = catalogredis.NewView(catalogredis.ViewOptions{Brokers: d.brokers, Bound: cfg.CatalogViewBound, Logger: log, Registerer: reg})
	}
	// A supplier with holds or bookings that are not final cannot be
	// deleted: the bookings view (read only here) counts them.
	cat := catalogredis.NewStore(catalogredis.Options{Redis: d.redis, Publisher: d.producer, Logger: log.With("part", "catalog"), Fence: d.views,
		Outbound: cfg.Outbound(), Bookings: booking.New(booking.Options{Redis: d.redis}), Secrets: secrets, View: view})
	changes := changerequest.NewStore(changerequest.Options{Redis: d.redis, Publisher: d.producer, Logger: log.With("part", "changerequests")})
	reports := cronreport.NewStore(cronreport.Options{Redis: d.redis, Publisher: d.producer, Logger: log.With("part", "cronreports")})

	client := webhook.NewClient(webhook.Options{AllowHTTP: cfg.OutboundAllowHTTP, AllowPrivate: cfg.OutboundAllowPrivate, Timeout: cfg.WebhookTimeout,
		MaxConnsPerHost: max(cfg.DispatchConcurrency, webhook.DefaultMaxConnsPerHost)})
	return &shared{principals: pstore, registry: registryStore, catalog: cat, catalogView: view, sender: webhook.NewSender(client, time.Now), changes: changes,
		cronReports: reports}, nil
}

// secretsKeyring is the keyring sealing secrets at rest (internal/platform/keyring):
// SWITCHBACK_SECRETS_KEY; in demo mode without it, the fixed public demo
// key, said in the log; otherwise none, and writes of credentials and
// securityKeys are refused, said in the log at start.
func secretsKeyring(cfg config.Config, log *slog.Logger) (*keyring.Keyring, error) {
	cur := cfg.SecretsKey
	switch {
	case cur != nil:
	case cfg.Demo:
		cur = keyring.DemoKey()
		// Info: the demo-mode warning (public demo principals) already says
		// never to use it in production.
		log.Info("demo mode: secrets at rest (supplier credentials, rule securityKeys) are sealed with the fixed, public demo key; " +
			"outside demo mode set SWITCHBACK_SECRETS_KEY")
	default:
		log.Warn("SWITCHBACK_SECRETS_KEY is unset: supplier credentials and rule securityKeys cannot be stored, " +
			"and writes carrying them are refused (503); set it to base64 of 32 random bytes")
	}
	return keyring.New(cur, cfg.SecretsKeyPrevious)
}

// startViews registers every Redis view with the views guard and rebuilds
// them from their topics before any tier reads them (idempotent, notifies
// nobody), then runs the guard, which rebuilds them again whenever Redis
// loses them (FLUSHALL, a restart without its data) while the process
// runs, and the registry's follower, which makes Redis catch up with
// writes of other instances and with a write whose publish succeeded but
// whose Redis commit did not.
//
// Every process registers every view, whatever its tiers: the epoch any
// process sets after a rebuild then means that every view is complete.
// The processors' consumer groups carry on from their own offsets.
func startViews(ctx context.Context, d *deps, sh *shared, log *slog.Logger, closers *closeStack, failed chan<- error) error {
	g := d.views
	g.Register(views.View{Name: "registry", Rebuild: func(ctx context.Context) error { return sh.registry.Rebuild(ctx, d.brokers) }})
	g.Register(views.View{Name: "catalog", Rebuild: func(ctx context.Context) error { return sh.catalog.Rebuild(ctx, d.brokers) }})
	g.Register(views.View{Name: "changerequests", Rebuild: func(ctx context.Context) error { return sh.changes.Rebuild(ctx, d.brokers) }})
	g.Register(views.View{Name: "cronreports", Rebuild: func(ctx context.Context) error { return sh.cronReports.Rebuild(ctx, d.brokers) }})
	// Holds and bookings, with the set of bookings awaiting tickets that
	// the poller works (derived from the records).
	bookings := booking.New(booking.Options{Redis: d.redis, Publisher: d.producer, Partner: sh.suppliers,
		Catalog: sh.catalog, Logger: log})
	g.Register(views.View{Name: "bookings", Rebuild: func(ctx context.Context) error { return bookings.Rebuild(ctx, d.brokers) }})
	// The availability processor's diff state, folded up to its consumer
	// group's offsets: only after a loss (at a normal start the live
	// state is ahead of any fold).
	g.Register(views.View{Name: "availability-state", OnlyWhenLost: true, Rebuild: func(ctx context.Context) error {
		return availchange.RebuildState(ctx, availchange.StateOptions{Brokers: d.brokers, Redis: d.redis,
			Marker: g.Key(), Fence: g, Logger: log.With("part", "availability-state")})
	}})
	// In-process copies of view data start over with the views.
	g.OnChange(sh.avail.ResetLocal)

	start := time.Now()
	if err := g.Start(ctx); err != nil {
		return fmt.Errorf("rebuild the Redis views from Kafka: %w", err)
	}
	log.Info("Redis views rebuilt from Kafka", "views", g.Names(), "took", time.Since(start).Round(time.Millisecond))
	runWorker(closers, "views guard", failed, g.Run)

	fctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sh.registry.Follow(fctx, d.brokers); err != nil {
			log.Error("registry follower stopped", "err", err)
		}
	}()
	closers.push("registry follower", func(context.Context) error { cancel(); <-done; return nil })
	return nil
}

// startDispatch runs the webhook dispatcher until shutdown. Its Run commits
// what it has durably scheduled and waits for sends in flight (bounded)
// once its context ends.
func startDispatch(cfg config.Config, d *deps, sh *shared, log *slog.Logger, reg prometheus.Registerer, closers *closeStack, failed chan<- error) error {
	disp, err := dispatcher.New(dispatcher.Options{
		Brokers:       d.brokers,
		Dial:          d.kafkaDial,
		Redis:         d.redis,
		Publisher:     d.producer,
		Subscriptions: subscriptions{reg: sh.registry, views: d.views},
		// The schedule's marker records the views' epoch: a Redis restarted
		// from an older append-only file gets a new epoch from the views
		// guard, and the schedule is rebuilt too.
		Views:           d.views,
		Sender:          sh.sender,
		Schedule:        cfg.DispatchRetrySchedule,
		BacklogLimit:    cfg.DispatchBacklogLimit,
		LaneConcurrency: cfg.DispatchConcurrency,
		// A claimed delivery is sent again this long after a crash: past
		// the webhook timeout with room, and not minutes.
		Lease:           max(3*cfg.WebhookTimeout, 30*time.Second),
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          log,
		Registerer:      reg,
	})
	if err != nil {
		return err
	}
	runWorker(closers, "dispatcher (commit, finish sends)", failed, disp.Run)
	return nil
}

// startProcess runs the processors. The history sink runs only when a
// ClickHouse is reachable; otherwise history stays on its topic (parked)
// and is loaded once a ClickHouse is configured and the process restarted.
func startProcess(cfg config.Config, d *deps, sh *shared, log *slog.Logger, reg prometheus.Registerer, closers *closeStack, failed chan<- error) {
	cp := catalogchange.New(catalogchange.Options{
		Brokers:     d.brokers,
		Dial:        d.kafkaDial,
		Store:       sh.catalog,
		Subscribers: catalogchange.Resellers{Principals: sh.principals},
		Rules:       sh.registry,
		Publisher:   d.producer,
		Logger:      log.With("part", "catalog-processor"),
		Registerer:  reg,
		Fence:       d.views,
	})
	runWorker(closers, "catalog processor (commit)", failed, cp.Run)

	ap := availchange.New(availchange.Options{
		Brokers:     d.brokers,
		Dial:        d.kafkaDial,
		Redis:       d.redis,
		Bindings:    sh.catalog,
		Subscribers: catalogchange.Resellers{Principals: sh.principals},
		Rules:       sh.registry,
		Publisher:   d.producer,
		Logger:      log.With("part", "availability-processor"),
		Registerer:  reg,
		Fence:       d.views,
	})
	runWorker(closers, "availability processor (commit)", failed, ap.Run)

	// Holds and bookings: the view, the booking notifications and history,
	// and the poller that waits for the tickets of accepted bookings.
	bookings := booking.New(booking.Options{
		Redis:     d.redis,
		Publisher: d.producer,
		Partner:   sh.suppliers,
		Catalog:   sh.catalog,
		Source:    "processors/booking",
		Logger:    log,
	})
	bp := bookingchange.New(bookingchange.Options{
		Brokers:     d.brokers,
		Dial:        d.kafkaDial,
		Store:       bookings,
		Subscribers: catalogchange.Resellers{Principals: sh.principals},
		Rules:       sh.registry,
		Publisher:   d.producer,
		Logger:      log.With("part", "booking-processor"),
		Registerer:  reg,
		Fence:       d.views,
	})
	runWorker(closers, "booking processor (commit)", failed, bp.Run)
	runWorker(closers, "booking poller", failed, bookingchange.NewPoller(bookingchange.PollerOptions{
		Bookings: bookings, Logger: log, Registerer: reg}).Run)

	if d.clickhouse == nil {
		log.Warn("history sink not started: no ClickHouse; history is parked on its topic")
		return
	}
	sink := historysink.NewSink(historysink.Options{
		Brokers:         d.brokers,
		Dial:            d.kafkaDial,
		Conn:            d.clickhouse,
		RetentionMonths: cfg.HistoryRetentionMonths,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          log.With("part", "history-sink"),
		Registerer:      reg,
	})
	runWorker(closers, "history sink (flush, commit)", failed, sink.Run)
	// Who is who for analysts: principals and channels by id, with names.
	names := historysink.NewNames(historysink.NamesOptions{Brokers: d.brokers, Conn: d.clickhouse, Logger: log.With("part", "history-names")})
	runWorker(closers, "analysts' names (principals, channels)", failed, names.Run)
}

// runWorker runs fn until shutdown; an error before shutdown fails the
// process (the orchestrator restarts it).
func runWorker(closers *closeStack, name string, failed chan<- error, fn func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			failed <- fmt.Errorf("%s: %w", name, err)
		}
	}()
	closers.push(name, func(context.Context) error { cancel(); <-done; return nil })
}

// startIngest runs what brings changes in: the change notification worker
// (first in, first out), which refreshes a product from its supplier's
// system (through the same cache and snapshots as a stale read for a
// partner, through the catalog for a booking system); the scheduled full
// synchronization of booking-system suppliers (its scheduler and its
// worker, which leaves the cron reports); and the refresh of
// booking-system availability by status (spec doc 3, rule 8). Every ingest
// process runs all of them: Redis claims and consumer groups share the
// work.
func startIngest(cfg config.Config, d *deps, sh *shared, log *slog.Logger, reg prometheus.Registerer, closers *closeStack, failed chan<- error) {
	sched := bookingsync.NewSchedule(bookingsync.ScheduleOptions{Redis: d.redis, HorizonDays: cfg.SyncHorizonDays})
	bsync := bookingsync.New(bookingsync.Options{Catalog: sh.catalog, Client: sh.bookingSystem, Schedule: sched,
		Concurrency: cfg.SyncConcurrency, Logger: log, Registerer: reg})

	w := changeworker.NewWorker(changeworker.WorkerOptions{Brokers: d.brokers, Dial: d.kafkaDial, Store: sh.changes,
		Syncer:    changeworker.Refresher{Catalog: sh.catalog, Partner: sh.avail, BookingSync: bsync},
		Publisher: d.producer, Logger: log, Registerer: reg, Fence: d.views})
	runWorker(closers, "change notification worker (commit)", failed, w.Run)

	cw := cronsync.NewWorker(cronsync.WorkerOptions{Brokers: d.brokers, Dial: d.kafkaDial, Store: sh.cronReports, Syncer: bsync,
		Publisher: d.producer, Redis: d.redis, Logger: log, Registerer: reg, Fence: d.views})
	runWorker(closers, "full synchronization worker (commit)", failed, cw.Run)
	cs := cronsync.NewScheduler(cronsync.SchedulerOptions{Redis: d.redis, Publisher: d.producer, Suppliers: sh.catalog,
		Interval: cfg.SyncInterval, HorizonDays: cfg.SyncHorizonDays, Logger: log, Registerer: reg})
	runWorker(closers, "full synchronization scheduler", failed, cs.Run)

	rs := bookingsync.NewScheduler(bookingsync.SchedulerOptions{Syncer: bsync, Logger: log, Registerer: reg})
	// The schedule is derivable and lives in Redis only: after the views
	// were lost and rebuilt it is rediscovered at once.
	d.views.OnChange(rs.Rediscover)
	runWorker(closers, "booking-system refresh scheduler", failed, rs.Run)
}

-- One table per history event kind (schemas/history.go), written by the
-- history sink (processors/history) in batches; docs/analytics.md documents
-- them with tested example queries. Event types without a table of their
-- own keep landing in history_events (0001).
--
-- Rules every table follows, so that they run on ClickHouse 18.16 and
-- current releases alike:
--   * ReplacingMergeTree with event_id last in ORDER BY: the history topic
--     is delivered at least once and may be replayed; a replayed event has
--     the same sorting key and partition, so it collapses into one row.
--     Until a merge does that, queries read with FINAL (docs/analytics.md).
--   * occurred_at DateTime('UTC') (second precision) partitions by month
--     whatever the server's timezone; occurred_ms keeps the milliseconds
--     (no DateTime64 on 18.16). Retention drops whole month partitions
--     (no TTL on 18.16): see history.DropOlderThan.
--   * ORDER BY starts with the keys queries filter on.
--   * No LowCardinality (experimental on 18.16); no Nullable in ORDER BY.

-- availability.changed: one availability window whose vacancies changed.
CREATE TABLE IF NOT EXISTS history_availability_changes
(
    event_id      String,
    occurred_at   DateTime('UTC'),
    occurred_ms   Int64,
    supplier_id   String,
    product_id    String,
    rate_id       String,
    window_start  DateTime('UTC'),
    window_end    DateTime('UTC'),
    old_vacancies Int32,
    new_vacancies Int32,
    old_status    String,
    new_status    String,
    source        String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (supplier_id, product_id, rate_id, occurred_at, event_id);

-- price.changed: one price of a rate over a window.
CREATE TABLE IF NOT EXISTS history_price_changes
(
    event_id     String,
    occurred_at  DateTime('UTC'),
    occurred_ms  Int64,
    supplier_id  String,
    product_id   String,
    rate_id      String,
    price_id     String,
    window_start DateTime('UTC'),
    window_end   DateTime('UTC'),
    currency     String,
    old_retail   Decimal(18, 4),
    new_retail   Decimal(18, 4),
    old_net      Decimal(18, 4),
    new_net      Decimal(18, 4),
    source       String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (supplier_id, product_id, rate_id, occurred_at, event_id);

-- notification.produced: a notification produced for a subscriber.
CREATE TABLE IF NOT EXISTS history_notifications
(
    event_id    String,
    occurred_at DateTime('UTC'),
    occurred_ms Int64,
    delivery_id String,
    subscriber  String,
    type        String,
    entity_key  String,
    rule_id     String,
    source      String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (subscriber, type, occurred_at, event_id);

-- delivery.attempt (one row per webhook POST, or per notification dropped
-- because its rule is disabled or deleted) and notification.suppressed
-- (outcome 'suppressed', attempt 0, status 0, error = the reason).
-- status is the HTTP status code, 0 when no response came. notification is
-- the notification's JSON when the producer included it (failed, dropped,
-- suppressed: what a replay needs), else empty.
CREATE TABLE IF NOT EXISTS history_deliveries
(
    event_id    String,
    occurred_at DateTime('UTC'),
    occurred_ms Int64,
    delivery_id String,
    subscriber  String,
    type        String,
    attempt     UInt16,
    status      UInt16,
    latency_ms  UInt32,
    outcome      String,
    error        String,
    notification String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (subscriber, type, occurred_at, event_id);

-- hold.status (kind 'hold') and booking.status (kind 'booking'): one row per
-- status a hold or booking entered.
CREATE TABLE IF NOT EXISTS history_bookings
(
    event_id           String,
    occurred_at        DateTime('UTC'),
    occurred_ms        Int64,
    kind               String,
    booking_id         String,
    hold_id            String,
    channel_id         String,
    supplier_id        String,
    product_id         String,
    rate_id            String,
    status             String,
    previous_status    String,
    reseller_reference String,
    quantity           UInt32,
    start_time         Nullable(DateTime('UTC')),
    expires_at         Nullable(DateTime('UTC'))
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (channel_id, supplier_id, kind, occurred_at, event_id);

-- changerequest.run: one row per status of an operator change-notification
-- request (WAITING, WORKING, SUCCEEDED, FAILED, PARTIAL_FAILURE).
CREATE TABLE IF NOT EXISTS history_change_requests
(
    event_id    String,
    occurred_at DateTime('UTC'),
    occurred_ms Int64,
    request_id  String,
    supplier_id String,
    product_id  String,
    mode        String,
    status      String,
    inserted_at DateTime('UTC'),
    began_at    Nullable(DateTime('UTC')),
    finished_at Nullable(DateTime('UTC')),
    error       String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (supplier_id, occurred_at, event_id);

-- sync.report: one scheduled full synchronization (cron report).
-- error_report is the report's errorReport array as JSON.
CREATE TABLE IF NOT EXISTS history_sync_reports
(
    event_id           String,
    occurred_at        DateTime('UTC'),
    occurred_ms        Int64,
    report_id          Int64,
    external_system_id String,
    supplier_id        String,
    inserted_at        DateTime('UTC'),
    error_count        UInt32,
    items              UInt32,
    error_report       String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (external_system_id, occurred_at, event_id);

-- partner.call: one call to a partner or an operator's booking system.
CREATE TABLE IF NOT EXISTS history_partner_calls
(
    event_id    String,
    occurred_at DateTime('UTC'),
    occurred_ms Int64,
    system      String,
    supplier_id String,
    operation   String,
    status      UInt16,
    latency_ms  UInt32,
    outcome     String,
    error       String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (system, supplier_id, operation, occurred_at, event_id);

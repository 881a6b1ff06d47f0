-- history_events: the landing table of every history event (availability
-- and price changes, notifications and delivery attempts, bookings,
-- change-notification runs, sync reports), one row per event, the payload
-- kept as the event's JSON. Analysts read it directly or through views.
--
-- ReplacingMergeTree keyed by (type, key, event_id): the history topic is
-- delivered at least once and may be replayed, and a replayed event_id
-- collapses into one row at merge time; read with FINAL (or GROUP BY
-- event_id) for exact counts before merges.
-- occurred_at (second precision) partitions by month; occurred_ms keeps the
-- millisecond, since DateTime64 does not exist on ClickHouse 18.16.
CREATE TABLE IF NOT EXISTS history_events
(
    event_id    String,
    type        String,
    key         String,
    occurred_at DateTime,
    occurred_ms Int64,
    source      String,
    payload     String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(occurred_at)
ORDER BY (type, key, event_id);

-- Names for analysts: history_* tables carry principal and channel ids
-- (a subscriber is a reseller principal; history_bookings has channel_id);
-- these two tables name them. Loaded by processors/history (Names) from the
-- compacted topics switchback.principals and switchback.channels, every
-- state of every entity, with its version: ReplacingMergeTree(version)
-- keeps the latest one per id, and queries read with FINAL
-- (docs/analytics.md, "Who is who"). Never secrets: no key, no secret
-- hash, no partner credentials. Not partitioned: they are small and
-- retention does not apply to them. Runs on ClickHouse 18.16 and current
-- releases alike.

-- principals: API principals (resellers are the subscribers of
-- history_notifications and history_deliveries).
CREATE TABLE IF NOT EXISTS principals
(
    id         String,
    role       String,
    name       String,
    channel_id String,
    created_at DateTime('UTC'),
    revoked    UInt8,
    version    Int64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

-- channels: sales channels (history_bookings.channel_id, principals.channel_id).
CREATE TABLE IF NOT EXISTS channels
(
    id           String,
    name         String,
    company_name String,
    deleted      UInt8,
    version      Int64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

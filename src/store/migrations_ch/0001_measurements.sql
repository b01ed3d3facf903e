-- ClickHouse schema 1 (src/store/README.md, "ClickHouseStore"). Statements end with ';' at the
-- end of a line and are applied one by one; ClickHouse has no transactions or locks, so each
-- must be idempotent (IF NOT EXISTS): nodes that open a new database together may both run it.
-- SQL that ClickHouse 18.16 (Debian 12) and current releases both accept.

-- One row per attempt. Labels are columns too: the store adds one String column per label of
-- core's label table (provider, model, ...) after the migrations, so a new label needs no
-- migration. Ordered by (ts_us, id): scan()'s order; partitioned by day for retention.
CREATE TABLE IF NOT EXISTS measurements (
    id Int64,
    ts_us Int64,
    request_id String,
    client_id String,
    attempt Int32,
    status String,
    packed String
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(ts_us, 1000000), 'UTC'))
ORDER BY (ts_us, id);

-- The observatory's hourly rollups: the observatory's own encoded aggregate (DDSketch and
-- counts) per hour x labels x client, replaced by a newer version of the same key. The row
-- with hour_us = -9223372036854775808 and no labels holds the watermark (aggregate: 8 bytes,
-- little endian), so rows and watermark arrive in one INSERT.
CREATE TABLE IF NOT EXISTS rollup_hours (
    hour_us Int64,
    labels Array(String),
    stream UInt8,
    client_id String,
    aggregate String,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
ORDER BY (hour_us, labels, stream, client_id);

-- The identity of each submitted record, ordered by it, so insert()'s duplicate lookup reads
-- the index instead of scanning measurements (10,000 keys against 1 M rows: ~30 ms instead of
-- ~380 ms here). Filled by the materialized view below as part of each INSERT into
-- measurements; partitioned like it, and retention deletes from both.
CREATE TABLE IF NOT EXISTS submitted_keys (
    client_id String,
    request_id String,
    attempt Int32,
    ts_us Int64
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(toDateTime(intDiv(ts_us, 1000000), 'UTC'))
ORDER BY (client_id, request_id, attempt);

CREATE MATERIALIZED VIEW IF NOT EXISTS submitted_keys_writer TO submitted_keys AS
SELECT client_id, request_id, attempt, ts_us FROM measurements WHERE client_id != '';

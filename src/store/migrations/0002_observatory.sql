-- The observatory: submitted records, and rollups kept across restarts.
--
-- received_us: the server's wall clock when a submitted record arrived (NULL: measured here).
ALTER TABLE measurements ADD COLUMN received_us INTEGER;

-- A submitter's record is stored once: (client_id, request_id, attempt) is unique among
-- records that have a client id (the server stamps the submitter's identity there). Records
-- measured here have client_id '' and skip the index, so the gateway's inserts do not pay it.
CREATE UNIQUE INDEX measurements_submitted ON measurements (client_id, request_id, attempt)
    WHERE client_id <> '';

-- One row per hour x label cell x client: the encoded observatory::Aggregate (counts and
-- DDSketches) of the records in it, unweighted. Rebuilt from measurements by
-- `tokenradar rollup --rebuild`.
CREATE TABLE rollup_hours (
    hour_us         INTEGER NOT NULL,  -- UTC microseconds, a whole hour
    provider        TEXT    NOT NULL,
    model           TEXT    NOT NULL,
    task            TEXT    NOT NULL,
    source          TEXT    NOT NULL,
    api             TEXT    NOT NULL,
    upstream_region TEXT    NOT NULL,
    client_region   TEXT    NOT NULL,
    stream          INTEGER NOT NULL CHECK (stream IN (0, 1)),
    client_id       TEXT    NOT NULL,
    aggregate       BLOB    NOT NULL,
    PRIMARY KEY (hour_us, provider, model, task, source, api, upstream_region, client_region,
                 stream, client_id)
) STRICT, WITHOUT ROWID;

-- rollup_watermark: the highest measurements.id whose record is in rollup_hours. Records
-- above it are rolled up on start (a crash between a commit and the next rollup save).
CREATE TABLE store_state (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

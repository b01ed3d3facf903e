-- Fewer, denser columns (issue 28). SQLite's cost of an INSERT grows with the row's columns
-- (a bind and several VDBE opcodes each), and a row had 52: the store's writer was ~30% of a
-- proxied request's instructions. A row keeps as columns what SQL filters, groups or
-- de-duplicates by, and the rest is in two places:
--   label_set  the id of its labels' row in label_sets, each combination of the eleven labels
--              once (a gateway sees few);
--   packed     every other field of the record (timings relative to send, token counts, the
--              response id, ...): src/store/packed_record.hpp, format 1. `tokenradar stats`
--              and the observatory decode it.
-- The ten derived REAL columns go: they were written for SQL and never read back, and derive()
-- computes them from the record. Record ids are kept: the rollup watermark refers to them.
-- tokenradar_pack() is registered on the store's connection before it migrates.

CREATE TABLE label_sets (
    id              INTEGER PRIMARY KEY,
    provider        TEXT    NOT NULL,
    model           TEXT    NOT NULL,
    endpoint        TEXT    NOT NULL,
    upstream_region TEXT    NOT NULL,
    client_region   TEXT    NOT NULL,
    task            TEXT    NOT NULL,
    source          TEXT    NOT NULL,
    cache           TEXT    NOT NULL,
    route           TEXT    NOT NULL,
    api             TEXT    NOT NULL,
    stream          INTEGER NOT NULL CHECK (stream IN (0, 1)),
    UNIQUE (provider, model, endpoint, upstream_region, client_region, task, source, cache, route,
            api, stream)
) STRICT;

INSERT INTO label_sets (provider, model, endpoint, upstream_region, client_region, task, source,
                        cache, route, api, stream)
    SELECT DISTINCT provider, model, endpoint, upstream_region, client_region, task, source,
                    cache, route, api, stream
    FROM measurements;

CREATE TABLE measurements_packed (
    id         INTEGER PRIMARY KEY,
    ts_us      INTEGER NOT NULL,  -- wall clock at send, UTC microseconds
    request_id TEXT    NOT NULL,
    client_id  TEXT    NOT NULL DEFAULT '',  -- '' for records measured here
    attempt    INTEGER NOT NULL,
    label_set  INTEGER NOT NULL REFERENCES label_sets (id),
    status     TEXT    NOT NULL,  -- ok, http_429, timeout_first_token, ...
    packed     BLOB    NOT NULL
) STRICT;

INSERT INTO measurements_packed (id, ts_us, request_id, client_id, attempt, label_set, status,
                                 packed)
    SELECT m.id, m.ts_us, m.request_id, m.client_id, m.attempt, l.id, m.status,
           tokenradar_pack(m.response_id, m.received_us, m.http_status, m.sched_offset_ns,
                           m.headers_ns, m.first_chunk_ns, m.first_token_ns, m.first_answer_ns,
                           m.last_token_ns, m.done_ns, m.connect_ns, m.tls_ns, m.prompt_tokens,
                           m.cached_prompt_tokens, m.cache_creation_tokens, m.output_tokens,
                           m.reasoning_tokens, m.token_source, m.output_events,
                           m.chunk_gap_p50_ns, m.chunk_gap_p99_ns, m.chunk_gap_max_ns,
                           m.overhead_ns, m.relay_p50_ns, m.relay_max_ns)
    FROM measurements AS m
    JOIN label_sets AS l USING (provider, model, endpoint, upstream_region, client_region, task,
                                source, cache, route, api, stream)
    ORDER BY m.id;

DROP TABLE measurements;  -- and its two indexes
ALTER TABLE measurements_packed RENAME TO measurements;

-- As before: time windows and retention; a submitter's record stored once.
CREATE INDEX measurements_ts ON measurements (ts_us);
CREATE UNIQUE INDEX measurements_submitted ON measurements (client_id, request_id, attempt)
    WHERE client_id <> '';

-- For SQL: each row with its labels as columns.
CREATE VIEW measurements_labelled AS
    SELECT m.id, m.ts_us, m.request_id, m.client_id, m.attempt, l.provider, l.model, l.endpoint,
           l.upstream_region, l.client_region, l.task, l.source, l.cache, l.route, l.api,
           l.stream, m.status, m.packed
    FROM measurements AS m
    JOIN label_sets AS l ON l.id = m.label_set;

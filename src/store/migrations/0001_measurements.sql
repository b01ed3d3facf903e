-- One row per request attempt: every field of tokenradar::Measurement (metrics.md spec 1)
-- plus its derived metrics, so queries can filter and aggregate without recomputing them.
-- Steady-clock moments are stored relative to t_send in nanoseconds (as in the JSONL form);
-- NULL means the moment never happened or the figure is unknown. No prompt or answer text
-- exists in a record, and nothing secret is stored.
CREATE TABLE measurements (
    id                    INTEGER PRIMARY KEY,
    ts_us                 INTEGER NOT NULL,  -- wall clock at send, UTC microseconds
    request_id            TEXT    NOT NULL,
    response_id           TEXT    NOT NULL,
    client_id             TEXT    NOT NULL,
    attempt               INTEGER NOT NULL,
    provider              TEXT    NOT NULL,
    model                 TEXT    NOT NULL,
    endpoint              TEXT    NOT NULL,
    upstream_region       TEXT    NOT NULL,
    client_region         TEXT    NOT NULL,
    task                  TEXT    NOT NULL,
    source                TEXT    NOT NULL,
    cache                 TEXT    NOT NULL,
    route                 TEXT    NOT NULL,
    api                   TEXT    NOT NULL,
    stream                INTEGER NOT NULL CHECK (stream IN (0, 1)),
    status                TEXT    NOT NULL,
    http_status           INTEGER NOT NULL,
    sched_offset_ns       INTEGER NOT NULL,  -- t_sched - t_send (<= 0)
    headers_ns            INTEGER,
    first_chunk_ns        INTEGER,
    first_token_ns        INTEGER,
    first_answer_ns       INTEGER,
    last_token_ns         INTEGER,
    done_ns               INTEGER,
    connect_ns            INTEGER NOT NULL,
    tls_ns                INTEGER NOT NULL,
    prompt_tokens         INTEGER,
    cached_prompt_tokens  INTEGER,
    cache_creation_tokens INTEGER,
    output_tokens         INTEGER,
    reasoning_tokens      INTEGER,
    token_source          TEXT    NOT NULL CHECK (token_source IN ('usage', 'estimate')),
    output_events         INTEGER NOT NULL,
    chunk_gap_p50_ns      INTEGER,
    chunk_gap_p99_ns      INTEGER,
    chunk_gap_max_ns      INTEGER,
    overhead_ns           INTEGER,
    relay_p50_ns          INTEGER,
    relay_max_ns          INTEGER,
    -- Derived (core/measurement.hpp derive()); written by the store, never read back into a
    -- Measurement.
    ttft_ms               REAL,
    ttft_sched_ms         REAL,
    ttfat_ms              REAL,
    ttfb_ms               REAL,
    e2e_ms                REAL,
    tpot_ms               REAL,
    decode_tps            REAL,
    e2e_tps               REAL,
    tokens_per_chunk      REAL,
    e2e500_ms             REAL
) STRICT;

-- Time-window scans (stats, retention). Every index costs inserts (a second one on
-- provider, model, ts_us cost 10-20% of insert throughput): add one with the query that needs it.
CREATE INDEX measurements_ts ON measurements (ts_us);

-- PostgreSQL schema version 1: the shape of SQLite's schema 3 (src/store/migrations/,
-- src/store/README.md) in PostgreSQL's types, so both backends keep the same records, label
-- sets, rollups and state. A row keeps as columns what SQL filters, groups or de-duplicates
-- by; its labels are one label_sets id and every other field is `packed`
-- (src/store/packed_record.hpp, format 1). Versions are rows of tokenradar_migrations, which
-- the store creates itself before applying this file.

-- Each combination of the eleven labels once; rows are only ever added.
CREATE TABLE label_sets (
    id              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider        text    NOT NULL,
    model           text    NOT NULL,
    endpoint        text    NOT NULL,
    upstream_region text    NOT NULL,
    client_region   text    NOT NULL,
    task            text    NOT NULL,
    source          text    NOT NULL,
    cache           text    NOT NULL,
    route           text    NOT NULL,
    api             text    NOT NULL,
    stream          boolean NOT NULL,
    UNIQUE (provider, model, endpoint, upstream_region, client_region, task, source, cache, route,
            api, stream)
);

-- One row per request attempt. id is in insertion order (RecordQuery::after_id, last_id() and
-- the rollup watermark count in it): the sequence hands ids out one at a time (no per-session
-- cache) and inserts hold a transaction-level advisory lock, so ids also commit in order
-- when several nodes write. label_set names a label_sets row; no foreign key, as in SQLite,
-- where it is not enforced either: a per-row check would cost every insert a lookup.
CREATE TABLE measurements (
    id         bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ts_us      bigint  NOT NULL,              -- wall clock at send, UTC microseconds
    request_id text    NOT NULL,
    client_id  text    NOT NULL DEFAULT '',   -- '' for records measured here
    attempt    integer NOT NULL,
    label_set  bigint  NOT NULL,
    status     text    NOT NULL,              -- ok, http_429, timeout_first_token, ...
    packed     bytea   NOT NULL
);

-- Time windows in scan() order, and retention.
CREATE INDEX measurements_ts ON measurements (ts_us, id);
-- A submitter's record is stored once; records measured here skip the index.
CREATE UNIQUE INDEX measurements_submitted ON measurements (client_id, request_id, attempt)
    WHERE client_id <> '';

-- The observatory's rollups: one row per hour x label cell x client, its encoded aggregate.
CREATE TABLE rollup_hours (
    hour_us         bigint  NOT NULL,  -- UTC microseconds, a whole hour
    provider        text    NOT NULL,
    model           text    NOT NULL,
    task            text    NOT NULL,
    source          text    NOT NULL,
    api             text    NOT NULL,
    upstream_region text    NOT NULL,
    client_region   text    NOT NULL,
    stream          boolean NOT NULL,
    client_id       text    NOT NULL,
    aggregate       bytea   NOT NULL,
    PRIMARY KEY (hour_us, provider, model, task, source, api, upstream_region, client_region,
                 stream, client_id)
);

-- rollup_watermark: the highest measurements.id whose record is in rollup_hours.
CREATE TABLE store_state (
    key   text   PRIMARY KEY,
    value bigint NOT NULL
);

-- For SQL: each row with its labels as columns.
CREATE VIEW measurements_labelled AS
    SELECT m.id, m.ts_us, m.request_id, m.client_id, m.attempt, l.provider, l.model, l.endpoint,
           l.upstream_region, l.client_region, l.task, l.source, l.cache, l.route, l.api,
           l.stream, m.status, m.packed
    FROM measurements AS m
    JOIN label_sets AS l ON l.id = m.label_set;

-- A record's labels gain client_key (issue 29): the name of the client key the gateway admitted
-- the request with, so latency and usage can be read per team. It is part of label_sets' and
-- rollup_hours' unique keys, so both tables are rebuilt (SQLite cannot change a constraint in
-- place); rows already stored get '' (no key), and ids are kept. The view that names
-- label_sets goes first and comes back with the new column.

DROP VIEW measurements_labelled;

CREATE TABLE label_sets_v4 (
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
    client_key      TEXT    NOT NULL,
    UNIQUE (provider, model, endpoint, upstream_region, client_region, task, source, cache, route,
            api, stream, client_key)
) STRICT;
INSERT INTO label_sets_v4 (id, provider, model, endpoint, upstream_region, client_region, task,
                           source, cache, route, api, stream, client_key)
    SELECT id, provider, model, endpoint, upstream_region, client_region, task, source, cache,
           route, api, stream, ''
    FROM label_sets;
DROP TABLE label_sets;
ALTER TABLE label_sets_v4 RENAME TO label_sets;

CREATE TABLE rollup_hours_v4 (
    hour_us         INTEGER NOT NULL,  -- UTC microseconds, a whole hour
    provider        TEXT    NOT NULL,
    model           TEXT    NOT NULL,
    task            TEXT    NOT NULL,
    source          TEXT    NOT NULL,
    api             TEXT    NOT NULL,
    upstream_region TEXT    NOT NULL,
    client_region   TEXT    NOT NULL,
    client_key      TEXT    NOT NULL,
    stream          INTEGER NOT NULL CHECK (stream IN (0, 1)),
    client_id       TEXT    NOT NULL,
    aggregate       BLOB    NOT NULL,
    PRIMARY KEY (hour_us, provider, model, task, source, api, upstream_region, client_region,
                 client_key, stream, client_id)
) STRICT, WITHOUT ROWID;
INSERT INTO rollup_hours_v4 (hour_us, provider, model, task, source, api, upstream_region,
                             client_region, client_key, stream, client_id, aggregate)
    SELECT hour_us, provider, model, task, source, api, upstream_region, client_region, '',
           stream, client_id, aggregate
    FROM rollup_hours;
DROP TABLE rollup_hours;
ALTER TABLE rollup_hours_v4 RENAME TO rollup_hours;

-- For SQL: each row with its labels as columns.
CREATE VIEW measurements_labelled AS
    SELECT m.id, m.ts_us, m.request_id, m.client_id, m.attempt, l.provider, l.model, l.endpoint,
           l.upstream_region, l.client_region, l.task, l.source, l.cache, l.route, l.api,
           l.stream, l.client_key, m.status, m.packed
    FROM measurements AS m
    JOIN label_sets AS l ON l.id = m.label_set;

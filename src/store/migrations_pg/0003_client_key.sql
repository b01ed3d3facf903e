-- PostgreSQL schema version 3: a record's labels gain client_key (issue 29), the name of the
-- client key the gateway admitted the request with, in label_sets' and rollup_hours' unique
-- keys. Rows already stored get '' (no key). The same change as SQLite's migration 0004.

DROP VIEW measurements_labelled;

ALTER TABLE label_sets ADD COLUMN client_key text NOT NULL DEFAULT '';
ALTER TABLE label_sets ALTER COLUMN client_key DROP DEFAULT;
DO $$
DECLARE
    old_unique text;
BEGIN
    SELECT conname INTO old_unique FROM pg_constraint
        WHERE conrelid = 'label_sets'::regclass AND contype = 'u';
    EXECUTE format('ALTER TABLE label_sets DROP CONSTRAINT %I', old_unique);
END $$;
ALTER TABLE label_sets ADD UNIQUE (provider, model, endpoint, upstream_region, client_region,
                                   task, source, cache, route, api, stream, client_key);

ALTER TABLE rollup_hours ADD COLUMN client_key text NOT NULL DEFAULT '';
ALTER TABLE rollup_hours ALTER COLUMN client_key DROP DEFAULT;
ALTER TABLE rollup_hours DROP CONSTRAINT rollup_hours_pkey;
ALTER TABLE rollup_hours ADD PRIMARY KEY (hour_us, provider, model, task, source, api,
                                          upstream_region, client_region, client_key, stream,
                                          client_id);

-- For SQL: each row with its labels as columns.
CREATE VIEW measurements_labelled AS
    SELECT m.id, m.ts_us, m.request_id, m.client_id, m.attempt, l.provider, l.model, l.endpoint,
           l.upstream_region, l.client_region, l.task, l.source, l.cache, l.route, l.api,
           l.stream, l.client_key, m.status, m.packed
    FROM measurements AS m
    JOIN label_sets AS l ON l.id = m.label_set;

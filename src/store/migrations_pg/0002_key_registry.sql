-- PostgreSQL schema version 2: the virtual key registry (src/keys, README "Keys, limits and
-- budgets") for gateway nodes on several hosts, the same tables as a SQLite registry file
-- (src/keys/sqlite_key_registry.cpp) in the measurement database (`[auth] registry = "auto"`
-- with a PostgreSQL store) or another one. Written by PostgresKeyRegistry, never by the store.

-- One row per key id; a rotation replaces sha256, a revocation sets revoked_us. `models` is a
-- JSON array of names (empty: all). Two active keys never share a name.
CREATE TABLE virtual_keys (
    id            text   PRIMARY KEY,
    name          text   NOT NULL,
    sha256        text   NOT NULL,
    models        text   NOT NULL,
    rpm           bigint NOT NULL,
    tpm           bigint NOT NULL,
    budget_tokens bigint NOT NULL,
    budget_period text   NOT NULL,
    created_us    bigint NOT NULL,
    rotated_us    bigint NOT NULL,
    revoked_us    bigint NOT NULL
);
CREATE UNIQUE INDEX virtual_keys_active_name ON virtual_keys (name) WHERE revoked_us = 0;

-- Requests and tokens per key and budget period, every node's deltas added in.
CREATE TABLE key_usage (
    key_id          text   NOT NULL,
    period_start_us bigint NOT NULL,
    requests        bigint NOT NULL,
    tokens          bigint NOT NULL,
    PRIMARY KEY (key_id, period_start_us)
);

-- Admin actions, newest by id.
CREATE TABLE key_audit (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ts_us  bigint NOT NULL,
    actor  text   NOT NULL,
    action text   NOT NULL,
    key_id text   NOT NULL,
    detail text   NOT NULL
);

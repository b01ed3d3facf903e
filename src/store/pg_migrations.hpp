#pragma once
// PostgreSQL's numbered schema migrations (migrations_pg/NNNN_name.sql, embedded at build
// time) and the code that applies them. Applied versions are rows of `tokenradar_migrations`.

#include <tokenradar/core/error.hpp>

#include "migration.hpp"
#include "pg_connection.hpp"

#include <span>

namespace tokenradar::store {

// The migrations compiled into this binary (generated migrations_pg.cpp).
std::span<const Migration> builtin_pg_migrations() noexcept;

struct PgSchema {
    int version = 0;  // in force now
    int applied = 0;  // by this call
};

// Brings the database to the last of `migrations` (each missing one in its own transaction
// with its version row), holding a session advisory lock throughout, so several nodes that
// start at once apply each migration once: the others wait, then find it applied. A database
// newer than `migrations` is Errc::unsupported naming both versions; one older than them is
// Errc::unsupported too when `apply` is false (a reader must not change the schema).
Result<PgSchema> pg_migrate(PgConnection& db, std::span<const Migration> migrations, bool apply);

}  // namespace tokenradar::store

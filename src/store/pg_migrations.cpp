#include "pg_migrations.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace tokenradar::store {
namespace {

// pg_advisory_lock's key for migrations (ASCII "tr-migr"): one per database.
constexpr std::int64_t kMigrationLock = 0x74722d6d696772;

Result<PgSchema> migrate_locked(PgConnection& db, std::span<const Migration> migrations,
                                bool apply) {
    // A reader (!apply) leaves a database without the table as it is: version 0.
    auto exists =
        db.exec("read the schema version",
                "SELECT to_regclass('tokenradar_migrations') IS NOT NULL", PGRES_TUPLES_OK);
    if (!exists) return exists.error();
    const bool has_table = std::string_view(PQgetvalue(exists->get(), 0, 0)) == "t";
    if (!has_table && apply) {
        auto table = db.exec("create the migrations table",
                             "CREATE TABLE tokenradar_migrations (version integer PRIMARY KEY, "
                             "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
        if (!table) return table.error();
    }
    PgSchema schema;
    if (has_table) {
        auto found =
            db.exec("read the schema version",
                    "SELECT coalesce(max(version), 0) FROM tokenradar_migrations", PGRES_TUPLES_OK);
        if (!found) return found.error();
        schema.version = std::stoi(PQgetvalue(found->get(), 0, 0));
    }
    const int latest = migrations.empty() ? 0 : migrations.back().version;
    if (schema.version > latest) {
        return Error(Errc::unsupported,
                     fmt::format("{}: database schema version {} is newer than this tokenradar "
                                 "(it knows versions up to {}): use a newer tokenradar",
                                 db.name(), schema.version, latest));
    }
    if (!apply && schema.version < latest) {
        return Error(Errc::unsupported,
                     fmt::format("{}: database schema version {} is older than this "
                                 "tokenradar's ({}); it is migrated when the gateway opens it",
                                 db.name(), schema.version, latest));
    }
    for (const Migration& m : migrations) {
        if (m.version <= schema.version) continue;
        const std::string what = fmt::format("migration {}", m.name);
        if (auto begun = db.exec(what, "BEGIN"); !begun) return begun.error();
        PgParams params;
        params.int4(m.version);
        params.text(m.name);
        auto done = db.exec(what, std::string(m.sql));
        if (done) {
            done = db.exec_params(
                what, "INSERT INTO tokenradar_migrations (version, name) VALUES ($1, $2)", params,
                PGRES_COMMAND_OK);
        }
        if (done) done = db.exec(what, "COMMIT");
        if (!done) {
            (void)db.exec(what, "ROLLBACK");
            return done.error();
        }
        schema.version = m.version;
        ++schema.applied;
    }
    return schema;
}

}  // namespace

Result<PgSchema> pg_migrate(PgConnection& db, std::span<const Migration> migrations, bool apply) {
    const std::string key = std::to_string(kMigrationLock);
    if (auto locked = db.exec("lock for migrations",
                              fmt::format("SELECT pg_advisory_lock({})", key), PGRES_TUPLES_OK);
        !locked) {
        return locked.error();
    }
    auto schema = migrate_locked(db, migrations, apply);
    // Released with the session too, should the connection be gone.
    (void)db.exec("unlock after migrations", fmt::format("SELECT pg_advisory_unlock({})", key),
                  PGRES_TUPLES_OK);
    return schema;
}

}  // namespace tokenradar::store

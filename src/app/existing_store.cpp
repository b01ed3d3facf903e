#include "existing_store.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/postgres_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <fmt/format.h>

namespace tokenradar::app {

std::unique_ptr<store::MeasurementStore> open_existing_store(const std::string& db,
                                                             bool exclusive) {
    if (db.starts_with("clickhouse://")) {
        // No owner lock in ClickHouse: `exclusive` (rollup --rebuild) is the operator's word
        // that no serve saves rollups meanwhile (README "ClickHouse").
        store::ClickHouseOptions options;
        options.migrate = false;
        auto ch = store::ClickHouseStore::open(db, options);
        if (!ch) throw ConfigError(fmt::format("--db {}", ch.error().message));
        return std::move(*ch);
    }
    if (db.starts_with("postgresql://") || db.starts_with("postgres://")) {
        store::PostgresOptions options;
        options.migrate = false;
        options.exclusive = exclusive;
        auto pg = store::PostgresStore::open(db, options);
        if (!pg) throw ConfigError(fmt::format("--db {}", pg.error().message));
        return std::move(*pg);
    }
    store::SqliteOptions options;
    options.create = false;
    options.migrate = false;
    options.exclusive = exclusive;
    auto sqlite = store::SqliteStore::open(db, options);
    if (!sqlite) throw ConfigError(fmt::format("--db {}", sqlite.error().message));
    return std::move(*sqlite);
}

}  // namespace tokenradar::app

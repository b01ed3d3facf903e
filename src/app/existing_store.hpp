#pragma once
// The `--db` of the commands that read a gateway's store (stats, rollup --rebuild): a SQLite
// file, a postgresql:// or a clickhouse:// URL, opened as it is: never created, never migrated (the
// schema belongs to the servers that wrote it). Throws ConfigError "--db <what>: <why>" (a URL with
// its password redacted).

#include <tokenradar/store/measurement_store.hpp>

#include <memory>
#include <string>

namespace tokenradar::app {

// exclusive: own the database's rollups while open (SqliteOptions::exclusive,
// PostgresOptions::exclusive), refused while a serve or demo owns them.
std::unique_ptr<store::MeasurementStore> open_existing_store(const std::string& db, bool exclusive);

}  // namespace tokenradar::app

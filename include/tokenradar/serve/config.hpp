#pragma once
// `tokenradar serve`'s configuration file: the gateway's tables (gateway/config.hpp), the
// store's ([store]) and the observatory's ([observatory], observatory/config.hpp), read in
// one pass. Loading validates everything and throws ConfigError naming file:line and the
// dotted key.

#include <tokenradar/core/config.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/observatory/config.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace tokenradar::serve {

// [store]: where every attempt's record is written (store::BatchWriter over SQLite, or over
// PostgreSQL when `url` is given: one or the other).
struct StoreConfig {
    std::filesystem::path path = "tokenradar.db";  // "" = no store (metrics only)
    // "postgresql://user:password@host:5432/db": store::PostgresStore instead of the file
    // (then `path` is ""). Shown only redacted (store::redact_postgres_url).
    std::string url;
    std::chrono::milliseconds flush_interval{200};
    std::size_t queue = 65'536;
    std::optional<std::chrono::hours> retention;
};

struct ServeConfig {
    gateway::GatewayConfig gateway;  // its `source` names the file for every message
    StoreConfig store;
    observatory::ObservatoryConfig observatory;  // the /api/v1 queries and ingestion

    // Whether /api/v1 is mounted (queries or ingestion).
    [[nodiscard]] bool serves_observatory() const noexcept;
};

// Reads the environment (upstream keys, ingest keys) through `getenv_fn`. Throws ConfigError.
ServeConfig load_serve_config(const ConfigTable& root, const gateway::EnvLookup& getenv_fn);
ServeConfig load_serve_config_file(const std::filesystem::path& path);

// What --check-config prints: the gateway's account with the store and observatory lines.
std::string describe(const ServeConfig& config);

}  // namespace tokenradar::serve

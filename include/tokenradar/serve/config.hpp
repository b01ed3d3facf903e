#pragma once
// `tokenradar serve`'s configuration file: the gateway's tables (gateway/config.hpp), the
// store's ([store]) and the observatory's ([observatory], observatory/config.hpp), read in
// one pass. Loading validates everything and throws ConfigError naming file:line and the
// dotted key.

#include <tokenradar/bench/workload.hpp>
#include <tokenradar/core/config.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/observatory/config.hpp>
#include <tokenradar/observatory/incident_monitor.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tokenradar::serve {

// [store]: where every attempt's record is written (store::BatchWriter over SQLite, or over
// PostgreSQL when `url` is given: one or the other).
struct StoreConfig {
    std::filesystem::path path = "tokenradar.db";  // "" = no store (metrics only)
    // "postgresql://user:password@host:5432/db": store::PostgresStore instead of the file
    // (then `path` is ""); "clickhouse://user:password@host:8123/db": store::ClickHouseStore.
    // Shown only redacted (store::redact_postgres_url, which redacts either).
    std::string url;
    std::chrono::milliseconds flush_interval{200};
    std::size_t queue = 65'536;
    std::optional<std::chrono::hours> retention;
};

// [probes] and [[probes.targets]]: small bench requests serve sends on a schedule (README
// "Scheduled probes"), recorded with source = "probe" and client_region = `region`.
struct ProbeTarget {
    std::size_t provider = 0;  // index into GatewayConfig::providers
    std::string model;         // the upstream model name
};

struct ProbeConfig {
    std::vector<ProbeTarget> targets;  // none: no probes
    std::string region;                // client_region of the records ("" = unset)
    std::chrono::seconds interval{300};
    // Each run starts a random 0..jitter after its slot (a target's first run too), so many
    // servers started together do not probe in step.
    std::chrono::seconds jitter{30};
    std::string workload_name = "probe";  // a workloads/ name or a path
    bench::Workload workload;             // loaded by load_serve_config
    std::int64_t requests = 1;            // per run and target, one after the other
    // The caps: a schedule that would spend more per target and day is refused at load.
    std::int64_t max_requests_per_day = 1'000;
    std::int64_t max_tokens_per_day = 200'000;

    // The schedule's cost per target and day: requests, and tokens (the prompt's estimate plus
    // the workload's max_tokens per request: the most it can spend).
    [[nodiscard]] std::int64_t requests_per_day() const noexcept;
    [[nodiscard]] std::int64_t tokens_per_request() const;
    [[nodiscard]] std::int64_t tokens_per_day() const {
        return requests_per_day() * tokens_per_request();
    }
};

struct ServeConfig {
    gateway::GatewayConfig gateway;  // its `source` names the file for every message
    StoreConfig store;
    observatory::ObservatoryConfig observatory;  // the /api/v1 queries and ingestion
    ProbeConfig probes;
    observatory::IncidentConfig incidents;  // [incidents]: needs the observatory's queries

    // Whether /api/v1 is mounted (queries or ingestion).
    [[nodiscard]] bool serves_observatory() const noexcept;
};

// Reads the environment (upstream keys, ingest keys) through `getenv_fn`. Throws ConfigError.
// Probe workload names are looked up in `workloads_dir` (empty: find_resource_dir).
ServeConfig load_serve_config(const ConfigTable& root, const gateway::EnvLookup& getenv_fn,
                              const std::filesystem::path& workloads_dir = {});
// [probes] alone (serve's loader calls it after the gateway's tables; the demo builds its
// config in code and checks it through this too when it has a table). Throws ConfigError.
ProbeConfig load_probe_config(const std::optional<ConfigTable>& table,
                              const gateway::GatewayConfig& gateway,
                              const std::filesystem::path& workloads_dir);
// Throws ConfigError when the schedule's cost per target and day is over a cap; `where`
// names the table ("file:line: probes") for the message.
void check_probe_cost(const ProbeConfig& probes, const ConfigTable* table);
ServeConfig load_serve_config_file(const std::filesystem::path& path);

// What --check-config prints: the gateway's account with the store and observatory lines.
std::string describe(const ServeConfig& config);

}  // namespace tokenradar::serve

#pragma once
// The serve configuration of the probe and incident tests: a SQLite store, the observatory,
// one provider `sim` in us-east, and [probes] from eu-west against its gpt-4o every second.

#include "../../support/service_fixture.hpp"
#include "../../support/sim_fixture.hpp"
#include "../../support/store_records.hpp"

#include <filesystem>
#include <string>

namespace tokenradar::serve {

inline std::string probe_workload() {
    return (std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "workloads" / "probe.toml").string();
}

// The store at `db`, the observatory, one provider `sim` at `sim_url`, and `extra` tables.
inline std::string config(const std::string& db, const std::string& sim_url,
                          const std::string& extra) {
    return R"(
[auth]
mode = "none"
[store]
path = ")" +
           db + R"("
flush_interval = "20ms"
[dashboard]
enabled = false
[observatory]
cache_ttl = "0s"
min_samples = 1
[[providers]]
name = "sim"
api = "openai"
base_url = ")" +
           sim_url + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
region = "us-east"
[[models]]
name = "fast"
upstreams = ["sim/gpt-4o"]
)" + extra;
}

inline std::string probes(const std::string& caps) {
    return R"(
[probes]
region = "eu-west"
interval = "1s"
jitter = "0s"
workload = ")" +
           probe_workload() + R"("
)" + caps + R"(
[[probes.targets]]
provider = "sim"
model = "gpt-4o"
)";
}

}  // namespace tokenradar::serve

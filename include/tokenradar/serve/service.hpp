#pragma once
// `tokenradar serve` (and `tokenradar demo`'s server) assembled: the store (SQLite) behind a
// batch writer, the observatory (rollups kept on the writer's thread, /api/v1 queries and
// ingestion, [observatory] forward_to), and the GatewayServer, plugged together through the
// gateway's hooks: records go to the store and the forwarder, /api/ to the observatory,
// /metrics gets the store's and the observatory's counters, /readyz waits for the rollups.
// stop() drains in order: streams first (within the grace period), then the writer's queue.
//
// Threads: construct, start() and stop() from one thread (main); the I/O runs on the
// server's thread and the store's writes on the writer's.

#include <tokenradar/core/error.hpp>
#include <tokenradar/gateway/gateway_server.hpp>
#include <tokenradar/serve/config.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace tokenradar::store {
class BatchWriter;
}
namespace tokenradar::observatory {
class Forwarder;
class HttpApi;
class RollupIndex;
class RollupKeeper;
}  // namespace tokenradar::observatory

namespace tokenradar::serve {

class IncidentWatch;
class LocalTier;
class Prober;
class RegionLatency;

class Service {
  public:
    // Opens the store and the response cache's local file (ConfigError naming the config
    // file and the data file when it cannot). The hooks' sink, extra_metrics, ready,
    // api_routes, api_head_check, api_max_body_bytes and cache_tier are set here
    // (a caller's sink and ready are kept and called too); ca_file is the caller's.
    explicit Service(ServeConfig config, gateway::GatewayHooks hooks = {});
    ~Service();
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;

    Result<std::uint16_t> start();
    // Streams in flight get the gateway's shutdown_grace; then every queued record and cache
    // write is written.
    void stop();

    [[nodiscard]] gateway::GatewayServer& server() noexcept { return *server_; }
    // True once the observatory's rollups are loaded (/readyz says so too).
    [[nodiscard]] bool ready() const noexcept;
    // [probes] (null without targets) and [incidents] (null when off).
    [[nodiscard]] Prober* prober() noexcept { return prober_.get(); }
    [[nodiscard]] IncidentWatch* incidents() noexcept { return incidents_.get(); }
    // "N records written to PATH, M dropped" after stop(); "" without a store.
    [[nodiscard]] std::string store_summary() const;

  private:
    ServeConfig config_;
    std::shared_ptr<observatory::RollupIndex> rollups_;
    std::shared_ptr<observatory::RollupKeeper> keeper_;
    std::unique_ptr<observatory::HttpApi> api_;
    std::unique_ptr<RegionLatency> region_latency_;      // nearest-region routing's measurements
    std::unique_ptr<observatory::Forwarder> forwarder_;  // [observatory] forward_to
    std::unique_ptr<store::BatchWriter> writer_;
    std::shared_ptr<LocalTier> cache_tier_;     // [cache] local: the response cache's L2
    std::unique_ptr<IncidentWatch> incidents_;  // [incidents]: reads the rollups
    std::unique_ptr<Prober> prober_;            // [probes]: records through the hooks' sink
    std::unique_ptr<gateway::GatewayServer> server_;
};

}  // namespace tokenradar::serve

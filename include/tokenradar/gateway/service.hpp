#pragma once
// The gateway as `tokenradar serve` and `tokenradar demo` run it: the store (SQLite) behind a
// batch writer, the observatory (rollups kept on the writer's thread, /api/v1 queries and
// ingestion), and the GatewayServer whose records go to the store. stop() drains in order:
// streams first (within the grace period), then the writer's queue.
//
// Threads: construct, start() and stop() from one thread (main); the I/O runs on the
// server's thread and the store's writes on the writer's.

#include <tokenradar/core/error.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/gateway/gateway_server.hpp>

#include <chrono>
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

namespace tokenradar::gateway {

class Service {
  public:
    // Opens the store (ConfigError naming the config file when it cannot). `hooks.sink` and
    // `hooks.extra_metrics` are set here; other hooks (api_routes) are the caller's.
    Service(GatewayConfig config, GatewayHooks hooks = {});
    ~Service();
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;

    Result<std::uint16_t> start();
    // Streams in flight get config.shutdown_grace; then every queued record is written.
    void stop();

    [[nodiscard]] GatewayServer& server() noexcept { return *server_; }
    // True once the observatory's rollups are loaded (/readyz says so too).
    [[nodiscard]] bool ready() const noexcept;
    // "N records written to PATH, M dropped" after stop(); "" without a store.
    [[nodiscard]] std::string store_summary() const;

  private:
    GatewayConfig config_;
    std::shared_ptr<observatory::RollupIndex> rollups_;
    std::shared_ptr<observatory::RollupKeeper> keeper_;
    std::unique_ptr<observatory::HttpApi> api_;
    std::unique_ptr<observatory::Forwarder> forwarder_;  // [observatory] forward_to
    std::unique_ptr<store::BatchWriter> writer_;
    std::unique_ptr<GatewayServer> server_;
};

}  // namespace tokenradar::gateway

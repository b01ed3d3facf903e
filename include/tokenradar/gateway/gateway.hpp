#pragma once
// The gateway's request pipeline (`tokenradar serve`): auth, limits, routing over a virtual
// model's upstreams with fallback, translation to the upstream's dialect, relay without
// buffering, metering of every attempt. Endpoints: POST /v1/chat/completions,
// POST /v1/embeddings, GET /v1/models, GET /healthz, GET /readyz, GET /metrics.
//
// Threads: one Gateway serves every connection of its io_context; handle() runs on the
// connection's strand (net::HttpServer). The HttpClients live on the io_context's executor
// and may be used from any of its strands. Records go to `sink` from the I/O thread: it must
// not block (store::BatchWriter::try_push).

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/gateway/prometheus.hpp>
#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/http_server.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tokenradar::gateway {

using RecordSink = std::function<void(Measurement&&)>;
// Answers a request the gateway does not own (the observatory's /api/...); returns false to
// let the gateway answer 404. Runs like a net::Handler.
using RouteHandler = std::function<net::asio::awaitable<bool>(net::Request&, net::ResponseWriter&)>;

struct GatewayHooks {
    RecordSink sink;                          // every attempt's record; may be empty
    std::function<std::string()> extra_metrics;  // appended to /metrics (store counters)
    std::function<bool()> ready;              // /readyz; empty = always ready
    std::string ca_file;                      // extra CA bundle for upstream TLS (tests)
    RouteHandler api_routes;                  // requests under /api/
};

class Gateway {
  public:
    Gateway(net::asio::any_io_executor ex, const GatewayConfig& config, GatewayHooks hooks = {});
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    // The HttpServer handler. Suspends for the whole request; terminal cancellation (the
    // client went away) cancels the upstream request at once.
    net::asio::awaitable<void> handle(net::Request& request, net::ResponseWriter& writer);

    [[nodiscard]] Metrics& metrics() noexcept { return metrics_; }

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
    Metrics metrics_;
};

}  // namespace tokenradar::gateway

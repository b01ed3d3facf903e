#pragma once
// The gateway's request pipeline (`tokenradar serve`): auth, limits, routing over a virtual
// model's upstreams with fallback, translation to the upstream's dialect, relay without
// buffering, metering of every attempt. Endpoints: POST /v1/chat/completions,
// POST /v1/embeddings, GET /v1/models, GET /healthz, GET /readyz, GET /metrics.
//
// Threads: one Gateway serves every connection of its I/O threads (GatewayServer runs one
// io_context per thread); handle() runs on the connection's thread. Each I/O thread has its
// own upstream connection pools (an HttpClient per provider on its executor), picked through
// the thread's index (set_io_thread); what the threads share (metrics, limits, routing
// estimates, the response cache) is thread-safe. Records go to `sink` from the I/O threads:
// it must be thread-safe and must not block (store::BatchWriter::try_push).

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/gateway/prometheus.hpp>
#include <tokenradar/gateway/shared_tier.hpp>
#include <tokenradar/keys/key_registry.hpp>
#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/http_server.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tokenradar::gateway {

using RecordSink = std::function<void(Measurement&&)>;
// Answers a request the gateway does not own (the observatory's /api/...); returns false to
// let the gateway answer 404. Runs like a net::Handler.
using RouteHandler = std::function<net::asio::awaitable<bool>(net::Request&, net::ResponseWriter&)>;

// The verdict on a request under /api/ before its body is read (its own body limit and key
// check); nullopt leaves it to the gateway. The second argument is the gateway's body limit.
using RouteHeadCheck =
    std::function<std::optional<net::HeadVerdict>(const net::Request&, std::size_t)>;

// How `serve` plugs the store, the observatory and the response cache's local file in: the
// gateway knows none of them.
struct GatewayHooks {
    RecordSink sink;  // every attempt's record; may be empty
    // More families for /metrics after the gateway's (the store's and observatory's counters).
    std::function<void(PrometheusText&)> extra_metrics;
    std::function<bool()> ready;    // /readyz; empty = always ready
    std::string ca_file;            // extra CA bundle for upstream TLS (tests)
    RouteHandler api_routes;        // requests under /api/
    RouteHeadCheck api_head_check;  // ...and their heads, before the body
    // The largest body api_routes take (ingestion's); the listener reads bodies up to the
    // larger of this and [limits] max_body_bytes, and api_head_check gives each route its own.
    std::size_t api_max_body_bytes = 0;
    // The response cache's shared tier when `[cache] redis` is empty (serve's local file,
    // `[cache] local`); ignored with Redis, and when no model caches.
    std::shared_ptr<SharedTier> cache_tier;
    // Virtual keys (README "Keys, limits and budgets"): the registry the admin API writes and
    // every node reads every [auth] refresh (serve's SQLite file, `[auth] registry`); none =
    // the configuration's keys only.
    std::shared_ptr<keys::KeyRegistry> key_registry;
    // Nearest-region routing (README "Routing"): the client's region when the request does
    // not name one in x-tokenradar-client-region (serve: GeoIP behind trusted proxies), and
    // the TTFT p50 in ms measured from a client region to a provider's model (serve: the
    // observatory's /api/v1/regions over the last hour); nullopt = not measured. Both are
    // called on the I/O thread for requests of models with `nearest_region`.
    std::function<std::string(const net::Request&, const net::ResponseWriter&)> client_region;
    std::function<std::optional<double>(std::string_view client_region, std::string_view provider,
                                        std::string_view model)>
        region_ttft;
};

class Gateway {
  public:
    // `io_executors`: one per I/O thread (at least one); the first also runs the response
    // cache's Redis connection.
    Gateway(const std::vector<net::asio::any_io_executor>& io_executors,
            const GatewayConfig& config, GatewayHooks hooks = {});
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    // The HttpServer handler. Suspends for the whole request; terminal cancellation (the
    // client went away) cancels the upstream request at once.
    net::asio::awaitable<void> handle(net::Request& request, net::ResponseWriter& writer);
    // The HttpServer's head check: the body limit of the request's route, and, before a body
    // over 64 KiB is read, who is asking (a client key where keys are required, the listener's
    // own Host names where they are not). Does not suspend.
    [[nodiscard]] net::HeadVerdict check_head(const net::Request& head,
                                              std::optional<std::uint64_t> content_length) const;

    [[nodiscard]] Metrics& metrics() noexcept { return metrics_; }

    // Marks the calling thread as I/O thread `index` (of io_executors): requests handled on
    // it use that executor's upstream pools. A thread never marked is thread 0.
    static void set_io_thread(std::size_t index) noexcept;

    // Closes what the gateway keeps open besides its clients' connections (the response
    // cache's Redis connection, which always has a read pending), so that its io_context's
    // run() can return once the server has drained. On the gateway's executor.
    void close_background();

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
    Metrics metrics_;
};

}  // namespace tokenradar::gateway

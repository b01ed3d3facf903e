#pragma once
// The observatory's HTTP face, mounted by `tokenradar serve` under /api/v1/:
// GET leaderboard, heatmap, timeseries, distribution, regions, gateway, labels, status
// (QueryApi; JSON or CSV), GET /badge/... (BadgeApi, SVG) and POST measurements (ingestion through
// the store's BatchWriter). docs/observatory-api.md is the contract.
//
// Threads: handle() runs on the connection's executor and suspends while one of this
// object's two worker threads computes the answer (a query merging sketches for
// milliseconds, a gunzip and parse of 10,000 records) and, for ingestion, while its commit
// thread waits for the store to commit the records, so the server's I/O thread never does
// that work, relayed streams are not delayed by it, and a worker parses the next body while
// the store writes. Cancellation (the client left) abandons the answer; work already on a
// thread finishes and is discarded, records already submitted are stored.

#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/net/http_server.hpp>
#include <tokenradar/observatory/config.hpp>
#include <tokenradar/observatory/query_api.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace tokenradar::store {
class BatchWriter;
}

namespace tokenradar::observatory {

class HttpApi {
  public:
    HttpApi(ObservatoryConfig config, std::shared_ptr<const RollupIndex> index);
    ~HttpApi();  // stop()
    HttpApi(const HttpApi&) = delete;
    HttpApi& operator=(const HttpApi&) = delete;

    // The store ingestion writes to; without one, POST measurements answers 503.
    void attach_writer(store::BatchWriter* writer);
    // Queries answer 503 (retry-after: 1) while `loaded` is false: the index is still being
    // filled from the store, and a partial answer would be cached and shown as the truth.
    // Call before the server starts; `loaded` is then called from the I/O thread.
    void attach_readiness(std::function<bool()> loaded);

    // /api/v1/status's judgement ([incidents] thresholds) and its red hours (`monitor`, null
    // when [incidents] is off). Call before the server starts; the monitor outlives this.
    void attach_incidents(const IncidentMonitor* monitor, StatusJudgement judgement);

    // An extra GET endpoint under /api/v1/ (`path` exact, e.g. "/api/v1/incidents"), answered
    // on the I/O thread after the same method and readiness checks as the queries: for
    // cheap answers only (a copy of a short list). Call before the server starts.
    using ExtraRoute = std::function<ApiResponse(std::string_view target, std::int64_t now_us)>;
    void add_route(std::string path, ExtraRoute route);

    // The verdict on a request under /api/v1/ whose body has not been read yet: ingestion
    // takes bodies up to [observatory] max_body_bytes from a known ingest key (or, in public
    // mode, from anyone without a key), everything else `default_limit`. nullopt for other
    // paths. Runs on the I/O thread: no suspension, no body.
    std::optional<net::HeadVerdict> check_head(const net::Request& head,
                                               std::size_t default_limit) const;

    // Answers requests whose path starts with /api/v1/ or /badge/ (true); false for any
    // other path. Neither needs a client key: reads are public, ingestion has its own keys.
    net::asio::awaitable<bool> handle(net::Request& request, net::ResponseWriter& writer);

    // A read query answered in process (the gateway's nearest-region routing reads
    // /api/v1/regions): as GET `target` would be, or nullopt while the index is loading.
    // Blocks while the answer is computed; any thread.
    [[nodiscard]] std::optional<ApiResponse> query(std::string_view target,
                                                   std::int64_t now_us) const;
    // The client's region by GeoIP ([observatory] geoip_db) of its address (behind a trusted
    // proxy, the address X-Forwarded-For names); "" without a database or a match.
    [[nodiscard]] std::string client_region(const net::Request& request,
                                            const net::ResponseWriter& writer) const;

    // Ingestion's counters and the rollups' generation, for /metrics.
    void metrics(PrometheusText& out) const;

    // Waits for the worker and commit threads (after the server stopped taking requests).
    void stop();

    struct Impl;

  private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace tokenradar::observatory

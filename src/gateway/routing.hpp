#pragma once
// Private to the gateway: its routing state. One live estimate per upstream (a provider and
// a model), shared by every virtual model that names it, and one route::Router per virtual
// model; what GET /api/v1/upstreams and /metrics show of them. Thread-safe.

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/route/minute_window.hpp>
#include <tokenradar/route/router.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tokenradar::gateway {

// One attempt's hold on its upstream's estimate: started on construction; the relay reports
// the first token when it comes, and end() the outcome from the attempt's record. An
// attempt destroyed without end() (its coroutine torn down) counts as abandoned.
class AttemptLease {
  public:
    AttemptLease(route::UpstreamEstimate& estimate, std::int64_t prompt_tokens,
                 std::int64_t now_ns);
    ~AttemptLease();
    AttemptLease(const AttemptLease&) = delete;
    AttemptLease& operator=(const AttemptLease&) = delete;

    void first_token(std::int64_t now_ns, std::int64_t ttft_ns);
    // From the finished record: ok (with TPOT and tokens), cancelled, a client error (the
    // upstream is not to blame) or a failure (errors, 429, 5xx, timeouts raise its cost).
    void end(const Measurement& m);

  private:
    route::UpstreamEstimate* estimate_;
    std::int64_t prompt_tokens_;
    std::int64_t started_ns_;
    bool first_token_seen_ = false;
    bool ended_ = false;
};

class Routing {
  public:
    explicit Routing(const GatewayConfig& config);

    // The router of `model` (a VirtualModel of the config this was built from).
    [[nodiscard]] route::Router& router(const VirtualModel& model) const;
    // A member of a model's router: its upstreams in order, then the offload server.
    [[nodiscard]] static const UpstreamRef& member(const VirtualModel& model, std::size_t i);
    // Counts a pick for the model's share of traffic.
    void picked(const VirtualModel& model, std::size_t member, std::int64_t now_ns);
    void hedge_cancelled() { hedges_cancelled_.fetch_add(1, std::memory_order_relaxed); }

    // GET /api/v1/upstreams (docs/observatory-api.md).
    [[nodiscard]] std::string upstreams_json(std::int64_t now_ns) const;
    // tokenradar_upstream_* and tokenradar_hedges_* families.
    void render(PrometheusText& out, std::int64_t now_ns) const;

  private:
    struct Upstream {
        std::size_t provider = 0;
        std::string model;
        std::shared_ptr<route::UpstreamEstimate> estimate;
    };
    struct Model {
        std::unique_ptr<route::Router> router;
        std::vector<std::size_t> upstream_of_member;  // index into upstreams_
        mutable std::mutex mutex;                     // guards picks
        std::vector<route::MinuteWindow> picks;       // per member, over the last minute
    };

    std::size_t upstream_index(std::size_t provider, const std::string& model);
    std::vector<double> shares(const Model& m, std::int64_t now_ns) const;

    const GatewayConfig& config_;
    std::vector<Upstream> upstreams_;
    std::vector<std::unique_ptr<Model>> models_;  // as config_.models
    std::atomic<std::uint64_t> hedges_cancelled_{0};
};

}  // namespace tokenradar::gateway

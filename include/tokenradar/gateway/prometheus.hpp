#pragma once
// The gateway's Prometheus metrics (GET /metrics, text format 0.0.4). Names follow the
// OpenTelemetry GenAI semantic conventions where one exists:
//   gen_ai_server_time_to_first_token_seconds   histogram {provider, model, status}
//   gen_ai_server_time_per_output_token_seconds histogram {provider, model, status}
//   gen_ai_server_request_duration_seconds      histogram {provider, model, status}
//   gen_ai_usage_tokens_total                   counter   {provider, model, type}
//   tokenradar_gateway_overhead_seconds         histogram {provider, model}
//   tokenradar_upstream_attempts_total          counter   {provider, model, status, route}
//   tokenradar_relay_delay_seconds              histogram (per chunk: upstream read to write)
//   tokenradar_requests_total                   counter   {status}  (client-facing)
//   tokenradar_active_requests                  gauge
//   tokenradar_provider_cache_ttft_seconds      histogram {provider, model, provider_cache}
//     (ok attempts; provider_cache "hit" when the upstream's usage reported cached prompt
//     tokens, else "miss"; as JSON too: provider_cache_ttft())
// Thread-safe: observe() from any thread (a shared lock to find an attempt's series, then
// relaxed atomics); render() from any thread. Label values come from configuration and the
// finite status set, so the number of series is bounded.

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/core/prometheus_text.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::gateway {

// One histogram series with fixed upper bounds (seconds).
class HistogramSeries {
  public:
    explicit HistogramSeries(std::span<const double> bounds);
    void observe(double seconds) noexcept;
    void render(std::string_view name, std::string_view labels, PrometheusText& out) const;
    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
    double sum_seconds() const noexcept {
        return static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
    }
    // The q-quantile (0 < q < 1) estimated as Prometheus' histogram_quantile does: linear
    // within the bucket that holds it (from 0 for the first), the highest bound when it falls
    // in +Inf. nullopt when nothing was observed.
    std::optional<double> quantile(double q) const noexcept;

  private:
    std::span<const double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // bounds_.size() + 1 (+Inf)
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> sum_ns_{0};
};

// TTFT of one (provider, model)'s ok attempts with and without a provider prompt-cache hit,
// since the gateway started. Milliseconds; quantiles are histogram estimates (bucket
// resolution: tokenradar_provider_cache_ttft_seconds' bounds).
struct ProviderCacheTtft {
    struct Side {
        std::uint64_t samples = 0;
        std::optional<double> mean_ms;  // exact (sum / count)
        std::optional<double> p50_ms;
        std::optional<double> p95_ms;
    };
    std::string provider;
    std::string model;
    Side hit;   // cached_prompt_tokens > 0
    Side miss;  // none reported, or 0
};

class Metrics {
  public:
    Metrics();
    ~Metrics();
    Metrics(const Metrics&) = delete;
    Metrics& operator=(const Metrics&) = delete;

    // One upstream attempt, finished.
    void observe_attempt(const Measurement& m);
    // One client request, answered with this metrics.md status.
    void observe_request(RequestStatus status);
    // One relayed chunk: from the upstream read to the same bytes written to the client.
    void observe_relay_ns(std::int64_t ns) noexcept {
        relay_.observe(static_cast<double>(ns) / 1e9);
    }
    void request_started() noexcept { active_.fetch_add(1, std::memory_order_relaxed); }
    void request_finished() noexcept { active_.fetch_sub(1, std::memory_order_relaxed); }

    // Every (provider, model) with an ok attempt, by provider then model.
    std::vector<ProviderCacheTtft> provider_cache_ttft() const;

    // The exposition text; `extra` writes more families after the gateway's (what `serve`
    // composes: the store's and the observatory's counters).
    std::string render(const std::function<void(PrometheusText&)>& extra = {}) const;

  private:
    struct Family;
    struct AttemptSeries;
    struct CacheTtft;
    AttemptSeries& attempt_series(const Measurement& m);
    CacheTtft& cache_ttft(std::string_view provider, std::string_view model);

    std::vector<std::unique_ptr<Family>> families_;
    std::shared_mutex attempts_mu_;
    std::map<std::string, std::unique_ptr<AttemptSeries>, std::less<>> attempts_;
    mutable std::shared_mutex cache_ttft_mu_;
    std::map<std::string, std::unique_ptr<CacheTtft>, std::less<>> cache_ttft_;
    HistogramSeries relay_;
    std::atomic<std::int64_t> active_{0};
};

// `name{a="x",b="y"}`-style label text with Prometheus escaping (\\, \", \n).
std::string prometheus_labels(
    std::initializer_list<std::pair<std::string_view, std::string_view>> labels);

}  // namespace tokenradar::gateway

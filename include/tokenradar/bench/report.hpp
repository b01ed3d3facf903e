#pragma once
// Turning one run's records into the tables people read and the summary machines read.
// Percentiles are exact (all samples sorted); failures are counted in every table and in
// the error-adjusted percentiles (metrics.md "Failures").

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/stats/percentiles.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tokenradar::bench {

struct TargetReport {
    std::string name;
    std::string api;
    std::string model;
    std::size_t requests = 0;
    std::size_t errors = 0;
    std::map<std::string, std::size_t> statuses;  // status -> count, failures only

    // Over successful requests.
    std::optional<stats::Summary> ttft_ms, ttft_sched_ms, ttfat_ms, ttfb_ms, tpot_ms, decode_tps,
        e2e_ms, e2e500_ms, tokens_per_chunk, chunk_gap_max_ms;
    // Error-adjusted (failures as +infinity): p50, p95, p99.
    std::array<stats::AdjustedPercentile, 3> ttft_adjusted{}, e2e_adjusted{};

    std::int64_t prompt_tokens = 0;
    std::int64_t cached_prompt_tokens = 0;
    std::size_t token_source_usage = 0;
    std::size_t token_source_estimate = 0;
    std::optional<stats::Summary> sched_lag_ms;  // t_send - t_sched

    [[nodiscard]] double error_rate() const noexcept {
        return requests == 0 ? 0.0 : static_cast<double>(errors) / static_cast<double>(requests);
    }
    [[nodiscard]] double cached_share() const noexcept {
        return prompt_tokens == 0 ? 0.0
                                  : static_cast<double>(cached_prompt_tokens) /
                                        static_cast<double>(prompt_tokens);
    }
};

TargetReport summarize_target(std::string name, std::span<const Measurement> records);

// One report per name, in the given order, over the records whose `provider` label is that
// name (bench labels each record with its target's name).
std::vector<TargetReport> summarize_targets(std::span<const std::string> names,
                                            std::span<const Measurement> records);

// The terminal table: one block per target.
std::string render_table(std::span<const TargetReport> reports);
// The published comparison's columns: provider, model, median TTFT (ms), median tokens/s,
// p95 latency (E2E p95, ms), plus sample and error counts.
std::string render_markdown(std::span<const TargetReport> reports);
// One row per target, a header line first.
std::string render_csv(std::span<const TargetReport> reports);
// The summary object of one target: name, requests, errors, and ttft_ms, tpot_ms,
// decode_tps, e2e_ms, e2e500_ms objects with p50, p90, p95, p99 (and count).
boost::json::object to_json(const TargetReport& r);

}  // namespace tokenradar::bench

#pragma once
// The summary of a set of measurement records that every report prints (bench's per-target
// tables, `tokenradar stats` over the store): request and error counts, exact percentiles of
// each derived metric over successful requests, and error-adjusted percentiles (failures count
// as +infinity; metrics.md "Failures").
//
// RecordSummarizer takes records one at a time and keeps only the derived numbers (about
// 100 bytes per record), so a reader can stream rows from a store without holding them.

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/stats/percentiles.hpp>

#include <boost/json/object.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tokenradar::stats {

struct RecordSummary {
    std::size_t requests = 0;
    std::size_t errors = 0;
    std::map<std::string, std::size_t> statuses;  // status -> count, failures only

    // Over successful requests.
    std::optional<Summary> ttft_ms, ttft_sched_ms, ttfat_ms, ttfb_ms, tpot_ms, decode_tps, e2e_ms,
        e2e500_ms, tokens_per_chunk, chunk_gap_max_ms;
    // Error-adjusted (failures as +infinity) at kAdjustedQuantiles: p50, p95, p99.
    static constexpr std::array<double, 3> kAdjustedQuantiles = {0.50, 0.95, 0.99};
    std::array<AdjustedPercentile, 3> ttft_adjusted{}, e2e_adjusted{};

    std::int64_t prompt_tokens = 0;         // successes only
    std::int64_t cached_prompt_tokens = 0;  // successes only
    std::size_t token_source_usage = 0;     // successes only
    std::size_t token_source_estimate = 0;  // successes only
    std::optional<Summary> sched_lag_ms;    // t_send - t_sched, every request

    [[nodiscard]] double error_rate() const noexcept {
        return requests == 0 ? 0.0 : static_cast<double>(errors) / static_cast<double>(requests);
    }
    [[nodiscard]] double cached_share() const noexcept {
        return prompt_tokens == 0
                   ? 0.0
                   : static_cast<double>(cached_prompt_tokens) / static_cast<double>(prompt_tokens);
    }
};

// Accumulates records, then sorts once in finish(). Not thread-safe.
class RecordSummarizer {
  public:
    void add(const Measurement& m);
    [[nodiscard]] std::size_t size() const noexcept { return summary_.requests; }
    // Leaves the summarizer empty.
    RecordSummary finish();

  private:
    RecordSummary summary_;
    std::vector<double> ttft_ms_, ttft_sched_ms_, ttfat_ms_, ttfb_ms_, tpot_ms_, decode_tps_,
        e2e_ms_, e2e500_ms_, tokens_per_chunk_, chunk_gap_max_ms_, sched_lag_ms_;
};

RecordSummary summarize_records(std::span<const Measurement> records);

// Table cells: one decimal, "-" when there is no value, "> max" for an error-adjusted
// percentile that lands on a failure.
std::string format_cell(const std::optional<Summary>& s, double Summary::*field);
std::string format_cell(const AdjustedPercentile& p);

// Adds the summary's fields to `o`: requests, errors, error_rate, failures (status -> count),
// one object per metric (ttft_ms, tpot_ms, decode_tps, e2e_ms, e2e500_ms, ... with count,
// p50, p90, p95, p99, min, max, mean), error_adjusted (ttft_ms and e2e_ms: p50, p95, p99, a
// number, "> max" or null), prompt and cached prompt tokens, token_source counts.
void put_json(boost::json::object& o, const RecordSummary& s);

}  // namespace tokenradar::stats

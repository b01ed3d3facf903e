#pragma once
// Exact percentiles for one run's samples (metrics.md: a benchmark run sorts all samples).
// Interpolation: linear between closest ranks, position (n - 1) * q (numpy's default,
// Hyndman-Fan type 7), the definition vLLM's and most benchmarks' tables use.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace tokenradar::stats {

// q in [0, 1]; `sorted` ascending and non-empty.
double percentile_sorted(std::span<const double> sorted, double q) noexcept;

struct Summary {
    std::size_t count = 0;
    double min = 0, max = 0, mean = 0;
    double p50 = 0, p90 = 0, p95 = 0, p99 = 0;
};

// nullopt when there are no samples.
std::optional<Summary> summarize(std::vector<double> samples);

// A percentile over successful samples plus `failures` that count as +infinity. When the
// percentile's position touches a failure the value is "> max" (`above_max`), not a number.
struct AdjustedPercentile {
    std::optional<double> value;
    bool above_max = false;
};
AdjustedPercentile error_adjusted_percentile(std::span<const double> sorted_ok,
                                             std::size_t failures, double q) noexcept;

}  // namespace tokenradar::stats

#include <tokenradar/stats/percentiles.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

namespace tokenradar::stats {

double percentile_sorted(std::span<const double> sorted, double q) noexcept {
    assert(!sorted.empty());
    const double position = static_cast<double>(sorted.size() - 1) * std::clamp(q, 0.0, 1.0);
    const auto below = static_cast<std::size_t>(std::floor(position));
    const std::size_t above = std::min(below + 1, sorted.size() - 1);
    const double fraction = position - static_cast<double>(below);
    return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

std::optional<Summary> summarize(std::vector<double> samples) {
    if (samples.empty()) return std::nullopt;
    std::sort(samples.begin(), samples.end());
    Summary s;
    s.count = samples.size();
    s.min = samples.front();
    s.max = samples.back();
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
    s.p50 = percentile_sorted(samples, 0.50);
    s.p90 = percentile_sorted(samples, 0.90);
    s.p95 = percentile_sorted(samples, 0.95);
    s.p99 = percentile_sorted(samples, 0.99);
    return s;
}

AdjustedPercentile error_adjusted_percentile(std::span<const double> sorted_ok,
                                             std::size_t failures, double q) noexcept {
    const std::size_t n = sorted_ok.size() + failures;
    if (n == 0) return {};
    const double position = static_cast<double>(n - 1) * std::clamp(q, 0.0, 1.0);
    const auto below = static_cast<std::size_t>(std::floor(position));
    const auto above = static_cast<std::size_t>(std::ceil(position));
    if (above >= sorted_ok.size()) return {std::nullopt, true};
    const double fraction = position - static_cast<double>(below);
    return {sorted_ok[below] + (sorted_ok[above] - sorted_ok[below]) * fraction, false};
}

}  // namespace tokenradar::stats

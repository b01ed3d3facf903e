#include <tokenradar/stats/latency_histogram.hpp>

#include <algorithm>
#include <bit>
#include <cmath>

namespace tokenradar::stats {

std::size_t LatencyHistogram::bucket_of(std::uint64_t us) noexcept {
    if (us < kLinear) return static_cast<std::size_t>(us);
    const int octave =
        static_cast<int>(std::bit_width(us)) - 11;  // us in [2^(10+octave), 2^(11+octave))
    if (octave >= static_cast<int>(kOctaves)) return kBuckets - 1;
    const std::uint64_t base = std::uint64_t{1} << (10 + octave);
    const std::uint64_t sub = (us - base) * kSubBuckets / base;
    return kLinear + static_cast<std::size_t>(octave) * kSubBuckets + static_cast<std::size_t>(sub);
}

std::uint64_t LatencyHistogram::upper_bound_us(std::size_t bucket) noexcept {
    if (bucket < kLinear) return bucket + 1;
    const std::size_t octave = (bucket - kLinear) / kSubBuckets;
    const std::size_t sub = (bucket - kLinear) % kSubBuckets;
    const std::uint64_t base = std::uint64_t{1} << (10 + octave);
    return base + (sub + 1) * base / kSubBuckets;
}

void LatencyHistogram::record_ns(std::int64_t ns) noexcept {
    const auto clamped = std::max<std::int64_t>(ns, 0);
    buckets_[bucket_of(static_cast<std::uint64_t>(clamped) / 1000)].fetch_add(
        1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    std::int64_t seen = max_ns_.load(std::memory_order_relaxed);
    while (clamped > seen &&
           !max_ns_.compare_exchange_weak(seen, clamped, std::memory_order_relaxed)) {
    }
}

std::uint64_t LatencyHistogram::count() const noexcept {
    return count_.load(std::memory_order_relaxed);
}

std::int64_t LatencyHistogram::max_ns() const noexcept {
    return max_ns_.load(std::memory_order_relaxed);
}

std::int64_t LatencyHistogram::percentile_ns(double q) const noexcept {
    std::uint64_t total = 0;
    for (const auto& b : buckets_) total += b.load(std::memory_order_relaxed);
    if (total == 0) return 0;
    const auto rank =
        static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(total)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
        seen += buckets_[i].load(std::memory_order_relaxed);
        if (seen >= std::max<std::uint64_t>(rank, 1)) {
            return std::min<std::int64_t>(static_cast<std::int64_t>(upper_bound_us(i)) * 1000,
                                          max_ns());
        }
    }
    return max_ns();
}

void LatencyHistogram::reset() noexcept {
    for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
    count_.store(0, std::memory_order_relaxed);
    max_ns_.store(0, std::memory_order_relaxed);
}

}  // namespace tokenradar::stats

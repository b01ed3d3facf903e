#pragma once
// A fixed-size, lock-free histogram of durations for hot paths (the sim's write lateness,
// the gateway's relay delay): record() is a few relaxed atomic adds, safe from any thread.
// Buckets are 1 us wide below 1,024 us, then 64 per power of two (at most 1.6% relative
// error) up to about 2^36 us (19 hours). Percentiles return the bucket's upper bound, so
// they never understate.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tokenradar::stats {

class LatencyHistogram {
  public:
    void record_ns(std::int64_t ns) noexcept;

    [[nodiscard]] std::uint64_t count() const noexcept;
    [[nodiscard]] std::int64_t max_ns() const noexcept;
    // q in [0, 1]; 0 when empty.
    [[nodiscard]] std::int64_t percentile_ns(double q) const noexcept;
    void reset() noexcept;

  private:
    static constexpr std::size_t kLinear = 1024;  // 1 us buckets
    static constexpr std::size_t kSubBuckets = 64;
    static constexpr std::size_t kOctaves = 26;  // 2^10 us .. 2^36 us
    static constexpr std::size_t kBuckets = kLinear + kOctaves * kSubBuckets;

    static std::size_t bucket_of(std::uint64_t us) noexcept;
    static std::uint64_t upper_bound_us(std::size_t bucket) noexcept;

    std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::int64_t> max_ns_{0};
};

}  // namespace tokenradar::stats

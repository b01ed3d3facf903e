#pragma once
// The simulator's random numbers. Hand-written (SplitMix64 + Box-Muller) rather than the
// <random> distributions, whose output differs between standard libraries: a seed must give
// the same plan on every platform.

#include <cmath>
#include <cstdint>
#include <numbers>

namespace tokenradar::sim {

inline constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

inline constexpr std::uint64_t combine_seeds(std::uint64_t a, std::uint64_t b) noexcept {
    return mix64(a ^ mix64(b + 0x9e3779b97f4a7c15ULL));
}

class Rng {
  public:
    explicit Rng(std::uint64_t seed) noexcept : state_(seed) {}

    std::uint64_t next() noexcept {
        state_ += 0x9e3779b97f4a7c15ULL;
        return mix64(state_);
    }

    // Uniform in [0, 1) with 53 random bits.
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    // Uniform integer in [lo, hi].
    std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) noexcept {
        auto span = static_cast<std::uint64_t>(hi - lo) + 1;
        return lo + static_cast<std::int64_t>(span == 0 ? next() : next() % span);
    }

    double normal() noexcept {
        double u1 = 1.0 - uniform();  // (0, 1]
        double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    }

    // LogNormal with the given median; sigma 0 gives exactly the median.
    double lognormal_median(double median, double sigma) noexcept {
        if (sigma == 0.0) return median;
        return median * std::exp(sigma * normal());
    }

  private:
    std::uint64_t state_;
};

}  // namespace tokenradar::sim

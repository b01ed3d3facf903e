#pragma once
// When requests go out. Closed loop: a fixed number of requests in flight. Open loop: a
// schedule of send times computed before the run, so latency can be counted from the
// scheduled time (metrics.md "TTFT (scheduled)") and client-side queueing is not hidden.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

namespace tokenradar::bench {

enum class Arrival { poisson, constant };

std::optional<Arrival> parse_arrival(std::string_view text) noexcept;

// Send offsets (ns from the start of the measured phase) for an open-loop run at `rate`
// requests/s: `count` of them, or as many as fall before `duration` when count is 0.
// Poisson arrivals have exponential gaps (seeded); constant ones are evenly spaced.
std::vector<std::int64_t> open_loop_schedule(double rate, Arrival arrival, std::size_t count,
                                             std::chrono::nanoseconds duration, std::uint64_t seed);

// The same send offsets one at a time, for an open-loop run without a planned end
// (`tokenradar demo`'s steady traffic). `rate` must be > 0.
class ArrivalSequence {
  public:
    ArrivalSequence(double rate, Arrival arrival, std::uint64_t seed);
    // Nanoseconds from the start of the run, non-decreasing; the first is 0.
    std::int64_t next();

  private:
    double mean_gap_ns_;
    Arrival arrival_;
    std::mt19937_64 rng_;
    std::exponential_distribution<double> gap_{1.0};
    double at_ = 0;
};

// Interleaves several targets: each round is a fresh random permutation of all targets, so
// noise and time of day hit every target alike.
class TargetOrder {
  public:
    TargetOrder(std::size_t targets, std::uint64_t seed);
    std::size_t next();

  private:
    std::vector<std::size_t> round_;
    std::size_t at_;
    std::mt19937_64 rng_;
};

}  // namespace tokenradar::bench

#pragma once
// Clocks of metrics.md: the steady clock for every duration, the system clock only for the
// wall-clock stamp (`ts`) used to bucket by hour.

#include <chrono>
#include <cstdint>
#include <string>

namespace tokenradar {

using SteadyClock = std::chrono::steady_clock;
using Nanos = std::chrono::nanoseconds;

// Steady-clock nanoseconds since an arbitrary epoch (comparable within one process).
inline std::int64_t steady_now_ns() noexcept {
    return std::chrono::duration_cast<Nanos>(SteadyClock::now().time_since_epoch()).count();
}

// UTC microseconds since the Unix epoch.
inline std::int64_t wall_now_us() noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// UTC microseconds as RFC 3339 in whole seconds (floor): "2026-11-30T17:00:00Z".
std::string rfc3339_utc(std::int64_t utc_us);

inline double ns_to_ms(std::int64_t ns) noexcept { return static_cast<double>(ns) / 1e6; }

}  // namespace tokenradar

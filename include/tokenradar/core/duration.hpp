#pragma once
// Durations as people write them on a command line or in TOML: "250ms", "1.5s", "10m", "7d".

#include <tokenradar/core/error.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace tokenradar {

// Accepts a non-negative decimal number followed by one of us, ms, s, m, h, d.
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

// The shortest exact-enough rendering: "250ms", "1.5s", "2h".
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace tokenradar

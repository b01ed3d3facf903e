#pragma once
// The rules for metrics.md labels.

#include <string_view>

namespace tokenradar {

// A name in configuration and in the gateway's x-tokenradar-task (key names, provider names,
// regions, tasks): 1-64 letters, digits, '-', '_' or '.'.
bool is_simple_name(std::string_view s) noexcept;
inline constexpr std::string_view kSimpleNameRule = "1-64 letters, digits, '-', '_' or '.'";

}  // namespace tokenradar

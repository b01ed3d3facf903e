#pragma once

#include <string_view>

namespace tokenradar {

std::string_view version() noexcept;

// The measurement specification version of ../shared/metrics.md this build implements.
inline constexpr int kMetricsSpec = 1;

}  // namespace tokenradar

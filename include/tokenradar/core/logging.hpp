#pragma once
// Logging goes through spdlog's default logger, to stderr. Library code logs; it never
// prints. Never log a Secret's value (it formats as "[redacted]").

#include <spdlog/spdlog.h>

#include <string_view>

namespace tokenradar {

// Sets the level from a name (trace, debug, info, warn, error, off); throws ConfigError on
// an unknown name. Call once from main.
void configure_logging(std::string_view level);

}  // namespace tokenradar

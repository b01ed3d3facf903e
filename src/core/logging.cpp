#include <tokenradar/core/logging.hpp>

#include <tokenradar/core/config.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace tokenradar {

void configure_logging(std::string_view level) {
    auto parsed = spdlog::level::from_str(std::string(level));
    if (parsed == spdlog::level::off && level != "off") {
        throw ConfigError(fmt::format(
            "--log-level: unknown level '{}' (expected trace, debug, info, warn, error, off)",
            level));
    }
    auto logger = spdlog::stderr_color_mt("tokenradar");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
    spdlog::set_default_logger(std::move(logger));
    spdlog::set_level(parsed);
}

}  // namespace tokenradar

#include <tokenradar/core/duration.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace tokenradar {

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
    const auto bad = [&] {
        return Error(Errc::bad_request,
                     fmt::format("invalid duration '{}': expected a number and a unit "
                                 "(us, ms, s, m, h, d), e.g. 250ms or 60s",
                                 text));
    };
    std::size_t unit_at = text.find_first_not_of("0123456789.");
    if (unit_at == 0 || unit_at == std::string_view::npos) return bad();
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + unit_at, value);
    if (ec != std::errc{} || end != text.data() + unit_at || !std::isfinite(value)) return bad();
    std::string_view unit = text.substr(unit_at);
    double ns_per_unit = 0;
    if (unit == "us")
        ns_per_unit = 1e3;
    else if (unit == "ms")
        ns_per_unit = 1e6;
    else if (unit == "s")
        ns_per_unit = 1e9;
    else if (unit == "m")
        ns_per_unit = 60e9;
    else if (unit == "h")
        ns_per_unit = 3600e9;
    else if (unit == "d")
        ns_per_unit = 86400e9;
    else
        return bad();
    double ns = value * ns_per_unit;
    if (ns > 9.2e18) return bad();
    return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ns)));
}

std::string format_duration(std::chrono::nanoseconds d) {
    const auto ns = static_cast<double>(d.count());
    if (d.count() % 86'400'000'000'000 == 0 && d.count() != 0)
        return fmt::format("{}d", ns / 86400e9);
    if (d.count() % 3'600'000'000'000 == 0 && d.count() != 0)
        return fmt::format("{}h", ns / 3600e9);
    if (ns >= 60e9 && d.count() % 60'000'000'000 == 0) return fmt::format("{}m", ns / 60e9);
    if (ns >= 1e9) return fmt::format("{:g}s", ns / 1e9);
    if (ns >= 1e6) return fmt::format("{:g}ms", ns / 1e6);
    return fmt::format("{:g}us", ns / 1e3);
}

}  // namespace tokenradar

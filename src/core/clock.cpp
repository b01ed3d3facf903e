#include <tokenradar/core/clock.hpp>

#include <fmt/format.h>

namespace tokenradar {
namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
    return a / b - (a % b != 0 && (a < 0) != (b < 0) ? 1 : 0);
}

}  // namespace

std::string rfc3339_utc(std::int64_t utc_us) {
    const std::int64_t seconds = floor_div(utc_us, 1'000'000);
    const std::int64_t days = floor_div(seconds, 86'400);
    const std::int64_t in_day = seconds - days * 86'400;
    // Days since 1970-01-01 to the proleptic Gregorian date (H. Hinnant, "chrono-compatible
    // low-level date algorithms", civil_from_days), in 64 bits so no stamp overflows.
    const std::int64_t z = days + 719'468;
    const std::int64_t era = floor_div(z, 146'097);
    const std::int64_t doe = z - era * 146'097;
    const std::int64_t yoe = (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365;
    const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const std::int64_t mp = (5 * doy + 2) / 153;
    const std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
    const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
    const std::int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", year, month, day, in_day / 3600,
                       in_day / 60 % 60, in_day % 60);
}

}  // namespace tokenradar

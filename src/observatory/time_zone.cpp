#include "time_zone.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace tokenradar::observatory {
namespace {

bool zone_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '+' || c == '-';
}

// IANA's shape: Area/Location[/Sub], e.g. America/Argentina/Buenos_Aires, Etc/GMT+5, UTC.
bool zone_shaped(std::string_view name) {
    if (name.empty() || name.size() > kMaxZoneNameBytes) return false;
    if (!(name.front() >= 'A' && name.front() <= 'Z')) return false;
    bool component_empty = true;
    for (char c : name) {
        if (c == '/') {
            if (component_empty) return false;
            component_empty = true;
        } else if (zone_char(c)) {
            component_empty = false;
        } else {
            return false;
        }
    }
    return !component_empty;
}

std::filesystem::path zone_dir() {
    // cctz reads the same variable (its FileZoneInfoSource).
    const char* dir = std::getenv("TZDIR");  // NOLINT(concurrency-mt-unsafe): nobody sets it
    return (dir != nullptr && *dir != '\0') ? std::filesystem::path(dir)
                                            : std::filesystem::path("/usr/share/zoneinfo");
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

}  // namespace

Result<cctz::time_zone> load_zone(std::string_view name) {
    if (name == "UTC") return cctz::utc_time_zone();
    const auto bad = [&](std::string_view why) {
        const std::string_view shown = name.substr(0, kMaxZoneNameBytes);
        return Error(Errc::bad_request,
                     fmt::format("tz: expected an IANA time zone such as America/New_York, got "
                                 "'{}'{}{}",
                                 shown, shown.size() < name.size() ? "..." : "", why));
    };
    if (!zone_shaped(name)) return bad("");
    std::error_code ec;
    const auto path = zone_dir() / std::string(name);
    if (!std::filesystem::is_regular_file(path, ec)) return bad(" (no such zone)");
    cctz::time_zone zone;
    if (!cctz::load_time_zone(std::string(name), &zone)) return bad(" (unreadable zone file)");
    return zone;
}

LocalSlot local_slot(std::int64_t utc_bucket_start_us, std::int64_t bucket_us,
                     const cctz::time_zone& zone) {
    const std::int64_t middle_s = floor_div(utc_bucket_start_us + bucket_us / 2, 1'000'000);
    const auto tp =
        std::chrono::time_point<std::chrono::system_clock, cctz::seconds>(cctz::seconds(middle_s));
    const cctz::civil_second local = cctz::convert(tp, zone);
    const auto weekday = cctz::get_weekday(cctz::civil_day(local));
    return {static_cast<int>(local.hour()), static_cast<int>(weekday)};
}

}  // namespace tokenradar::observatory

#include <tokenradar/sim/peak_curve.hpp>

#include <cctz/civil_time.h>
#include <cctz/time_zone.h>
#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace tokenradar::sim {

struct PeakCurve::Zone {
    cctz::time_zone tz;
};

PeakCurve::PeakCurve() { hourly_.fill(1.0); }

PeakCurve::PeakCurve(std::string timezone, std::array<double, 24> hourly, bool weekdays_only)
    : timezone_(std::move(timezone)), hourly_(hourly), weekdays_only_(weekdays_only) {
    auto zone = std::make_shared<Zone>();
    // cctz falls back to UTC for an unknown name and returns false; UTC itself is fine.
    if (!cctz::load_time_zone(timezone_, &zone->tz)) {
        throw std::invalid_argument(
            fmt::format("unknown time zone \"{}\" (expected an IANA name such as "
                        "America/New_York)",
                        timezone_));
    }
    for (double f : hourly_) {
        if (!(f > 0.0 && f <= 100.0)) {
            throw std::invalid_argument(fmt::format("hourly factor {} is not in (0, 100]", f));
        }
    }
    zone_ = std::move(zone);
}

double PeakCurve::multiplier_at(std::int64_t utc_us) const {
    if (zone_ == nullptr) return 1.0;
    using std::chrono::system_clock;
    const auto tp = std::chrono::time_point_cast<std::chrono::seconds>(
        system_clock::time_point(std::chrono::microseconds(utc_us)));
    const cctz::civil_second local = cctz::convert(tp, zone_->tz);
    if (weekdays_only_) {
        const auto day = cctz::get_weekday(cctz::civil_day(local));
        if (day == cctz::weekday::saturday || day == cctz::weekday::sunday) return 1.0;
    }
    return hourly_[static_cast<std::size_t>(local.hour())];
}

}  // namespace tokenradar::sim

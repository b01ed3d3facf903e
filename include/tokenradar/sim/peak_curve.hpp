#pragma once
// The 24-hour load multiplier of a simulated provider: one factor per local hour in a named
// IANA time zone, optionally only on weekdays. Pure function of a UTC instant, so the model
// stays clock-free (the caller passes the wall-clock time).

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace tokenradar::sim {

class PeakCurve {
  public:
    // Flat curve: multiplier 1.0 at every instant.
    PeakCurve();

    // Throws std::invalid_argument when the zone is unknown or a factor is outside (0, 100];
    // profile loading turns that into a located ConfigError.
    PeakCurve(std::string timezone, std::array<double, 24> hourly, bool weekdays_only);

    // The factor for a UTC instant (microseconds since the Unix epoch): hourly[local hour],
    // or 1.0 on Saturday/Sunday (local) when weekdays_only.
    [[nodiscard]] double multiplier_at(std::int64_t utc_us) const;

    [[nodiscard]] bool flat() const noexcept { return zone_ == nullptr; }
    [[nodiscard]] const std::string& timezone() const noexcept { return timezone_; }
    [[nodiscard]] const std::array<double, 24>& hourly() const noexcept { return hourly_; }
    [[nodiscard]] bool weekdays_only() const noexcept { return weekdays_only_; }

  private:
    struct Zone;  // wraps cctz::time_zone so cctz stays out of this header
    std::string timezone_;
    std::array<double, 24> hourly_{};
    bool weekdays_only_ = false;
    std::shared_ptr<const Zone> zone_;
};

}  // namespace tokenradar::sim

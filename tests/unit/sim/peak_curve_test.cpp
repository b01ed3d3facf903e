#include <tokenradar/sim/peak_curve.hpp>

#include <gtest/gtest.h>

#include <stdexcept>

namespace tokenradar::sim {
namespace {

constexpr std::int64_t kUsPerHour = 3'600'000'000LL;
// 2024-07-10 (a Wednesday) 00:00 UTC; New York is UTC-4 in July.
constexpr std::int64_t kWed20240710Utc = 1720569600LL * 1'000'000;

std::array<double, 24> ramp() {
    std::array<double, 24> h{};
    for (int i = 0; i < 24; ++i) h[static_cast<std::size_t>(i)] = 1.0 + i / 100.0;
    return h;
}

TEST(PeakCurve, FlatIsOne) {
    PeakCurve flat;
    EXPECT_TRUE(flat.flat());
    EXPECT_EQ(flat.multiplier_at(kWed20240710Utc), 1.0);
}

TEST(PeakCurve, IndexIsLocalHour) {
    PeakCurve c("America/New_York", ramp(), false);
    // 16:00 UTC = 12:00 EDT.
    EXPECT_DOUBLE_EQ(c.multiplier_at(kWed20240710Utc + 16 * kUsPerHour), 1.12);
    EXPECT_DOUBLE_EQ(c.multiplier_at(kWed20240710Utc + 7 * kUsPerHour + 59 * 60'000'000LL), 1.03);
    // January: EST, UTC-5. 2024-01-10 17:00 UTC = 12:00 EST.
    EXPECT_DOUBLE_EQ(c.multiplier_at(1704906000LL * 1'000'000), 1.12);
}

TEST(PeakCurve, WeekdaysOnly) {
    PeakCurve c("America/New_York", ramp(), true);
    EXPECT_DOUBLE_EQ(c.multiplier_at(kWed20240710Utc + 16 * kUsPerHour), 1.12);
    // Saturday 2024-07-13 12:00 EDT.
    EXPECT_EQ(c.multiplier_at(kWed20240710Utc + (3 * 24 + 16) * kUsPerHour), 1.0);
    // Friday 23:00 EDT is Saturday 03:00 UTC: still a weekday locally.
    EXPECT_DOUBLE_EQ(c.multiplier_at(kWed20240710Utc + (2 * 24 + 27) * kUsPerHour), 1.23);
}

TEST(PeakCurve, RejectsUnknownZone) {
    EXPECT_THROW(PeakCurve("Mars/Olympus", ramp(), false), std::invalid_argument);
}

}  // namespace
}  // namespace tokenradar::sim

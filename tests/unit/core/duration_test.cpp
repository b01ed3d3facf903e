#include <tokenradar/core/duration.hpp>

#include <gtest/gtest.h>

namespace tokenradar {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(Duration, ParsesEveryUnit) {
    EXPECT_EQ(parse_duration("250ms").value(), milliseconds(250));
    EXPECT_EQ(parse_duration("1.5s").value(), milliseconds(1500));
    EXPECT_EQ(parse_duration("10us").value(), nanoseconds(10'000));
    EXPECT_EQ(parse_duration("2m").value(), std::chrono::minutes(2));
    EXPECT_EQ(parse_duration("1h").value(), std::chrono::hours(1));
    EXPECT_EQ(parse_duration("7d").value(), std::chrono::hours(168));
}

TEST(Duration, RejectsWithMessage) {
    for (const char* bad : {"", "ms", "10", "10x", "-1s", "1.2.3s", "1e3s", "99999999999d"}) {
        auto r = parse_duration(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message.find("expected a number and a unit"), std::string::npos);
    }
}

TEST(Duration, FormatsRoundTrip) {
    for (const char* text : {"250ms", "1.5s", "2h", "7d", "10m", "30us"}) {
        EXPECT_EQ(format_duration(parse_duration(text).value()), text);
    }
}

}  // namespace
}  // namespace tokenradar

#include <tokenradar/core/clock.hpp>

#include <gtest/gtest.h>

namespace tokenradar {
namespace {

TEST(Clock, Rfc3339InWholeUtcSeconds) {
    EXPECT_EQ(rfc3339_utc(0), "1970-01-01T00:00:00Z");
    EXPECT_EQ(rfc3339_utc(1'764'522'000'000'000), "2025-11-30T17:00:00Z");
    EXPECT_EQ(rfc3339_utc(1'764'522'000'999'999), "2025-11-30T17:00:00Z");
    EXPECT_EQ(rfc3339_utc(951'782'400'000'000), "2000-02-29T00:00:00Z");  // leap day
    EXPECT_EQ(rfc3339_utc(-1), "1969-12-31T23:59:59Z");                   // floor, not truncation
    EXPECT_EQ(rfc3339_utc(253'402'300'799'000'000), "9999-12-31T23:59:59Z");
}

}  // namespace
}  // namespace tokenradar

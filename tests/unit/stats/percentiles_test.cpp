#include <tokenradar/stats/percentiles.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace tokenradar::stats {
namespace {

TEST(Percentiles, LinearInterpolationMatchesNumpy) {
    // numpy.percentile([1, 2, 3, 4], [50, 90, 95, 99]) = [2.5, 3.7, 3.85, 3.97]
    std::vector<double> v{4, 1, 3, 2};
    auto s = summarize(v).value();
    EXPECT_DOUBLE_EQ(s.p50, 2.5);
    EXPECT_NEAR(s.p90, 3.7, 1e-12);
    EXPECT_NEAR(s.p95, 3.85, 1e-12);
    EXPECT_NEAR(s.p99, 3.97, 1e-12);
    EXPECT_EQ(s.count, 4u);
    EXPECT_EQ(s.min, 1);
    EXPECT_EQ(s.max, 4);
    EXPECT_DOUBLE_EQ(s.mean, 2.5);
}

TEST(Percentiles, SingleSampleAndEmpty) {
    EXPECT_EQ(summarize({7.0})->p99, 7.0);
    EXPECT_FALSE(summarize({}).has_value());
}

TEST(Percentiles, ErrorAdjustedCountsFailuresAsInfinity) {
    std::vector<double> ok{10, 20, 30, 40, 50, 60, 70, 80, 90};  // 9 ok + 1 failure = 10
    // p50: position 4.5 over 10 -> between ok[4]=50 and ok[5]=60.
    auto p50 = error_adjusted_percentile(ok, 1, 0.5);
    ASSERT_TRUE(p50.value);
    EXPECT_DOUBLE_EQ(*p50.value, 55);
    // p95: position 8.55 touches rank 9, the failure.
    auto p95 = error_adjusted_percentile(ok, 1, 0.95);
    EXPECT_FALSE(p95.value);
    EXPECT_TRUE(p95.above_max);
    // Without failures it equals the plain percentile.
    auto plain = error_adjusted_percentile(ok, 0, 0.95);
    EXPECT_DOUBLE_EQ(*plain.value, percentile_sorted(ok, 0.95));
    // All failed.
    EXPECT_TRUE(error_adjusted_percentile({}, 3, 0.5).above_max);
}

}  // namespace
}  // namespace tokenradar::stats

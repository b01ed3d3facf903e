#include <tokenradar/stats/latency_histogram.hpp>

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include <tokenradar/stats/percentiles.hpp>

namespace tokenradar::stats {
namespace {

TEST(LatencyHistogram, ExactBelowOneMillisecond) {
    LatencyHistogram h;
    for (int us = 1; us <= 100; ++us) h.record_ns(us * 1000);
    EXPECT_EQ(h.count(), 100u);
    EXPECT_EQ(h.percentile_ns(0.5), 51'000);  // upper bound of the 50 us bucket
    EXPECT_EQ(h.percentile_ns(0.99), 100'000);
    EXPECT_EQ(h.max_ns(), 100'000);
}

TEST(LatencyHistogram, RelativeErrorBoundedOnHeavyTail) {
    LatencyHistogram h;
    std::mt19937_64 rng(5);
    std::lognormal_distribution<double> dist(std::log(2'000'000.0), 1.5);  // ns
    std::vector<double> exact;
    for (int i = 0; i < 50'000; ++i) {
        const double v = dist(rng);
        exact.push_back(v);
        h.record_ns(static_cast<std::int64_t>(v));
    }
    std::sort(exact.begin(), exact.end());
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
        const double truth = percentile_sorted(exact, q);
        const auto got = static_cast<double>(h.percentile_ns(q));
        EXPECT_GE(got, truth * 0.999) << q;  // never understates (beyond rank rounding)
        EXPECT_LE(got, truth * 1.035) << q;
    }
}

TEST(LatencyHistogram, ConcurrentRecordsAllCount) {
    LatencyHistogram h;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&h] {
            for (int i = 0; i < 10'000; ++i) h.record_ns(i * 100);
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(h.count(), 40'000u);
    EXPECT_EQ(h.max_ns(), 999'900);
    h.reset();
    EXPECT_EQ(h.count(), 0u);
    EXPECT_EQ(h.percentile_ns(0.5), 0);
}

}  // namespace
}  // namespace tokenradar::stats

#pragma once
// Helpers shared by the DdSketch tests: sample data and sketches of it.

#include <tokenradar/stats/ddsketch.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace tokenradar::stats::testing_util {

inline constexpr double kAlpha = 0.01;
inline constexpr double kQuantiles[] = {0.5, 0.9, 0.95, 0.99, 0.999};

inline std::vector<double> draw(std::size_t n, std::uint64_t seed,
                                const std::function<double(std::mt19937_64&)>& next) {
    std::mt19937_64 rng(seed);
    std::vector<double> v(n);
    for (double& x : v) x = next(rng);
    return v;
}

inline DdSketch sketch_of(const std::vector<double>& values, std::size_t max_buckets = 2048) {
    DdSketch s(kAlpha, max_buckets);
    for (double v : values) EXPECT_TRUE(s.add(v));
    return s;
}

}  // namespace tokenradar::stats::testing_util

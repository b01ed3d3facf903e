#include <tokenradar/stats/ddsketch.hpp>
#include <tokenradar/stats/percentiles.hpp>

#include "ddsketch_test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace tokenradar::stats {
namespace {

using namespace testing_util;

// Room for float rounding at bucket bounds (about 1e-13); far below anything measurable.
constexpr double kSlack = 1e-9;

// The value the sketch promises to approximate: rank floor(q * (n - 1)) of the sorted data.
double lower_rank(const std::vector<double>& sorted, double q) {
    return sorted[static_cast<std::size_t>(std::floor(q * static_cast<double>(sorted.size() - 1)))];
}

void expect_accurate(std::vector<double> values, const std::string& name) {
    const DdSketch s = sketch_of(values);
    std::sort(values.begin(), values.end());
    EXPECT_EQ(s.count(), static_cast<double>(values.size())) << name;
    EXPECT_EQ(s.min(), values.front()) << name;
    EXPECT_EQ(s.max(), values.back()) << name;
    for (double q : kQuantiles) {
        const double truth = lower_rank(values, q);
        const double got = s.quantile(q).value();
        EXPECT_LE(std::abs(got - truth), kAlpha * truth * (1 + kSlack))
            << name << " q=" << q << " truth=" << truth << " got=" << got;
    }
}

TEST(DdSketch, AccurateOnUniform) {
    expect_accurate(
        draw(100'000, 1,
             [](auto& r) { return std::uniform_real_distribution<double>(1, 1000)(r); }),
        "uniform");
}

TEST(DdSketch, AccurateOnLognormalHeavyTails) {
    for (double sigma : {1.0, 1.5, 2.0}) {
        expect_accurate(draw(100'000, 2,
                             [sigma](auto& r) {
                                 return std::lognormal_distribution<double>(std::log(300.0),
                                                                            sigma)(r);
                             }),
                        "lognormal sigma " + std::to_string(sigma));
    }
}

TEST(DdSketch, AccurateOnPareto) {
    // Shape 1.2: infinite variance, p99.9 about 300x the minimum.
    expect_accurate(draw(100'000, 3,
                         [](auto& r) {
                             const double u = std::uniform_real_distribution<double>(0, 1)(r);
                             return 50.0 / std::pow(1 - u, 1 / 1.2);
                         }),
                    "pareto");
}

TEST(DdSketch, AccurateOnBimodal) {
    // Cache hits around 40 ms and misses around 2 s, as a gateway with a semantic cache sees.
    expect_accurate(draw(100'000, 4,
                         [](auto& r) {
                             const bool hit = std::bernoulli_distribution(0.7)(r);
                             return hit ? std::normal_distribution<double>(40, 5)(r) + 20
                                        : std::lognormal_distribution<double>(std::log(2000),
                                                                              0.4)(r);
                         }),
                    "bimodal");
}

// The mapping's bound (the proof is in ddsketch.hpp): every bucket spans a ratio of at most
// gamma, every value lies in the bucket it maps to, so its representative is within alpha.
TEST(DdSketch, EveryBucketSpansAtMostGamma) {
    for (double alpha :
         {DdSketch::kMinRelativeAccuracy, 0.001, kAlpha, 0.05, DdSketch::kMaxRelativeAccuracy}) {
        const DdSketch s(alpha);
        const double gamma = (1 + alpha) / (1 - alpha);
        const std::int32_t first = s.index_of(std::numeric_limits<double>::min());
        const std::int32_t last = s.index_of(std::numeric_limits<double>::max());
        double widest = 0;
        auto check = [&](std::int32_t i) {
            const auto [lo, hi] = s.bounds_of(i);
            widest = std::max(widest, hi / lo);
            ASSERT_LE(hi / lo, gamma * (1 + kSlack)) << alpha << " " << i;
            // Values inside the bounds map to the bucket (at the bounds themselves rounding
            // may pick the neighbour, which kSlack accounts for).
            ASSERT_EQ(s.index_of(lo * (1 + kSlack)), i) << alpha << " " << i;
            ASSERT_EQ(s.index_of(s.value_of(i)), i) << alpha << " " << i;
            ASSERT_EQ(s.index_of(hi * (1 - kSlack)), i) << alpha << " " << i;
        };
        // About 200,000 buckets spread over the range, plus the buckets around every power of
        // two, where the interpolated log's slope is smallest and buckets widest.
        const std::int32_t stride = 1 + (last - first) / 200'000;
        for (std::int32_t i = first + 1; i < last; i += stride) check(i);
        for (int e = -1021; e <= 1022; ++e) {
            const std::int32_t i = s.index_of(std::ldexp(1.0, e));
            for (std::int32_t k : {i - 1, i, i + 1}) {
                if (k > first && k < last) check(k);  // both bounds normal doubles
            }
        }
        if (alpha <= 0.01) {  // and the bound is tight: the widest bucket is nearly gamma wide
            EXPECT_GT(std::log(widest) / std::log(gamma), 0.99) << alpha;
        }
    }
}

TEST(DdSketch, EveryValueIsWithinAlphaOfItsBucket) {
    // Random values over the whole double range, plus powers of two and their neighbours,
    // where the interpolated log is exact and its slope smallest.
    for (double alpha : {DdSketch::kMinRelativeAccuracy, kAlpha, DdSketch::kMaxRelativeAccuracy}) {
        const DdSketch s(alpha);
        std::mt19937_64 rng(5);
        std::uniform_real_distribution<double> exponent(-307.6, 308.2);
        auto check = [&](double x) {
            const auto [lo, hi] = s.bounds_of(s.index_of(x));
            ASSERT_LE(lo, x * (1 + kSlack)) << x;
            ASSERT_LE(x, hi * (1 + kSlack)) << x;
            const double rep = s.value_of(s.index_of(x));
            ASSERT_LE(std::abs(rep - x), alpha * x * (1 + kSlack)) << alpha << " " << x;
        };
        for (int i = 0; i < 100'000; ++i) check(std::pow(10.0, exponent(rng)));
        for (int e = -1022; e <= 1023; ++e) {
            const double p = std::ldexp(1.0, e);
            check(p);
            check(std::nextafter(p, 0.0));
            check(std::nextafter(p, 4 * p));
        }
        check(std::numeric_limits<double>::max());
    }
}

TEST(DdSketch, UsesEightPercentMoreBucketsThanExactLog) {
    const DdSketch s(kAlpha);
    const double gamma = (1 + kAlpha) / (1 - kAlpha);
    const double exact = std::log(1e6) / std::log(gamma);  // buckets of ceil(log_gamma v)
    const double used = s.index_of(1e6) - s.index_of(1.0);
    EXPECT_NEAR(used / exact, 0.75 / std::log(2.0), 0.001);  // 1.082
}

TEST(DdSketch, RankConventionIsLowerNearestRank) {
    // Two far-apart values: type 7 (percentile_sorted) interpolates, the sketch does not.
    DdSketch s;
    s.add(100);
    s.add(1000);
    const std::vector<double> sorted{100, 1000};
    EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0.5), 550);
    EXPECT_NEAR(s.quantile(0.5).value(), 100, 1);
    EXPECT_NEAR(s.quantile(0.99).value(), 100, 1);
    EXPECT_EQ(s.quantile(0).value(), 100);  // exact min and max at the ends
    EXPECT_EQ(s.quantile(1).value(), 1000);
    EXPECT_EQ(s.quantile(-3).value(), 100);
    EXPECT_EQ(s.quantile(7).value(), 1000);
    EXPECT_FALSE(s.quantile(std::nan("")).has_value());
}

TEST(DdSketch, EmptySketch) {
    DdSketch s;
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.count(), 0);
    EXPECT_EQ(s.sum(), 0);
    EXPECT_FALSE(s.quantile(0.5).has_value());
    EXPECT_FALSE(s.min().has_value());
    EXPECT_FALSE(s.max().has_value());
    EXPECT_TRUE(s.buckets().empty());
    EXPECT_TRUE(s.cdf(10).empty());
    const auto bytes = s.encode();
    EXPECT_LE(bytes.size(), 16u);
    EXPECT_EQ(DdSketch::decode(bytes).value(), s);

    DdSketch other;
    other.add(5);
    ASSERT_TRUE(other.merge(s));  // merging an empty sketch changes nothing
    EXPECT_EQ(other.count(), 1);
    ASSERT_TRUE(s.merge(other));  // into an empty one copies
    EXPECT_EQ(s, other);
    s.clear();
    EXPECT_EQ(s, DdSketch());
}

TEST(DdSketch, ZeroAndRejectedValues) {
    DdSketch s;
    EXPECT_TRUE(s.add(0));
    EXPECT_TRUE(s.add(-0.0));
    EXPECT_TRUE(s.add(1e-320));  // subnormal: counted as zero
    EXPECT_FALSE(s.add(-1));
    EXPECT_FALSE(s.add(std::nan("")));
    EXPECT_FALSE(s.add(std::numeric_limits<double>::infinity()));
    EXPECT_FALSE(s.add(5, 0));
    EXPECT_FALSE(s.add(5, -1));
    EXPECT_FALSE(s.add(5, std::nan("")));
    EXPECT_FALSE(s.add(5, std::numeric_limits<double>::infinity()));
    EXPECT_FALSE(s.add(5, DdSketch::kMaxTotalWeight));  // total would pass 2^53
    EXPECT_EQ(s.count(), 3);
    EXPECT_EQ(s.zero_count(), 3);
    EXPECT_TRUE(s.buckets().empty());
    EXPECT_EQ(s.quantile(0.5).value(), 0);
    EXPECT_EQ(s.max().value(), 1e-320);
    DdSketch tiny;
    tiny.add(1e-320);
    EXPECT_EQ(tiny.quantile(0.5).value(), 1e-320);  // zero bucket, clamped to min
    DdSketch negative_zero;
    negative_zero.add(-0.0);
    EXPECT_FALSE(std::signbit(negative_zero.min().value()));
    s.add(10, 2);
    EXPECT_EQ(s.quantile(0.5).value(), 0);  // rank 2 of 0..4 is still a zero
    EXPECT_NEAR(s.quantile(0.75).value(), 10, 0.1);
}

TEST(DdSketch, IntegerWeightsEqualRepeatedAdds) {
    DdSketch weighted;
    DdSketch repeated;
    for (double v : {3.0, 70.0, 900.0}) {
        weighted.add(v, 4);
        for (int i = 0; i < 4; ++i) repeated.add(v);
    }
    EXPECT_EQ(weighted, repeated);
}

TEST(DdSketch, FractionalWeightsBalanceClients) {
    // Client A: 1,000 fast samples at 10 ms; client B: 10 slow ones at 1,000 ms. Each client
    // weighs half of the 1,010 samples (w = 1010 / (2 * its samples)), so the total weight is
    // still the sample count and the rank convention keeps its meaning.
    DdSketch s;
    for (int i = 0; i < 1000; ++i) s.add(10, 1010.0 / (2 * 1000));
    for (int i = 0; i < 10; ++i) s.add(1000, 1010.0 / (2 * 10));
    EXPECT_NEAR(s.count(), 1010, 1e-9);
    EXPECT_NEAR(s.quantile(0.4).value(), 10, 0.1);
    EXPECT_NEAR(s.quantile(0.5).value(), 10, 0.1);  // rank 504.5 < A's weight 505
    EXPECT_NEAR(s.quantile(0.75).value(), 1000, 10);
    EXPECT_NEAR(s.sum(), 1010 * (10 + 1000) / 2.0, 1e-6);
    // Unweighted, B's samples would not even reach p99.
    DdSketch plain;
    for (int i = 0; i < 1000; ++i) plain.add(10);
    for (int i = 0; i < 10; ++i) plain.add(1000);
    EXPECT_NEAR(plain.quantile(0.99).value(), 10, 0.1);
    // Fractional counts survive encoding bit for bit.
    EXPECT_EQ(DdSketch::decode(s.encode()).value(), s);
}

void expect_same_distribution(const DdSketch& a, const DdSketch& b, double sum_tolerance) {
    EXPECT_EQ(a.buckets(), b.buckets());
    EXPECT_EQ(a.zero_count(), b.zero_count());
    EXPECT_EQ(a.count(), b.count());
    EXPECT_EQ(a.min(), b.min());
    EXPECT_EQ(a.max(), b.max());
    EXPECT_NEAR(a.sum(), b.sum(), sum_tolerance * b.sum());  // summed in another order
    for (double q : {0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
        EXPECT_EQ(a.quantile(q), b.quantile(q)) << q;
    }
}

TEST(DdSketch, MergeEqualsSketchOfUnion) {
    std::mt19937_64 rng(6);
    for (int round = 0; round < 20; ++round) {
        // Heavy-tailed values with zeros, split at random into 1-8 parts.
        const auto values = draw(20'000, 100 + round, [](auto& r) {
            const double v = std::lognormal_distribution<double>(3, 2)(r);
            return std::bernoulli_distribution(0.01)(r) ? 0.0 : v;
        });
        const std::size_t parts = 1 + rng() % 8;
        std::vector<DdSketch> pieces(parts);
        for (double v : values) pieces[rng() % parts].add(v);
        DdSketch merged;
        std::shuffle(pieces.begin(), pieces.end(), rng);
        for (const DdSketch& p : pieces) ASSERT_TRUE(merged.merge(p));
        expect_same_distribution(merged, sketch_of(values), 1e-12);
    }
}

TEST(DdSketch, MergeEqualsSketchOfUnionWhenBucketsCollapse) {
    // 64 buckets at 1% span a ratio of 3.3: most of these values collapse. The kept range
    // depends only on the highest index, so merging still equals adding everything.
    std::mt19937_64 rng(7);
    for (int round = 0; round < 20; ++round) {
        const auto values = draw(5'000, 200 + round, [](auto& r) {
            return std::lognormal_distribution<double>(0, 3)(r);
        });
        DdSketch a(kAlpha, 64);
        DdSketch b(kAlpha, 64);
        for (double v : values) (rng() % 3 == 0 ? a : b).add(v);
        ASSERT_TRUE(a.merge(b));
        const DdSketch whole = sketch_of(values, 64);
        expect_same_distribution(a, whole, 1e-12);
        const auto held = whole.buckets();
        EXPECT_LE(held.back().index - held.front().index + 1, 64);
    }
}

TEST(DdSketch, CollapsedBucketsOverestimateOnlyTheLowestQuantiles) {
    auto values = draw(100'000, 8, [](auto& r) {
        return std::lognormal_distribution<double>(std::log(300.0), 2)(r);
    });
    // 512 buckets at 1% span a ratio of 12,900 below the maximum (about 2e6 here): the
    // lowest ~10% of the values collapse.
    const DdSketch s = sketch_of(values, 512);
    std::sort(values.begin(), values.end());
    const auto held = s.buckets();
    ASSERT_EQ(held.back().index - held.front().index + 1, 512);
    const double kept_above = s.bounds_of(held.front().index).first;
    int collapsed = 0;
    int kept = 0;
    for (double q : {0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 0.95, 0.99, 0.999}) {
        const double truth = lower_rank(values, q);
        const double got = s.quantile(q).value();
        if (truth <= kept_above * (1 + kSlack)) {
            ++collapsed;  // reported as the lowest kept bucket: too high, never too low
            EXPECT_EQ(got, s.value_of(held.front().index)) << q;
            EXPECT_GT(got, truth) << q;
        } else {
            ++kept;
            EXPECT_LE(std::abs(got - truth), kAlpha * truth * (1 + kSlack)) << q;
        }
    }
    EXPECT_GE(collapsed, 2);
    EXPECT_GE(kept, 6);  // p50 and above keep the guarantee
}

TEST(DdSketch, StoreGrowsBothWays) {
    // Decreasing then increasing values force growth at both ends of the dense store.
    DdSketch s;
    for (double v = 1000; v > 1e-3; v /= 1.5) s.add(v);
    for (double v = 1500; v < 1e9; v *= 1.5) s.add(v);
    const auto held = s.buckets();
    EXPECT_EQ(s.count(), static_cast<double>(held.size()));  // one value per bucket
    EXPECT_NEAR(s.quantile(0).value(), 1e-3, 1e-3);
    EXPECT_NEAR(s.value_of(held.front().index), 1.5e-3, 0.5e-3);
    EXPECT_EQ(s.max(), s.quantile(1));
}

TEST(DdSketch, ShrinkToFitKeepsEverythingButTheRoom) {
    DdSketch s;
    EXPECT_EQ(s.allocated_buckets(), 0u);
    s.shrink_to_fit();  // empty: stays valid
    s.add(300);
    EXPECT_GT(s.allocated_buckets(), 4u);  // growth room either side of one value
    for (double v : {280.0, 310.0, 450.0}) s.add(v);
    const DdSketch before = s;
    s.shrink_to_fit();
    EXPECT_EQ(s, before);
    EXPECT_EQ(s.encode(), before.encode());
    EXPECT_EQ(s.allocated_buckets(),
              static_cast<std::size_t>(s.buckets().back().index - s.buckets().front().index + 1));
    EXPECT_EQ(s.quantile(0.5), before.quantile(0.5));
    // It grows again both ways, and equals a sketch that never shrank.
    DdSketch never = before;
    for (double v : {1.0, 1e6, 300.0}) {
        s.add(v);
        never.add(v);
    }
    EXPECT_EQ(s, never);
    ASSERT_TRUE(s.merge(before));
    ASSERT_TRUE(never.merge(before));
    EXPECT_EQ(s, never);
    // Only the zero bucket: no store at all.
    DdSketch zeros;
    zeros.add(0);
    zeros.shrink_to_fit();
    EXPECT_EQ(zeros.allocated_buckets(), 0u);
    EXPECT_EQ(zeros.quantile(0.5), 0.0);
    zeros.add(5);
    EXPECT_EQ(zeros.quantile(1), 5.0);
}

// Same buckets, counts, min and max, bit for bit (sum depends on the order of additions).
void expect_same_counts(const DdSketch& a, const DdSketch& b) {
    EXPECT_EQ(a.buckets(), b.buckets());
    EXPECT_EQ(a.count(), b.count());
    EXPECT_EQ(a.zero_count(), b.zero_count());
    EXPECT_EQ(a.min(), b.min());
    EXPECT_EQ(a.max(), b.max());
    EXPECT_NEAR(a.sum(), b.sum(), 1e-9 * std::abs(b.sum()));
}

TEST(DdSketch, GridMergesGiveTheSameCountsInAnyOrder) {
    std::mt19937_64 rng(11);
    std::lognormal_distribution<double> value(std::log(300.0), 0.5);
    std::uniform_real_distribution<double> weight(0.05, 7.0);
    std::vector<DdSketch> parts(60);
    std::vector<double> weights;
    for (DdSketch& p : parts) {
        for (int i = 0, n = 1 + static_cast<int>(rng() % 20); i < n; ++i) p.add(value(rng));
        if (rng() % 5 == 0) p.add(0);
        weights.push_back(weight(rng));
    }
    // In order; in reverse; in groups of 7 merged first (as a cache of partial sums would).
    DdSketch forward, backward, grouped, plain_forward, plain_backward;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        ASSERT_TRUE(forward.merge_on_grid(parts[i], weights[i], 20));
        ASSERT_TRUE(plain_forward.merge(parts[i], weights[i]));
    }
    for (std::size_t i = parts.size(); i-- > 0;) {
        ASSERT_TRUE(backward.merge_on_grid(parts[i], weights[i], 20));
        ASSERT_TRUE(plain_backward.merge(parts[i], weights[i]));
    }
    for (std::size_t g = 0; g < parts.size(); g += 7) {
        DdSketch group;
        for (std::size_t i = g; i < std::min(parts.size(), g + 7); ++i) {
            ASSERT_TRUE(group.merge_on_grid(parts[i], weights[i], 20));
        }
        ASSERT_TRUE(grouped.merge(group));
    }
    expect_same_counts(forward, backward);
    expect_same_counts(forward, grouped);
    // Every count is a multiple of 2^-20, within 2^-21 of the exact product.
    for (const auto& b : forward.buckets()) EXPECT_EQ(std::fmod(b.count * 1048576.0, 1.0), 0.0);
    EXPECT_NEAR(forward.count(), plain_forward.count(), 60 * 20 * std::ldexp(1.0, -21));
    for (double q : {0.1, 0.5, 0.9, 0.99}) EXPECT_EQ(forward.quantile(q), backward.quantile(q));
    // Without the grid the order shows in the low bits (why the grid exists).
    EXPECT_NE(plain_forward.buckets(), plain_backward.buckets());
    // Weight 1 on integer counts is an ordinary merge.
    DdSketch a, b;
    ASSERT_TRUE(a.merge_on_grid(parts[0], 1.0, 20));
    ASSERT_TRUE(b.merge(parts[0]));
    EXPECT_EQ(a, b);
    // A tiny weight keeps every bucket: at least one grid step each.
    DdSketch tiny;
    ASSERT_TRUE(tiny.merge_on_grid(parts[1], 1e-12, 20));
    EXPECT_EQ(tiny.buckets().size(), parts[1].buckets().size());
}

TEST(DdSketch, MergeRejectsDifferentParameters) {
    DdSketch a(0.01);
    DdSketch b(0.02);
    DdSketch c(0.01, 512);
    b.add(3);
    c.add(3);
    const auto r = a.merge(b);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::unsupported));
    EXPECT_NE(r.error().message.find("relative accuracy 0.02"), std::string::npos)
        << r.error().message;
    EXPECT_FALSE(a.merge(c));
    EXPECT_TRUE(a.empty());
}

TEST(DdSketch, MergeWithItselfDoubles) {
    DdSketch s;
    for (double v : {1.0, 2.0, 300.0}) s.add(v);
    DdSketch twice;
    for (double v : {1.0, 2.0, 300.0}) twice.add(v, 2);
    ASSERT_TRUE(s.merge(s));
    EXPECT_EQ(s, twice);
}

TEST(DdSketch, WeightedMergeEqualsWeightedAdds) {
    const auto values =
        draw(2'000, 9, [](auto& r) { return std::lognormal_distribution<double>(5, 1)(r); });
    DdSketch part;
    DdSketch expected;
    for (double v : values) {
        part.add(v);
        expected.add(v, 0.25);
    }
    expected.add(0.0, 0.25);
    part.add(0.0);
    DdSketch merged;
    ASSERT_TRUE(merged.merge(part, 0.25));
    expect_same_distribution(merged, expected, 1e-12);
    EXPECT_DOUBLE_EQ(merged.zero_count(), 0.25);
    for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
        const auto r = merged.merge(part, bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request));
    }
    expect_same_distribution(merged, expected, 1e-12);  // failed merges changed nothing
}

TEST(DdSketch, CdfSpreadsPointsEvenly) {
    DdSketch s;
    for (int i = 1; i <= 10'000; ++i) s.add(i);
    const auto cdf = s.cdf(20);
    ASSERT_EQ(cdf.size(), 20u);
    EXPECT_EQ(cdf.back(), std::make_pair(10'000.0, 1.0));
    for (std::size_t i = 0; i + 1 < cdf.size(); ++i) {
        EXPECT_LT(cdf[i].first, cdf[i + 1].first);
        EXPECT_LT(cdf[i].second, cdf[i + 1].second);
        // Each point is a real bucket boundary: the fraction of values <= the point's value,
        // to the bucket's width.
        EXPECT_NEAR(cdf[i].second, cdf[i].first / 10'000, 0.012 * cdf[i].second + 1e-4) << i;
        EXPECT_GE(cdf[i].second, 0.05 * static_cast<double>(i + 1) - 1e-12) << i;
    }
    // Few buckets: one point each, zero bucket first.
    DdSketch small;
    small.add(0);
    small.add(10, 2);
    small.add(100);
    const auto few = small.cdf(100);
    ASSERT_EQ(few.size(), 3u);
    EXPECT_EQ(few[0], std::make_pair(0.0, 0.25));
    EXPECT_NEAR(few[1].first, 10, 0.1);
    EXPECT_EQ(few[1].second, 0.75);
    EXPECT_EQ(few[2], std::make_pair(100.0, 1.0));
    EXPECT_EQ(small.cdf(1), (std::vector<std::pair<double, double>>{{100.0, 1.0}}));
    EXPECT_TRUE(small.cdf(0).empty());
}

}  // namespace
}  // namespace tokenradar::stats

#include <tokenradar/observatory/rollup.hpp>

#include "observatory_records.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace tokenradar::observatory {
namespace {

using test::record;

double p(const Aggregate& a, Metric m, double q) { return a.sketch(m).quantile(q).value(); }

TEST(Aggregate, CountsStatusesTokensCacheRouteAndTimesOnlySuccesses) {
    Aggregate a;
    Measurement ok = record("p", 0, 250);
    ok.labels.cache = Cache::miss;
    ok.overhead_ns = 40'000;
    a.add(ok);
    Measurement failed = record("p", 0, 900);
    failed.status = RequestStatus::http(429);
    failed.attempt = 2;
    failed.labels.route = Route::fallback;
    a.add(failed);
    EXPECT_EQ(a.samples, 2u);
    EXPECT_EQ(a.first_attempts, 1u);
    EXPECT_EQ(a.errors(), 1u);
    EXPECT_EQ(a.statuses.at("http_429"), 1u);
    EXPECT_EQ(a.prompt_tokens, 200u);
    EXPECT_EQ(a.output_tokens, 22u);
    EXPECT_EQ(a.cache, (std::array<std::uint64_t, 4>{1, 0, 0, 1}));
    EXPECT_EQ(a.route[0], 1u);
    EXPECT_EQ(a.route[1], 1u);
    EXPECT_EQ(std::accumulate(a.route.begin(), a.route.end(), std::uint64_t{0}), 2u);
    EXPECT_EQ(a.sketch(Metric::ttft).count(), 1);
    EXPECT_NEAR(p(a, Metric::ttft, 0.5), 250, 2.5);
    EXPECT_NEAR(p(a, Metric::tpot, 0.5), 20, 0.2);
    EXPECT_NEAR(p(a, Metric::e2e500, 0.5), 250 + 499 * 20, 100);
    EXPECT_NEAR(p(a, Metric::overhead, 0.5), 0.04, 0.0004);
}

// A hit's latency is the gateway's replay and its usage the original's: the provider's
// latency and tokens must not move.
TEST(Aggregate, ACacheHitIsCountedButNeitherTimedNorBilled) {
    Aggregate a;
    for (const Cache kind : {Cache::exact, Cache::semantic}) {
        Measurement hit = record("p", 0, 1);
        hit.labels.cache = kind;
        a.add(hit);
    }
    EXPECT_EQ(a.samples, 2u);
    EXPECT_EQ(a.statuses.at("ok"), 2u);
    EXPECT_EQ(a.cache, (std::array<std::uint64_t, 4>{0, 1, 1, 0}));
    EXPECT_EQ(a.prompt_tokens, 0u);
    EXPECT_EQ(a.output_tokens, 0u);
    EXPECT_TRUE(a.sketch(Metric::ttft).empty());
    EXPECT_TRUE(a.sketch(Metric::e2e).empty());
}

TEST(Aggregate, MergeAddsCountsAndOnlyTheAskedSketches) {
    Aggregate a;
    Aggregate b;
    for (int i = 0; i < 10; ++i) a.add(record("p", 0, 100));
    for (int i = 0; i < 30; ++i) b.add(record("p", 0, 300));
    Aggregate ttft_only;
    ttft_only.merge(a, 1.0, metric_bit(Metric::ttft));
    ttft_only.merge(b, 0.5, metric_bit(Metric::ttft));
    EXPECT_EQ(ttft_only.samples, 40u);
    EXPECT_EQ(ttft_only.statuses.at("ok"), 40u);
    EXPECT_DOUBLE_EQ(ttft_only.sketch(Metric::ttft).count(), 25);  // 10 + 30 * 0.5
    EXPECT_TRUE(ttft_only.sketch(Metric::tpot).empty());
}

TEST(Aggregate, MergeIsItsTwoHalvesAndShrinkChangesNothing) {
    Aggregate a;
    Aggregate b;
    for (int i = 0; i < 10; ++i) a.add(record("p", 0, 100 + i));
    Measurement failed = record("p", 0, 900);
    failed.status = RequestStatus::timeout_total;
    b.add(failed);
    for (int i = 0; i < 5; ++i) b.add(record("p", 0, 3000 + i));
    Aggregate whole = a;
    whole.merge(b);
    Aggregate halves = a;
    halves.merge_counts(b);
    EXPECT_EQ(halves.samples, 16u);
    EXPECT_EQ(halves.statuses.at("timeout_total"), 1u);
    EXPECT_EQ(halves.sketch(Metric::ttft).count(), 10);  // counts only: sketches untouched
    halves.merge_sketches(b);
    EXPECT_EQ(halves, whole);
    Aggregate shrunk = whole;
    shrunk.shrink_to_fit();
    EXPECT_EQ(shrunk, whole);
    EXPECT_LT(shrunk.sketch(Metric::ttft).allocated_buckets(),
              whole.sketch(Metric::ttft).allocated_buckets());
}

TEST(Aggregate, EncodeDecodeRoundTripsAndRejectsDamage) {
    Aggregate a;
    for (int i = 0; i < 50; ++i) a.add(record("p", 0, 100 + i));
    Measurement t = record("p", 0, 1);
    t.status = RequestStatus::timeout_first_token;
    a.add(t);
    const auto bytes = a.encode();
    auto back = Aggregate::decode(bytes);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, a);

    auto message = [](std::vector<std::uint8_t> b) {
        auto r = Aggregate::decode(b);
        return r ? std::string("decoded") : r.error().message;
    };
    EXPECT_EQ(message({}), "rollup row: version: expected 1 to 2, got no data");
    EXPECT_EQ(message({9}), "rollup row: version: expected 1 to 2, got 9");
    for (std::size_t cut : {std::size_t{1}, std::size_t{5}, bytes.size() / 2, bytes.size() - 1}) {
        EXPECT_NE(message({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)}),
                  "decoded")
            << cut;
    }
    auto longer = bytes;
    longer.push_back(0);
    EXPECT_EQ(message(longer), "rollup row: end: expected no bytes after the last sketch");
    auto miscounted = bytes;
    miscounted[1] = 7;  // samples no longer match the status counts
    EXPECT_EQ(message(miscounted), "rollup row: statuses: expected counts that add up to samples");
}

TEST(Aggregate, PackUnpackRoundTripsExactly) {
    Aggregate a;
    for (int i = 0; i < 50; ++i) a.add(record("p", 0, 100 + i));
    Measurement t = record("p", 0, 1);
    t.status = RequestStatus::timeout_first_token;
    a.add(t);
    Aggregate weighted;  // fractional counts, as a folded cell of several clients
    weighted.merge_counts(a);
    for (std::size_t i = 0; i < kMetricCount; ++i)
        ASSERT_TRUE(weighted.sketches[i].merge_on_grid(a.sketches[i], 0.37, 20));
    for (const Aggregate* x : {&a, &weighted}) {
        std::vector<std::uint8_t> bytes;
        x->pack(bytes);
        EXPECT_EQ(Aggregate::unpack(bytes), *x);
        EXPECT_LT(bytes.size(), x->encode().size());
    }
    const Aggregate none;
    std::vector<std::uint8_t> bytes;
    none.pack(bytes);
    EXPECT_EQ(Aggregate::unpack(bytes), none);
}

// Folded cells are merged straight from their packed bytes: the same aggregate, bit for bit,
// as merging the unpacked one, for any sketch mask and with or without the counts.
TEST(Aggregate, MergePackedEqualsMergeOfTheUnpackedAggregate) {
    Aggregate a;
    for (int i = 0; i < 30; ++i) a.add(record("p", 0, 100 + 7 * i));
    Measurement failed = record("p", 0, 1);
    failed.status = RequestStatus::timeout_first_token;
    a.add(failed);
    Aggregate weighted;
    weighted.merge_counts(a);
    for (std::size_t i = 0; i < kMetricCount; ++i)
        ASSERT_TRUE(weighted.sketches[i].merge_on_grid(a.sketches[i], 0.37, 20));
    Aggregate into;  // something there already, with another status
    for (int i = 0; i < 5; ++i) into.add(record("p", 0, 300 + i));
    Measurement limited = record("p", 0, 1);
    limited.status = RequestStatus::connection_error;
    into.add(limited);
    for (const Aggregate* x : {&a, &weighted, &into}) {
        std::vector<std::uint8_t> bytes;
        x->pack(bytes);
        for (const MetricMask mask :
             {kAllMetrics, metric_bit(Metric::ttft),
              static_cast<MetricMask>(metric_bit(Metric::tpot) | metric_bit(Metric::e2e500))}) {
            for (const bool counts : {true, false}) {
                Aggregate want = into;
                if (counts) want.merge_counts(*x);
                want.merge_sketches(*x, 1.0, mask);
                Aggregate got = into;
                got.merge_packed(bytes, mask, counts);
                EXPECT_EQ(got, want) << int{mask} << counts;
            }
        }
    }
}

// Rows saved before the routing strategies' routes (version 1: exactly three route counts,
// without their number) still load.
TEST(Aggregate, Version1RowsDecodeWithTheirThreeRoutes) {
    Aggregate a;
    for (int i = 0; i < 51; ++i) a.add(record("p", 0, 100 + i));
    ASSERT_EQ(a.route[0], 51u);
    const auto v2 = a.encode();
    // Version 2 ends with [route count, the counts..., the sketches]; version 1 had exactly
    // three counts there, without their number.
    std::size_t sketches = 0;
    for (const auto& sketch : a.sketches) {
        const std::size_t n = sketch.encode().size();
        sketches += n + (n < 128 ? 1 : n < 16384 ? 2 : 3);  // its varint length
    }
    const auto at = v2.end() - static_cast<std::ptrdiff_t>(sketches + 1 + kRouteNames.size());
    ASSERT_EQ(*at, kRouteNames.size());
    ASSERT_EQ(at[1], 51);
    std::vector<std::uint8_t> v1(v2.begin(), at);
    v1.insert(v1.end(), {51, 0, 0});
    v1.insert(v1.end(), at + static_cast<std::ptrdiff_t>(1 + kRouteNames.size()), v2.end());
    v1[0] = 1;
    auto back = Aggregate::decode(v1);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, a);

    auto too_many = v2;
    too_many[static_cast<std::size_t>(at - v2.begin())] =
        static_cast<std::uint8_t>(kRouteNames.size() + 1);
    auto refused = Aggregate::decode(too_many);
    ASSERT_FALSE(refused);
    EXPECT_EQ(
        refused.error().message,
        fmt::format("rollup row: routes: expected at most {} route counts", kRouteNames.size()));
}

}  // namespace
}  // namespace tokenradar::observatory

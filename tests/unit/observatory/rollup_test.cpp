#include <tokenradar/observatory/rollup.hpp>

#include "observatory_records.hpp"

#include <gtest/gtest.h>

#include <random>
#include <thread>

namespace tokenradar::observatory {
namespace {

using test::kDay0;
using test::kMs;
using test::record;

Query query(std::int64_t from_us, std::int64_t to_us, std::vector<Label> by = {}, bool by_bucket = false,
            Resolution resolution = Resolution::hour) {
    Query q;
    q.from_us = from_us;
    q.to_us = to_us;
    q.by = std::move(by);
    q.by_bucket = by_bucket;
    q.resolution = resolution;
    return q;
}

double p(const Aggregate& a, Metric m, double q) { return a.sketch(m).quantile(q).value(); }

TEST(RollupIndex, GroupsFiltersAndWindows) {
    RollupIndex index;
    std::vector<Measurement> records;
    for (int i = 0; i < 100; ++i) {
        records.push_back(record("fast", kDay0 + 10 * kHourUs + i * 1000, 100 + i));
        records.push_back(record("slow", kDay0 + 10 * kHourUs + i * 1000, 1000 + 10 * i));
    }
    records.push_back(record("fast", kDay0 + 12 * kHourUs, 5000));  // outside the window below
    index.add(records);

    Query q = query(kDay0 + 10 * kHourUs + 59 * kMinuteUs, kDay0 + 11 * kHourUs, {Label::provider});
    const Groups groups = index.query(q);  // hour resolution: the whole of hour 10
    ASSERT_EQ(groups.size(), 2u);
    const Aggregate& fast = groups.at(GroupKey{{"fast"}, -1});
    EXPECT_EQ(fast.samples, 100u);
    EXPECT_NEAR(p(fast, Metric::ttft, 0.5), 149, 1.5);  // lower rank floor(0.5 * 99) = 49
    EXPECT_NEAR(p(groups.at(GroupKey{{"slow"}, -1}), Metric::ttft, 0.99), 1980, 20);

    q.filter.allow(Label::provider, "slow");
    q.by.clear();
    const Groups only_slow = index.query(q);
    ASSERT_EQ(only_slow.size(), 1u);
    EXPECT_EQ(only_slow.begin()->second.samples, 100u);

    q.filter = {};
    q.to_us = kDay0 + 13 * kHourUs;
    EXPECT_EQ(index.query(q).begin()->second.samples, 201u);
    q.filter.allow(Label::stream, "false");
    EXPECT_TRUE(index.query(q).empty());
}

TEST(RollupIndex, MinuteResolutionAndTimeBuckets) {
    RollupIndex index;
    index.prune(kDay0 + kHourUs);  // minutes kept back to kDay0 - 5 h
    std::vector<Measurement> records;
    for (int minute = 0; minute < 3; ++minute) {
        for (int i = 0; i <= minute; ++i) records.push_back(record("p", kDay0 + minute * kMinuteUs + i, 100));
    }
    index.add(records);
    const Groups groups = index.query(query(kDay0 + kMinuteUs, kDay0 + kHourUs, {}, true, Resolution::minute));
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups.at(GroupKey{{}, kDay0 + kMinuteUs}).samples, 2u);
    EXPECT_EQ(groups.at(GroupKey{{}, kDay0 + 2 * kMinuteUs}).samples, 3u);

    // Minutes older than the retention are not kept; hours are.
    index.prune(kDay0 + 7 * kHourUs);
    EXPECT_TRUE(index.query(query(kDay0, kDay0 + kHourUs, {}, false, Resolution::minute)).empty());
    EXPECT_EQ(index.query(query(kDay0, kDay0 + kHourUs)).begin()->second.samples, 6u);
    index.add(std::vector{record("p", kDay0 + 2, 100)});  // late arrival: hour only
    EXPECT_TRUE(index.query(query(kDay0, kDay0 + kHourUs, {}, false, Resolution::minute)).empty());
}

TEST(RollupIndex, EachClientWeighsTheSameInABucket) {
    RollupIndex index;
    std::vector<Measurement> records;
    for (int i = 0; i < 1000; ++i) records.push_back(record("p", kDay0 + i, 100, "busy"));
    for (int i = 0; i < 10; ++i) records.push_back(record("p", kDay0 + i, 500, "quiet"));
    index.add(records);
    const Aggregate a = index.query(query(kDay0, kDay0 + kHourUs)).begin()->second;
    EXPECT_EQ(a.samples, 1010u);
    EXPECT_NEAR(a.sketch(Metric::ttft).count(), 1010, 1e-6);  // weights sum to the samples
    EXPECT_NEAR(p(a, Metric::ttft, 0.25), 100, 1);
    EXPECT_NEAR(p(a, Metric::ttft, 0.75), 500, 5);  // unweighted, p75 would be 100

    // In separate hours the clients are not weighed against each other.
    records.clear();
    for (int i = 0; i < 10; ++i) records.push_back(record("p", kDay0 + kHourUs + i, 500, "quiet"));
    index.add(records);
    const Aggregate later = index.query(query(kDay0 + kHourUs, kDay0 + 2 * kHourUs)).begin()->second;
    EXPECT_NEAR(later.sketch(Metric::ttft).count(), 10, 1e-9);
}

TEST(RollupIndex, LongWindowsFromTheDayCacheEqualTheSumOfHours) {
    RollupIndex index;
    std::mt19937_64 rng(3);
    std::lognormal_distribution<double> ttft(std::log(300.0), 0.5);
    std::vector<Measurement> records;
    for (int i = 0; i < 20'000; ++i) {
        const std::int64_t ts = kDay0 + static_cast<std::int64_t>(rng() % (5 * kDayUs));
        records.push_back(record(i % 2 ? "a" : "b", ts, ttft(rng), i % 3 ? "x" : "y"));
    }
    index.add(records);
    const Query whole = query(kDay0 + 3 * kHourUs, kDay0 + 4 * kDayUs + 5 * kHourUs, {Label::provider});
    Query hourly = whole;
    hourly.by_bucket = true;
    const auto check = [&] {
        const Groups from_days = index.query(whole);
        std::map<std::string, Aggregate> summed;
        for (const auto& [key, a] : index.query(hourly)) summed[key.labels[0]].merge(a);
        ASSERT_EQ(from_days.size(), summed.size());
        for (const auto& [key, a] : from_days) {
            const Aggregate& b = summed.at(key.labels[0]);
            EXPECT_EQ(a.samples, b.samples);
            EXPECT_NEAR(a.sketch(Metric::ttft).count(), b.sketch(Metric::ttft).count(), 1e-6);
            for (double q : {0.5, 0.95, 0.99}) {
                EXPECT_NEAR(p(a, Metric::ttft, q), p(b, Metric::ttft, q), 1e-9 * p(b, Metric::ttft, q)) << q;
            }
        }
    };
    check();
    // A late record in a cached day makes it stale; the next query rebuilds it.
    index.add(std::vector{record("a", kDay0 + kDayUs + 5, 99'000, "z")});
    check();
    EXPECT_EQ(index.query(whole).at(GroupKey{{"a"}, -1}).sketch(Metric::ttft).max(), 99'000);
}

TEST(RollupIndex, DirtyHoursReloadIntoTheSameAnswers) {
    RollupIndex index;
    std::vector<Measurement> records;
    for (int i = 0; i < 300; ++i) records.push_back(record(i % 3 ? "a" : "b", kDay0 + i * 30'000'000LL, 100 + i, i % 2 ? "x" : ""));
    index.add(records);
    const std::uint64_t generation = index.generation();
    std::vector<HourRow> rows = index.take_dirty_hours();
    EXPECT_EQ(rows.size(), 3u * 2 * 2);  // 3 hours x 2 providers x 2 clients
    EXPECT_TRUE(index.take_dirty_hours().empty());

    RollupIndex reloaded;
    for (HourRow& row : rows) {
        auto decoded = Aggregate::decode(row.aggregate.encode());
        ASSERT_TRUE(decoded);
        row.aggregate = std::move(*decoded);
        reloaded.load_hour(std::move(row));
    }
    EXPECT_TRUE(reloaded.take_dirty_hours().empty());  // loaded rows are already stored
    const Query q = query(kDay0, kDay0 + 3 * kHourUs, {Label::provider}, true);
    EXPECT_EQ(index.query(q), reloaded.query(q));
    EXPECT_EQ(index.generation(), generation);
    const auto labels = reloaded.labels(kDay0, kDay0 + kHourUs);
    EXPECT_EQ(labels[static_cast<std::size_t>(Label::provider)], (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(labels[static_cast<std::size_t>(Label::stream)], (std::vector<std::string>{"true"}));
}

TEST(RollupIndex, HourRetentionDropsOldHours) {
    RollupOptions options;
    options.hour_retention = std::chrono::hours(24);
    RollupIndex index(options);
    index.add(std::vector{record("p", kDay0, 100), record("p", kDay0 + 2 * kDayUs, 100)});
    const Query all = query(kDay0, kDay0 + 3 * kDayUs);
    EXPECT_EQ(index.query(all).begin()->second.samples, 2u);
    const auto before = index.generation();
    index.prune(kDay0 + 2 * kDayUs + kHourUs);
    EXPECT_GT(index.generation(), before);
    EXPECT_EQ(index.query(all).begin()->second.samples, 1u);
}

TEST(RollupIndex, QueriesRunWhileRecordsArrive) {
    RollupIndex index;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        for (int batch = 0; batch < 200; ++batch) {
            std::vector<Measurement> records;
            for (int i = 0; i < 50; ++i) records.push_back(record(batch % 2 ? "a" : "b", kDay0 + batch * kMinuteUs * 10 + i, 100 + i));
            index.add(records);
            if (batch % 20 == 0) index.take_dirty_hours();
        }
        done = true;
    });
    std::uint64_t last = 0;
    while (!done) {
        const Groups g = index.query(query(kDay0, kDay0 + 3 * kDayUs));
        const std::uint64_t n = g.empty() ? 0 : g.begin()->second.samples;
        EXPECT_GE(n, last);  // never goes back
        EXPECT_EQ(n % 50, 0u);  // a batch is seen whole or not at all
        last = n;
    }
    writer.join();
    EXPECT_EQ(index.query(query(kDay0, kDay0 + 3 * kDayUs)).begin()->second.samples, 10'000u);
}

}  // namespace
}  // namespace tokenradar::observatory

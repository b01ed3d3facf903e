#include "observatory_records.hpp"

#include <tokenradar/observatory/rollup.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <thread>

namespace tokenradar::observatory {
namespace {

using test::kDay0;
using test::kMs;
using test::record;

Query query(std::int64_t from_us, std::int64_t to_us, std::vector<Label> by = {},
            bool by_bucket = false, Resolution resolution = Resolution::hour) {
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
        for (int i = 0; i <= minute; ++i)
            records.push_back(record("p", kDay0 + minute * kMinuteUs + i, 100));
    }
    index.add(records);
    const Groups groups =
        index.query(query(kDay0 + kMinuteUs, kDay0 + kHourUs, {}, true, Resolution::minute));
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups.at(GroupKey{{}, kDay0 + kMinuteUs}).samples, 2u);
    EXPECT_EQ(groups.at(GroupKey{{}, kDay0 + 2 * kMinuteUs}).samples, 3u);

    // Minutes older than the retention are not kept; hours are.
    index.prune(kDay0 + 7 * kHourUs);
    EXPECT_TRUE(index.query(query(kDay0, kDay0 + kHourUs, {}, false, Resolution::minute)).empty());
    EXPECT_EQ(index.query(query(kDay0, kDay0 + kHourUs)).begin()->second.samples, 6u);
    // Hour 0 closed an hour after its end (late_allowance): a record for it is refused.
    index.add(std::vector{record("p", kDay0 + 2, 100)});
    EXPECT_EQ(index.late_records(), 1u);
    EXPECT_EQ(index.query(query(kDay0, kDay0 + kHourUs)).begin()->second.samples, 6u);
    // At 7:30 a record of 6:10 goes to its hour (open until 8:00), not to its minute (closed
    // at 7:11).
    index.prune(kDay0 + 7 * kHourUs + 30 * kMinuteUs);
    index.add(std::vector{record("p", kDay0 + 6 * kHourUs + 10 * kMinuteUs, 100)});
    EXPECT_EQ(index.query(query(kDay0 + 6 * kHourUs, kDay0 + 7 * kHourUs)).size(), 1u);
    EXPECT_TRUE(
        index.query(query(kDay0 + 6 * kHourUs, kDay0 + 7 * kHourUs, {}, false, Resolution::minute))
            .empty());
    EXPECT_EQ(index.late_records(), 1u);
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
    const Aggregate later =
        index.query(query(kDay0 + kHourUs, kDay0 + 2 * kHourUs)).begin()->second;
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
    const Query whole =
        query(kDay0 + 3 * kHourUs, kDay0 + 4 * kDayUs + 5 * kHourUs, {Label::provider});
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
                EXPECT_NEAR(p(a, Metric::ttft, q), p(b, Metric::ttft, q),
                            1e-9 * p(b, Metric::ttft, q))
                    << q;
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
    for (int i = 0; i < 300; ++i)
        records.push_back(
            record(i % 3 ? "a" : "b", kDay0 + i * 30'000'000LL, 100 + i, i % 2 ? "x" : ""));
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
    EXPECT_EQ(labels[cell_slot(Label::provider)], (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(labels[cell_slot(Label::stream)], (std::vector<std::string>{"true"}));
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

// Equal counts, statuses and sketch buckets bit for bit; min, max and sum within a float's
// rounding (folded cells keep them as floats: Aggregate::round_to_float) but never a bucket
// apart (a sum also depends on the order of additions; nothing shows it).
void expect_same(const Aggregate& a, const Aggregate& b, const std::string& where) {
    constexpr double kFloatRounding = 0x1p-23;  // twice a float's relative rounding
    const auto near = [](std::optional<double> x, std::optional<double> y) {
        return x.has_value() == y.has_value() &&
               (!x || std::abs(*x - *y) <= kFloatRounding * std::abs(*y));
    };
    SCOPED_TRACE(where);
    EXPECT_EQ(a.samples, b.samples);
    EXPECT_EQ(a.first_attempts, b.first_attempts);
    EXPECT_EQ(a.statuses, b.statuses);
    EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
    EXPECT_EQ(a.cache, b.cache);
    for (std::size_t i = 0; i < kMetricCount; ++i) {
        const auto& x = a.sketches[i];
        const auto& y = b.sketches[i];
        EXPECT_EQ(x.buckets(), y.buckets()) << i;
        EXPECT_EQ(x.count(), y.count()) << i;
        EXPECT_EQ(x.zero_count(), y.zero_count()) << i;
        EXPECT_TRUE(near(x.min(), y.min())) << i;
        EXPECT_TRUE(near(x.max(), y.max())) << i;
        EXPECT_TRUE(near(x.sum(), y.sum())) << i;
    }
}

void expect_same(const Groups& a, const Groups& b, const std::string& where) {
    ASSERT_EQ(a.size(), b.size()) << where;
    for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
        ASSERT_EQ(x->first, y->first) << where;
        expect_same(x->second, y->second, where);
    }
}

// Several providers, models, tasks and regions, uneven clients (fractional weights), spread
// over five days: every cache has something to do.
std::vector<Measurement> mixed_records(int n, std::uint64_t seed, std::int64_t from_us,
                                       std::int64_t span_us) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> ttft(std::log(300.0), 0.6);
    std::vector<Measurement> records;
    for (int i = 0; i < n; ++i) {
        const std::int64_t ts =
            from_us + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span_us));
        const std::uint64_t r = rng();
        const std::uint64_t c = rng() % 10;
        Measurement m = record(r % 3 == 0   ? "a"
                               : r % 3 == 1 ? "b"
                                            : "c",
                               ts, ttft(rng),
                               c < 6   ? "heavy"
                               : c < 8 ? "x"
                               : c < 9 ? "y"
                                       : "z");
        m.labels.model = (r >> 8) % 2 ? "m1" : "m2";
        m.labels.task = (r >> 16) % 2 ? "chat" : "code";
        m.labels.client_region = (r >> 24) % 2 ? "eu" : "us";
        m.labels.stream = (r >> 32) % 4 != 0;
        if ((r >> 40) % 50 == 0) m.status = RequestStatus::http(429);
        records.push_back(std::move(m));
    }
    return records;
}

// What a query should answer, from one group per cell and bucket (the index's plain path:
// grouping by every label defeats the model caches, time buckets the day caches), merged in
// the test. `key` maps a cell group to the query's group; `bucket` a bucket to its own.
Groups reference(const RollupIndex& index, Query q,
                 const std::function<std::optional<GroupKey>(const GroupKey&)>& key) {
    q.by = {kCellLabels.begin(), kCellLabels.end()};
    q.by_bucket = true;
    q.bucket_key = nullptr;
    Groups out;
    for (const auto& [cell_key, a] : index.query(q)) {
        if (auto k = key(cell_key)) {
            Aggregate& into = out[*k];
            into.merge_counts(a);
            into.merge_sketches(a, 1.0, q.metrics);
        }
    }
    return out;
}

TEST(RollupIndex, CachedMergesEqualTheCellByCellSumExactly) {
    RollupOptions options;
    options.hour_retention = std::chrono::hours(24 * 4);
    RollupIndex index(options);
    index.add(mixed_records(30'000, 5, kDay0, 5 * kDayUs));
    // Only in the first hour of day 1, which retention cuts below.
    index.add(std::vector{record("early", kDay0 + kDayUs + 10 * kMinuteUs, 100)});
    const std::int64_t from = kDay0 + 7 * kHourUs;
    const std::int64_t to = kDay0 + 4 * kDayUs + 13 * kHourUs;
    const auto model_of = [](const GroupKey& k) {
        return std::vector<std::string>{k.labels[0], k.labels[1]};
    };

    const auto check = [&](const std::string& when) {
        // A leaderboard: by provider and model, whole days from the caches.
        Query board = query(from, to, {Label::provider, Label::model});
        expect_same(index.query(board),
                    reference(index, board,
                              [&](const GroupKey& k) {
                                  return GroupKey{model_of(k), -1};
                              }),
                    when + ": by model");
        // No grouping at all, one provider, and only some sketches, without counts.
        Query one = query(from, to);
        one.filter.allow(Label::provider, "b");
        one.metrics = metric_bit(Metric::ttft);
        one.counts = false;
        Groups got = index.query(one);
        Groups want = reference(index, one, [](const GroupKey& k) -> std::optional<GroupKey> {
            return k.labels[0] == "b" ? std::optional(GroupKey{{}, -1}) : std::nullopt;
        });
        ASSERT_EQ(got.size(), 1u) << when;
        EXPECT_EQ(got.begin()->second.samples, 0u) << when;  // counts were not merged
        EXPECT_EQ(got.begin()->second.sketch(Metric::ttft).buckets(),
                  want.begin()->second.sketch(Metric::ttft).buckets())
            << when;
        EXPECT_TRUE(got.begin()->second.sketch(Metric::tpot).empty()) << when;
        // A filter on another label: cells and the day-cell caches.
        Query region = query(from, to, {Label::task});
        region.filter.allow(Label::client_region, "eu");
        expect_same(index.query(region),
                    reference(index, region,
                              [](const GroupKey& k) -> std::optional<GroupKey> {
                                  if (k.labels[6] != "eu") return std::nullopt;
                                  return GroupKey{{k.labels[2]}, -1};
                              }),
                    when + ": eu by task");
        // Time series per model from the bucket-model caches.
        Query series = board;
        series.by_bucket = true;
        expect_same(index.query(series),
                    reference(index, series,
                              [&](const GroupKey& k) {
                                  return GroupKey{model_of(k), k.bucket_us};
                              }),
                    when + ": series");
        // Buckets merged by key (a heatmap's hour of day), keyed by the first bucket.
        Query slots = series;
        slots.bucket_key = [](std::int64_t b) { return (b / kHourUs) % 24; };
        std::map<std::int64_t, std::int64_t> first;  // the earliest bucket of each hour of day
        for (const auto& [k, a] : reference(index, slots, [](const GroupKey& g) { return g; })) {
            auto [it, inserted] = first.try_emplace((k.bucket_us / kHourUs) % 24, k.bucket_us);
            it->second = std::min(it->second, k.bucket_us);
        }
        expect_same(
            index.query(slots),
            reference(index, slots,
                      [&](const GroupKey& k) {
                          return GroupKey{model_of(k), first.at((k.bucket_us / kHourUs) % 24)};
                      }),
            when + ": by hour of day");
    };
    check("fresh");
    // Late records into hours and days already cached, a new model, a new client.
    std::vector<Measurement> late = mixed_records(500, 6, kDay0 + kDayUs, 2 * kDayUs);
    late.push_back(record("d", kDay0 + 2 * kDayUs + 5, 1234, "new"));
    index.add(late);
    check("after late records");
    // A stored row replaces a part.
    HourRow row;
    row.hour_us = kDay0 + 2 * kDayUs + 3 * kHourUs;
    row.cell = CellKey::of(late.back().labels);
    row.client_id = "heavy";
    for (int i = 0; i < 40; ++i) row.aggregate.add(record("d", row.hour_us, 50.0 + i));
    index.load_hour(row);
    check("after load_hour");
    // Retention cuts the first day in two (hours before 01:00 of day 1 go).
    index.prune(kDay0 + 5 * kDayUs + kHourUs);
    check("after prune");
    // Day 1 is cut: its cache holds an entry for "early", whose only hour is gone; no empty
    // group may come of it.
    const Groups day1 = index.query(query(kDay0 + kDayUs, kDay0 + 2 * kDayUs, {Label::provider}));
    EXPECT_EQ(day1.size(), 3u);
    EXPECT_EQ(day1.count(GroupKey{{"early"}, -1}), 0u);
    const Groups cells =
        index.query(query(kDay0 + kDayUs, kDay0 + 2 * kDayUs, {Label::provider, Label::task}));
    EXPECT_EQ(cells.count(GroupKey{{"early", "chat"}, -1}), 0u);
}

// The same records into an index that folds closed buckets and one that never does (an
// allowance past every record: what the index was before folding).
struct FoldedAndNot {
    static RollupOptions never_folding() {
        RollupOptions o;
        o.late_allowance = std::chrono::hours(24 * 365);
        return o;
    }
    void add(const std::vector<Measurement>& records) {
        folded.add(records);
        kept.add(records);
    }
    void prune(std::int64_t now_us) {
        folded.prune(now_us);
        kept.prune(now_us);
    }
    RollupIndex folded;
    RollupIndex kept{never_folding()};
};

TEST(RollupIndex, FoldedBucketsAnswerWhatTheirClientPartsDid) {
    FoldedAndNot both;
    const std::int64_t now = kDay0 + 3 * kDayUs;
    // Three days, four uneven clients; then many clients with a few records each in the
    // last 12 hours (fractional weights, buckets of dozens of clients).
    both.add(mixed_records(30'000, 11, kDay0, 3 * kDayUs - 2 * kHourUs));
    std::vector<Measurement> many = mixed_records(6'000, 12, now - 12 * kHourUs, 12 * kHourUs);
    for (std::size_t i = 0; i < many.size(); ++i)
        many[i].client_id = "ip:" + std::to_string(i % 700);
    both.add(many);
    both.prune(now);
    const IndexSize folded = both.folded.size();
    const IndexSize kept = both.kept.size();
    EXPECT_EQ(folded.buckets, kept.buckets);
    EXPECT_GT(folded.folded, 0u);
    EXPECT_LT(folded.parts, kept.parts / 2);  // one part per cell instead of one per client
    EXPECT_EQ(kept.folded, 0u);

    const auto compare = [&](Query q, const std::string& what) {
        const Groups want = both.kept.query(q);
        expect_same(both.folded.query(q), want, what);
        expect_same(both.folded.query(q), want, what + ", warm");  // from the caches it filled
    };
    const std::vector<Label> all(kCellLabels.begin(), kCellLabels.end());
    compare(query(kDay0, now, {Label::provider, Label::model}), "leaderboard (day-model caches)");
    compare(query(kDay0 + 5 * kHourUs, now, {Label::task, Label::client_region}),
            "by task and region (day-cell caches)");
    compare(query(kDay0, now, {Label::provider}, true), "hourly series (bucket-model caches)");
    compare(query(kDay0, now, all, true), "every cell and hour (the plain path)");
    compare(query(now - 6 * kHourUs, now, all, true, Resolution::minute), "every cell and minute");
    Query region = query(kDay0, now, {Label::model}, true);
    region.filter.allow(Label::client_region, "eu");
    region.bucket_key = [](std::int64_t b) { return (b / kHourUs) % 24; };
    compare(region, "heatmap of one region");
    // The open buckets (the last hour and its allowance) still hold every client's part.
    compare(query(now - 2 * kHourUs, now, {Label::provider}, true, Resolution::minute),
            "open minutes");
}

// Issue 32: queries that filter or group by labels other than provider and model read the
// shape caches (per day, per hour, and a window's settled part as one entry). Cold and warm,
// as hours fold, records arrive, rows load, retention cuts a day and trimming evicts, they
// answer what merging every cell of every hour does.
TEST(RollupIndex, ShapeCachesAnswerWhatMergingEveryCellDoes) {
    RollupOptions options;
    options.late_allowance = std::chrono::minutes(90);
    options.hour_retention = std::chrono::hours(24 * 3);
    RollupIndex index(options);
    const std::vector<Measurement> records = mixed_records(40'000, 31, kDay0, 4 * kDayUs);
    std::vector<std::vector<Measurement>> by_hour(4 * 24);
    for (const Measurement& m : records)
        by_hour[static_cast<std::size_t>((m.ts_us - kDay0) / kHourUs)].push_back(m);
    const auto regroup = [](const Query& q) {
        return [by = q.by](const GroupKey& all) -> std::optional<GroupKey> {
            GroupKey k;
            for (Label l : by) k.labels.push_back(all.labels[cell_slot(l)]);
            return k;
        };
    };
    const auto check = [&](std::int64_t now, const std::string& when) {
        Query board = query(now - 2 * kDayUs - 5 * kHourUs, now + 1,
                            {Label::provider, Label::model, Label::task, Label::client_region});
        Query region = query(now - 26 * kHourUs, now + 1, {Label::model, Label::task});
        region.filter.allow(Label::client_region, "eu");
        Query week = query(now - 3 * kDayUs, now + 1, {Label::stream});  // whole days
        for (const Query* q : {&board, &region, &week}) {
            const Groups want = reference(index, *q, regroup(*q));
            expect_same(index.query(*q), want, when + " cold");
            expect_same(index.query(*q), want, when + " warm");
        }
    };
    for (std::size_t h = 0; h < by_hour.size(); ++h) {
        index.add(by_hour[h]);
        const std::int64_t now = kDay0 + static_cast<std::int64_t>(h + 1) * kHourUs - 1;
        index.prune(now);  // the keeper's prune: hours 90 minutes past their end fold
        if (h % 7 == 3) check(now, "hour " + std::to_string(h));
    }
    const std::int64_t now = kDay0 + 4 * kDayUs - 1;
    EXPECT_GT(index.size().folded, 0u);
    EXPECT_GT(index.size().cached_bytes, 0u);
    // A row loaded into the open hour, a late record refused: warm windows stay right.
    HourRow row;
    row.hour_us = now - 10 * kMinuteUs;
    row.cell = CellKey::of(records.back().labels);
    row.client_id = "loaded";
    for (int i = 0; i < 30; ++i) row.aggregate.add(record("a", row.hour_us, 900.0 + i));
    index.load_hour(row);
    index.add(std::vector{record("a", kDay0 + kDayUs, 50, "late")});
    EXPECT_EQ(index.late_records(), 1u);
    check(now, "after load_hour");
    // An hour later the window has one more settled hour; retention cuts a day.
    index.prune(now + 2 * kHourUs);
    check(now + kHourUs, "an hour later");
    // A cap of one byte: prune drops every entry; they refill on the next query.
    RollupOptions tiny = options;
    tiny.shape_cache_bytes = 1;
    RollupIndex small(tiny);
    for (const auto& hour : by_hour) {
        small.add(hour);
        small.prune(hour.empty() ? now : hour.back().ts_us);
    }
    small.prune(now);
    Query board = query(now - 2 * kDayUs, now + 1, {Label::task, Label::client_region});
    const Groups first = small.query(board);
    expect_same(first, reference(small, board, regroup(board)), "tiny cap, cold");
    EXPECT_GT(small.size().cached_bytes, 0u);
    small.prune(now);
    EXPECT_EQ(small.size().cached_bytes, 0u);  // only shape entries were filled
    expect_same(small.query(board), first, "tiny cap, after a trim");
}

// Issue 32: a closed bucket costs one encoded aggregate per cell, whoever sent its records.
TEST(RollupIndex, ClosedBucketsCostTheSameForOneOrAThousandSubmitters) {
    const std::int64_t now = kDay0 + 2 * kDayUs;
    const std::vector<Measurement> records = mixed_records(20'000, 21, kDay0, 2 * kDayUs);
    const auto index_from = [&](std::size_t submitters) {
        auto index = std::make_unique<RollupIndex>();
        std::vector<Measurement> copy = records;
        for (std::size_t i = 0; i < copy.size(); ++i)
            copy[i].client_id = "ip:" + std::to_string(i % submitters);
        index->add(copy);
        // Open: about one part per client and cell-hour while the buckets take records.
        EXPECT_EQ(index->size().folded, 0u);
        index->prune(now + 2 * kHourUs);  // every hour and minute closed
        return index;
    };
    const auto one = index_from(1);
    const auto many = index_from(1000);
    const IndexSize a = one->size();
    const IndexSize b = many->size();
    EXPECT_EQ(a.parts, a.folded);  // nothing open: no client part left
    EXPECT_EQ(b.parts, b.folded);
    EXPECT_EQ(a.folded, b.folded);    // one per cell and bucket with records
    EXPECT_EQ(a.sketch_buckets, 0u);  // folded cells hold no DdSketch objects
    EXPECT_EQ(b.sketch_buckets, 0u);
    // Weighted counts are f64 where integer counts are varints: more bytes, not more parts.
    EXPECT_LT(b.folded_bytes, 3 * a.folded_bytes);
    EXPECT_LT(a.folded_bytes / a.folded, 400u);
    // The folded index still answers with the client weighting: the same as one built from
    // the same records that never folds.
    RollupOptions never;
    never.late_allowance = std::chrono::hours(24 * 365);
    RollupIndex kept(never);
    std::vector<Measurement> copy = records;
    for (std::size_t i = 0; i < copy.size(); ++i)
        copy[i].client_id = "ip:" + std::to_string(i % 1000);
    kept.add(copy);
    kept.prune(now + 2 * kHourUs);
    expect_same(many->query(query(kDay0, now, {Label::provider, Label::task}, true)),
                kept.query(query(kDay0, now, {Label::provider, Label::task}, true)),
                "hours by provider and task");
}

TEST(RollupIndex, ClosedBucketsRefuseRecordsAndKeepTheirRowsForTheStore) {
    RollupIndex index;
    const std::int64_t hour = kDay0 + 5 * kHourUs;
    std::vector<Measurement> records;
    for (int i = 0; i < 300; ++i)
        records.push_back(
            record("p", hour + i * 10'000'000LL, 100.0 + i, "c" + std::to_string(i % 30)));
    index.add(records);
    // Closed (an hour past its end plus the allowance) and folded before the rows were taken:
    // the folded parts' rows are handed out all the same, once.
    index.prune(hour + 2 * kHourUs);
    const IndexSize size = index.size();
    EXPECT_EQ(size.parts, size.folded);
    EXPECT_EQ(size.folded, 1u + 50u);  // one cell: its hour and its 50 minutes with records
    std::vector<HourRow> rows = index.take_dirty_hours();
    EXPECT_EQ(rows.size(), 30u);
    EXPECT_TRUE(index.take_dirty_hours().empty());

    // A late record changes nothing but the count; so does a stored row of a folded hour.
    const Query q = query(hour, hour + kHourUs);
    const Groups answer = index.query(q);
    const std::uint64_t generation = index.generation();
    index.add(std::vector{record("late", hour + 5, 99'000, "c1")});
    EXPECT_EQ(index.late_records(), 1u);
    index.load_hour(rows.front());
    EXPECT_EQ(index.late_records(), 2u);
    EXPECT_EQ(index.generation(), generation);
    expect_same(index.query(q), answer, "after refusals");
    EXPECT_FALSE(index.has_value(Label::provider, "late"));

    // The rows reload into an index that folds them the same way.
    RollupIndex reloaded;
    for (HourRow& row : rows) reloaded.load_hour(std::move(row));
    expect_same(reloaded.query(q), answer, "reloaded, open");
    reloaded.prune(hour + 2 * kHourUs);
    EXPECT_EQ(reloaded.size().folded, 1u);
    expect_same(reloaded.query(q), answer, "reloaded, folded");
}

TEST(RollupIndex, FoldClosedFoldsOnlyClosedHoursBeforeItsBound) {
    RollupIndex index;
    const std::int64_t now = kDay0 + 10 * kHourUs;
    index.prune(now);  // hours before 9:00 are closed
    std::vector<HourRow> rows;
    for (int h = 6; h < 10; ++h) {
        for (int c = 0; c < 4; ++c) {
            HourRow row;
            row.hour_us = kDay0 + h * kHourUs;
            row.cell = CellKey::of(record("p", row.hour_us, 100).labels);
            row.client_id = "c" + std::to_string(c);
            for (int i = 0; i <= c; ++i) row.aggregate.add(record("p", row.hour_us, 100.0 + i));
            rows.push_back(std::move(row));
        }
    }
    RollupIndex unfolded;
    for (const HourRow& row : rows) unfolded.load_hour(row);
    std::int64_t hour = 0;
    for (HourRow& row : rows) {
        if (row.hour_us > hour) {
            index.fold_closed(row.hour_us);
            hour = row.hour_us;
            // At most the hour being loaded holds client parts.
            const IndexSize size = index.size();
            EXPECT_LE(size.parts - size.folded, 4u);
        }
        index.load_hour(std::move(row));
    }
    index.fold_closed(now);
    const IndexSize size = index.size();
    EXPECT_EQ(size.folded, 3u);               // 6:00 to 8:00
    EXPECT_EQ(size.parts - size.folded, 4u);  // 9:00 is open: its four clients
    EXPECT_EQ(index.late_records(), 0u);
    expect_same(index.query(query(kDay0, now, {}, true)),
                unfolded.query(query(kDay0, now, {}, true)), "loaded and folded");
}

TEST(RollupIndex, PruneGivesBackTheRoomOfPassedBuckets) {
    RollupIndex index;
    index.prune(kDay0);
    index.add(mixed_records(5'000, 7, kDay0, 3 * kHourUs));
    const IndexSize before = index.size();
    EXPECT_EQ(before.parts, index.size().parts);
    EXPECT_GT(before.buckets, 180u);  // 3 hours + 180 minutes
    const Groups answer =
        index.query(query(kDay0, kDay0 + 3 * kHourUs, {Label::provider, Label::model}));
    EXPECT_GT(index.size().cached, 0u);  // the model slots of three hours
    index.prune(kDay0 + 3 * kHourUs);    // hours 0 and 1 have passed, minutes up to 2:55
    const IndexSize after = index.size();
    EXPECT_LT(after.parts, before.parts);  // hour 0 and minutes to 1:59 closed: folded
    EXPECT_LT(after.sketch_buckets, before.sketch_buckets * 3 / 4);
    expect_same(index.query(query(kDay0, kDay0 + 3 * kHourUs, {Label::provider, Label::model})),
                answer, "after compaction");
}

TEST(RollupIndex, QueriesRunWhileRecordsArrive) {
    RollupIndex index;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        for (int batch = 0; batch < 200; ++batch) {
            std::vector<Measurement> records;
            for (int i = 0; i < 50; ++i)
                records.push_back(
                    record(batch % 2 ? "a" : "b", kDay0 + batch * kMinuteUs * 10 + i, 100 + i));
            index.add(records);
            if (batch % 20 == 0) index.take_dirty_hours();
        }
        done = true;
    });
    // Two readers: one on the model caches (no grouping), one on the cells (by task); both
    // refill stale cache entries (days, model slots) at the same time.
    const auto reader = [&](std::vector<Label> by) {
        std::uint64_t last = 0;
        while (!done) {
            const Groups g = index.query(query(kDay0, kDay0 + 3 * kDayUs, by));
            const std::uint64_t n = g.empty() ? 0 : g.begin()->second.samples;
            EXPECT_GE(n, last);     // never goes back
            EXPECT_EQ(n % 50, 0u);  // a batch is seen whole or not at all
            last = n;
        }
    };
    std::thread by_task(reader, std::vector<Label>{Label::task});
    reader({});
    writer.join();
    by_task.join();
    EXPECT_EQ(index.query(query(kDay0, kDay0 + 3 * kDayUs)).begin()->second.samples, 10'000u);
    EXPECT_EQ(index.query(query(kDay0, kDay0 + 3 * kDayUs, {Label::task})).begin()->second.samples,
              10'000u);
}

}  // namespace
}  // namespace tokenradar::observatory

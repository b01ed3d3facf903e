// SVG badges (issue 31): a badge fetched again must cost a map lookup, not a query. Both
// answers over 24 models x 24 hours of records, one badge each.
#include <tokenradar/observatory/badge.hpp>
#include <tokenradar/observatory/query_api.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace {

using namespace tokenradar;
using namespace tokenradar::observatory;

constexpr std::int64_t kNow = 1'764'460'800'000'000 + 3 * kDayUs + 14 * kHourUs;
constexpr std::int64_t kMsNs = 1'000'000;
constexpr int kModels = 24;

// 24 models, 100 records an hour each for a day.
const RollupIndex& index_of_a_day() {
    static RollupIndex index(RollupOptions{std::chrono::hours(48), std::chrono::hours(0)});
    static const bool filled = [] {
        std::vector<Measurement> records;
        for (int model = 0; model < kModels; ++model) {
            for (int i = 0; i < 24 * 100; ++i) {
                Measurement m;
                m.request_id = "r" + std::to_string(model) + "-" + std::to_string(i);
                m.ts_us = kNow - (i + 1) * (kHourUs / 100);
                m.labels.provider = "provider-" + std::to_string(model / 4);
                m.labels.model = "model-" + std::to_string(model);
                m.labels.source = "gateway";
                m.labels.api = "openai";
                m.t.first_chunk = (200 + i % 100) * kMsNs;
                m.t.first_token = m.t.first_chunk;
                m.t.last_token = *m.t.first_token + 10 * 20 * kMsNs;
                m.t.done = m.t.last_token;
                m.output_tokens = 11;
                m.output_events = 11;
                records.push_back(std::move(m));
            }
        }
        index.add(records);
        return true;
    }();
    benchmark::DoNotOptimize(filled);
    return index;
}

const std::string kTarget = "/badge/provider-1/model-5/ttft_p50.svg";

// A repeated fetch: the badge cache's hit (what HttpApi answers on the I/O thread).
void BM_Badge_Cached(benchmark::State& state) {
    const QueryApi queries(index_of_a_day());
    const BadgeApi badges(queries);
    benchmark::DoNotOptimize(badges.get(kTarget, "", kNow));
    for (auto _ : state) {
        auto answer = badges.cached(kTarget, "", kNow);
        benchmark::DoNotOptimize(answer);
    }
}
BENCHMARK(BM_Badge_Cached)->Unit(benchmark::kMicrosecond);

// A badge computed every time: no badge cache and no query cache, so each answer parses the
// target, runs the leaderboard query for one model over 24 hours and renders the SVG.
void BM_Badge_Uncached(benchmark::State& state) {
    QueryApiOptions no_cache;
    no_cache.cache_ttl = std::chrono::milliseconds(0);
    const QueryApi queries(index_of_a_day(), no_cache);
    const BadgeApi badges(queries, BadgeOptions{0});
    for (auto _ : state) {
        auto answer = badges.get(kTarget, "", kNow);
        benchmark::DoNotOptimize(answer);
    }
}
BENCHMARK(BM_Badge_Uncached)->Unit(benchmark::kMicrosecond);

}  // namespace

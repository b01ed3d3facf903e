#include "observatory_records.hpp"

#include <tokenradar/observatory/query_api.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tokenradar::observatory {
namespace {

namespace json = boost::json;
using test::kDay0;
using ::testing::HasSubstr;

constexpr std::int64_t kSecondUs = 1'000'000;
constexpr std::int64_t kNow = kDay0 + 12 * kHourUs + 30 * kMinuteUs;  // 2025-11-30T12:30:00Z

Measurement rec(std::string model, std::int64_t ts_us, double ttft_ms) {
    Measurement m = test::record("p", ts_us, ttft_ms);
    m.labels.model = std::move(model);
    return m;
}

// `n` records of `model` at `ts_us` with TTFT first, first + 1, ...
std::vector<Measurement> series(std::string model, std::int64_t ts_us, int n, double first) {
    std::vector<Measurement> out;
    for (int i = 0; i < n; ++i) out.push_back(rec(model, ts_us + i, first + i));
    return out;
}

json::object parse(const std::string& body) { return json::parse(body).as_object(); }
double num(const json::value& v) { return v.to_number<double>(); }

QueryApiOptions no_cache() {
    QueryApiOptions o;
    o.cache_ttl = std::chrono::milliseconds(0);
    return o;
}

json::object ok_body(const QueryApi& api, std::string_view target, std::int64_t now = kNow) {
    const ApiResponse r = api.get(target, "", now);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    return r.status == 200 ? parse(r.body) : json::object{};
}

std::vector<std::string> models_of(const json::object& body, std::string_view list = "rows") {
    std::vector<std::string> out;
    for (const auto& row : body.at(list).as_array()) out.emplace_back(row.at("model").as_string());
    return out;
}

TEST(QueryApi, LeaderboardOverTheIndex) {
    RollupIndex index;
    index.add(series("slow", kNow - 3 * kHourUs, 100, 101));
    index.add(series("fast", kNow - 2 * kHourUs, 100, 1));
    index.add(series("rare", kNow - 2 * kHourUs, 5, 1));
    QueryApi api(index, no_cache());
    const auto body = ok_body(api, "/api/v1/leaderboard");
    EXPECT_EQ(body.at("generated_at").as_string(), "2025-11-30T12:30:00Z");
    EXPECT_EQ(body.at("window").as_string(), "24h");
    EXPECT_EQ(models_of(body), (std::vector<std::string>{"fast", "slow", "rare"}));
    const auto& fast = body.at("rows").at(0);
    EXPECT_EQ(fast.at("samples").as_int64(), 100);
    EXPECT_NEAR(num(fast.at("ttft_ms").at("p50")), 50, 0.5);  // rank 49 of 1..100
    EXPECT_NEAR(num(fast.at("ttft_ms").at("p99")), 99, 0.99);
    EXPECT_NEAR(num(body.at("rows").at(1).at("ttft_ms").at("p50")), 150, 1.5);
    EXPECT_TRUE(body.at("rows").at(2).at("insufficient").as_bool());

    // 2h: from the start of the hour two hours back (10:00), so 09:30 is out and 10:30 in.
    EXPECT_EQ(models_of(ok_body(api, "/api/v1/leaderboard?window=2h")),
              (std::vector<std::string>{"fast", "rare"}));
    EXPECT_EQ(models_of(ok_body(api, "/api/v1/leaderboard?window=1h")), std::vector<std::string>{});
    EXPECT_EQ(models_of(ok_body(api, "/api/v1/leaderboard?model=slow&model=rare")),
              (std::vector<std::string>{"slow", "rare"}));
    EXPECT_EQ(models_of(ok_body(api, "/api/v1/leaderboard?stream=false")),
              std::vector<std::string>{});
}

TEST(QueryApi, ShortWindowsReadMinutes) {
    RollupIndex index;
    index.add(series("recent", kNow - 10 * kMinuteUs, 30, 1));
    index.add(series("older", kNow - 20 * kMinuteUs, 30, 1));
    QueryApi api(index, no_cache());
    EXPECT_EQ(models_of(ok_body(api, "/api/v1/leaderboard?window=15m")),
              std::vector<std::string>{"recent"});
    EXPECT_EQ(models_of(ok_body(api, "/api/v1/leaderboard?window=21m")).size(), 2u);
}

TEST(QueryApi, LeaderboardSplitsByLabels) {
    RollupIndex index;
    auto chat = series("m", kNow - kHourUs, 25, 10);
    auto code = series("m", kNow - kHourUs, 25, 500);
    for (auto& m : code) m.labels.task = "code";
    index.add(chat);
    index.add(code);
    QueryApi api(index, no_cache());
    const auto body = ok_body(api, "/api/v1/leaderboard?by=task");
    ASSERT_EQ(body.at("rows").as_array().size(), 2u);
    EXPECT_EQ(body.at("rows").at(0).at("task").as_string(), "chat");
    EXPECT_EQ(body.at("rows").at(1).at("task").as_string(), "code");
    EXPECT_EQ(ok_body(api, "/api/v1/leaderboard").at("rows").at(0).at("samples").as_int64(), 50);
}

TEST(QueryApi, RegionsRows) {
    RollupIndex index;
    auto eu = series("m", kNow - kHourUs, 30, 300);
    for (auto& m : eu) m.labels.client_region = "eu-west", m.labels.upstream_region = "us-east";
    auto us = series("m", kNow - kHourUs, 30, 50);
    for (auto& m : us) m.labels.client_region = "us-east", m.labels.upstream_region = "us-east";
    index.add(eu);
    index.add(us);
    QueryApi api(index, no_cache());
    const auto rows = ok_body(api, "/api/v1/regions").at("rows").as_array();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("client_region").as_string(), "eu-west");
    EXPECT_EQ(rows[0].at("upstream_region").as_string(), "us-east");
    EXPECT_EQ(rows[0].at("provider").as_string(), "p");
    EXPECT_NEAR(num(rows[0].at("ttft_ms").at("p50")), 314, 3.14);
    EXPECT_NEAR(num(rows[0].at("e2e_ms").at("p50")), 514, 5.14);
    EXPECT_EQ(rows[1].at("client_region").as_string(), "us-east");
    EXPECT_EQ(rows[1].at("samples").as_int64(), 30);
    const auto filtered =
        ok_body(api, "/api/v1/regions?client_region=us-east").at("rows").as_array();
    ASSERT_EQ(filtered.size(), 1u);
    EXPECT_EQ(filtered[0].at("client_region").as_string(), "us-east");
}

TEST(QueryApi, GatewayCountsOnlyGatewayRecords) {
    RollupIndex index;
    std::vector<Measurement> records;
    for (int i = 0; i < 30; ++i) {
        Measurement m = rec("m", kNow - kHourUs + i, 100);
        m.overhead_ns = 50'000;
        m.labels.cache = i < 6 ? Cache::exact : Cache::miss;
        if (i >= 27) m.attempt = 2, m.labels.route = Route::fallback;
        if (i < 2) m.status = RequestStatus::timeout_first_token;
        records.push_back(m);
    }
    auto bench = series("m", kNow - kHourUs, 50, 100);
    for (auto& m : bench) m.labels.source = "bench";
    index.add(records);
    index.add(bench);
    QueryApi api(index, no_cache());
    const auto body = ok_body(api, "/api/v1/gateway");
    EXPECT_EQ(body.at("requests").as_int64(), 27);
    EXPECT_EQ(body.at("attempts").as_int64(), 30);
    EXPECT_EQ(body.at("cache").at("exact").as_int64(), 6);
    EXPECT_EQ(body.at("cache").at("miss").as_int64(), 24);
    EXPECT_EQ(body.at("route").at("fallback").as_int64(), 3);
    EXPECT_EQ(body.at("status").at("ok").as_int64(), 28);
    EXPECT_EQ(body.at("status").at("timeout_first_token").as_int64(), 2);
    EXPECT_NEAR(num(body.at("overhead_ms").at("p50")), 0.05, 0.0005);
    EXPECT_EQ(body.at("overhead_ms").at("samples").as_int64(), 24);  // ok, not cache hits
    EXPECT_EQ(ok_body(api, "/api/v1/gateway?source=gateway&source=bench").at("attempts").as_int64(),
              30);
    EXPECT_EQ(ok_body(api, "/api/v1/gateway?source=bench").at("attempts").as_int64(), 0);
}

// The gateway answer's `keys`: per client key, most requests first, its counts, tokens and
// latency; the totals still over every key; a client_key filter narrows both.
TEST(QueryApi, GatewaySplitsByClientKey) {
    RollupIndex index;
    std::vector<Measurement> records;
    for (int i = 0; i < 40; ++i) {
        const bool team_a = i < 25;
        Measurement m = rec("m", kNow - kHourUs + i, team_a ? 100 : 400);
        m.labels.client_key = team_a ? "team-a" : "team-b";
        m.prompt_tokens = 10;
        m.output_tokens = team_a ? 3 : 5;
        if (i == 0) m.status = RequestStatus::http(429);
        records.push_back(m);
    }
    records.push_back(rec("m", kNow - kHourUs, 100));  // no key
    index.add(records);
    QueryApi api(index, no_cache());
    const auto body = ok_body(api, "/api/v1/gateway");
    EXPECT_EQ(body.at("requests").as_int64(), 41);
    const auto& keys = body.at("keys").as_array();
    ASSERT_EQ(keys.size(), 3u);
    EXPECT_FALSE(body.at("keys_truncated").as_bool());
    const auto& a = keys[0].as_object();
    EXPECT_EQ(a.at("client_key").as_string(), "team-a");
    EXPECT_EQ(a.at("requests").as_int64(), 25);
    EXPECT_EQ(a.at("errors").as_int64(), 1);
    EXPECT_EQ(a.at("output_tokens").as_int64(), 75);
    EXPECT_NEAR(num(a.at("ttft_ms").at("p50")), 100, 1);
    const auto& b = keys[1].as_object();
    EXPECT_EQ(b.at("client_key").as_string(), "team-b");
    EXPECT_EQ(b.at("requests").as_int64(), 15);
    EXPECT_EQ(b.at("prompt_tokens").as_int64(), 150);
    EXPECT_TRUE(b.at("ttft_ms").at("insufficient").as_bool());  // 15 < min_samples
    EXPECT_EQ(keys[2].at("client_key").as_string(), "");
    const auto only_b = ok_body(api, "/api/v1/gateway?client_key=team-b");
    EXPECT_EQ(only_b.at("requests").as_int64(), 15);
    ASSERT_EQ(only_b.at("keys").as_array().size(), 1u);
}

TEST(QueryApi, TimeseriesByMinuteAndHour) {
    RollupIndex index;
    index.add(series("m", kNow - 5 * kMinuteUs, 30, 100));
    index.add(series("m", kNow - 3 * kMinuteUs, 30, 200));
    index.add(series("m", kNow - 3 * kHourUs, 30, 300));
    QueryApi api(index, no_cache());
    const auto minutes = ok_body(api, "/api/v1/timeseries?window=15m&q=0.5,0.95");
    EXPECT_EQ(minutes.at("bucket").as_string(), "minute");
    const auto& points = minutes.at("series").at(0).at("points").as_array();
    ASSERT_EQ(points.size(), 2u);
    EXPECT_EQ(points[0].at("t").as_string(), "2025-11-30T12:25:00Z");
    EXPECT_EQ(points[1].at("t").as_string(), "2025-11-30T12:27:00Z");
    EXPECT_NEAR(num(points[0].at("p50")), 114, 1.14);
    EXPECT_NEAR(num(points[1].at("p95")), 227, 2.27);
    const auto hours = ok_body(api, "/api/v1/timeseries?window=24h");
    EXPECT_EQ(hours.at("bucket").as_string(), "hour");
    const auto& hour_points = hours.at("series").at(0).at("points").as_array();
    ASSERT_EQ(hour_points.size(), 2u);
    EXPECT_EQ(hour_points[0].at("t").as_string(), "2025-11-30T09:00:00Z");
    EXPECT_EQ(hour_points[1].at("samples").as_int64(), 60);
    EXPECT_EQ(api.get("/api/v1/timeseries?window=7h&bucket=minute", "", kNow).status, 400);
}

TEST(QueryApi, DistributionPoints) {
    RollupIndex index;
    index.add(series("m", kNow - kHourUs, 200, 1));
    QueryApi api(index, no_cache());
    const auto body = ok_body(api, "/api/v1/distribution?points=20&metric=ttft");
    const auto& cdf = body.at("series").at(0).at("cdf").as_array();
    EXPECT_LE(cdf.size(), 20u);
    EXPECT_EQ(num(cdf.back().at(0)), 200);
    EXPECT_EQ(num(cdf.back().at(1)), 1);
    for (const auto& point : cdf) EXPECT_NEAR(num(point.at(1)), num(point.at(0)) / 200, 0.015);
}

TEST(QueryApi, HeatmapInNewYorkAcrossFallBack) {
    constexpr std::int64_t kFallBackDay = 1'762'041'600 * kSecondUs;  // 2025-11-02, Sunday
    RollupIndex index;
    index.add(series("m", kFallBackDay + 5 * kHourUs + 10 * kMinuteUs, 20, 100));  // 01:10 EDT
    index.add(series("m", kFallBackDay + 6 * kHourUs + 10 * kMinuteUs, 20, 300));  // 01:10 EST
    index.add(series("m", kFallBackDay + 18 * kHourUs, 25, 50));                   // 13:00 EST
    QueryApi api(index, no_cache());
    const std::int64_t now = kFallBackDay + kDayUs;
    const auto body = ok_body(api, "/api/v1/heatmap?window=2d&tz=America/New_York", now);
    const auto& cells = body.at("cells").as_array();
    ASSERT_EQ(cells.size(), 2u);
    EXPECT_EQ(cells[0].at("weekday").as_int64(), 6);
    EXPECT_EQ(cells[0].at("hour").as_int64(), 1);
    EXPECT_EQ(cells[0].at("samples").as_int64(), 40);
    EXPECT_NEAR(num(cells[0].at("value")), 119, 1.19);  // rank 19 of 100..119, 300..319
    EXPECT_EQ(cells[1].at("hour").as_int64(), 13);
    // In UTC the same records are three cells, at their UTC hours.
    const auto utc = ok_body(api, "/api/v1/heatmap?window=2d", now);
    ASSERT_EQ(utc.at("cells").as_array().size(), 3u);
    EXPECT_EQ(utc.at("cells").at(0).at("hour").as_int64(), 5);
    const auto by_model = ok_body(api, "/api/v1/heatmap?window=2d&by=model&q=0.99", now);
    EXPECT_EQ(by_model.at("cells").at(0).at("model").as_string(), "m");
    EXPECT_EQ(by_model.at("cells").at(0).at("hour").as_int64(), 5);
}

TEST(QueryApi, LabelsOfTheWindow) {
    RollupIndex index;
    auto records = series("m1", kNow - kHourUs, 2, 1);
    records.push_back(rec("m2", kNow - kHourUs, 1));
    records.back().labels.client_region = "eu";
    index.add(records);
    index.add(series("old", kNow - 3 * kDayUs, 1, 1));
    QueryApi api(index, no_cache());
    const auto body = ok_body(api, "/api/v1/labels?window=1d");
    const auto& labels = body.at("labels").as_object();
    EXPECT_EQ(labels.at("model").as_array(), (json::array{"m1", "m2"}));
    EXPECT_EQ(labels.at("client_region").as_array(), (json::array{"", "eu"}));
    EXPECT_EQ(labels.at("source").as_array(), (json::array{"gateway"}));
}

TEST(QueryApi, ErrorsAreJsonAndNotCached) {
    RollupIndex index;
    QueryApi api(index);
    const ApiResponse missing = api.get("/api/v1/nope", "", kNow);
    EXPECT_EQ(missing.status, 404);
    EXPECT_EQ(missing.cache_control, "no-store");
    EXPECT_EQ(missing.etag, "");
    EXPECT_EQ(parse(missing.body).at("error").at("type").as_string(), "invalid_request_error");
    const ApiResponse bad = api.get("/api/v1/heatmap?q=2", "\"x\"", kNow);
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(bad.cache_control, "no-store");
    const auto error = parse(bad.body).at("error").as_object();
    EXPECT_EQ(error.at("param").as_string(), "q");
    EXPECT_EQ(error.at("message").as_string(),
              "q: expected a quantile in (0, 1) such as 0.5 or 0.99, got '2'");
    EXPECT_EQ(error.at("type").as_string(), "invalid_request_error");
    EXPECT_TRUE(error.at("code").is_null());
}

TEST(QueryApi, EtagRevalidatesWithoutBody) {
    RollupIndex index;
    index.add(series("m", kNow - kHourUs, 30, 1));
    QueryApi api(index, no_cache());
    const ApiResponse first = api.get("/api/v1/leaderboard", "", kNow);
    ASSERT_EQ(first.status, 200);
    EXPECT_EQ(first.cache_control, "public, max-age=10");
    ASSERT_EQ(first.etag.size(), 18u);
    EXPECT_EQ(first.etag.front(), '"');
    const ApiResponse again = api.get("/api/v1/leaderboard", first.etag, kNow);
    EXPECT_EQ(again.status, 304);
    EXPECT_EQ(again.body, "");
    EXPECT_EQ(again.etag, first.etag);
    EXPECT_EQ(again.cache_control, "public, max-age=10");
    EXPECT_EQ(api.get("/api/v1/leaderboard", "\"a\", W/" + first.etag, kNow).status, 304);
    EXPECT_EQ(api.get("/api/v1/leaderboard", "\"other\"", kNow).status, 200);

    // Time moves, data do not: generated_at changes, the ETag does not.
    const ApiResponse later = api.get("/api/v1/leaderboard", "", kNow + 7 * kSecondUs);
    EXPECT_NE(later.body, first.body);
    EXPECT_EQ(later.etag, first.etag);
    // Different filters are different answers.
    EXPECT_NE(api.get("/api/v1/leaderboard?model=x", "", kNow).etag, first.etag);
    // New data: a new ETag, and the old one gets the body.
    index.add(series("m2", kNow - kHourUs, 30, 1));
    const ApiResponse changed = api.get("/api/v1/leaderboard", first.etag, kNow);
    EXPECT_EQ(changed.status, 200);
    EXPECT_NE(changed.etag, first.etag);
}

TEST(QueryApi, CachedAnswersLiveForTheTtl) {
    RollupIndex index;
    index.add(series("m", kNow - kHourUs, 30, 1));
    QueryApiOptions options;
    options.cache_ttl = std::chrono::seconds(5);
    QueryApi api(index, options);
    const auto first = ok_body(api, "/api/v1/leaderboard?window=6h");
    index.add(series("new", kNow - kHourUs, 30, 1));
    // Within the TTL (and under another spelling of the same request): the cached answer.
    const auto cached = ok_body(api, "/api/v1/leaderboard?window=360m", kNow + 4 * kSecondUs);
    EXPECT_EQ(cached.at("generated_at"), first.at("generated_at"));
    EXPECT_EQ(models_of(cached), std::vector<std::string>{"m"});
    // Past it: computed again.
    const auto fresh = ok_body(api, "/api/v1/leaderboard?window=6h", kNow + 5 * kSecondUs);
    EXPECT_EQ(fresh.at("generated_at").as_string(), "2025-11-30T12:30:05Z");
    EXPECT_EQ(models_of(fresh).size(), 2u);
    // Past the TTL with nothing changed and the window's start where it was: still cached.
    const auto idle = ok_body(api, "/api/v1/leaderboard?window=6h", kNow + 20 * kMinuteUs);
    EXPECT_EQ(idle.at("generated_at").as_string(), "2025-11-30T12:30:05Z");
    // The next hour moves the window's start: computed again.
    const auto next_hour = ok_body(api, "/api/v1/leaderboard?window=6h", kNow + 31 * kMinuteUs);
    EXPECT_EQ(next_hour.at("generated_at").as_string(), "2025-11-30T13:01:00Z");
}

TEST(QueryApi, ZeroTtlComputesEveryTime) {
    RollupIndex index;
    QueryApi api(index, no_cache());
    EXPECT_TRUE(ok_body(api, "/api/v1/leaderboard").at("rows").as_array().empty());
    index.add(series("m", kNow - kHourUs, 30, 1));
    EXPECT_EQ(ok_body(api, "/api/v1/leaderboard").at("rows").as_array().size(), 1u);
}

TEST(QueryApi, CacheIsBounded) {
    RollupIndex index;
    QueryApiOptions options;
    options.cache_entries = 1;
    QueryApi api(index, options);
    EXPECT_TRUE(ok_body(api, "/api/v1/leaderboard").at("rows").as_array().empty());
    EXPECT_TRUE(ok_body(api, "/api/v1/regions").at("rows").as_array().empty());  // evicts
    index.add(series("m", kNow - kHourUs, 30, 1));
    EXPECT_EQ(ok_body(api, "/api/v1/leaderboard").at("rows").as_array().size(), 1u);
    // Evicted in turn by the leaderboard: computed again, with the new data.
    EXPECT_EQ(ok_body(api, "/api/v1/regions").at("rows").as_array().size(), 1u);
}

TEST(QueryApi, ConcurrentReadersAndAWriter) {
    RollupIndex index;
    QueryApi api(index);
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::vector<std::thread> readers;
    const std::vector<std::string> targets = {"/api/v1/leaderboard", "/api/v1/heatmap?by=model",
                                              "/api/v1/timeseries?window=1h", "/api/v1/gateway"};
    for (int t = 0; t < 3; ++t) {
        readers.emplace_back([&, t] {
            for (int i = 0; !stop.load() || i < 50; ++i) {
                const auto& target = targets[static_cast<std::size_t>(i + t) % targets.size()];
                const ApiResponse r = api.get(target, "", kNow + i * 100'000);
                if (r.status != 200 || !json::parse(r.body).is_object()) ++failures;
                if (i > 5000) break;
            }
        });
    }
    for (int i = 0; i < 50; ++i)
        index.add(series("m" + std::to_string(i % 5), kNow - kHourUs, 10, i));
    stop = true;
    for (auto& r : readers) r.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST(QueryApi, ManyViewersShareOneComputation) {
    RollupIndex index;
    for (int i = 0; i < 20; ++i) index.add(series("m" + std::to_string(i), kNow - kHourUs, 30, i));
    QueryApi api(index);
    // Each viewer asks at its own time within the TTL: an answer computed by anyone but the
    // first (instead of waiting for it or reading it from the cache) has another generated_at.
    constexpr int kViewers = 8;
    std::vector<std::string> bodies(kViewers);
    std::atomic<int> ready{0};
    std::vector<std::thread> viewers;
    for (int v = 0; v < kViewers; ++v) {
        viewers.emplace_back([&, v] {
            ++ready;
            while (ready.load() < kViewers) std::this_thread::yield();
            bodies[static_cast<std::size_t>(v)] =
                api.get("/api/v1/heatmap?by=model", "", kNow + v * kSecondUs / 2).body;
        });
    }
    for (auto& v : viewers) v.join();
    for (const auto& body : bodies) EXPECT_EQ(body, bodies[0]);
}

TEST(QueryApi, EtagMatching) {
    EXPECT_TRUE(etag_matches("\"abc\"", "\"abc\""));
    EXPECT_TRUE(etag_matches("W/\"abc\"", "\"abc\""));
    EXPECT_TRUE(etag_matches("\"x\", \"abc\"", "\"abc\""));
    EXPECT_TRUE(etag_matches("\"x,y\",\"abc\"", "\"abc\""));
    EXPECT_TRUE(etag_matches("*", "\"abc\""));
    EXPECT_FALSE(etag_matches("", "\"abc\""));
    EXPECT_FALSE(etag_matches("abc", "\"abc\""));
    EXPECT_FALSE(etag_matches("\"abc", "\"abc\""));
    EXPECT_FALSE(etag_matches("\"abcd\"", "\"abc\""));
    EXPECT_FALSE(etag_matches("\"x\" junk \"abc\"", "\"abc\""));
}

}  // namespace
}  // namespace tokenradar::observatory

// Tests of src/observatory/query_render.cpp (private): bodies from hand-made Groups, numbers
// checked against the values the records hold.
#include "../../../src/observatory/query_render.hpp"

#include "../../../src/observatory/time_zone.hpp"
#include "observatory_records.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include <vector>

namespace tokenradar::observatory {
namespace {

namespace json = boost::json;
using test::kDay0;
using test::record;

constexpr std::int64_t kMin = 20;

// One successful record per TTFT value (TPOT 20 ms over 11 tokens: E2E = TTFT + 200 ms).
Aggregate of_ttfts(const std::vector<double>& ttfts) {
    Aggregate a;
    for (double t : ttfts) a.add(record("p", kDay0, t));
    return a;
}

std::vector<double> range(double from, double to) {
    std::vector<double> v;
    for (double x = from; x <= to; x += 1) v.push_back(x);
    return v;
}

Aggregate failures(int n, std::string status) {
    Aggregate a;
    for (int i = 0; i < n; ++i) {
        Measurement m = record("p", kDay0, 1);
        m.status = parse_request_status(status).value();
        a.add(m);
    }
    return a;
}

json::object parse(const std::string& body) { return json::parse(body).as_object(); }

double num(const json::value& v) { return v.to_number<double>(); }

ApiRequest request(Endpoint e) {
    ApiRequest r;
    r.endpoint = e;
    r.by = kModelLabels;
    return r;
}

TEST(QueryRender, RoundsToFourSignificantDigits) {
    EXPECT_EQ(round_significant(281.234), 281.2);
    EXPECT_EQ(round_significant(12153.7), 12150);
    EXPECT_EQ(round_significant(123456.7), 123500);
    EXPECT_EQ(round_significant(0.0412345), 0.04123);
    EXPECT_EQ(round_significant(-1.23456), -1.235);
    EXPECT_EQ(round_significant(0.0), 0.0);
    EXPECT_EQ(round_significant(50.0), 50.0);
    EXPECT_EQ(round_significant(0.999949), 0.9999);
    EXPECT_EQ(round_significant(0.99996), 1.0);
}

TEST(QueryRender, LeaderboardNumbersAndOrder) {
    Groups groups;
    groups[GroupKey{{"p", "slow"}, -1}] = of_ttfts(range(101, 200));
    groups[GroupKey{{"p", "fast"}, -1}] = of_ttfts(range(1, 100));
    groups[GroupKey{{"p", "few"}, -1}] = of_ttfts({0.5, 0.5, 0.5, 0.5, 0.5});
    groups[GroupKey{{"p", "failing"}, -1}] = failures(30, "http_500");
    ApiRequest req = request(Endpoint::leaderboard);
    req.window_text = "7d";
    const auto body = parse(render_leaderboard(req, groups, kMin));
    EXPECT_EQ(body.at("window").as_string(), "7d");
    EXPECT_EQ(body.at("min_samples").as_int64(), 20);
    const auto& rows = body.at("rows").as_array();
    ASSERT_EQ(rows.size(), 4u);
    // Sufficient by TTFT p50, then sufficient without TTFT, then insufficient.
    EXPECT_EQ(rows[0].at("model").as_string(), "fast");
    EXPECT_EQ(rows[1].at("model").as_string(), "slow");
    EXPECT_EQ(rows[2].at("model").as_string(), "failing");
    EXPECT_EQ(rows[3].at("model").as_string(), "few");

    const auto& fast = rows[0].as_object();
    EXPECT_EQ(fast.at("provider").as_string(), "p");
    EXPECT_EQ(fast.at("samples").as_int64(), 100);
    EXPECT_EQ(fast.at("errors").as_int64(), 0);
    EXPECT_EQ(num(fast.at("error_rate")), 0.0);
    EXPECT_FALSE(fast.at("insufficient").as_bool());
    // Lower nearest rank: p50 = value at rank floor(0.5 * 99) = 49 -> 50 ms, within 1%.
    const auto& ttft = fast.at("ttft_ms").as_object();
    EXPECT_NEAR(num(ttft.at("p50")), 50, 0.5);
    EXPECT_NEAR(num(ttft.at("p95")), 95, 0.95);
    EXPECT_NEAR(num(ttft.at("p99")), 99, 0.99);
    EXPECT_EQ(ttft.at("samples").as_int64(), 100);
    EXPECT_FALSE(ttft.at("insufficient").as_bool());
    EXPECT_NEAR(num(fast.at("tpot_ms").at("p50")), 20, 0.2);
    EXPECT_NEAR(num(fast.at("decode_tps_p50")), 50, 0.5);
    EXPECT_NEAR(num(fast.at("e2e_ms").at("p50")), 250, 2.5);
    EXPECT_NEAR(num(fast.at("e2e500_ms").at("p99")), 99 + 499 * 20, 100);

    const auto& failing = rows[2].as_object();
    EXPECT_EQ(failing.at("errors").as_int64(), 30);
    EXPECT_EQ(num(failing.at("error_rate")), 1.0);
    EXPECT_FALSE(failing.at("insufficient").as_bool());
    EXPECT_TRUE(failing.at("ttft_ms").at("p50").is_null());
    EXPECT_TRUE(failing.at("ttft_ms").at("insufficient").as_bool());
    EXPECT_EQ(failing.at("ttft_ms").at("samples").as_int64(), 0);
    EXPECT_TRUE(failing.at("decode_tps_p50").is_null());

    const auto& few = rows[3].as_object();
    EXPECT_TRUE(few.at("insufficient").as_bool());
    EXPECT_EQ(few.at("samples").as_int64(), 5);
    EXPECT_TRUE(few.at("error_rate").is_null());
    EXPECT_TRUE(few.at("ttft_ms").at("p50").is_null());
    EXPECT_EQ(few.at("ttft_ms").at("samples").as_int64(), 5);  // the count still shows
    EXPECT_TRUE(few.at("e2e500_ms").at("p99").is_null());

    // Under a lower threshold the five samples are a number, and the fastest.
    const auto relaxed = parse(render_leaderboard(req, groups, 5));
    EXPECT_EQ(relaxed.at("rows").at(0).at("model").as_string(), "few");
    EXPECT_EQ(num(relaxed.at("rows").at(0).at("ttft_ms").at("p50")), 0.5);
}

TEST(QueryRender, LeaderboardExtraLabelsAreKeys) {
    Groups groups;
    groups[GroupKey{{"p", "m", "chat", "false"}, -1}] = of_ttfts(range(1, 30));
    ApiRequest req = request(Endpoint::leaderboard);
    req.by = {Label::provider, Label::model, Label::task, Label::stream};
    const auto row = parse(render_leaderboard(req, groups, kMin)).at("rows").at(0).as_object();
    EXPECT_EQ(row.at("task").as_string(), "chat");
    EXPECT_EQ(row.at("stream").as_string(), "false");
}

TEST(QueryRender, RegionsGroupByRegionPairThenSpeed) {
    Groups groups;
    groups[GroupKey{{"eu", "us-east", "p", "slow"}, -1}] = of_ttfts(range(500, 530));
    groups[GroupKey{{"eu", "us-east", "p", "fast"}, -1}] = of_ttfts(range(100, 130));
    groups[GroupKey{{"", "eu-west", "p", "fast"}, -1}] = of_ttfts(range(40, 70));
    groups.at(GroupKey{{"eu", "us-east", "p", "slow"}, -1}).merge(failures(10, "timeout_idle"));
    const auto rows =
        parse(render_regions(request(Endpoint::regions), groups, kMin)).at("rows").as_array();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].at("client_region").as_string(), "");
    EXPECT_EQ(rows[0].at("upstream_region").as_string(), "eu-west");
    EXPECT_EQ(rows[1].at("model").as_string(), "fast");
    EXPECT_EQ(rows[2].at("model").as_string(), "slow");
    EXPECT_EQ(rows[2].at("client_region").as_string(), "eu");
    EXPECT_EQ(rows[2].at("samples").as_int64(), 41);
    EXPECT_EQ(rows[2].at("errors").as_int64(), 10);
    EXPECT_NEAR(num(rows[2].at("error_rate")), 10.0 / 41, 1e-4);
    EXPECT_NEAR(num(rows[2].at("ttft_ms").at("p50")), 515, 5.15);
    EXPECT_NEAR(num(rows[2].at("e2e_ms").at("p50")), 715, 7.15);
    EXPECT_FALSE(rows[2].as_object().contains("tpot_ms"));
}

TEST(QueryRender, TimeseriesSeriesAndPoints) {
    Groups groups;
    groups[GroupKey{{"p", "a"}, kDay0 + kHourUs}] = of_ttfts(range(1, 100));
    groups[GroupKey{{"p", "a"}, kDay0}] = of_ttfts(range(201, 300));
    groups[GroupKey{{"p", "b"}, kDay0}] = of_ttfts({7});
    ApiRequest req = request(Endpoint::timeseries);
    req.quantiles = {0.5, 0.95};
    const auto body = parse(render_timeseries(req, groups, kMin));
    EXPECT_EQ(body.at("bucket").as_string(), "hour");
    EXPECT_EQ(body.at("metric").as_string(), "ttft");
    const auto& series = body.at("series").as_array();
    ASSERT_EQ(series.size(), 2u);
    EXPECT_EQ(series[0].at("model").as_string(), "a");
    const auto& points = series[0].at("points").as_array();
    ASSERT_EQ(points.size(), 2u);
    EXPECT_EQ(points[0].at("t").as_string(), "2025-11-30T00:00:00Z");
    EXPECT_EQ(points[1].at("t").as_string(), "2025-11-30T01:00:00Z");
    EXPECT_NEAR(num(points[0].at("p50")), 250, 2.5);
    EXPECT_NEAR(num(points[1].at("p95")), 95, 0.95);
    EXPECT_EQ(points[1].at("samples").as_int64(), 100);
    const auto& few = series[1].at("points").at(0).as_object();
    EXPECT_TRUE(few.at("insufficient").as_bool());
    EXPECT_EQ(few.at("samples").as_int64(), 1);
    EXPECT_TRUE(few.at("p50").is_null());
    EXPECT_TRUE(few.at("p95").is_null());
}

TEST(QueryRender, DistributionIsTheSketchCdf) {
    Groups groups;
    groups[GroupKey{{"p", "a"}, -1}] = of_ttfts(range(1, 1000));
    groups[GroupKey{{"p", "b"}, -1}] = of_ttfts({1, 2, 3});
    ApiRequest req = request(Endpoint::distribution);
    req.points = 10;
    req.metric = Metric::e2e;
    const auto body = parse(render_distribution(req, groups, kMin));
    EXPECT_EQ(body.at("metric").as_string(), "e2e");
    const auto& a = body.at("series").at(0).as_object();
    EXPECT_EQ(a.at("samples").as_int64(), 1000);
    const auto& cdf = a.at("cdf").as_array();
    ASSERT_LE(cdf.size(), 10u);
    ASSERT_GE(cdf.size(), 5u);
    double last_value = 0, last_fraction = 0;
    for (const auto& point : cdf) {
        const double value = num(point.at(0));
        const double fraction = num(point.at(1));
        EXPECT_GT(value, last_value);
        EXPECT_GT(fraction, last_fraction);
        // E2E is TTFT + 200 over TTFT 1..1000: the fraction at or below v is (v - 200) / 1000.
        EXPECT_NEAR(fraction, (value - 200) / 1000, 0.015) << value;
        last_value = value;
        last_fraction = fraction;
    }
    EXPECT_EQ(last_fraction, 1.0);
    EXPECT_EQ(last_value, 1200);
    const auto& b = body.at("series").at(1).as_object();
    EXPECT_TRUE(b.at("insufficient").as_bool());
    EXPECT_TRUE(b.at("cdf").as_array().empty());
}

TEST(QueryRender, GatewayCounts) {
    Groups groups;
    Aggregate a;
    for (int i = 0; i < 40; ++i) {
        Measurement m = record("p", kDay0, 100);
        m.overhead_ns = 40'000 + i * 1000;  // 0.040 .. 0.079 ms
        m.labels.cache = i < 10 ? Cache::exact : Cache::miss;
        if (i >= 35) {
            m.attempt = 2;
            m.labels.route = Route::fallback;
        }
        if (i < 3) m.status = RequestStatus::http(429);
        a.add(m);
    }
    groups[GroupKey{{}, -1}] = a;
    const auto body = parse(render_gateway(request(Endpoint::gateway), groups, kMin));
    EXPECT_EQ(body.at("requests").as_int64(), 35);
    EXPECT_EQ(body.at("attempts").as_int64(), 40);
    EXPECT_EQ(body.at("errors").as_int64(), 3);
    EXPECT_EQ(body.at("cache").at("exact").as_int64(), 10);
    EXPECT_EQ(body.at("cache").at("miss").as_int64(), 30);
    EXPECT_EQ(body.at("cache").at("semantic").as_int64(), 0);
    EXPECT_EQ(body.at("cache").at("bypass").as_int64(), 0);
    EXPECT_EQ(body.at("route").at("primary").as_int64(), 35);
    EXPECT_EQ(body.at("route").at("fallback").as_int64(), 5);
    EXPECT_EQ(body.at("route").at("hedge").as_int64(), 0);
    EXPECT_EQ(body.at("status").at("ok").as_int64(), 37);
    EXPECT_EQ(body.at("status").at("http_429").as_int64(), 3);
    const auto& overhead = body.at("overhead_ms").as_object();
    // Successful records that were not cache hits only.
    EXPECT_EQ(overhead.at("samples").as_int64(), 30);
    // 30 values 0.050 .. 0.079 ms: p50 at rank 14 -> 0.064 ms; three decimals survive.
    EXPECT_NEAR(num(overhead.at("p50")), 0.064, 0.064 * 0.01);
    EXPECT_NE(num(overhead.at("p50")), 0.1);

    const auto empty = parse(render_gateway(request(Endpoint::gateway), {}, kMin));
    EXPECT_EQ(empty.at("attempts").as_int64(), 0);
    EXPECT_TRUE(empty.at("overhead_ms").at("p50").is_null());
    EXPECT_TRUE(empty.at("status").as_object().empty());
}

TEST(QueryRender, HeatmapMergesUtcHoursIntoLocalSlots) {
    // 2025-11-02 New York falls back: 05:00Z and 06:00Z are both 01:00 local, a Sunday.
    constexpr std::int64_t kFallBackDay = 1'762'041'600'000'000;
    Groups groups;
    groups[GroupKey{{}, kFallBackDay + 5 * kHourUs}] = of_ttfts(range(1, 15));
    groups[GroupKey{{}, kFallBackDay + 6 * kHourUs}] = of_ttfts(range(16, 30));
    groups[GroupKey{{}, kFallBackDay + 7 * kHourUs}] = of_ttfts({5});
    ApiRequest req = request(Endpoint::heatmap);
    req.tz = "America/New_York";
    req.quantiles = {0.5};
    const auto body = parse(render_heatmap(req, groups, *load_zone(req.tz), kMin));
    EXPECT_EQ(body.at("tz").as_string(), "America/New_York");
    EXPECT_EQ(body.at("by").as_string(), "weekday");
    EXPECT_EQ(num(body.at("q")), 0.5);
    const auto& cells = body.at("cells").as_array();
    ASSERT_EQ(cells.size(), 2u);
    EXPECT_EQ(cells[0].at("hour").as_int64(), 1);
    EXPECT_EQ(cells[0].at("weekday").as_int64(), 6);
    EXPECT_EQ(cells[0].at("samples").as_int64(), 30);  // two UTC hours, one local hour
    EXPECT_NEAR(num(cells[0].at("value")), 15, 0.15);
    EXPECT_FALSE(cells[0].at("insufficient").as_bool());
    EXPECT_EQ(cells[1].at("hour").as_int64(), 2);
    EXPECT_TRUE(cells[1].at("insufficient").as_bool());
    EXPECT_TRUE(cells[1].at("value").is_null());

    Groups by_model;
    by_model[GroupKey{{"p", "b"}, kFallBackDay + 14 * kHourUs}] = of_ttfts(range(1, 20));
    by_model[GroupKey{{"p", "a"}, kFallBackDay + 14 * kHourUs}] = of_ttfts(range(1, 20));
    by_model[GroupKey{{"p", "a"}, kFallBackDay + 14 * kHourUs + kDayUs}] = of_ttfts(range(1, 20));
    req.heatmap_by = HeatmapBy::model;
    const auto models = parse(render_heatmap(req, by_model, *load_zone(req.tz), kMin));
    const auto& model_cells = models.at("cells").as_array();
    ASSERT_EQ(model_cells.size(), 2u);  // a's two days share 09:00 local
    EXPECT_EQ(model_cells[0].at("model").as_string(), "a");
    EXPECT_EQ(model_cells[0].at("hour").as_int64(), 9);
    EXPECT_EQ(model_cells[0].at("samples").as_int64(), 40);
    EXPECT_FALSE(model_cells[0].as_object().contains("weekday"));
    EXPECT_EQ(model_cells[1].at("model").as_string(), "b");
}

TEST(QueryRender, Labels) {
    std::array<std::vector<std::string>, kCellLabelCount> labels;
    labels[cell_slot(Label::provider)] = {"a", "b"};
    labels[cell_slot(Label::stream)] = {"true"};
    const auto body = parse(render_labels(request(Endpoint::labels), labels));
    EXPECT_EQ(body.at("labels").at("provider").as_array().size(), 2u);
    EXPECT_EQ(body.at("labels").at("stream").at(0).as_string(), "true");
    EXPECT_TRUE(body.at("labels").at("client_region").as_array().empty());
}

// No answer may grow with the number of label values the index holds.
TEST(QueryRender, AnswersHoldAtMostTheirLimitAndSayWhenTheyWereCut) {
    Groups rows;
    Groups series;
    for (int i = 0; i < 30; ++i) {
        const std::string model = "m" + std::to_string(100 + i);
        rows[GroupKey{{"p", model}, -1}] = of_ttfts({static_cast<double>(100 - i)});
        for (int h = 0; h < 3; ++h)
            series[GroupKey{{"p", model}, kDay0 + h * kHourUs}] = of_ttfts({1});
    }
    ApiRequest req = request(Endpoint::leaderboard);
    req.limit = 30;
    EXPECT_FALSE(parse(render_leaderboard(req, rows, 1)).at("truncated").as_bool());
    req.limit = 5;
    const auto board = parse(render_leaderboard(req, rows, 1));
    EXPECT_TRUE(board.at("truncated").as_bool());
    ASSERT_EQ(board.at("rows").as_array().size(), 5u);
    EXPECT_EQ(board.at("rows").at(0).at("model").as_string(), "m129");  // the fastest kept

    ApiRequest regions = request(Endpoint::regions);
    regions.limit = 7;
    Groups region_rows;
    for (const auto& [key, a] : rows)
        region_rows[GroupKey{{"eu", "us", "p", key.labels[1]}, -1}] = a;
    const auto r = parse(render_regions(regions, region_rows, 1));
    EXPECT_EQ(r.at("rows").as_array().size(), 7u);
    EXPECT_TRUE(r.at("truncated").as_bool());

    ApiRequest ts = request(Endpoint::timeseries);
    ts.limit = 4;
    const auto t = parse(render_timeseries(ts, series, 1));
    ASSERT_EQ(t.at("series").as_array().size(), 4u);
    EXPECT_EQ(t.at("series").at(3).at("points").as_array().size(), 3u);  // whole series only
    EXPECT_TRUE(t.at("truncated").as_bool());
    ts.limit = 30;
    EXPECT_FALSE(parse(render_timeseries(ts, series, 1)).at("truncated").as_bool());

    ApiRequest dist = request(Endpoint::distribution);
    dist.limit = 100;
    dist.points = 1000;  // 20 series of 1000 points: kMaxCdfPoints
    const auto d = parse(render_distribution(dist, rows, 1));
    EXPECT_EQ(d.at("series").as_array().size(), kMaxCdfPoints / 1000);
    EXPECT_TRUE(d.at("truncated").as_bool());

    ApiRequest heat = request(Endpoint::heatmap);
    heat.heatmap_by = HeatmapBy::model;
    heat.limit = 2;
    const auto hm = parse(render_heatmap(heat, series, *load_zone("UTC"), 1));
    EXPECT_EQ(hm.at("cells").as_array().size(), 2u * 3u);  // two models, three hours each
    EXPECT_TRUE(hm.at("truncated").as_bool());

    std::array<std::vector<std::string>, kCellLabelCount> labels;
    for (std::size_t i = 0; i < kMaxLabelValuesShown + 1; ++i)
        labels[1].push_back(std::to_string(i));
    const auto l = parse(render_labels(request(Endpoint::labels), labels));
    EXPECT_EQ(l.at("labels").at("model").as_array().size(), kMaxLabelValuesShown);
    EXPECT_TRUE(l.at("truncated").as_bool());
}

// A time series never outgrows kMaxTimeseriesPoints, whatever the limit.
TEST(QueryRender, TimeseriesStopsAtThePointBudget) {
    Groups series;
    for (int s = 0; s < 5; ++s) {
        for (int m = 0; m < 2880; ++m) {
            series[GroupKey{{"p", "m" + std::to_string(s)}, kDay0 + m * kMinuteUs}] = of_ttfts({1});
        }
    }
    ApiRequest ts = request(Endpoint::timeseries);
    ts.limit = 100;
    const auto t = parse(render_timeseries(ts, series, 1));
    EXPECT_EQ(t.at("series").as_array().size(), kMaxTimeseriesPoints / 2880);
    EXPECT_TRUE(t.at("truncated").as_bool());
}

TEST(QueryRender, GeneratedAtComesFirst) {
    EXPECT_EQ(with_generated_at("{}", kDay0), R"({"generated_at":"2025-11-30T00:00:00Z"})");
    EXPECT_EQ(with_generated_at(R"({"a":1})", kDay0 + 1),
              R"({"generated_at":"2025-11-30T00:00:00Z","a":1})");
}

}  // namespace
}  // namespace tokenradar::observatory

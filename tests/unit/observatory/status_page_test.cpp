// Tests of src/observatory/status_page.cpp (private) and GET /api/v1/status through QueryApi.
#include "../../../src/observatory/status_page.hpp"

#include "observatory_records.hpp"

#include <tokenradar/observatory/incident_monitor.hpp>
#include <tokenradar/observatory/query_api.hpp>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::observatory {
namespace {

using test::kDay0;
using test::record;

constexpr std::int64_t kWeek = 7 * kDayUs;
// A Wednesday, 14:30 UTC, four weeks after kDay0.
constexpr std::int64_t kNow = kDay0 + 4 * kWeek + 3 * kDayUs + 14 * kHourUs + 30 * kMinuteUs;
constexpr std::int64_t kThisHour = kNow / kHourUs * kHourUs;

// `n` records of provider `p` spread over the hour starting `hour_us`, TTFT `ttft` ms
// (+0..9 ms); the first `failed` of them are HTTP 500s.
std::vector<Measurement> hour_of(const std::string& p, std::int64_t hour_us, int n, double ttft,
                                 int failed = 0) {
    std::vector<Measurement> out;
    for (int i = 0; i < n; ++i) {
        Measurement m = record(p, hour_us + 1'000'000 + i * (kHourUs / (n + 1)), ttft + i % 10);
        m.request_id = fmt::format("{}-{}-{}", p, hour_us, i);
        if (i < failed) m.status = RequestStatus::http(500);
        out.push_back(std::move(m));
    }
    return out;
}

// Four earlier weeks of ~100 ms at the hours `hours_ago` before this one.
void add_baselines(RollupIndex& index, const std::string& p, std::initializer_list<int> hours_ago) {
    for (int w = 1; w <= 4; ++w) {
        for (int h : hours_ago) index.add(hour_of(p, kThisHour - h * kHourUs - w * kWeek, 60, 100));
    }
}

boost::json::object parse(const ApiResponse& r) { return boost::json::parse(r.body).as_object(); }

const boost::json::object& bucket_at(const boost::json::object& model, int hours_ago) {
    const auto& buckets = model.at("buckets").as_array();
    return buckets.at(buckets.size() - 1 - static_cast<std::size_t>(hours_ago)).as_object();
}

class StatusPageTest : public ::testing::Test {
  protected:
    RollupIndex index_{RollupOptions{std::chrono::hours(24 * 40), std::chrono::hours(0)}};
};

TEST_F(StatusPageTest, HoursAreGreenAmberOrNoneAgainstTheSameHourOfEarlierWeeks) {
    add_baselines(index_, "p", {4, 3, 2, 1, 0});
    index_.add(hour_of("p", kThisHour - 5 * kHourUs, 60, 900));  // no baseline: green
    index_.add(hour_of("p", kThisHour - 4 * kHourUs, 60, 300));  // 3x its baseline: amber
    index_.add(hour_of("p", kThisHour - 3 * kHourUs, 60, 100));  // as usual: green
    index_.add(hour_of("p", kThisHour - 2 * kHourUs, 5, 100));   // too few samples: none
    index_.add(hour_of("p", kThisHour, 30, 100, 15));            // half failed: amber
    QueryApi api(index_);
    const ApiResponse r = api.get("/api/v1/status", "", kNow);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.cache_control, "public, max-age=10");
    EXPECT_FALSE(r.etag.empty());
    const auto doc = parse(r);
    EXPECT_EQ(doc.at("window").as_string(), "24h");
    EXPECT_EQ(doc.at("bucket").as_string(), "hour");
    EXPECT_FALSE(doc.at("incidents_enabled").as_bool());
    EXPECT_FALSE(doc.at("truncated").as_bool());
    const auto& models = doc.at("models").as_array();
    ASSERT_EQ(models.size(), 1U);
    const auto& m = models[0].as_object();
    EXPECT_EQ(m.at("provider").as_string(), "p");
    EXPECT_EQ(m.at("model").as_string(), "m");
    EXPECT_EQ(m.at("state").as_string(), "amber");  // the hour in progress
    EXPECT_TRUE(m.at("open_incident").is_null());
    const auto& buckets = m.at("buckets").as_array();
    ASSERT_EQ(buckets.size(), 24U);
    EXPECT_EQ(buckets.front().as_object().at("t").as_string(), "2025-12-30T15:00:00Z");
    EXPECT_EQ(buckets.back().as_object().at("t").as_string(), "2025-12-31T14:00:00Z");

    const auto& no_baseline = bucket_at(m, 5);
    EXPECT_EQ(no_baseline.at("state").as_string(), "green");
    EXPECT_TRUE(no_baseline.at("baseline_ttft_p50_ms").is_null());
    EXPECT_TRUE(no_baseline.at("ratio").is_null());

    const auto& slow = bucket_at(m, 4);
    EXPECT_EQ(slow.at("state").as_string(), "amber");
    EXPECT_EQ(slow.at("samples").as_int64(), 60);
    EXPECT_EQ(slow.at("errors").as_int64(), 0);
    EXPECT_NEAR(slow.at("ttft_p50_ms").to_number<double>(), 304, 4);
    EXPECT_NEAR(slow.at("baseline_ttft_p50_ms").to_number<double>(), 104, 2);
    EXPECT_NEAR(slow.at("ratio").to_number<double>(), 2.92, 0.05);
    EXPECT_TRUE(slow.at("incidents").as_array().empty());

    EXPECT_EQ(bucket_at(m, 3).at("state").as_string(), "green");
    EXPECT_NEAR(bucket_at(m, 3).at("ratio").to_number<double>(), 1.0, 0.02);
    const auto& few = bucket_at(m, 2);
    EXPECT_EQ(few.at("state").as_string(), "none");
    EXPECT_EQ(few.at("samples").as_int64(), 5);
    EXPECT_TRUE(few.at("ttft_p50_ms").is_null());
    const auto& empty = bucket_at(m, 1);
    EXPECT_EQ(empty.at("state").as_string(), "none");
    EXPECT_EQ(empty.at("samples").as_int64(), 0);
    const auto& failing = bucket_at(m, 0);
    EXPECT_EQ(failing.at("state").as_string(), "amber");
    EXPECT_EQ(failing.at("errors").as_int64(), 15);
    EXPECT_EQ(buckets.front().as_object().at("state").as_string(), "none");

    // Unchanged data revalidate.
    EXPECT_EQ(api.get("/api/v1/status", r.etag, kNow + 1'000'000).status, 304);
}

TEST_F(StatusPageTest, AnOpenIncidentMakesItsHoursAndTheModelRed) {
    add_baselines(index_, "slow", {0});
    add_baselines(index_, "calm", {0});
    for (int i = 0; i < 60; ++i) {
        Measurement s = record("slow", kNow - 1'000'000 - i * 1'000'000, 300 + i % 10);
        s.request_id = fmt::format("s{}", i);
        Measurement c = record("calm", kNow - 1'000'000 - i * 1'000'000, 100 + i % 10);
        c.request_id = fmt::format("c{}", i);
        index_.add(std::vector<Measurement>{s, c});
    }
    IncidentConfig config;
    config.enabled = true;
    config.detector.open_after_us = 0;
    IncidentMonitor monitor(index_, config);
    ASSERT_EQ(monitor.evaluate(kNow).size(), 1U);
    QueryApi api(index_);
    api.attach_incidents(&monitor, StatusJudgement{config.detector, config.baseline_weeks});

    const auto doc = parse(api.get("/api/v1/status?provider=slow&provider=calm", "", kNow));
    EXPECT_TRUE(doc.at("incidents_enabled").as_bool());
    const auto& models = doc.at("models").as_array();
    ASSERT_EQ(models.size(), 2U);
    const auto& calm = models[0].as_object();
    const auto& slow = models[1].as_object();
    EXPECT_EQ(calm.at("provider").as_string(), "calm");
    EXPECT_EQ(calm.at("state").as_string(), "green");
    EXPECT_EQ(slow.at("state").as_string(), "red");
    EXPECT_EQ(slow.at("open_incident").as_int64(), 1);
    EXPECT_EQ(bucket_at(slow, 0).at("state").as_string(), "red");
    EXPECT_EQ(bucket_at(slow, 0).at("incidents").as_array().at(0).as_int64(), 1);
    EXPECT_EQ(bucket_at(slow, 1).at("state").as_string(), "none");

    // provider filters what is listed; limit cuts models.
    const auto one = parse(api.get("/api/v1/status?window=7d&limit=1", "", kNow));
    EXPECT_EQ(one.at("window").as_string(), "7d");
    EXPECT_TRUE(one.at("truncated").as_bool());
    ASSERT_EQ(one.at("models").as_array().size(), 1U);
    EXPECT_EQ(one.at("models").as_array()[0].as_object().at("buckets").as_array().size(), 168U);
}

TEST_F(StatusPageTest, TheBaselineQueryReadsOnlyTheSameHoursOfEarlierWeeks) {
    ApiRequest req;
    req.endpoint = Endpoint::status;
    req.window_us = kStatusDayUs;
    const StatusPlan plan = plan_status(req, kNow, 4);
    EXPECT_EQ(plan.buckets, 24U);
    EXPECT_EQ(plan.first_bucket_us, kThisHour - 23 * kHourUs);
    EXPECT_EQ(plan.baselines.from_us, plan.first_bucket_us - 4 * kWeek);
    EXPECT_EQ(plan.baselines.to_us, kThisHour + kHourUs - kWeek);
    EXPECT_EQ(plan.baselines.bucket_key(kThisHour - kWeek), kThisHour - kWeek);
    EXPECT_EQ(plan.baselines.bucket_key(kThisHour - 3 * kWeek - 23 * kHourUs),
              kThisHour - 3 * kWeek - 23 * kHourUs);
    EXPECT_EQ(plan.baselines.bucket_key(kThisHour - kWeek - 2 * kDayUs), kSkipBucket);
}

TEST_F(StatusPageTest, BadParametersAre400NamingThem) {
    QueryApi api(index_);
    const auto param_of = [&](std::string_view target) -> std::string {
        const ApiResponse r = api.get(target, "", kNow);
        EXPECT_EQ(r.status, 400) << target;
        const auto doc = parse(r);
        return std::string(doc.at("error").as_object().at("param").as_string());
    };
    EXPECT_EQ(param_of("/api/v1/status?window=1h"), "window");
    EXPECT_EQ(param_of("/api/v1/status?window=1d"), "window");
    EXPECT_EQ(param_of("/api/v1/status?task=chat"), "task");
    EXPECT_EQ(param_of("/api/v1/status?limit=0"), "limit");
    EXPECT_EQ(param_of("/api/v1/status?limit=501"), "limit");
    EXPECT_EQ(param_of("/api/v1/status?format=xml"), "format");
    EXPECT_THAT(api.get("/api/v1/status?window=1h", "", kNow).body,
                ::testing::HasSubstr("window: expected 24h or 7d, got '1h'"));
}

}  // namespace
}  // namespace tokenradar::observatory

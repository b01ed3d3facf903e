#include <tokenradar/observatory/incident_monitor.hpp>

#include "observatory_records.hpp"

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::observatory {
namespace {

using test::kDay0;
using test::record;
using ::testing::HasSubstr;

constexpr std::int64_t kWeek = 7 * kDayUs;
// A Wednesday, 14:30 UTC, four weeks after kDay0.
constexpr std::int64_t kNow = kDay0 + 4 * kWeek + 3 * kDayUs + 14 * kHourUs + 30 * kMinuteUs;

// `n` records of provider `p` (model "m", region `region`) with TTFT `ttft` ms (+0..9 ms), one
// every `step_us` ending at `end_us`.
std::vector<Measurement> records(const std::string& p, const std::string& region,
                                 std::int64_t end_us, int n, std::int64_t step_us, double ttft) {
    std::vector<Measurement> out;
    for (int i = 0; i < n; ++i) {
        Measurement m = record(p, end_us - i * step_us, ttft + i % 10);
        m.labels.upstream_region = region;
        out.push_back(std::move(m));
    }
    return out;
}

IncidentConfig quick() {
    IncidentConfig c;
    c.enabled = true;
    c.detector.open_after_us = 0;  // one evaluation is enough here
    return c;
}

class IncidentMonitorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // Four earlier weeks at this hour: TTFT ~100 ms for both providers.
        for (int w = 1; w <= 4; ++w) {
            const std::int64_t hour = kNow / kHourUs * kHourUs - w * kWeek;
            for (const char* p : {"slow", "calm"}) {
                const auto rs = records(p, "us-east", hour + 50 * kMinuteUs, 100, 20'000'000, 100);
                index_.add(rs);
            }
        }
    }
    RollupIndex index_{RollupOptions{std::chrono::hours(24 * 40), std::chrono::hours(0)}};
};

TEST_F(IncidentMonitorTest, ASlowCellOpensAnIncidentListedWithItsCell) {
    const auto slow = records("slow", "us-east", kNow - 1'000'000, 60, 1'000'000, 300);
    const auto calm = records("calm", "us-east", kNow - 1'000'000, 60, 1'000'000, 100);
    index_.add(slow);
    index_.add(calm);
    IncidentMonitor monitor(index_, quick());
    const auto events = monitor.evaluate(kNow);
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].incident.provider, "slow");
    ASSERT_EQ(events[0].incident.cells.size(), 1U);
    EXPECT_EQ(events[0].incident.cells[0].region, "us-east");
    EXPECT_GT(events[0].incident.worst_ratio, 2.5);
    EXPECT_THAT(event_json(events[0]), HasSubstr(R"({"event":"opened","incident":{"id":1,)"));

    const ApiResponse r = monitor.answer("/api/v1/incidents", kNow);
    ASSERT_EQ(r.status, 200);
    const auto doc = boost::json::parse(r.body).as_object();
    EXPECT_EQ(doc.at("open").to_number<std::uint64_t>(), 1U);
    const auto& incident = doc.at("incidents").as_array().at(0).as_object();
    EXPECT_EQ(incident.at("state").as_string(), "open");
    EXPECT_EQ(incident.at("provider").as_string(), "slow");
    EXPECT_TRUE(incident.at("end").is_null());
    const auto& cell = incident.at("cells").as_array().at(0).as_object();
    EXPECT_EQ(cell.at("upstream_region").as_string(), "us-east");
    const auto& breach = cell.at("breaches").as_array().at(0).as_object();
    EXPECT_EQ(breach.at("metric").as_string(), "ttft_p50_ms");
    EXPECT_NEAR(breach.at("baseline").to_number<double>(), 104, 3);
    EXPECT_NEAR(breach.at("recent").to_number<double>(), 304, 6);
}

TEST_F(IncidentMonitorTest, TheListAsCsvIsOneRowPerIncident) {
    index_.add(records("slow", "us-east", kNow - 1'000'000, 60, 1'000'000, 300));
    IncidentMonitor monitor(index_, quick());
    ASSERT_EQ(monitor.evaluate(kNow).size(), 1U);
    const ApiResponse r = monitor.answer("/api/v1/incidents?format=csv", kNow);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "text/csv; charset=utf-8");
    EXPECT_EQ(r.filename, "tokenradar-incidents.csv");
    EXPECT_EQ(r.cache_control, "no-store");
    EXPECT_THAT(r.body, ::testing::StartsWith("id,state,provider,model,start,detected,end,"
                                              "duration_s,size_metric,size_ratio,"
                                              "size_error_rate\r\n1,open,slow,m,"));
    EXPECT_EQ(std::count(r.body.begin(), r.body.end(), '\n'), 2);
    EXPECT_EQ(monitor.answer("/api/v1/incidents?format=tsv", kNow).status, 400);
}

TEST_F(IncidentMonitorTest, NoIncidentsAsCsvIsAHeaderNamingTheRows) {
    IncidentMonitor monitor(index_, quick());
    const ApiResponse r = monitor.answer("/api/v1/incidents?format=csv", kNow);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, "id,state,provider,model,start,detected,end,duration_s\r\n");
}

TEST_F(IncidentMonitorTest, NumbersBackToTheBaselineCloseIt) {
    index_.add(records("slow", "us-east", kNow - 1'000'000, 60, 1'000'000, 300));
    IncidentMonitor monitor(index_, quick());
    ASSERT_EQ(monitor.evaluate(kNow).size(), 1U);
    // Ten minutes later the last minutes are normal again.
    const std::int64_t later = kNow + 10 * kMinuteUs;
    index_.add(records("slow", "us-east", later - 1'000'000, 60, 1'000'000, 100));
    const auto events = monitor.evaluate(later);
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].kind, IncidentEvent::Kind::closed);
    const ApiResponse open = monitor.answer("/api/v1/incidents?state=open", later);
    EXPECT_THAT(open.body, HasSubstr(R"("incidents":[])"));
    const ApiResponse all = monitor.answer("/api/v1/incidents?state=all&limit=5", later);
    EXPECT_THAT(all.body, HasSubstr(R"("state":"closed")"));
}

TEST_F(IncidentMonitorTest, WithoutABaselineHourLatencyOpensNothing) {
    // A cell never seen in earlier weeks: only errors could open one.
    index_.add(records("new", "us-east", kNow - 1'000'000, 60, 1'000'000, 900));
    IncidentMonitor monitor(index_, quick());
    EXPECT_TRUE(monitor.evaluate(kNow).empty());
}

TEST(IncidentMonitor, BadParametersAre400) {
    RollupIndex index;
    IncidentMonitor monitor(index, quick());
    EXPECT_EQ(monitor.answer("/api/v1/incidents?limit=0", kNow).status, 400);
    EXPECT_EQ(monitor.answer("/api/v1/incidents?limit=12x", kNow).status, 400);
    EXPECT_EQ(monitor.answer("/api/v1/incidents?state=maybe", kNow).status, 400);
    EXPECT_EQ(monitor.answer("/api/v1/incidents?since=1", kNow).status, 400);
    EXPECT_EQ(monitor.answer("/api/v1/incidents?limit=3", kNow).status, 200);
}

TEST(IncidentConfigTest, ErrorsNameTheKey) {
    const auto load = [](std::string_view text) {
        return load_incident_config(ConfigTable::parse(text, "t.toml").table("incidents"));
    };
    EXPECT_FALSE(load("").enabled);
    EXPECT_TRUE(load("[incidents]\n").enabled);
    EXPECT_EQ(load("[incidents]\nevery = \"10s\"\n").every, std::chrono::seconds(10));
    try {
        load("[incidents]\nwebhooks = [\"not a url\"]\n");
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("t.toml:2: incidents.webhooks: expected"));
    }
    try {
        load("[incidents]\nwindow = \"10s\"\n");
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("incidents.window: expected at least 60s"));
    }
}

}  // namespace
}  // namespace tokenradar::observatory

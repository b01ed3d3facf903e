// A sim slowed 3x on command (POST /sim/control) behind a real `tokenradar serve` with
// [probes] and [incidents]: after a quiet stretch at the baseline's speed that opens nothing,
// the incident opens (listed in GET /api/v1/incidents) and its webhook is POSTed. The
// baseline is four earlier weeks of this hour written to the store and rolled up, as
// `tokenradar rollup --rebuild` does. About 40 s: labelled slow.

#include "../../support/raw_http_server.hpp"
#include "probe_service_config.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/observatory/rollup_keeper.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::serve {
namespace {

namespace http = boost::beast::http;
using testing::ServiceFixture;
using testing::TempDb;

// What the fixed sim's probes look like when it runs at its own speed (TTFT 250 ms, 20 ms a
// token, 16 tokens), a little spread so the baseline weeks differ: `count` records through
// the hour that starts at `hour_us`.
std::vector<Measurement> baseline_hour(std::int64_t hour_us, int count, int week) {
    std::vector<Measurement> out;
    for (int i = 0; i < count; ++i) {
        Measurement m =
            testing::full_record(week * 1000 + i, hour_us + i * (3'600'000'000 / count));
        m.client_id.clear();
        m.labels.provider = "sim";
        m.labels.model = "gpt-4o";
        m.labels.upstream_region = "us-east";
        m.labels.client_region = "eu-west";
        m.labels.source = "probe";
        m.labels.task = "probe";
        m.labels.route = Route::primary;
        m.labels.cache = Cache::bypass;
        m.labels.stream = true;
        const std::int64_t ttft_ms = 246 + (i + week) % 12;
        const std::int64_t tpot_ms = 19 + (i + week) % 3;
        m.output_tokens = 16;
        m.output_events = 16;
        const std::int64_t first_token = m.t.send + ttft_ms * testing::kMsNs;
        const std::int64_t last_token = first_token + 15 * tpot_ms * testing::kMsNs;
        m.t.first_chunk = first_token - testing::kMsNs;
        m.t.first_token = first_token;
        m.t.first_answer = first_token;
        m.t.last_token = last_token;
        m.t.done = last_token + testing::kMsNs;
        out.push_back(std::move(m));
    }
    return out;
}

// A store whose rollups hold four earlier weeks of this hour and the next at the sim's speed.
void write_baseline(const std::string& db) {
    auto store = store::SqliteStore::open(db);
    ASSERT_TRUE(store) << store.error().message;
    constexpr std::int64_t kHourUs = 3'600'000'000;
    constexpr std::int64_t kWeekUs = 7 * 24 * kHourUs;
    const std::int64_t hour_us = wall_now_us() / kHourUs * kHourUs;
    for (int week = 1; week <= 4; ++week) {
        for (const std::int64_t h : {hour_us, hour_us + kHourUs}) {
            const auto records = baseline_hour(h - week * kWeekUs, 60, week);
            ASSERT_TRUE((*store)->insert(records));
        }
    }
    ASSERT_TRUE(observatory::rebuild_rollups(**store));
}

// Keeps the bodies POSTed to it (a webhook receiver).
class WebhookReceiver {
  public:
    [[nodiscard]] std::string url() const { return server_.base_url() + "/hook"; }
    [[nodiscard]] std::vector<std::string> bodies() const {
        std::lock_guard lock(mu_);
        return bodies_;
    }

  private:
    mutable std::mutex mu_;
    std::vector<std::string> bodies_;
    testing::RawHttpServer server_{
        {}, [this](const testing::RawRequest& r) {
            std::lock_guard lock(mu_);
            bodies_.push_back(r.body);
            return testing::RawResponse{"HTTP/1.1 204 No Content\r\n\r\n", false};
        }};
};

TEST(ServeIncidents, ASimSlowedThreeTimesOpensAnIncidentAndItsWebhookAfterAQuietStretch) {
    testing::SimFixture sim("fixed");
    TempDb db;
    write_baseline(db.path());
    WebhookReceiver hook;
    // Probes every second; the detector's rules as shipped but for shorter delays.
    const std::string incidents = R"(
[incidents]
every = "1s"
window = "1m"
min_samples = 10
open_after = "5s"
webhooks = [")" + hook.url() + R"("]
)";
    ServiceFixture service(config(db.path(), sim.base_url(),
                                  probes("max_requests_per_day = 200000\n"
                                         "max_tokens_per_day = 100000000\n") +
                                      incidents));
    ASSERT_TRUE(service.wait_ready());
    const auto incidents_now = [&] {
        return boost::json::parse(
                   testing::fetch(http::verb::get, service.url("/api/v1/incidents")).body)
            .as_object();
    };

    // Quiet: 15 s at the baseline's speed, the window past min_samples, opens nothing.
    std::this_thread::sleep_for(std::chrono::seconds(15));
    auto quiet = incidents_now();
    EXPECT_GE(quiet.at("evaluations").to_number<std::uint64_t>(), 10U);
    EXPECT_EQ(quiet.at("open").to_number<std::uint64_t>(), 0U) << boost::json::serialize(quiet);
    EXPECT_TRUE(quiet.at("incidents").as_array().empty()) << boost::json::serialize(quiet);

    // 3x slower TTFT and TPOT on command.
    const auto slowed =
        testing::fetch(http::verb::post, *net::parse_url(sim.base_url() + "/sim/control"),
                       {{"authorization", "Bearer sim-key"}, {"content-type", "application/json"}},
                       R"({"ttft_multiplier": 3, "tpot_multiplier": 3})");
    ASSERT_EQ(slowed.status, 200U) << slowed.body;
    const auto slowed_at = std::chrono::steady_clock::now();
    boost::json::object doc;
    do {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        doc = incidents_now();
    } while (doc.at("open").to_number<std::uint64_t>() == 0 &&
             std::chrono::steady_clock::now() - slowed_at < std::chrono::seconds(90));
    const auto took = std::chrono::steady_clock::now() - slowed_at;
    ASSERT_EQ(doc.at("open").to_number<std::uint64_t>(), 1U) << boost::json::serialize(doc);
    EXPECT_LT(took, std::chrono::seconds(60));
    ::testing::Test::RecordProperty(
        "detected_after_ms",
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
    const auto& incident = doc.at("incidents").as_array().at(0).as_object();
    EXPECT_EQ(incident.at("provider").as_string(), "sim");
    EXPECT_EQ(incident.at("model").as_string(), "gpt-4o");
    EXPECT_GE(incident.at("size").at("ratio").to_number<double>(), 2.0);
    const auto& cell = incident.at("cells").as_array().at(0).as_object();
    EXPECT_EQ(cell.at("upstream_region").as_string(), "us-east");

    // The webhook got the opening, as JSON naming the incident.
    std::vector<std::string> bodies;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((bodies = hook.bodies()).empty() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(bodies.size(), 1U);
    const auto event = boost::json::parse(bodies[0]).as_object();
    EXPECT_EQ(event.at("event").as_string(), "opened");
    EXPECT_EQ(event.at("incident").at("id"), incident.at("id"));
    EXPECT_EQ(event.at("incident").at("model").as_string(), "gpt-4o");
}

}  // namespace
}  // namespace tokenradar::serve

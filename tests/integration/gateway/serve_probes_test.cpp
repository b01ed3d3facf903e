// [probes] and [incidents] through a real `tokenradar serve` (serve::Service in-process on
// port 0, SQLite in a temp file) before a sim: probe records are stored as source "probe" from
// the configured region and counted in /metrics; a schedule over its cap is refused naming the
// file, line and field; GET /api/v1/incidents answers and checks its parameters.

#include "../../support/sim_fixture.hpp"
#include "../../support/store_records.hpp"
#include "probe_service_config.hpp"

#include <tokenradar/serve/prober.hpp>
#include <tokenradar/serve/service.hpp>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace tokenradar::serve {
namespace {

namespace http = boost::beast::http;
using ::testing::HasSubstr;
using testing::ServiceFixture;
using testing::TempDb;

TEST(ServeProbes, ProbeRecordsAreStoredAsProbesFromTheConfiguredRegion) {
    testing::SimFixture sim("instant");
    TempDb db;
    const auto t0 = std::chrono::steady_clock::now();
    ServiceFixture service(config(db.path(), sim.base_url(),
                                  probes("max_requests_per_day = 100000\n"
                                         "max_tokens_per_day = 10000000\n")));
    ASSERT_TRUE(service.wait_ready());
    Prober* prober = service.service().prober();
    ASSERT_NE(prober, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (prober->counters()[0].requests < 3 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const Prober::Counters c = prober->counters()[0];
    EXPECT_GE(c.requests, 3U);
    EXPECT_EQ(c.failures, 0U);
    EXPECT_GT(c.tokens, 0U);
    // One second apart, not bunched: 3 runs take at least 2 s.
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));

    const auto metrics = testing::fetch(http::verb::get, service.url("/metrics"));
    EXPECT_THAT(metrics.body, HasSubstr("tokenradar_probe_requests_total{provider=\"sim\","
                                        "model=\"gpt-4o\",outcome=\"ok\"}"));
    EXPECT_THAT(metrics.body, HasSubstr("tokenradar_probe_planned_per_day{provider=\"sim\","
                                        "model=\"gpt-4o\",unit=\"requests\"} 86400"));

    // The observatory holds them as probes from eu-west to us-east (the writer flushes every
    // 20 ms; the rollups follow the commit).
    std::string body;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        body = testing::fetch(http::verb::get, service.url("/api/v1/labels?window=1h")).body;
    } while (body.find("\"probe\"") == std::string::npos &&
             std::chrono::steady_clock::now() < until);
    const auto doc = boost::json::parse(body).as_object();
    ASSERT_TRUE(doc.contains("labels")) << body;
    const auto& labels = doc.at("labels").as_object();
    ASSERT_TRUE(labels.contains("source")) << body;
    EXPECT_EQ(boost::json::serialize(labels.at("source")), R"(["probe"])");
    EXPECT_EQ(boost::json::serialize(labels.at("client_region")), R"(["eu-west"])");
    EXPECT_EQ(boost::json::serialize(labels.at("upstream_region")), R"(["us-east"])");
    EXPECT_EQ(boost::json::serialize(labels.at("task")), R"(["probe"])");
}

TEST(ServeProbes, AScheduleOverItsCapIsRefusedNamingTheField) {
    TempDb db;
    // Every second: 86,400 requests a day against a cap of 1,000 (line 22 of the file).
    const std::string toml =
        config(db.path(), "http://127.0.0.1:1", probes("max_requests_per_day = 1000\n"));
    try {
        testing::serve_config(toml);
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_THAT(what, HasSubstr("test.toml:"));
        EXPECT_THAT(what, HasSubstr("probes.max_requests_per_day: expected at least 86400"));
        EXPECT_THAT(what, HasSubstr("got the integer 1000"));
    }
    // Tokens too: the probe workload's ~19 prompt tokens + 16 per request.
    try {
        testing::serve_config(config(db.path(), "http://127.0.0.1:1",
                                     probes("max_requests_per_day = 100000\n"
                                            "max_tokens_per_day = 5000\n")));
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_THAT(std::string(e.what()),
                    HasSubstr("probes.max_tokens_per_day: expected at least"));
    }
}

TEST(ServeProbes, ATargetMustNameAProvider) {
    TempDb db;
    std::string toml =
        config(db.path(), "http://127.0.0.1:1",
               probes("max_requests_per_day = 100000\nmax_tokens_per_day = 10000000\n"));
    toml.replace(toml.rfind("provider = \"sim\""), 16, "provider = \"nope\"");
    try {
        testing::serve_config(toml);
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_THAT(std::string(e.what()),
                    HasSubstr("probes.targets[0].provider: expected the name of a [[providers]] "
                              "table, got the string \"nope\""));
    }
}

TEST(ServeIncidents, TheListAnswersAndChecksItsParameters) {
    TempDb db;
    ServiceFixture service(
        config(db.path(), "http://127.0.0.1:1", "[incidents]\nevery = \"1s\"\n"));
    ASSERT_TRUE(service.wait_ready());
    const auto answer = testing::fetch(http::verb::get, service.url("/api/v1/incidents"));
    EXPECT_EQ(answer.status, 200U);
    const auto doc = boost::json::parse(answer.body).as_object();
    EXPECT_EQ(doc.at("open").to_number<std::uint64_t>(), 0U);
    EXPECT_TRUE(doc.at("incidents").as_array().empty());
    const auto bad = testing::fetch(http::verb::get, service.url("/api/v1/incidents?state=shut"));
    EXPECT_EQ(bad.status, 400U);
    EXPECT_THAT(bad.body, HasSubstr("state: expected open or all"));
    const auto post = testing::fetch(http::verb::post, service.url("/api/v1/incidents"));
    EXPECT_EQ(post.status, 405U);
    // The watch evaluates every second once the rollups are loaded.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::string metrics;
    do {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        metrics = testing::fetch(http::verb::get, service.url("/metrics")).body;
    } while (metrics.find("tokenradar_incidents_evaluations_total 0") != std::string::npos &&
             std::chrono::steady_clock::now() < deadline);
    EXPECT_THAT(metrics, HasSubstr("tokenradar_incidents_open 0"));
    EXPECT_THAT(metrics, ::testing::Not(HasSubstr("tokenradar_incidents_evaluations_total 0")));
}

TEST(ServeIncidents, NeedTheObservatory) {
    TempDb db;
    std::string toml = config(db.path(), "http://127.0.0.1:1", "[incidents]\n");
    toml.replace(toml.find("[observatory]"), 13, "[observatory]\nenabled = false");
    try {
        testing::serve_config(toml);
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("incidents.enabled: expected false, or "
                                                     "[observatory] enabled = true"));
    }
}

}  // namespace
}  // namespace tokenradar::serve

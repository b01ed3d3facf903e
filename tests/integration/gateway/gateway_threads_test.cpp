// The gateway on several I/O threads ([listener] threads): connections spread over the
// threads, each thread relays through its own upstream pools, and what the threads share
// (records, metrics, limits) adds up. Run under ThreadSanitizer by `make test-tsan`.

#include <tokenradar/gateway/gateway_server.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/core/config.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace tokenradar::gateway {
namespace {

using testing::GatewayFixture;
using testing::SimFixture;

std::string chat_body(std::string_view model, bool stream) {
    return fmt::format(
        R"({{"model":"{}","stream":{},"max_tokens":6,"messages":[{{"role":"user","content":"hi"}}]}})",
        model, stream ? "true" : "false");
}

// Both ways of accepting: the first thread deals connections round-robin, or each thread
// accepts on its own SO_REUSEPORT socket (48 connections all missing one of three threads:
// about once in 10^8 runs).
class GatewayThreads : public ::testing::TestWithParam<const char*> {};

TEST_P(GatewayThreads, ConnectionsSpreadOverTheThreadsAndEveryRequestIsRecordedOnce) {
    SimFixture sim("instant");
    constexpr int kThreads = 3;
    GatewayFixture gw(testing::three_dialects_config(
        sim.base_url(), "",
        fmt::format("task = \"code\"\n[listener]\nthreads = {}\naccept = \"{}\"\n", kThreads,
                    GetParam())));
    // Clients at once, each request on a connection of its own (post_json): the accept loop
    // deals them round-robin, so every thread relays, and the threads' records, counters and
    // pools are exercised side by side.
    constexpr int kClients = 6;
    constexpr int kEach = 8;
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
        clients.emplace_back([&, c] {
            for (int i = 0; i < kEach; ++i) {
                const char* model = (c + i) % 3 == 0   ? "via-openai"
                                    : (c + i) % 3 == 1 ? "via-anthropic"
                                                       : "via-gemini";
                auto f = testing::post_json(gw.url("/v1/chat/completions"),
                                            chat_body(model, (c + i) % 2 == 0));
                if (f.status == 200) ok.fetch_add(1);
            }
        });
    }
    for (auto& t : clients) t.join();
    constexpr int kRequests = kClients * kEach;
    EXPECT_EQ(ok.load(), kRequests);

    const auto records = gw.records().wait_for(kRequests);
    ASSERT_EQ(records.size(), static_cast<std::size_t>(kRequests));
    std::set<std::string> request_ids;
    for (const auto& m : records) {
        EXPECT_EQ(m.status, RequestStatus::ok);
        EXPECT_EQ(m.output_tokens, 6);
        request_ids.insert(m.request_id);
    }
    EXPECT_EQ(request_ids.size(), records.size()) << "a request recorded twice";

    const auto metrics = testing::fetch(boost::beast::http::verb::get, gw.url("/metrics"));
    ASSERT_EQ(metrics.status, 200u);
    std::int64_t taken = 0;
    for (int t = 0; t < kThreads; ++t) {
        const std::int64_t n = testing::metric_value(
            metrics.body, fmt::format("tokenradar_io_thread_requests_total{{thread=\"{}\"}}", t));
        EXPECT_GT(n, 0) << "thread " << t << " took no request";
        taken += n;
    }
    EXPECT_EQ(taken, kRequests + 1);  // and this /metrics
    EXPECT_EQ(testing::metric_value(
                  metrics.body,
                  fmt::format("tokenradar_io_thread_requests_total{{thread=\"{}\"}}", kThreads)),
              -1);
    // Every thread's starts and ends met in the one gauge.
    EXPECT_EQ(testing::metric_value(metrics.body, "tokenradar_active_requests"), 0);
}

INSTANTIATE_TEST_SUITE_P(Accept, GatewayThreads, ::testing::Values("deal", "reuseport"));

TEST(GatewayThreadsLimits, TheConcurrencyLimitHoldsAcrossThreads) {
    // One key's limit is one count whichever thread its requests land on: with a limit of 2
    // and four slow streams at once on four threads, two are refused.
    SimFixture sim("fixed");  // 250 ms TTFT, 20 ms per token
    GatewayFixture gw(testing::three_dialects_config(
        sim.base_url(), "",
        "task = \"code\"\n[listener]\nthreads = 4\n[limits]\nmax_concurrent_per_key = 2\n"));
    std::atomic<int> ok{0}, refused{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
        clients.emplace_back([&] {
            auto f = testing::post_json(
                gw.url("/v1/chat/completions"),
                R"({"model":"via-openai","stream":true,"max_tokens":20,"messages":[{"role":"user","content":"hi"}]})");
            if (f.status == 200) ok.fetch_add(1);
            if (f.status == 429) refused.fetch_add(1);
        });
    }
    for (auto& t : clients) t.join();
    EXPECT_EQ(ok.load(), 2);
    EXPECT_EQ(refused.load(), 2);
}

TEST(GatewayThreadsConfig, TheThreadCountIsCheckedAndDefaultsToOnePerCore) {
    const auto config = [](std::string_view listener) {
        return testing::gateway_config(std::string("[listener]\n") + std::string(listener) +
                                       "\n[auth]\nmode = \"none\"\n[store]\npath = \"\"\n");
    };
    EXPECT_EQ(io_threads(config("threads = 3")), 3u);
    EXPECT_EQ(io_threads(config("")), std::max(1u, std::thread::hardware_concurrency()));
    try {
        (void)config("threads = 1000");
        FAIL() << "1000 threads accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(config("accept = \"reuseport\"").accept_per_thread);
    EXPECT_FALSE(config("").accept_per_thread);
    try {
        (void)config("accept = \"fastest\"");
        FAIL() << "an unknown accept mode accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("\"deal\" or \"reuseport\""), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace tokenradar::gateway

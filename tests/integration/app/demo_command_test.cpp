// `tokenradar demo` as a user runs it: the real binary on port 0 with a day of history, its
// gateway and observatory answering, traffic flowing into the store, SIGTERM, then
// `tokenradar stats` over the store it wrote. Plus its one-line errors.

#include "../../support/child_process.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/scripted_server.hpp"
#include "../../support/temp_path.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using testing::capture;
using testing::Child;
using testing::slurp;
using testing::url_in;

// The sum of every sample of a Prometheus counter family whose line matches `selector`.
long counter(const std::string& metrics, const std::string& selector) {
    long sum = 0;
    const std::regex line("^" + selector + R"((\{[^}]*\})? ([0-9]+)$)", std::regex::multiline);
    for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), line);
         it != std::sregex_iterator(); ++it) {
        sum += std::stol((*it)[2].str());
    }
    return sum;
}

class DemoCommand : public ::testing::Test {
  protected:
    const testing::TempDir work_{"demo"};
    const std::filesystem::path dir_{work_.dir()};
};

TEST_F(DemoCommand, ServesTheModelsAndTheFleetRecordsTrafficStopsOnSigtermAndLeavesStats) {
    const auto db = dir_ / "demo.db";
    // A thin history (about 4,300 records) keeps the test quick under sanitizers too.
    Child demo(std::string(TOKENRADAR_BINARY) +
                   " demo --port 0 --history 1d --history-rate 0.05 --rate 20 --seed 3 --db " +
                   db.string(),
               dir_ / "demo.err");
    const std::string line = demo.read_line();
    ASSERT_THAT(line, StartsWith("dashboard: http://127.0.0.1:")) << slurp(dir_ / "demo.err");
    const std::string url = url_in(line);
    EXPECT_EQ(line, "dashboard: " + url + "/\n");

    const std::string models = capture("curl -s " + url + "/v1/models");
    for (const char* model : {"\"gpt-4o\"", "\"claude-3-5-sonnet\"", "\"gemini-1.5-pro\"",
                              "\"llama-3-70b\"", "\"llama-3-70b-fleet\""}) {
        EXPECT_THAT(models, HasSubstr(model));
    }
    // The fleet's routing, as the Gateway page's Routing section reads it: three replicas
    // behind latency routing with a p95 hedge.
    const std::string upstreams = capture("curl -s " + url + "/api/v1/upstreams");
    EXPECT_THAT(upstreams,
                HasSubstr(R"({"name":"llama-3-70b-fleet","routing":"latency","hedge":"p95",)"))
        << upstreams;
    EXPECT_THAT(upstreams,
                HasSubstr(R"("members":[{"provider":"llama-replica-1","model":"llama-3-70b",)"))
        << upstreams;
    for (const char* replica : {"llama-replica-2", "llama-replica-3"}) {
        EXPECT_THAT(upstreams, HasSubstr(std::string("{\"provider\":\"") + replica +
                                         "\",\"model\":\"llama-3-70b\",\"region\":\"us-east-1\""))
            << upstreams;
    }
    // The observatory has read the history before the line: the leaderboard of the simulated
    // records has a sufficient row per provider at once.
    const std::string leaderboard =
        capture("curl -s '" + url + "/api/v1/leaderboard?window=24h&source=sim'");
    for (const char* provider : {"openai-sim", "anthropic-sim", "gemini-sim", "llama-sim"}) {
        EXPECT_THAT(leaderboard, HasSubstr(std::string("\"provider\":\"") + provider + "\""))
            << leaderboard;
    }
    EXPECT_THAT(leaderboard, Not(HasSubstr("\"insufficient\":true"))) << leaderboard;
    // Anyone on this machine may submit records, without a key.
    const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const std::string record =
        R"([{"metrics_spec":1,"request_id":"demo-test-1","client_id":"demo-test","attempt":1,)"
        R"("status":"ok","http_status":200,"ts_us":)" +
        std::to_string(now_us - 1'000'000) +
        R"(,"provider":"submitted-sim","model":"m","endpoint":"localhost","upstream_region":"local",)"
        R"("client_region":"local","task":"chat","source":"submitted","cache":"bypass",)"
        R"("route":"primary","api":"openai","stream":true,"sched_offset_ns":0,)"
        R"("headers_ns":100000000,"first_chunk_ns":150000000,"first_token_ns":150000000,)"
        R"("last_token_ns":1150000000,"done_ns":1160000000,"connect_ns":0,"tls_ns":0,)"
        R"("output_tokens":41,"token_source":"usage","output_events":41}])";
    const std::string submitted =
        capture("curl -s " + url + "/api/v1/measurements -H 'content-type: application/json' -d '" +
                record + "'");
    EXPECT_THAT(submitted, HasSubstr("\"accepted\":1")) << submitted;
    // Every virtual model caches repeats (the faq traffic asks questions again); gpt-4o's
    // also reworded ones.
    const std::string cache = capture("curl -s " + url + "/api/v1/gateway/cache");
    EXPECT_THAT(cache, HasSubstr(R"({"model":"gpt-4o","mode":"semantic")")) << cache;
    for (const char* model :
         {"claude-3-5-sonnet", "gemini-1.5-pro", "llama-3-70b", "llama-3-70b-fleet"}) {
        EXPECT_THAT(cache,
                    HasSubstr(std::string("{\"model\":\"") + model + "\",\"mode\":\"exact\""))
            << cache;
    }

    if (std::filesystem::exists(std::filesystem::path(TOKENRADAR_SOURCE_DIR) /
                                "web/dist/index.html")) {
        EXPECT_THAT(capture("curl -s " + url + "/"), HasSubstr("<html"));
    }

    // The shortest answers (150 tokens at 29-42 tokens/s) take 4-6 s: wait for some to finish
    // and reach the store (which also holds the submitted record).
    const auto written = [](const std::string& m) {
        return counter(m, R"(tokenradar_store_records_total\{outcome="written"\})");
    };
    std::string metrics;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        metrics = capture("curl -s " + url + "/metrics");
        if (counter(metrics, "tokenradar_requests_total") >= 5 && written(metrics) >= 6) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    EXPECT_GE(counter(metrics, "tokenradar_requests_total"), 5) << metrics;
    EXPECT_GE(written(metrics), 6) << metrics;

    const auto stop_started = std::chrono::steady_clock::now();
    EXPECT_EQ(demo.terminate(std::chrono::seconds(10)), 0) << slurp(dir_ / "demo.err");
    EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(6));
    const std::string summary = demo.read_line();
    EXPECT_THAT(summary, StartsWith("tokenradar demo: "));
    EXPECT_THAT(summary, HasSubstr("records written to " + db.string()));
    EXPECT_THAT(summary, HasSubstr("history records"));

    auto stats = testing::run_cli("stats --db " + db.string() +
                                  " --window all --by provider,source --format csv");
    ASSERT_EQ(stats.exit_code, 0) << stats.err;
    for (const char* provider : {"openai-sim", "anthropic-sim", "gemini-sim", "llama-sim"}) {
        EXPECT_THAT(stats.out, HasSubstr(std::string(provider) + ",sim,")) << stats.out;
        EXPECT_THAT(stats.out, HasSubstr(std::string(provider) + ",gateway,")) << stats.out;
    }
    EXPECT_THAT(stats.out, HasSubstr("submitted-sim,submitted,1,")) << stats.out;
    // The traffic labels every request with its task (x-tokenradar-task), and so does the history.
    auto tasks = testing::run_cli("stats --db " + db.string() +
                                  " --window all --by task,source --format csv");
    ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
    for (const char* task : {"chat", "gen-500", "long-context", "code", "prefix-reuse"}) {
        EXPECT_THAT(tasks.out, HasSubstr(std::string(task) + ",gateway,")) << tasks.out;
        EXPECT_THAT(tasks.out, HasSubstr(std::string(task) + ",sim,")) << tasks.out;
    }
    // The faq traffic (repeated questions for the response cache) may not have finished a
    // request yet; its history has.
    EXPECT_THAT(tasks.out, HasSubstr("faq,sim,")) << tasks.out;
}

TEST_F(DemoCommand, APortInUseIsOneLineAndExitCode2) {
    testing::ScriptedServer taken(testing::sse_script({}));
    const std::string port = taken.base_url().substr(taken.base_url().rfind(':') + 1);
    auto o = testing::run_cli("demo --port " + port + " --db " + (dir_ / "demo.db").string());
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_THAT(o.err, HasSubstr("--port " + port));
    EXPECT_EQ(testing::count_lines(o.err), 1) << o.err;
}

TEST_F(DemoCommand, AnUnwritableStoreIsOneLineAndExitCode2) {
    auto o = testing::run_cli("demo --port 0 --db /nonexistent-dir/demo.db");
    EXPECT_EQ(o.exit_code, 2);
    EXPECT_THAT(o.err, HasSubstr("--db /nonexistent-dir/demo.db"));
    EXPECT_EQ(testing::count_lines(o.err), 1) << o.err;
}

}  // namespace
}  // namespace tokenradar

// bench's runner as `tokenradar demo` drives it: a mix of workloads in an open loop without
// end, records handed over one by one, the task sent to a TokenRadar gateway in front of a
// sim (instant profile: no delays).

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/bench/runner.hpp>
#include <tokenradar/sim/profile.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace tokenradar::bench {
namespace {

const std::filesystem::path kWorkloadsDir =
    std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "workloads";

std::string gateway_toml(const testing::SimFixture& sim) {
    return R"(
[auth]
mode = "none"
[store]
path = ""
[[providers]]
name = "sim"
api = "openai"
base_url = ")" +
           sim.base_url() + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "fast"
upstreams = ["sim/gpt-4o"]
task = "untagged"
)";
}

Workload brief(const std::string& name, bool stream) {
    Workload w = load_workload(name, kWorkloadsDir);
    w.max_tokens = 5;
    w.stream = stream;
    return w;
}

TEST(BenchRunner, AMixWithoutEndRunsUntilStopAndHandsOverEachRecord) {
    testing::SimFixture sim("instant");
    testing::GatewayFixture gateway(gateway_toml(sim));

    RunOptions options;
    Target target;
    target.name = "gw";
    target.base = net::parse_url(gateway.base_url() + "/v1").value();
    target.model = "fast";
    options.targets = {target};
    options.mix = {brief("chat", true), brief("code", false)};
    options.rate = 400;  // open loop; neither requests nor duration: until stop
    options.preflight = false;
    options.task_header = true;
    options.seed = 3;

    std::atomic<bool> stop{false};
    std::mutex mutex;
    std::vector<Measurement> handed;
    options.on_record = [&](Measurement&& m) {
        std::lock_guard lock(mutex);
        handed.push_back(std::move(m));
        if (handed.size() >= 60) stop = true;
    };
    const RunResult result = run_bench(options, stop, {});

    EXPECT_TRUE(result.interrupted);
    EXPECT_TRUE(result.records.empty());  // handed over, not kept
    std::lock_guard lock(mutex);
    ASSERT_GE(handed.size(), 60u);
    std::map<std::string, int> tasks;
    for (const auto& m : handed) {
        EXPECT_TRUE(m.ok()) << m.status;
        ++tasks[m.labels.task];
        // Each workload keeps its own stream setting.
        EXPECT_EQ(m.labels.stream, m.labels.task == "chat");
    }
    // Randomised rounds send the two workloads alike (at most one apart per round); which
    // finished by the stop depends on their speed.
    EXPECT_GE(tasks["chat"], 15);
    EXPECT_GE(tasks["code"], 15);

    // The gateway labelled its records with the task each request sent, not the model's
    // default. It writes a record just after the response ends: wait for the last ones.
    std::map<std::string, int> gateway_tasks;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        gateway_tasks.clear();
        for (const auto& m : gateway.records().snapshot()) ++gateway_tasks[m.labels.task];
        if (gateway_tasks["chat"] >= tasks["chat"] && gateway_tasks["code"] >= tasks["code"]) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(gateway_tasks.count("untagged"), 0u);
    EXPECT_GE(gateway_tasks["chat"], tasks["chat"]);
    EXPECT_GE(gateway_tasks["code"], tasks["code"]);
}

// Two lanes keep their records apart during the run; the result still lists every request once,
// in completion order (the end times only step back by scheduling noise, never by half a run
// as two lanes' lists laid end to end would).
TEST(BenchRunner, TwoLanesRecordsMergeInCompletionOrder) {
    testing::SimFixture sim("instant");
    RunOptions options;
    Target target;
    target.name = "sim";
    target.base = net::parse_url(sim.base_url() + "/v1").value();
    target.model = "gpt-4o";
    target.key = Secret("sk-test");
    options.targets = {target};
    options.workload = brief("chat", false);
    options.requests = 200;
    options.concurrency = 4;
    options.threads = 2;
    options.preflight = false;
    options.extra_headers = {{"x-sim-ttft-ms", "10"}};

    std::atomic<bool> stop{false};
    const RunResult result = run_bench(options, stop, {});

    ASSERT_EQ(result.records.size(), 200u);
    EXPECT_FALSE(result.interrupted);
    EXPECT_GE(result.peak_in_flight, 2u);
    EXPECT_LE(result.peak_in_flight, 4u);
    std::set<std::string> ids;
    for (const auto& m : result.records) {
        EXPECT_TRUE(m.ok()) << m.status;
        ASSERT_TRUE(m.t.done);
        ids.insert(m.request_id);
    }
    EXPECT_EQ(ids.size(), 200u);
    const std::int64_t span = *result.records.back().t.done - *result.records.front().t.done;
    EXPECT_GT(span, 300'000'000);  // 200 requests of >= 10 ms, 4 at a time
    for (std::size_t i = 1; i < result.records.size(); ++i) {
        EXPECT_GT(*result.records[i].t.done, *result.records[i - 1].t.done - span / 5)
            << "record " << i;
    }
}

// Extra body fields that would change what bench writes fail every request alike: the run
// refuses to start, naming the target, the workload and the field.
TEST(BenchRunner, ExtraBodyCollisionStopsTheRunBeforeAnyRequest) {
    RunOptions options;
    Target target;
    target.name = "local";
    target.base = net::parse_url("http://127.0.0.1:9/v1").value();
    target.model = "m";
    target.extra_body = boost::json::parse(R"({"ignore_eos":true,"model":"other"})").as_object();
    options.targets = {target};
    options.workload = brief("chat", true);
    options.requests = 1;
    options.concurrency = 1;
    std::atomic<bool> stop{false};
    try {
        run_bench(options, stop, {});
        FAIL() << "expected a PreflightError";
    } catch (const PreflightError& e) {
        EXPECT_NE(
            std::string(e.what()).find("target local, workload chat: extra body field 'model'"),
            std::string::npos)
            << e.what();
    }
}

// A workload's repeats re-ask questions their own target asked before, so they meet that
// target's cache: through a gateway whose one model caches exact answers, about repeat_exact
// of that target's requests are hits (closed loop, one at a time: every earlier answer is
// stored before the next request), while the other target, interleaved with it, never hits.
TEST(BenchRunner, ARepeatingWorkloadHitsTheCacheOfItsOwnTarget) {
    testing::SimFixture sim("instant");
    testing::GatewayFixture gateway(R"(
[auth]
mode = "none"
[store]
path = ""
[cache]
keyless = true
[[providers]]
name = "sim"
api = "openai"
base_url = ")" + sim.base_url() + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "cached"
upstreams = ["sim/gpt-4o"]
cache = "exact"
[[models]]
name = "plain"
upstreams = ["sim/gpt-4o-mini"]
)");
    RunOptions options;
    for (const char* model : {"cached", "plain"}) {
        Target target;
        target.name = model;
        target.base = net::parse_url(gateway.base_url() + "/v1").value();
        target.model = model;
        options.targets.push_back(target);
    }
    options.workload = brief("faq", true);
    ASSERT_DOUBLE_EQ(options.workload.repeat_exact, 0.3);
    options.requests = 200;
    options.concurrency = 1;
    options.preflight = false;
    options.seed = 5;
    std::atomic<bool> stop{false};
    const RunResult result = run_bench(options, stop, {});
    ASSERT_EQ(result.records.size(), 400u);

    std::map<std::string, std::map<Cache, int>> by_model;
    for (const auto& m : gateway.records().wait_for(400))
        ++by_model[m.labels.model][m.labels.cache];
    const int hits = by_model["gpt-4o"][Cache::exact];
    EXPECT_EQ(hits + by_model["gpt-4o"][Cache::miss], 200);
    // 30% exact repeats of 200: 60 +- 6.5 (one standard deviation); rewordings miss. The run is
    // deterministic (seed 5, one request at a time): 62 hits, one per exact repeat of the
    // target's own sequence. With one sequence shared by both targets (a repeat may re-ask the
    // other target's question, which this target's cache never saw) it read 47.
    EXPECT_GE(hits, 55);
    EXPECT_LE(hits, 80);
    EXPECT_EQ(by_model["gpt-4o-mini"][Cache::exact], 0);
}

// Several shared prefixes: each request carries the system prompt it drew (not one written
// once per workload), so a prefix-caching server misses once per distinct prefix.
TEST(BenchRunner, SeveralSharedPrefixesReachTheServerAsDifferentSystemPrompts) {
    testing::SimFixture sim(sim::parse_profile(R"(
name = "cached"
models = ["m"]
[decode]
default_max_tokens = 3
[prefix_cache]
block_tokens = 16
capacity_blocks = 100000
)",
                                               "cached"));
    RunOptions options;
    Target target;
    target.name = "sim";
    target.base = net::parse_url(sim.base_url() + "/v1").value();
    target.model = "m";
    target.key = Secret("sk-sim");  // the sim wants a key in the API's header shape
    options.targets.push_back(target);
    options.workload = brief("prefix-reuse", true);
    options.workload.shared_prefix_tokens = 400;
    options.workload.shared_prefixes = 4;
    options.workload.system.clear();  // a common first sentence would be a shared block
    options.requests = 40;
    options.concurrency = 1;
    options.preflight = false;
    options.seed = 3;
    std::atomic<bool> stop{false};
    const RunResult result = run_bench(options, stop, {});
    ASSERT_EQ(result.records.size(), 40u);
    int misses = 0;
    for (const auto& m : result.records) {
        ASSERT_TRUE(m.ok()) << to_string(m.status);
        if (m.cached_prompt_tokens.value_or(0) == 0) ++misses;
    }
    EXPECT_EQ(misses, 4);  // one per prefix; with one prefix it would be 1
}

}  // namespace
}  // namespace tokenradar::bench

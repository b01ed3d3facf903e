// bench's runner as `tokenradar demo` drives it: a mix of workloads in an open loop without
// end, records handed over one by one, the task sent to a TokenRadar gateway in front of a
// sim (instant profile: no delays).

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/bench/runner.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
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

}  // namespace
}  // namespace tokenradar::bench

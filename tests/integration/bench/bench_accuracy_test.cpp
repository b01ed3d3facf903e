// bench against the sim's ground truth: the acceptance numbers of the bench issue.
// Timing-sensitive (label `timing`): run on the optimised build, not under ASan.

#include <tokenradar/bench/runner.hpp>

#include "../../support/sim_fixture.hpp"

#include <tokenradar/bench/report.hpp>
#include <tokenradar/core/resource_dir.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

namespace tokenradar::bench {
namespace {

using testing::SimFixture;

Workload short_workload(std::int64_t max_tokens) {
    Workload w;
    w.name = "accuracy";
    w.task = "accuracy";
    w.max_tokens = max_tokens;
    w.user_template = "Tell me about {nonce}.";
    return w;
}

Target sim_target(const std::string& name, const SimFixture& sim, const std::string& model) {
    const EnvLookup no_env = [](std::string_view) { return std::optional<std::string>(); };
    auto t = parse_target(name + "=openai:" + sim.base_url() + "/v1#" + model, {}, no_env).value();
    t.key = Secret("sk-test");
    return t;
}

std::map<std::string, std::int64_t> read_trace_ttft(const std::filesystem::path& path) {
    std::map<std::string, std::int64_t> ttft;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        auto v = boost::json::parse(line);
        ttft[std::string(v.at("response_id").as_string())] = v.at("ttft_ns").as_int64();
    }
    return ttft;
}

void expect_fixed_accuracy(std::size_t concurrency, std::size_t requests) {
    const auto trace = std::filesystem::temp_directory_path() /
                       ("tokenradar_accuracy_" + std::to_string(concurrency) + ".jsonl");
    std::filesystem::remove(trace);
    sim::SimServerOptions sim_options;
    sim_options.trace = sim::TraceSink::open(trace).value();
    SimFixture sim("fixed", sim_options, 1);

    RunOptions o;
    o.targets.push_back(sim_target("fixed", sim, "fixed"));
    o.workload = short_workload(20);
    o.requests = requests;
    o.concurrency = concurrency;
    // Workers start over a second rather than in one synthetic burst of 500 connects.
    o.ramp_up = std::chrono::milliseconds(concurrency > 1 ? 1000 : 0);
    o.client.max_idle_per_host = concurrency;
    std::atomic<bool> stop{false};
    RunResult result = run_bench(o, stop, {});
    ASSERT_EQ(result.records.size(), requests);

    auto report = summarize_target("fixed", result.records);
    EXPECT_EQ(report.errors, 0u);
    EXPECT_NEAR(report.ttft_ms->p50, 250.0, 1.0) << "concurrency " << concurrency;
    EXPECT_NEAR(report.tpot_ms->p50, 20.0, 0.1) << "concurrency " << concurrency;

    // Per request, joined with the sim's intended timings on the response id.
    const auto truth = read_trace_ttft(trace);
    std::vector<double> errors_ms;
    for (const auto& m : result.records) {
        auto it = truth.find(m.response_id);
        if (it == truth.end()) continue;
        errors_ms.push_back(std::abs(*derive(m).ttft_ms - static_cast<double>(it->second) / 1e6));
    }
    EXPECT_EQ(errors_ms.size(), requests);
    auto error = stats::summarize(errors_ms).value();
    EXPECT_LT(error.p99, 2.0) << "TTFT error vs the sim's trace, ms: p50 " << error.p50 << " p90 " << error.p90
                              << " p99 " << error.p99 << " max " << error.max;
}

TEST(BenchAccuracy, FixedProfileAtConcurrencyOne) { expect_fixed_accuracy(1, 12); }

TEST(BenchAccuracy, FixedProfileAtConcurrency500) { expect_fixed_accuracy(500, 1000); }

}  // namespace
}  // namespace tokenradar::bench

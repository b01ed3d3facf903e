// The published comparison against the four sim profiles: the markdown table's medians
// within 5% of each profile's values. About a minute: label `slow`.

#include <tokenradar/bench/runner.hpp>

#include "../../support/sim_fixture.hpp"
#include "../../support/sim_target.hpp"

#include <tokenradar/bench/report.hpp>
#include <tokenradar/core/resource_dir.hpp>

#include <gtest/gtest.h>

namespace tokenradar::bench {
namespace {

using testing::sim_target;
using testing::SimFixture;

// The published comparison (../shared/design.md), gen-500 against the four profiles, at an
// off-peak hour (a Sunday at 03:00 in New York) so Gemini's business-hours peak is off.
TEST(BenchAccuracy, PublishedComparisonProfilesWithin5Percent) {
    struct Expected {
        const char* profile;
        const char* model;
        double ttft_ms;
        double tokens_per_s;
    };
    const Expected expected[] = {{"gpt-4o-like", "gpt-4o", 280, 42},
                                 {"claude-3.5-sonnet-like", "claude-3-5-sonnet-latest", 310, 38},
                                 {"gemini-1.5-pro-like", "gemini-1.5-pro", 620, 29},
                                 {"llama-3-70b-like", "llama-3-70b", 410, 35}};
    sim::SimServerOptions sim_options;
    sim_options.pinned_wall_time_us = 1'764'489'600LL * 1'000'000;  // Sun 2025-11-30 03:00 New York
    std::vector<std::unique_ptr<SimFixture>> sims;
    RunOptions o;
    for (const auto& e : expected) {
        auto profile = sim::load_profile(e.profile, testing::profiles_dir());
        ASSERT_TRUE(profile.serves(e.model)) << e.profile << " does not serve " << e.model;
        sims.push_back(std::make_unique<SimFixture>(profile, sim_options));
        o.targets.push_back(sim_target(e.profile, *sims.back(), e.model));
    }
    o.workload = load_workload("gen-500", find_resource_dir("workloads"));
    o.requests = 100;
    o.concurrency = 200;  // about 50 per profile: below every profile's capacity
    o.client.max_idle_per_host = 200;
    std::atomic<bool> stop{false};
    RunResult result = run_bench(o, stop, {});

    std::vector<std::string> names;
    for (const auto& target : o.targets) names.push_back(target.name);
    const std::vector<TargetReport> reports = summarize_targets(names, result.records);
    for (std::size_t i = 0; i < reports.size(); ++i) {
        SCOPED_TRACE(expected[i].profile);
        EXPECT_LT(reports[i].error_rate(), 0.03);  // the profiles' own small fault rates
        EXPECT_NEAR(reports[i].ttft_ms->p50, expected[i].ttft_ms, 0.05 * expected[i].ttft_ms);
        EXPECT_NEAR(reports[i].decode_tps->p50, expected[i].tokens_per_s,
                    0.05 * expected[i].tokens_per_s);
    }
    const std::string markdown = render_markdown(reports);
    EXPECT_NE(markdown.find("| gpt-4o-like | gpt-4o |"), std::string::npos) << markdown;
}

}  // namespace
}  // namespace tokenradar::bench

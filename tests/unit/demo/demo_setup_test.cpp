#include "../../support/store_records.hpp"

#include <tokenradar/demo/demo.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace tokenradar::demo {
namespace {

const std::filesystem::path kSourceDir(TOKENRADAR_SOURCE_DIR);
constexpr std::int64_t kUsPerHour = 3'600'000'000LL;
constexpr std::int64_t kDay0 = 1'764'460'800'000'000;  // 2025-11-30T00:00:00Z

std::vector<sim::Profile> shipped_profiles() {
    return demo_profiles(kSourceDir / "profiles", std::nullopt).profiles;
}

const std::vector<std::string> kFleet = {"llama-replica-1", "llama-replica-2", "llama-replica-3"};

std::vector<bench::Workload> shipped_workloads() {
    std::vector<bench::Workload> workloads;
    for (const auto& task : demo_tasks())
        workloads.push_back(bench::load_workload(task, kSourceDir / "workloads"));
    return workloads;
}

std::unique_ptr<store::SqliteStore> open(const testing::TempDb& db) {
    return std::move(store::SqliteStore::open(db.path()).value());
}

std::vector<Measurement> all_records(store::MeasurementStore& store) {
    return store.select({}).value();
}

TEST(DemoSetup, TheFourPublishedComparisonProfilesThenThreeReplicasEachServeTheirModel) {
    const auto& providers = demo_providers();
    ASSERT_EQ(providers.size(), 7u);
    const auto profiles = shipped_profiles();
    std::set<std::string> names;
    for (std::size_t i = 0; i < providers.size(); ++i) {
        EXPECT_TRUE(profiles[i].serves(providers[i].upstream_model)) << providers[i].profile;
        names.insert(providers[i].profile);
    }
    EXPECT_EQ(names, (std::set<std::string>{"gpt-4o-like", "claude-3.5-sonnet-like",
                                            "gemini-1.5-pro-like", "llama-3-70b-like"}));
    for (std::size_t i = 0; i < 3; ++i) {
        const DemoProvider& p = providers[4 + i];
        EXPECT_EQ(p.provider, kFleet[i]);
        EXPECT_EQ(p.profile, "llama-3-70b-like");
        EXPECT_EQ(p.api, dialect::Api::openai);
        EXPECT_EQ(p.upstream_model, "llama-3-70b");
        EXPECT_EQ(p.model, "llama-3-70b-fleet");
        EXPECT_EQ(p.region, "us-east-1");
        EXPECT_FALSE(p.history) << p.provider;
    }
    for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(providers[i].history) << providers[i].provider;
    EXPECT_EQ(demo_models(),
              (std::vector<std::string>{"gpt-4o", "claude-3-5-sonnet", "gemini-1.5-pro",
                                        "llama-3-70b", "llama-3-70b-fleet"}));
}

// A virtual model's settings are its first provider's; the others must not say otherwise.
TEST(DemoSetup, ProvidersOfOneModelAgreeOnItsSettings) {
    std::map<std::string, const DemoProvider*> first;
    for (const DemoProvider& p : demo_providers()) {
        const DemoProvider* f = first.emplace(p.model, &p).first->second;
        EXPECT_EQ(p.fallback, f->fallback) << p.provider;
        EXPECT_EQ(p.cache, f->cache) << p.provider;
        EXPECT_EQ(p.routing.strategy, f->routing.strategy) << p.provider;
        EXPECT_EQ(p.routing.hedge.enabled, f->routing.hedge.enabled) << p.provider;
        EXPECT_EQ(p.routing.hedge.quantile, f->routing.hedge.quantile) << p.provider;
        EXPECT_EQ(p.routing.hedge.budget, f->routing.hedge.budget) << p.provider;
        EXPECT_EQ(p.routing.ttft_deadline_ns, f->routing.ttft_deadline_ns) << p.provider;
        EXPECT_EQ(p.streamed_only, f->streamed_only) << p.provider;
    }
}

TEST(DemoSetup, TheThirdReplicaSlowsDownEveryEightMinutesWithItsOwnRandomStream) {
    const DemoProfiles loaded = demo_profiles(kSourceDir / "profiles", 42);
    ASSERT_EQ(loaded.profiles.size(), demo_providers().size());
    // Replica 3 alone: 3x TTFT during minutes 2-4, 10-12, 18-20, ... of the sims' run.
    for (std::size_t i = 0; i < 6; ++i)
        EXPECT_TRUE(loaded.profiles[i].episodes.empty()) << demo_providers()[i].provider;
    ASSERT_EQ(loaded.profiles[6].episodes.size(), 1u);
    const sim::Episode& e = loaded.profiles[6].episodes[0];
    EXPECT_EQ(e.after_ns, 120'000'000'000);
    EXPECT_EQ(e.duration_ns, 120'000'000'000);
    EXPECT_EQ(e.every_ns, 480'000'000'000);
    EXPECT_GT(e.every_ns, e.duration_ns);  // the profile loader's rule
    EXPECT_EQ(e.condition.ttft_multiplier, 3);
    EXPECT_EQ(e.condition.tpot_multiplier, 1);
    EXPECT_EQ(e.condition.error_rate, 0);
    // llama-sim and the three replicas share a profile: four replicas with four seeds, the
    // first keeping the run's seed for the profile (its history does not change).
    EXPECT_EQ(loaded.replicas, (std::vector<unsigned>{0, 0, 0, 0, 1, 2, 3}));
    EXPECT_EQ(loaded.profiles[3].seed, sim::profile_seed_for_run(42, "llama-3-70b-like"));
    std::set<std::uint64_t> seeds;
    for (const auto& profile : loaded.profiles) seeds.insert(profile.seed);
    EXPECT_EQ(seeds.size(), loaded.profiles.size());
    // Without --seed as well.
    const DemoProfiles unseeded = demo_profiles(kSourceDir / "profiles", std::nullopt);
    EXPECT_EQ(unseeded.replicas, loaded.replicas);
    EXPECT_NE(unseeded.profiles[4].seed, unseeded.profiles[3].seed);
}

TEST(DemoSetup, ServeConfigHasOneProviderPerSimAndOneModelEachPlusTheFleet) {
    DemoOptions options;
    options.port = 0;
    options.db = "/tmp/x.db";
    const auto serve =
        demo_serve_config(options, {1001, 1002, 1003, 1004, 1005, 1006, 1007}, "sk-demo-1");
    const auto& c = serve.gateway;
    EXPECT_EQ(c.host, "127.0.0.1");
    EXPECT_EQ(c.port, 0);
    EXPECT_FALSE(c.auth_required);
    EXPECT_EQ(serve.store.path, "/tmp/x.db");
    EXPECT_TRUE(c.dashboard);
    // The dashboard's API, and records submitted without a key (loopback only).
    EXPECT_TRUE(serve.observatory.enabled);
    EXPECT_EQ(serve.observatory.ingest, observatory::IngestMode::open);
    ASSERT_EQ(c.providers.size(), 7u);
    const std::vector<std::pair<dialect::Api, std::string>> expected = {
        {dialect::Api::openai, "/v1"}, {dialect::Api::anthropic, "/"},
        {dialect::Api::gemini, "/"},   {dialect::Api::openai, "/v1"},
        {dialect::Api::openai, "/v1"}, {dialect::Api::openai, "/v1"},
        {dialect::Api::openai, "/v1"}};
    for (std::size_t i = 0; i < 7; ++i) {
        const auto& p = c.providers[i];
        EXPECT_EQ(p.name, demo_providers()[i].provider);
        EXPECT_EQ(p.api, expected[i].first);
        EXPECT_EQ(p.base.host, "127.0.0.1");
        EXPECT_EQ(p.base.port, 1001 + i);
        EXPECT_EQ(p.base.target, expected[i].second);
        EXPECT_EQ(p.key.reveal(), "sk-demo-1");
        EXPECT_EQ(p.region, demo_providers()[i].region);
    }
    ASSERT_EQ(c.models.size(), 5u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(c.models[i].name, demo_providers()[i].model);
        ASSERT_FALSE(c.models[i].upstreams.empty());
        EXPECT_EQ(c.models[i].upstreams[0].provider, i);
        EXPECT_EQ(c.models[i].upstreams[0].model, demo_providers()[i].upstream_model);
        // One upstream (and a fallback) in priority order: nothing to route or hedge.
        EXPECT_EQ(c.models[i].routing.strategy, route::Strategy::priority);
        EXPECT_FALSE(c.models[i].routing.hedge.enabled);
    }
    // gpt-4o falls back to llama-3-70b (as examples/gateway-sim.toml); the others have none.
    ASSERT_EQ(c.models[0].upstreams.size(), 2u);
    EXPECT_EQ(c.models[0].upstreams[1].provider, 3u);
    EXPECT_EQ(c.models[0].upstreams[1].model, "llama-3-70b");
    EXPECT_EQ(c.models[1].upstreams.size(), 1u);
    EXPECT_EQ(c.models[3].upstreams.size(), 1u);
    EXPECT_NE(c.find_model("claude-3-5-sonnet"), nullptr);
    // The fleet: the three replicas in order, routed by latency, hedged at the primary's TTFT
    // p95 with at most 10% extra requests (as `hedge = "p95"`, `hedge_budget = 0.1` load).
    const gateway::VirtualModel* fleet = c.find_model("llama-3-70b-fleet");
    ASSERT_NE(fleet, nullptr);
    ASSERT_EQ(fleet->upstreams.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(c.providers[fleet->upstreams[i].provider].name, kFleet[i]);
        EXPECT_EQ(fleet->upstreams[i].model, "llama-3-70b");
    }
    EXPECT_EQ(fleet->routing.strategy, route::Strategy::latency);
    EXPECT_TRUE(fleet->routing.hedge.enabled);
    EXPECT_EQ(fleet->routing.hedge.delay_ns, 0);  // adaptive
    EXPECT_DOUBLE_EQ(fleet->routing.hedge.quantile, 0.95);
    EXPECT_DOUBLE_EQ(fleet->routing.hedge.budget, 0.1);
    EXPECT_EQ(fleet->routing.hedge.min_delay_ns, 20'000'000);
    EXPECT_EQ(fleet->routing.ttft_deadline_ns, 0);
    EXPECT_FALSE(fleet->offload);
    // The faq traffic repeats questions: every model caches them, and the keyless listener
    // (one tenant: the demo's own traffic) is allowed to.
    EXPECT_TRUE(c.cache.keyless);
    for (const auto& model : c.models) {
        // gpt-4o's also catches the reworded repeats.
        EXPECT_EQ(model.cache.mode, model.name == "gpt-4o" ? gateway::ModelCache::Mode::semantic
                                                           : gateway::ModelCache::Mode::exact)
            << model.name;
    }
    EXPECT_NE(std::find(demo_tasks().begin(), demo_tasks().end(), "faq"), demo_tasks().end());
}

TEST(DemoSetup, TrafficReachesEveryModelTheFleetWithStreamsOnly) {
    DemoOptions options;
    options.rate = 5;
    const auto workloads = shipped_workloads();
    const auto lanes = demo_traffic(options, 8123, workloads, 7);
    ASSERT_EQ(lanes.size(), 2u);
    const auto names = [](const bench::RunOptions& run) {
        std::vector<std::string> out;
        for (const auto& t : run.targets) {
            EXPECT_EQ(t.model, t.name);
            EXPECT_EQ(t.api, dialect::Api::openai);
            EXPECT_EQ(t.base.host, "127.0.0.1");
            EXPECT_EQ(t.base.port, 8123);
            EXPECT_EQ(t.base.target, "/v1");
            out.push_back(t.name);
        }
        return out;
    };
    EXPECT_EQ(names(lanes[0]), (std::vector<std::string>{"gpt-4o", "claude-3-5-sonnet",
                                                         "gemini-1.5-pro", "llama-3-70b"}));
    EXPECT_EQ(names(lanes[1]), std::vector<std::string>{"llama-3-70b-fleet"});
    // Every workload streamed and not; the fleet's streamed only (its router's TTFT estimate
    // sees first tokens, not whole answers).
    ASSERT_EQ(lanes[0].mix.size(), 2 * workloads.size());
    ASSERT_EQ(lanes[1].mix.size(), workloads.size());
    for (const auto& w : lanes[1].mix) EXPECT_TRUE(w.stream) << w.task;
    std::set<std::string> tasks;
    for (const auto& w : lanes[1].mix) tasks.insert(w.task);
    EXPECT_EQ(tasks.size(), workloads.size());
    // Each model gets rate / models, the lanes options.rate together; their schedules differ.
    EXPECT_DOUBLE_EQ(lanes[0].rate, 4.0);
    EXPECT_DOUBLE_EQ(lanes[1].rate, 1.0);
    EXPECT_EQ(lanes[0].seed, 7u);
    EXPECT_NE(lanes[1].seed, lanes[0].seed);
    for (const auto& run : lanes) {
        EXPECT_EQ(run.arrival, bench::Arrival::poisson);
        EXPECT_FALSE(run.preflight);
        EXPECT_TRUE(run.task_header);
        EXPECT_EQ(run.requests, 0u);  // without end
        EXPECT_EQ(run.duration.count(), 0);
    }
}

TEST(DemoSetup, HistoryTasksTakeTheWorkloadsPromptSizesAndLimits) {
    std::map<std::string, sim::HistoryTask> tasks;
    for (auto& t : history_tasks(shipped_workloads())) tasks[t.name] = t;
    ASSERT_EQ(tasks.size(), 6u);
    EXPECT_EQ(tasks["gen-500"].max_tokens, 500);
    EXPECT_EQ(tasks["faq"].max_tokens, 60);
    EXPECT_EQ(tasks["chat"].max_tokens, 300);
    EXPECT_EQ(tasks["code"].max_tokens, 250);
    EXPECT_EQ(tasks["long-context"].max_tokens, 200);
    EXPECT_EQ(tasks["prefix-reuse"].max_tokens, 150);
    EXPECT_GT(tasks["chat"].prompt_tokens_min, 10);
    EXPECT_LT(tasks["chat"].prompt_tokens_max, 100);
    EXPECT_NEAR(tasks["long-context"].prompt_tokens_min, 10'000, 300);
    EXPECT_EQ(tasks["long-context"].shared_prefix_tokens, 0);
    // The manual of prefix-reuse is ~4,000 shared tokens; only the question differs.
    EXPECT_NEAR(tasks["prefix-reuse"].shared_prefix_tokens, 4'000, 100);
    EXPECT_LT(tasks["prefix-reuse"].prompt_tokens_max, 100);
    for (const auto& [name, t] : tasks) EXPECT_LE(t.prompt_tokens_min, t.prompt_tokens_max) << name;
}

TEST(DemoSetup, HistoryIsWrittenForEveryProviderButTheReplicasWithTheGatewaysLabels) {
    testing::TempDb path;
    auto db = open(path);
    const std::atomic<bool> stop{false};
    const TimeRange range{kDay0, kDay0 + 6 * kUsPerHour};
    auto written = write_history(*db, shipped_profiles(), history_tasks(shipped_workloads()), range,
                                 1.0, 9, stop);
    ASSERT_TRUE(written) << written.error().message;
    // Poisson: mean 21,600 over the four providers.
    EXPECT_NEAR(static_cast<double>(*written), 21'600, 800);
    const auto records = all_records(*db);
    ASSERT_EQ(records.size(), *written);
    std::map<std::string, int> per_provider;
    std::set<std::string> tasks;
    for (const auto& m : records) {
        ++per_provider[m.labels.provider];
        tasks.insert(m.labels.task);
        EXPECT_EQ(m.labels.source, "sim");
        EXPECT_GE(m.ts_us, range.from_us);
        EXPECT_LT(m.ts_us, range.to_us);
    }
    // The four published-comparison providers share the rate; the fleet has none.
    ASSERT_EQ(per_provider.size(), 4u);
    for (const auto& p : demo_providers()) {
        if (p.history)
            EXPECT_NEAR(per_provider[p.provider], 5'400, 400) << p.provider;
        else
            EXPECT_EQ(per_provider.count(p.provider), 0u) << p.provider;
    }
    EXPECT_EQ(tasks.size(), demo_tasks().size());
    const auto gemini = std::find_if(records.begin(), records.end(), [](const Measurement& m) {
        return m.labels.provider == "gemini-sim";
    });
    ASSERT_NE(gemini, records.end());
    EXPECT_EQ(gemini->labels.model, "gemini-1.5-pro");
    EXPECT_EQ(gemini->labels.api, "gemini");
    EXPECT_EQ(gemini->labels.endpoint, "127.0.0.1");
    EXPECT_EQ(gemini->labels.upstream_region, "us-central1");
}

TEST(DemoSetup, WritingHistoryStopsWhenAsked) {
    testing::TempDb path;
    auto db = open(path);
    const std::atomic<bool> stop{true};
    auto written = write_history(*db, shipped_profiles(), history_tasks(shipped_workloads()),
                                 {kDay0, kDay0 + 24 * kUsPerHour}, 1.0, 9, stop);
    ASSERT_TRUE(written);
    EXPECT_EQ(*written, 0u);
}

Measurement record_at(std::int64_t ts_us, const char* source) {
    Measurement m = testing::bare_record(ts_us);
    m.labels.source = source;
    return m;
}

TEST(DemoSetup, MissingHistoryIsWhatTheStoreLacks) {
    testing::TempDb path;
    auto db = open(path);
    const std::int64_t from = kDay0;
    const std::int64_t to = kDay0 + 48 * kUsPerHour;
    EXPECT_EQ(missing_history(*db, from, to).value(), (std::vector<TimeRange>{{from, to}}));

    // Gateway records alone are no history.
    std::vector<Measurement> gateway;
    for (int i = 0; i < 10; ++i) gateway.push_back(record_at(from + i * kUsPerHour, "gateway"));
    ASSERT_TRUE(db->insert(gateway));
    EXPECT_EQ(missing_history(*db, from, to).value(), (std::vector<TimeRange>{{from, to}}));

    // Sim history over hours 10-20: before and after it are missing.
    const std::vector<Measurement> sim = {record_at(from + 10 * kUsPerHour, "sim"),
                                          record_at(from + 20 * kUsPerHour, "sim")};
    ASSERT_TRUE(db->insert(sim));
    EXPECT_EQ(
        missing_history(*db, from, to).value(),
        (std::vector<TimeRange>{{from, from + 10 * kUsPerHour}, {from + 20 * kUsPerHour + 1, to}}));
    // Within a minute of the ends is close enough.
    EXPECT_EQ(missing_history(*db, from + 10 * kUsPerHour - 30'000'000,
                              from + 20 * kUsPerHour + 30'000'000)
                  .value(),
              std::vector<TimeRange>{});
}

TEST(DemoSetup, MissingHistoryLooksPastPagesOfGatewayRecords) {
    testing::TempDb path;
    auto db = open(path);
    const std::int64_t from = kDay0;
    const std::int64_t to = kDay0 + 24 * kUsPerHour;
    std::vector<Measurement> records = {record_at(from + kUsPerHour, "sim")};
    // More gateway records after the history than one page of the search (4,096), some sharing
    // a microsecond.
    for (int i = 0; i < 10'000; ++i)
        records.push_back(record_at(from + 2 * kUsPerHour + i / 3, "gateway"));
    ASSERT_TRUE(db->insert(records));
    EXPECT_EQ(missing_history(*db, from, to).value(),
              (std::vector<TimeRange>{{from, from + kUsPerHour}, {from + kUsPerHour + 1, to}}));
}

}  // namespace
}  // namespace tokenradar::demo

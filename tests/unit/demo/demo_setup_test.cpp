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
    std::vector<sim::Profile> profiles;
    for (const auto& p : demo_providers())
        profiles.push_back(sim::load_profile(p.profile, kSourceDir / "profiles"));
    return profiles;
}

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

TEST(DemoSetup, TheFourPublishedComparisonProfilesEachServeTheirModel) {
    const auto& providers = demo_providers();
    ASSERT_EQ(providers.size(), 4u);
    const auto profiles = shipped_profiles();
    std::set<std::string> names;
    for (std::size_t i = 0; i < providers.size(); ++i) {
        EXPECT_TRUE(profiles[i].serves(providers[i].upstream_model)) << providers[i].profile;
        names.insert(providers[i].profile);
    }
    EXPECT_EQ(names, (std::set<std::string>{"gpt-4o-like", "claude-3.5-sonnet-like",
                                            "gemini-1.5-pro-like", "llama-3-70b-like"}));
}

TEST(DemoSetup, ServeConfigHasOneProviderPerSimAndOneModelEach) {
    DemoOptions options;
    options.port = 0;
    options.db = "/tmp/x.db";
    const auto serve = demo_serve_config(options, {1001, 1002, 1003, 1004}, "sk-demo-1");
    const auto& c = serve.gateway;
    EXPECT_EQ(c.host, "127.0.0.1");
    EXPECT_EQ(c.port, 0);
    EXPECT_FALSE(c.auth_required);
    EXPECT_EQ(serve.store.path, "/tmp/x.db");
    EXPECT_TRUE(c.dashboard);
    // The dashboard's API, and records submitted without a key (loopback only).
    EXPECT_TRUE(serve.observatory.enabled);
    EXPECT_EQ(serve.observatory.ingest, observatory::IngestMode::open);
    ASSERT_EQ(c.providers.size(), 4u);
    const std::vector<std::pair<dialect::Api, std::string>> expected = {
        {dialect::Api::openai, "/v1"},
        {dialect::Api::anthropic, "/"},
        {dialect::Api::gemini, "/"},
        {dialect::Api::openai, "/v1"}};
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& p = c.providers[i];
        EXPECT_EQ(p.name, demo_providers()[i].provider);
        EXPECT_EQ(p.api, expected[i].first);
        EXPECT_EQ(p.base.host, "127.0.0.1");
        EXPECT_EQ(p.base.port, 1001 + i);
        EXPECT_EQ(p.base.target, expected[i].second);
        EXPECT_EQ(p.key.reveal(), "sk-demo-1");
        EXPECT_EQ(p.region, demo_providers()[i].region);
    }
    ASSERT_EQ(c.models.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(c.models[i].name, demo_providers()[i].model);
        ASSERT_FALSE(c.models[i].upstreams.empty());
        EXPECT_EQ(c.models[i].upstreams[0].provider, i);
        EXPECT_EQ(c.models[i].upstreams[0].model, demo_providers()[i].upstream_model);
    }
    // gpt-4o falls back to llama-3-70b (as examples/gateway-sim.toml); the others have none.
    ASSERT_EQ(c.models[0].upstreams.size(), 2u);
    EXPECT_EQ(c.models[0].upstreams[1].provider, 3u);
    EXPECT_EQ(c.models[0].upstreams[1].model, "llama-3-70b");
    EXPECT_EQ(c.models[1].upstreams.size(), 1u);
    EXPECT_NE(c.find_model("claude-3-5-sonnet"), nullptr);
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

TEST(DemoSetup, HistoryIsWrittenForEveryProviderWithTheGatewaysLabels) {
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
    ASSERT_EQ(per_provider.size(), 4u);
    for (const auto& p : demo_providers())
        EXPECT_NEAR(per_provider[p.provider], 5'400, 400) << p.provider;
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

#include <tokenradar/bench/workload.hpp>

#include "../../support/temp_path.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/token_estimate.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

namespace tokenradar::bench {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kWorkloads = std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "workloads";

TEST(Workload, EveryShippedWorkloadLoads) {
    for (const char* name : {"chat", "gen-500", "long-context", "code", "prefix-reuse"}) {
        auto w = load_workload(name, kWorkloads);
        EXPECT_EQ(w.name, name);
        EXPECT_EQ(w.task, name);
        EXPECT_FALSE(make_prompt(w, 1, 0).user.empty());
    }
    EXPECT_EQ(load_workload("gen-500", kWorkloads).max_tokens, 500);
}

TEST(Workload, PromptsAreUniqueAndDeterministic) {
    auto w = load_workload("gen-500", kWorkloads);
    std::set<std::string> seen;
    for (std::uint64_t i = 0; i < 200; ++i)
        EXPECT_TRUE(seen.insert(make_prompt(w, 7, i).user).second);
    EXPECT_EQ(make_prompt(w, 7, 3).user, make_prompt(w, 7, 3).user);
    EXPECT_NE(make_prompt(w, 7, 3).user, make_prompt(w, 8, 3).user);
}

TEST(Workload, SizesMatchTheirDescriptions) {
    auto long_context = load_workload("long-context", kWorkloads);
    auto p = make_prompt(long_context, 1, 0);
    EXPECT_NEAR(static_cast<double>(estimate_tokens(p.user)), 10000, 300);

    auto prefix = load_workload("prefix-reuse", kWorkloads);
    auto a = make_prompt(prefix, 1, 0);
    auto b = make_prompt(prefix, 1, 1);
    EXPECT_EQ(a.system, b.system);  // the shared prefix
    EXPECT_NE(a.user, b.user);      // the unique suffix
    EXPECT_NEAR(static_cast<double>(estimate_tokens(a.system)), 4000, 100);
}

TEST(Workload, ExtraBodyTableIsTheWorkloadsExtraFields) {
    const testing::TempPath file("extra_workload", ".toml");
    file.write(
        "max_tokens = 64\n[prompt]\nuser = \"x\"\n[extra_body]\nignore_eos = true\nmin_tokens = "
        "64\n"
        "[extra_body.stream_options]\ncontinuous_usage_stats = true\n");
    auto w = load_workload(file.path(), kWorkloads);
    EXPECT_EQ(w.extra_body.at("ignore_eos"), true);
    EXPECT_EQ(w.extra_body.at("min_tokens"), 64);
    EXPECT_EQ(w.extra_body.at("stream_options").at("continuous_usage_stats"), true);
    EXPECT_TRUE(load_workload("chat", kWorkloads).extra_body.empty());
}

TEST(Workload, BadFilesNameFileLineAndKey) {
    const testing::TempPath file("bad_workload", ".toml");
    const std::string& path = file.path();
    const auto error_of = [&](std::string_view text) {
        file.write(text);
        try {
            load_workload(path, kWorkloads);
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_THAT(error_of("max_tokens = \"many\"\n[prompt]\nuser = \"x\"\n"),
                HasSubstr(path + ":1: max_tokens: expected an integer"));
    EXPECT_THAT(error_of("[prompt]\nuser = \"about {topic}\"\n"), HasSubstr("prompt.topics"));
    EXPECT_THAT(error_of("max_tokens = 5\n"), HasSubstr("prompt"));
    EXPECT_THAT(error_of("[prompt]\nuser = \"x\"\nsystm = \"typo\"\n"),
                HasSubstr("unknown key 'prompt.systm'"));
    EXPECT_THAT(error_of("[prompt\n"), HasSubstr(path + ":1"));
    EXPECT_THAT(error_of("extra_body = \"{}\"\n[prompt]\nuser = \"x\"\n"),
                HasSubstr(path + ":1: extra_body: expected a table"));
    try {
        load_workload("no-such-workload", kWorkloads);
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("no-such-workload"));
    }
}

}  // namespace
}  // namespace tokenradar::bench

#include <tokenradar/sim/profile.hpp>

#include "../../support/temp_path.hpp"

#include <tokenradar/core/config.hpp>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tokenradar::sim {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kProfilesDir =
    std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "profiles";

std::string error_of(std::string_view toml) {
    try {
        parse_profile(toml, "bad.toml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

constexpr std::string_view kHead = "name = \"p\"\nmodels = [\"m\"]\n";

TEST(Profile, LoadsEveryShippedProfile) {
    for (const char* name : {"gpt-4o-like", "claude-3.5-sonnet-like", "gemini-1.5-pro-like",
                             "llama-3-70b-like", "instant", "fixed"}) {
        SCOPED_TRACE(name);
        Profile p = load_profile(name, kProfilesDir);
        EXPECT_EQ(p.name, name);
        EXPECT_FALSE(p.models.empty());
    }
}

TEST(Profile, ShippedValues) {
    Profile g = load_profile("gemini-1.5-pro-like", kProfilesDir);
    EXPECT_EQ(g.peak.timezone(), "America/New_York");
    EXPECT_TRUE(g.peak.weekdays_only());
    EXPECT_DOUBLE_EQ(g.peak.hourly()[12], 1.6);
    EXPECT_EQ(g.decode.tokens_per_chunk_min, 4);
    EXPECT_EQ(g.decode.tokens_per_chunk_max, 12);
    Profile f = load_profile("fixed", kProfilesDir);
    EXPECT_TRUE(f.peak.flat());
    EXPECT_EQ(f.prefix_cache.capacity_blocks, 0);
    EXPECT_EQ(f.capacity.max_concurrent, 0);
    EXPECT_TRUE(f.serves("fixed"));
    EXPECT_FALSE(f.serves("nope"));
}

TEST(Profile, NameOrPath) {
    const auto file = kProfilesDir / "fixed.toml";
    EXPECT_EQ(load_profile(file.string(), "/nonexistent").name, "fixed");
    try {
        load_profile("no-such-profile", kProfilesDir);
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("unknown profile \"no-such-profile\""));
    }
}

TEST(Profile, DefaultsAndSeed) {
    Profile p = parse_profile(kHead, "min.toml");
    EXPECT_EQ(p.decode.default_max_tokens, 500);
    EXPECT_EQ(p.decode.tokens_per_chunk_min, 1);
    EXPECT_NE(p.seed, 0u);
    EXPECT_EQ(parse_profile(std::string(kHead) + "seed = 7\n", "s.toml").seed, 7u);
    EXPECT_EQ(p.answers.tool_call_rate, 0.0);
    EXPECT_EQ(parse_profile(std::string(kHead) + "[answers]\ntool_call_rate = 0.25\n", "a.toml")
                  .answers.tool_call_rate,
              0.25);
    EXPECT_THAT(error_of(std::string(kHead) + "[answers]\ntool_call_rate = 2\n"),
                HasSubstr("bad.toml:4: answers.tool_call_rate: expected a number from 0 to 1"));
}

TEST(Profile, UnknownKeysAreErrorsAtEveryTable) {
    EXPECT_THAT(error_of(std::string(kHead) + "typo = 1\n"),
                HasSubstr("bad.toml:3: unknown key 'typo'"));
    for (const char* table :
         {"ttft", "decode", "capacity", "peak", "prefix_cache", "faults", "answers"}) {
        SCOPED_TRACE(table);
        EXPECT_THAT(error_of(fmt::format("{}[{}]\nbogus = 1\n", kHead, table)),
                    HasSubstr(fmt::format("bad.toml:4: unknown key '{}.bogus'", table)));
    }
}

TEST(Profile, WrongTypeAndRangeNameFileLineKey) {
    EXPECT_THAT(error_of(std::string(kHead) + "[decode]\ntokens_per_s = \"fast\"\n"),
                HasSubstr("bad.toml:4: decode.tokens_per_s: expected a number"));
    EXPECT_THAT(error_of(std::string(kHead) + "[ttft]\nbase_ms = -5\n"),
                HasSubstr("bad.toml:4: ttft.base_ms: expected a number from 0 to"));
    EXPECT_THAT(error_of(std::string(kHead) + "[faults]\nrate_500 = 1.5\n"),
                HasSubstr("bad.toml:4: faults.rate_500"));
    EXPECT_THAT(error_of(std::string(kHead) + "[faults]\nrate_500 = 0.6\nrate_503 = 0.6\n"),
                HasSubstr("sum to at most 1"));
    EXPECT_THAT(error_of(std::string(kHead) + "[decode]\ntokens_per_chunk = 0\n"),
                HasSubstr("bad.toml:4: decode.tokens_per_chunk: expected an integer from 1"));
    EXPECT_THAT(error_of(std::string(kHead) + "[decode]\ntokens_per_chunk = [5, 2]\n"),
                HasSubstr("bad.toml:4: decode.tokens_per_chunk"));
    EXPECT_THAT(error_of(std::string(kHead) + "[decode]\ntokens_per_chunk = 2.5\n"),
                HasSubstr("decode.tokens_per_chunk"));
    EXPECT_THAT(error_of(std::string(kHead) + "[decode]\ntokens_per_s = 0.001\n"),
                HasSubstr("bad.toml:4: decode.tokens_per_s: expected 0 (no decode delay) or"));
    EXPECT_THAT(error_of("name = \"p\"\n"), HasSubstr("models"));
    EXPECT_THAT(error_of("models = [\"m\"]\n"), HasSubstr("name"));
}

TEST(Profile, BadPeakTable) {
    EXPECT_THAT(error_of(std::string(kHead) + "[peak]\ntimezone = \"Mars/Olympus\"\nhourly = [" +
                         "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]\n"),
                HasSubstr("bad.toml:4: peak.timezone: expected an IANA time zone"));
    EXPECT_THAT(error_of(std::string(kHead) + "[peak]\ntimezone = \"UTC\"\nhourly = [1, 1, 1]\n"),
                HasSubstr("bad.toml:5: peak.hourly: expected an array of 24 multipliers"));
    EXPECT_THAT(error_of(std::string(kHead) + "[peak]\nhourly = []\n"), HasSubstr("peak.timezone"));
}

TEST(Profile, ErrorFromAFileNamesThePath) {
    const testing::TempDir profiles("profile_test");
    const std::filesystem::path dir = profiles.dir();
    {
        std::ofstream out(dir / "broken.toml");
        out << kHead << "[capacity]\nmax_concurrent = \"many\"\n";
    }
    try {
        load_profile("broken", dir);
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("broken.toml:4: capacity.max_concurrent"));
    }
}

}  // namespace
}  // namespace tokenradar::sim

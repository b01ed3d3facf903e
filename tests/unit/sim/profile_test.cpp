#include <tokenradar/sim/profile.hpp>

#include "../../support/temp_path.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/sim/latency_model.hpp>

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
         {"ttft", "decode", "capacity", "peak", "prefix_cache", "faults", "answers", "tail"}) {
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

TEST(Profile, TailAndEpisodes) {
    Profile none = parse_profile(kHead, "min.toml");
    EXPECT_EQ(none.tail.rate, 0.0);
    EXPECT_EQ(none.tail.ttft_multiplier, 1.0);
    EXPECT_TRUE(none.episodes.empty());

    Profile p = parse_profile(std::string(kHead) + R"(
[tail]
rate = 0.01
ttft_multiplier = 20

[[episodes]]
after = "30s"
duration = "20s"
ttft_multiplier = 3

[[episodes]]
after = "10m"
duration = "2m"
every = "1h"
tpot_multiplier = 2.5
error_rate = 0.25

[[episodes]]
duration = "1s"
)",
                              "e.toml");
    EXPECT_EQ(p.tail.rate, 0.01);
    EXPECT_EQ(p.tail.ttft_multiplier, 20.0);
    ASSERT_EQ(p.episodes.size(), 3u);
    EXPECT_EQ(p.episodes[0].after_ns, 30'000'000'000LL);
    EXPECT_EQ(p.episodes[0].duration_ns, 20'000'000'000LL);
    EXPECT_EQ(p.episodes[0].every_ns, 0);
    EXPECT_EQ(p.episodes[0].condition.ttft_multiplier, 3.0);
    EXPECT_EQ(p.episodes[0].condition.tpot_multiplier, 1.0);
    EXPECT_EQ(p.episodes[0].condition.error_rate, 0.0);
    EXPECT_EQ(p.episodes[1].after_ns, 600'000'000'000LL);
    EXPECT_EQ(p.episodes[1].every_ns, 3'600'000'000'000LL);
    EXPECT_EQ(p.episodes[1].condition.tpot_multiplier, 2.5);
    EXPECT_EQ(p.episodes[1].condition.error_rate, 0.25);
    EXPECT_EQ(p.episodes[2].after_ns, 0) << "after defaults to the start";
}

TEST(Profile, BadTailAndEpisodesNameFileLineKey) {
    EXPECT_THAT(error_of(std::string(kHead) + "[tail]\nrate = 1.5\n"),
                HasSubstr("bad.toml:4: tail.rate: expected a number from 0 to 1"));
    EXPECT_THAT(error_of(std::string(kHead) + "[tail]\nttft_multiplier = 0.5\n"),
                HasSubstr("bad.toml:4: tail.ttft_multiplier: expected a number from 1 to 1000"));
    const std::string episode = std::string(kHead) + "[[episodes]]\n";
    EXPECT_THAT(error_of(episode + "after = \"1s\"\n"),
                HasSubstr("episodes[0].duration: expected a duration"));
    EXPECT_THAT(error_of(episode + "duration = \"0s\"\n"),
                HasSubstr("bad.toml:4: episodes[0].duration: expected a duration longer than 0"));
    EXPECT_THAT(error_of(episode + "duration = 20\n"),
                HasSubstr("bad.toml:4: episodes[0].duration: expected a duration string"));
    EXPECT_THAT(error_of(episode + "duration = \"20s\"\nevery = \"20s\"\n"),
                HasSubstr("bad.toml:5: episodes[0].every: expected a repeat period longer than"));
    EXPECT_THAT(error_of(episode + "duration = \"20s\"\nttft_multiplier = 0\n"),
                HasSubstr("episodes[0].ttft_multiplier: expected a number from 1 to 1000"));
    EXPECT_THAT(error_of(episode + "duration = \"20s\"\ntpot_multiplier = 1001\n"),
                HasSubstr("episodes[0].tpot_multiplier: expected a number from 1 to 1000"));
    EXPECT_THAT(error_of(episode + "duration = \"20s\"\nerror_rate = 2\n"),
                HasSubstr("bad.toml:5: episodes[0].error_rate: expected a number from 0 to 1"));
    EXPECT_THAT(error_of(episode + "duration = \"20s\"\nbogus = 1\n"),
                HasSubstr("bad.toml:5: unknown key 'episodes[0].bogus'"));
    EXPECT_THAT(error_of(std::string(kHead) + "[episodes]\nduration = \"20s\"\n"),
                HasSubstr("episodes: expected an array of tables"));
}

TEST(Profile, ReplicasOfOneProfileGetDistinctSeedsTheFirstKeepsItsOwn) {
    const Profile fixed = load_profile("fixed", kProfilesDir);
    const Profile instant = load_profile("instant", kProfilesDir);
    std::vector<Profile> run{fixed, instant, fixed, fixed};
    EXPECT_EQ(make_replicas_distinct(run), (std::vector<unsigned>{0, 0, 1, 2}));
    EXPECT_EQ(run[0].seed, fixed.seed) << "a run without replicas draws as before";
    EXPECT_EQ(run[1].seed, instant.seed);
    EXPECT_NE(run[2].seed, fixed.seed);
    EXPECT_NE(run[3].seed, fixed.seed);
    EXPECT_NE(run[2].seed, run[3].seed);
    EXPECT_EQ(run[2].seed, replica_seed(fixed.seed, 1));
    EXPECT_EQ(replica_seed(fixed.seed, 0), fixed.seed);

    // Distinct seeds are distinct sequences: the k-th unseeded request of each replica.
    const std::string noisy =
        std::string(kHead) + "[ttft]\nbase_ms = 100\nnoise_median_ms = 50\nnoise_sigma = 0.5\n";
    std::vector<Profile> replicas{parse_profile(noisy, "n.toml"), parse_profile(noisy, "n.toml")};
    make_replicas_distinct(replicas);
    LatencyModel a(replicas[0]);
    LatencyModel b(replicas[1]);
    int same = 0;
    for (int i = 0; i < 20; ++i) {
        PlanInput in;
        in.prompt_tokens = 10;
        in.max_tokens = 1;
        same += a.plan(in).ttft_ns == b.plan(in).ttft_ns ? 1 : 0;
    }
    EXPECT_EQ(same, 0);
}

}  // namespace
}  // namespace tokenradar::sim

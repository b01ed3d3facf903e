#include <tokenradar/sim/history.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tokenradar::sim {
namespace {

const std::filesystem::path kProfilesDir =
    std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "profiles";

constexpr std::int64_t kUsPerHour = 3'600'000'000LL;
// 2024-07-10, a Wednesday, 00:00 UTC. New York is UTC-4 then.
constexpr std::int64_t kWedUtc = 1720569600LL * 1'000'000;
constexpr std::int64_t kNyNoon = kWedUtc + 16 * kUsPerHour;
constexpr std::int64_t kNy3am = kWedUtc + 7 * kUsPerHour;
constexpr std::int64_t kSatNyNoon = kNyNoon + 3 * 24 * kUsPerHour;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<Measurement> generate_all(const Profile& profile, const HistoryOptions& options) {
    HistoryGenerator generator(profile, options);
    std::vector<Measurement> out;
    while (generator.next(out, 1000) > 0) {
    }
    return out;
}

HistoryTask chat_of_50_tokens() { return {"chat", 50, 50, 0, 300}; }

// One hour of streamed 50-token chat requests at ~3,000 requests per hour.
HistoryOptions hour_of_chat(std::int64_t from_us) {
    HistoryOptions o;
    o.from_us = from_us;
    o.to_us = from_us + kUsPerHour;
    o.rate_per_s = 3000.0 / 3600.0;
    o.seed = 7;
    o.tasks = {chat_of_50_tokens()};
    o.stream_share = 1.0;
    o.labels.provider = "p";
    o.labels.model = "m";
    return o;
}

std::vector<double> ok_ttfts(const std::vector<Measurement>& records) {
    std::vector<double> out;
    for (const auto& m : records) {
        if (m.ok()) out.push_back(*derive(m).ttft_ms);
    }
    return out;
}

class ShippedProfiles : public ::testing::TestWithParam<const char*> {};

// The profile's median TTFT at a 50-token prompt is base + prefill + noise median (at
// multiplier 1, here 03:00 in New York on a Wednesday: off-peak for every profile), and its
// median decode rate is tokens_per_s.
TEST_P(ShippedProfiles, MedianTtftAndDecodeRateAreTheProfiles) {
    const Profile profile = load_profile(GetParam(), kProfilesDir);
    const auto records = generate_all(profile, hour_of_chat(kNy3am));
    ASSERT_GT(records.size(), 2500u);
    const double expected_ttft = profile.ttft.base_ms +
                                 profile.ttft.prefill_ms_per_1k_tokens * 50 / 1000 +
                                 profile.ttft.noise_median_ms;
    EXPECT_NEAR(median(ok_ttfts(records)), expected_ttft, 0.03 * expected_ttft);

    std::vector<double> decode;
    for (const auto& m : records) {
        if (m.ok()) decode.push_back(*derive(m).decode_tps);
    }
    EXPECT_NEAR(median(decode), profile.decode.tokens_per_s, 0.03 * profile.decode.tokens_per_s);
}

INSTANTIATE_TEST_SUITE_P(Comparison, ShippedProfiles,
                         ::testing::Values("gpt-4o-like", "claude-3.5-sonnet-like",
                                           "gemini-1.5-pro-like", "llama-3-70b-like"));

// gemini-1.5-pro-like slows down by 1.6x at 12:00-13:00 New York time on weekdays only.
TEST(History, PeakHoursAreSlowerForGeminiOnWeekdays) {
    const Profile profile = load_profile("gemini-1.5-pro-like", kProfilesDir);
    const double night = median(ok_ttfts(generate_all(profile, hour_of_chat(kNy3am))));
    const double noon = median(ok_ttfts(generate_all(profile, hour_of_chat(kNyNoon))));
    const double saturday = median(ok_ttfts(generate_all(profile, hour_of_chat(kSatNyNoon))));
    EXPECT_NEAR(noon / night, 1.6, 0.05);
    EXPECT_NEAR(saturday / night, 1.0, 0.04);

    // Flat profiles stay flat at the same hours.
    const Profile gpt = load_profile("gpt-4o-like", kProfilesDir);
    const double gpt_night = median(ok_ttfts(generate_all(gpt, hour_of_chat(kNy3am))));
    const double gpt_noon = median(ok_ttfts(generate_all(gpt, hour_of_chat(kNyNoon))));
    EXPECT_NEAR(gpt_noon / gpt_night, 1.0, 0.04);
}

std::vector<HistoryTask> five_tasks() {
    return {{"chat", 20, 60, 0, 300},
            {"gen-500", 20, 40, 0, 500},
            {"long-context", 9'900, 10'100, 0, 200},
            {"code", 40, 90, 0, 250},
            {"prefix-reuse", 10, 30, 4'000, 150}};
}

HistoryOptions day_of_everything() {
    HistoryOptions o;
    o.from_us = kWedUtc;
    o.to_us = kWedUtc + 24 * kUsPerHour;
    o.rate_per_s = 0.5;
    o.seed = 42;
    o.tasks = five_tasks();
    o.client_regions = {{"us-east", 0}, {"eu-west", 80}};
    o.labels.provider = "openai-sim";
    o.labels.model = "gpt-4o";
    o.labels.endpoint = "127.0.0.1";
    o.labels.upstream_region = "us-east-1";
    o.labels.api = "openai";
    return o;
}

TEST(History, ADayOfRecordsAtTheRateWithEveryTaskStreamAndRegion) {
    const Profile profile = load_profile("gpt-4o-like", kProfilesDir);
    const HistoryOptions options = day_of_everything();
    const auto records = generate_all(profile, options);

    // Poisson count: mean 43,200, standard deviation 208.
    EXPECT_NEAR(static_cast<double>(records.size()), 43'200.0, 1'000.0);
    std::map<std::string, int> tasks;
    std::map<bool, int> streams;
    std::map<std::string, int> regions;
    std::int64_t previous = options.from_us;
    for (const auto& m : records) {
        ASSERT_GE(m.ts_us, previous);
        ASSERT_LT(m.ts_us, options.to_us);
        previous = m.ts_us;
        ++tasks[m.labels.task];
        ++streams[m.labels.stream];
        ++regions[m.labels.client_region];
        EXPECT_EQ(m.labels.source, "sim");
        EXPECT_EQ(m.labels.provider, "openai-sim");
        EXPECT_EQ(m.labels.model, "gpt-4o");
        EXPECT_EQ(m.labels.api, "openai");
        EXPECT_EQ(m.labels.upstream_region, "us-east-1");
        EXPECT_EQ(m.labels.endpoint, "127.0.0.1");
        // Every record is valid metrics.md (timestamp order, enums) as the store reads it.
        auto parsed = measurement_from_json(to_json(m));
        ASSERT_TRUE(parsed) << parsed.error().message;
        EXPECT_EQ(*parsed, m);
    }
    ASSERT_EQ(tasks.size(), 5u);
    for (const auto& [task, n] : tasks)
        EXPECT_NEAR(n, records.size() / 5.0, records.size() * 0.02) << task;
    EXPECT_NEAR(streams[true], records.size() / 2.0, records.size() * 0.02);
    EXPECT_NEAR(regions["eu-west"], records.size() / 2.0, records.size() * 0.02);
}

TEST(History, TokenCountsFollowTheTasks) {
    const Profile profile = load_profile("gpt-4o-like", kProfilesDir);
    std::map<std::string, std::vector<double>> prompt, cached, output;
    for (const auto& m : generate_all(profile, day_of_everything())) {
        if (!m.ok()) continue;
        prompt[m.labels.task].push_back(static_cast<double>(*m.prompt_tokens));
        cached[m.labels.task].push_back(static_cast<double>(*m.cached_prompt_tokens));
        output[m.labels.task].push_back(static_cast<double>(*m.output_tokens));
    }
    EXPECT_NEAR(median(prompt["long-context"]), 10'000, 100);
    EXPECT_NEAR(median(prompt["chat"]), 40, 5);
    EXPECT_NEAR(median(prompt["prefix-reuse"]), 4'020, 10);
    // The shared 4,000 tokens are 31 of gpt-4o-like's 128-token blocks, cached after the
    // first request; nothing else repeats.
    EXPECT_EQ(median(cached["prefix-reuse"]), 31 * 128);
    EXPECT_EQ(*std::max_element(cached["long-context"].begin(), cached["long-context"].end()), 0);
    // gpt-4o-like never stops early: every answer is max_tokens long.
    EXPECT_EQ(median(output["gen-500"]), 500);
    EXPECT_EQ(median(output["code"]), 250);
}

TEST(History, NonStreamingRecordsHaveTtfbAndE2eOnly) {
    const Profile profile = load_profile("gpt-4o-like", kProfilesDir);
    HistoryOptions options = hour_of_chat(kNy3am);
    options.stream_share = 0;
    const auto records = generate_all(profile, options);
    ASSERT_FALSE(records.empty());
    for (const auto& m : records) {
        EXPECT_FALSE(m.labels.stream);
        if (!m.ok()) continue;
        const Derived d = derive(m);
        EXPECT_FALSE(d.ttft_ms);
        ASSERT_TRUE(d.e2e_ms && d.ttfb_ms);
        EXPECT_EQ(*d.e2e_ms, *d.ttfb_ms);
        EXPECT_EQ(m.output_events, 0);
        // 300 tokens at ~42 tokens/s after ~280 ms.
        EXPECT_GT(*d.e2e_ms, 2000);
    }
}

TEST(History, SameSeedSameRecordsOtherSeedOthers) {
    const Profile profile = load_profile("claude-3.5-sonnet-like", kProfilesDir);
    HistoryOptions options = day_of_everything();
    options.to_us = options.from_us + kUsPerHour;
    const auto a = generate_all(profile, options);
    EXPECT_EQ(a, generate_all(profile, options));
    options.seed += 1;
    const auto b = generate_all(profile, options);
    ASSERT_FALSE(a.empty());
    EXPECT_NE(a.front().ts_us, b.front().ts_us);
}

TEST(History, ClientRegionRoundTripDelaysEveryMoment) {
    const Profile profile = load_profile("llama-3-70b-like", kProfilesDir);
    HistoryOptions near = hour_of_chat(kNy3am);
    near.client_regions = {{"us-east", 0}};
    HistoryOptions far = near;
    far.client_regions = {{"ap-south", 200}};
    const auto a = generate_all(profile, near);
    const auto b = generate_all(profile, far);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(b[i].labels.client_region, "ap-south");
        EXPECT_EQ(*b[i].t.done - *a[i].t.done, 200'000'000);
        if (a[i].t.first_token) {
            EXPECT_EQ(*b[i].t.first_token - *a[i].t.first_token, 200'000'000);
        }
    }
}

TEST(History, FaultRatesBecomeFailureStatuses) {
    Profile profile = parse_profile(R"(
name = "faulty"
models = ["m"]
[ttft]
base_ms = 100.0
[decode]
tokens_per_s = 100.0
tokens_per_chunk = [2, 4]
default_max_tokens = 40
[faults]
rate_429 = 0.1
rate_503 = 0.1
rate_disconnect = 0.1
rate_malformed = 0.1
)",
                                    "faulty.toml");
    HistoryOptions options = hour_of_chat(kWedUtc);
    options.tasks = {{"chat", 10, 10, 0, 0}};
    options.stream_share = 0.5;
    const auto records = generate_all(profile, options);
    std::map<std::string, int> statuses;
    for (const auto& m : records) {
        ++statuses[std::string(to_string(m.status))];
        if (m.status == RequestStatus::http(429) || m.status == RequestStatus::http(503)) {
            EXPECT_EQ(m.http_status, m.status.http_code());
            EXPECT_FALSE(m.t.first_token);
            EXPECT_FALSE(m.output_tokens);
            EXPECT_EQ(*m.t.done, 100'000'000);  // the error answers after the network delay
        }
        if ((m.status == RequestStatus::connection_error ||
             m.status == RequestStatus::protocol_error) &&
            m.labels.stream) {
            // Cut mid-stream: some tokens arrived, counted by estimate, fewer than asked.
            EXPECT_EQ(m.token_source, TokenSource::estimate);
            EXPECT_LT(*m.output_tokens, 40);
            EXPECT_TRUE(m.t.first_token);
        }
        if (m.ok()) {
            EXPECT_EQ(*m.output_tokens, 40);
            EXPECT_EQ(m.token_source, TokenSource::usage);
        }
    }
    const double n = static_cast<double>(records.size());
    for (const char* status : {"http_429", "http_503", "connection_error", "protocol_error"}) {
        EXPECT_NEAR(statuses[status], 0.1 * n, 0.03 * n) << status;
    }
    EXPECT_NEAR(statuses["ok"], 0.6 * n, 0.04 * n);
}

TEST(History, RefusesOptionsThatCannotGenerate) {
    const Profile profile = load_profile("instant", kProfilesDir);
    HistoryOptions options = hour_of_chat(kWedUtc);
    options.tasks.clear();
    EXPECT_THROW(HistoryGenerator(profile, options), std::invalid_argument);
    options = hour_of_chat(kWedUtc);
    options.rate_per_s = -1;
    EXPECT_THROW(HistoryGenerator(profile, options), std::invalid_argument);
    options = hour_of_chat(kWedUtc);
    options.tasks[0].prompt_tokens_min = 100;
    EXPECT_THROW(HistoryGenerator(profile, options), std::invalid_argument);
    options = hour_of_chat(kWedUtc);
    options.to_us = options.from_us - 1;
    EXPECT_THROW(HistoryGenerator(profile, options), std::invalid_argument);
    // A zero rate or an empty window is valid and empty.
    options = hour_of_chat(kWedUtc);
    options.rate_per_s = 0;
    EXPECT_TRUE(generate_all(profile, options).empty());
}

}  // namespace
}  // namespace tokenradar::sim

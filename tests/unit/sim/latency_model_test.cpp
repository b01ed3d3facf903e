#include <tokenradar/sim/latency_model.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <thread>
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

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// metrics.md: TPOT = (t_last - t_first) / (N - 1), decode tokens/s = 1000 / TPOT.
double decode_tokens_per_s(const RequestPlan& plan) {
    const auto n = static_cast<double>(plan.output_tokens);
    const double tpot_ms =
        static_cast<double>(plan.token_offsets_ns.back() - plan.token_offsets_ns.front()) / 1e6 /
        (n - 1);
    return 1000.0 / tpot_ms;
}

// A ~50-token prompt (200 bytes) whose first bytes differ per request, so the prefix cache
// never hits: the gen-500 workload the profile medians are defined for.
std::string prompt_of_50_tokens(int i) {
    std::string s = fmt::format("{:08d} ", i);
    while (s.size() < 200) s += "write a long answer about latency. ";
    s.resize(200);
    return s;
}

struct Reference {
    const char* name;
    double ttft_ms;
    double tokens_per_s;
};

void PrintTo(const Reference& r, std::ostream* os) { *os << r.name; }

class ShippedProfileMedians : public ::testing::TestWithParam<Reference> {};

TEST_P(ShippedProfileMedians, WithinThreePercentAtMultiplierOne) {
    const Reference ref = GetParam();
    LatencyModel model(load_profile(ref.name, kProfilesDir));
    std::vector<double> ttft;
    std::vector<double> speed;
    for (int i = 0; i < 2000; ++i) {
        const std::string prompt = prompt_of_50_tokens(i);
        PlanInput in;
        in.prompt_text = prompt;
        in.max_tokens = 100;
        in.wall_time_us = kNy3am;
        in.request_seed = static_cast<std::uint64_t>(i);
        in.overrides.fault = FaultKind::none;  // faults are tested on their own
        const RequestPlan plan = model.plan(in);
        ASSERT_EQ(plan.prompt_tokens, 50);
        ASSERT_EQ(plan.cached_prompt_tokens, 0);
        ASSERT_EQ(plan.peak_multiplier, 1.0);
        ASSERT_EQ(plan.output_tokens, 100);
        ttft.push_back(static_cast<double>(plan.ttft_ns) / 1e6);
        speed.push_back(decode_tokens_per_s(plan));
    }
    fmt::print("{}: median TTFT {:.1f} ms, median decode {:.2f} tokens/s\n", ref.name, median(ttft),
               median(speed));
    EXPECT_NEAR(median(ttft), ref.ttft_ms, 0.03 * ref.ttft_ms);
    EXPECT_NEAR(median(speed), ref.tokens_per_s, 0.03 * ref.tokens_per_s);
}

INSTANTIATE_TEST_SUITE_P(Profiles, ShippedProfileMedians,
                         ::testing::Values(Reference{"gpt-4o-like", 280, 42},
                                           Reference{"claude-3.5-sonnet-like", 310, 38},
                                           Reference{"gemini-1.5-pro-like", 620, 29},
                                           Reference{"llama-3-70b-like", 410, 35},
                                           Reference{"fixed", 250, 50}),
                         [](const auto& param_info) {
                             std::string n = param_info.param.name;
                             std::replace_if(
                                 n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
                             return n;
                         });

TEST(LatencyModel, FixedIsExact) {
    LatencyModel model(load_profile("fixed", kProfilesDir));
    for (int i = 0; i < 20; ++i) {
        const std::string prompt = prompt_of_50_tokens(i);  // outlives the string_view
        PlanInput in;
        in.prompt_text = prompt;
        in.max_tokens = 50;
        in.wall_time_us = kNyNoon;
        const RequestPlan plan = model.plan(in);
        EXPECT_EQ(plan.ttft_ns, 250'000'000);
        ASSERT_EQ(plan.output_tokens, 50);
        ASSERT_EQ(plan.chunks.size(), 50u);
        for (std::size_t t = 0; t < 50; ++t) {
            EXPECT_EQ(plan.token_offsets_ns[t], static_cast<std::int64_t>(t) * 20'000'000);
            EXPECT_EQ(plan.chunks[t].offset_ns, plan.token_offsets_ns[t]);
        }
        EXPECT_EQ(plan.fault.kind, FaultKind::none);
        EXPECT_EQ(plan.finish_reason, FinishReason::length);
    }
}

TEST(LatencyModel, InstantHasNoDelays) {
    LatencyModel model(load_profile("instant", kProfilesDir));
    PlanInput in;
    in.prompt_text = "hi";
    const RequestPlan plan = model.plan(in);
    EXPECT_EQ(plan.ttft_ns, 0);
    EXPECT_EQ(plan.output_tokens, 500);
    EXPECT_EQ(plan.chunks.size(), 500u);  // 1 token per chunk
    for (auto t : plan.token_offsets_ns) EXPECT_EQ(t, 0);
}

TEST(LatencyModel, PeakCurveMultipliesTtftAndGaps) {
    LatencyModel model(load_profile("gemini-1.5-pro-like", kProfilesDir));
    PlanInput in;
    in.prompt_tokens = 50;
    in.max_tokens = 20;
    in.request_seed = 99;
    in.overrides.fault = FaultKind::none;
    in.wall_time_us = kNy3am;
    const RequestPlan night = model.plan(in);
    in.wall_time_us = kNyNoon;
    const RequestPlan noon = model.plan(in);
    in.wall_time_us = kNyNoon + 3 * 24 * kUsPerHour;  // Saturday noon: weekdays_only
    const RequestPlan saturday = model.plan(in);
    EXPECT_EQ(night.peak_multiplier, 1.0);
    EXPECT_DOUBLE_EQ(noon.peak_multiplier, 1.6);
    EXPECT_EQ(saturday.peak_multiplier, 1.0);
    // Same seed, same draws: the only difference is the factor.
    EXPECT_NEAR(static_cast<double>(noon.ttft_ns), 1.6 * static_cast<double>(night.ttft_ns), 2);
    EXPECT_NEAR(static_cast<double>(noon.token_offsets_ns.back()),
                1.6 * static_cast<double>(night.token_offsets_ns.back()), 2);
    EXPECT_EQ(saturday.ttft_ns, night.ttft_ns);
}

TEST(LatencyModel, PrefixCacheHitsSkipPrefill) {
    LatencyModel model(load_profile("llama-3-70b-like", kProfilesDir));
    const std::string system_prompt(16'000, 's');  // 4000 tokens, 250 blocks of 16
    PlanInput in;
    in.request_seed = 5;
    in.overrides.fault = FaultKind::none;
    const std::string first = system_prompt + "question one";
    in.prompt_text = first;
    const RequestPlan cold = model.plan(in);
    const std::string second = system_prompt + "question two!";
    in.prompt_text = second;
    const RequestPlan warm = model.plan(in);
    EXPECT_EQ(cold.prompt_tokens, 4003);
    EXPECT_EQ(cold.cached_prompt_tokens, 0);
    EXPECT_EQ(warm.prompt_tokens, 4004);
    EXPECT_EQ(warm.cached_prompt_tokens, 4000);
    // 60 ms per 1k uncached tokens: 4003 -> 4 uncached tokens saves about 240 ms.
    EXPECT_NEAR(static_cast<double>(cold.ttft_ns - warm.ttft_ns) / 1e6, 60.0 * 3.999 / 1, 0.1);
}

TEST(LatencyModel, RejectedRequestsDoNotFillTheCache) {
    LatencyModel model(load_profile("llama-3-70b-like", kProfilesDir));
    const std::string prompt(1'000, 'p');
    PlanInput in;
    in.prompt_text = prompt;
    in.overrides.fault = FaultKind::http_503;
    EXPECT_EQ(model.plan(in).cached_prompt_tokens, 0);
    in.overrides.fault = FaultKind::none;
    EXPECT_EQ(model.plan(in).cached_prompt_tokens, 0);
    EXPECT_EQ(model.plan(in).cached_prompt_tokens, 240);  // 15 full blocks of 16 tokens
}

TEST(LatencyModel, FaultsHappenAtTheirRates) {
    LatencyModel model(parse_profile(
        "name = \"faulty\"\nmodels = [\"m\"]\n[decode]\ntokens_per_s = 100\n"
        "tokens_per_chunk = [1, 3]\n[faults]\nrate_429 = 0.05\nrate_500 = 0.04\nrate_503 = "
        "0.03\nrate_disconnect = 0.06\nrate_stall = 0.02\nstall_ms = 700\nrate_malformed = 0.05\n",
        "faulty.toml"));
    constexpr int kRuns = 20'000;
    std::map<FaultKind, int> seen;
    for (int i = 0; i < kRuns; ++i) {
        PlanInput in;
        in.prompt_tokens = 10;
        in.max_tokens = 30;
        const RequestPlan plan = model.plan(in);
        ++seen[plan.fault.kind];
        if (plan.fault.is_http_error()) {
            EXPECT_EQ(plan.output_tokens, 0);
            EXPECT_TRUE(plan.tokens.empty());
        } else if (plan.fault.kind != FaultKind::none) {
            ASSERT_GT(plan.fault.at_token, 0);  // mid-stream: after the first chunk
            ASSERT_LT(plan.fault.at_token, 30);
            const bool boundary = std::any_of(plan.chunks.begin(), plan.chunks.end(), [&](auto& c) {
                return c.first_token == plan.fault.at_token;
            });
            EXPECT_TRUE(boundary);
        }
        if (plan.fault.kind == FaultKind::stall) {
            EXPECT_EQ(plan.fault.stall_ns, 700'000'000);
            const auto k = static_cast<std::size_t>(plan.fault.at_token);
            EXPECT_GE(plan.token_offsets_ns[k] - plan.token_offsets_ns[k - 1], 700'000'000);
        }
    }
    for (auto [kind, rate] : {std::pair{FaultKind::http_429, 0.05},
                              {FaultKind::http_500, 0.04},
                              {FaultKind::http_503, 0.03},
                              {FaultKind::disconnect, 0.06},
                              {FaultKind::stall, 0.02},
                              {FaultKind::malformed, 0.05},
                              {FaultKind::none, 0.75}}) {
        const double sd = std::sqrt(kRuns * rate * (1 - rate));
        EXPECT_NEAR(seen[kind], kRuns * rate, 4.5 * sd) << to_string(kind);
    }
}

TEST(LatencyModel, OverridesAreExact) {
    LatencyModel model(load_profile("gpt-4o-like", kProfilesDir));
    PlanInput in;
    in.prompt_tokens = 50;
    in.wall_time_us = kNyNoon;
    in.overrides.ttft_ms = 123;
    in.overrides.tpot_ms = 7;
    in.overrides.tokens_per_chunk = 4;
    in.overrides.output_tokens = 10;
    in.overrides.fault = FaultKind::none;
    const RequestPlan plan = model.plan(in);
    EXPECT_EQ(plan.ttft_ns, 123'000'000);
    EXPECT_EQ(plan.output_tokens, 10);
    EXPECT_EQ(plan.finish_reason, FinishReason::stop);
    ASSERT_EQ(plan.chunks.size(), 3u);
    EXPECT_EQ(plan.chunks[1].offset_ns, 7 * 7'000'000);  // chunk ends at token 7
    EXPECT_EQ(plan.token_offsets_ns.back(), 9 * 7'000'000);

    in.overrides = {};
    in.overrides.tokens_per_s = 100;
    in.overrides.fault = FaultKind::disconnect;
    in.overrides.fault_at_token = 5;
    in.overrides.tokens_per_chunk = 1;
    in.max_tokens = 8;
    const RequestPlan cut = model.plan(in);
    EXPECT_EQ(cut.fault.kind, FaultKind::disconnect);
    EXPECT_EQ(cut.fault.at_token, 5);
    EXPECT_EQ(cut.token_offsets_ns[1], 10'000'000);

    in.overrides = {};
    in.overrides.fault = FaultKind::stall;
    in.overrides.stall_ms = 250;
    in.overrides.fault_at_token = 0;
    in.overrides.ttft_ms = 100;
    const RequestPlan stalled_first = model.plan(in);
    EXPECT_EQ(stalled_first.ttft_ns, 350'000'000);

    in.overrides = {};
    in.overrides.fault = FaultKind::http_429;
    const RequestPlan limited = model.plan(in);
    EXPECT_EQ(limited.fault.http_status(), 429);
    EXPECT_EQ(limited.output_tokens, 0);
}

TEST(LatencyModel, HonoursMaxTokensAndIsReproducible) {
    LatencyModel a(load_profile("claude-3.5-sonnet-like", kProfilesDir));
    LatencyModel b(load_profile("claude-3.5-sonnet-like", kProfilesDir));
    PlanInput in;
    in.prompt_tokens = 50;
    in.max_tokens = 37;
    in.request_seed = 1234;
    in.overrides.output_tokens = 1000;  // still capped by max_tokens
    const RequestPlan pa = a.plan(in);
    const RequestPlan pb = b.plan(in);
    EXPECT_EQ(pa.output_tokens, 37);
    EXPECT_EQ(pa.finish_reason, FinishReason::length);
    EXPECT_EQ(pa.tokens, pb.tokens);
    EXPECT_EQ(pa.token_offsets_ns, pb.token_offsets_ns);
    EXPECT_EQ(pa.ttft_ns, pb.ttft_ns);
    std::int64_t sum = 0;
    for (const Chunk& c : pa.chunks) sum += c.token_count;
    EXPECT_EQ(sum, 37);
    in.request_seed = 1235;
    EXPECT_NE(a.plan(in).tokens, pa.tokens);

    in.max_tokens.reset();
    in.overrides = {};
    in.overrides.fault = FaultKind::none;
    EXPECT_EQ(a.plan(in).output_tokens, 500);  // default_max_tokens
}

TEST(LatencyModel, NaturalStopBeforeMaxTokens) {
    LatencyModel model(
        parse_profile("name = \"s\"\nmodels = [\"m\"]\n[decode]\n"
                      "stop_probability = 0.01\n",
                      "s.toml"));
    int stops = 0;
    double total = 0;
    for (int i = 0; i < 2000; ++i) {
        PlanInput in;
        in.max_tokens = 1000;
        const RequestPlan plan = model.plan(in);
        ASSERT_GE(plan.output_tokens, 1);
        ASSERT_LE(plan.output_tokens, 1000);
        stops += plan.finish_reason == FinishReason::stop ? 1 : 0;
        total += static_cast<double>(plan.output_tokens);
        ASSERT_EQ(static_cast<std::int64_t>(plan.tokens.size()), plan.output_tokens);
    }
    EXPECT_GT(stops, 1950);
    EXPECT_NEAR(total / 2000, 100, 10);  // geometric mean length 1/p
}

TEST(LatencyModel, ExtremeProfilesStayBounded) {
    LatencyModel model(parse_profile(
        "name = \"x\"\nmodels = [\"m\"]\n[ttft]\nbase_ms = 600000\nnoise_median_ms = 600000\n"
        "noise_sigma = 3\n[decode]\ntokens_per_s = 0.01\nrequest_sigma = 3\ntoken_jitter = 10\n",
        "x.toml"));
    for (int i = 0; i < 200; ++i) {
        PlanInput in;
        in.max_tokens = 1000;
        const RequestPlan plan = model.plan(in);
        ASSERT_GT(plan.ttft_ns, 0);
        ASSERT_LE(plan.ttft_ns, 3'600'000'000'000LL);
        ASSERT_TRUE(std::is_sorted(plan.token_offsets_ns.begin(), plan.token_offsets_ns.end()));
        ASSERT_GE(plan.token_offsets_ns.front(), 0);
        ASSERT_LE(plan.token_offsets_ns.back(), 999 * 600'000'000'000LL);
    }
}

TEST(LatencyModel, SeededPlansDoNotDependOnThreads) {
    LatencyModel model(load_profile("gpt-4o-like", kProfilesDir));
    auto run = [&](std::uint64_t seed) {
        PlanInput in;
        in.prompt_tokens = 50;
        in.max_tokens = 50;
        in.request_seed = seed;
        return model.plan(in).token_offsets_ns;
    };
    const auto expected = run(77);
    std::vector<std::thread> threads;
    std::vector<int> same(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                run(static_cast<std::uint64_t>(i));
                same[static_cast<std::size_t>(t)] += run(77) == expected ? 1 : 0;
            }
        });
    }
    for (auto& th : threads) th.join();
    for (int s : same) EXPECT_EQ(s, 200);
}

// ---- Heavy tail and the replica's condition -------------------------------------------------

constexpr std::string_view kNoisy =
    "name = \"noisy\"\nmodels = [\"m\"]\n[ttft]\nbase_ms = 200\nnoise_median_ms = 50\n"
    "noise_sigma = 0.5\n[decode]\ntokens_per_s = 40\nrequest_sigma = 0.2\ntoken_jitter = 0.3\n"
    "tokens_per_chunk = [1, 3]\n";

PlanInput seeded(std::uint64_t seed, std::int64_t max_tokens = 20) {
    PlanInput in;
    in.prompt_tokens = 50;
    in.max_tokens = max_tokens;
    in.request_seed = seed;
    return in;
}

TEST(LatencyModel, TailHitsItsRateAndMultipliesTtftExactlyLeavingOtherDrawsAlone) {
    // Same name, so same seed: the plain model draws what the tailed one would without [tail].
    LatencyModel plain(parse_profile(kNoisy, "noisy.toml"));
    LatencyModel tailed(parse_profile(
        std::string(kNoisy) + "[tail]\nrate = 0.05\nttft_multiplier = 8\n", "noisy.toml"));
    constexpr int kRuns = 10'000;
    int in_tail = 0;
    for (int i = 0; i < kRuns; ++i) {
        const RequestPlan a = plain.plan(seeded(static_cast<std::uint64_t>(i)));
        const RequestPlan b = tailed.plan(seeded(static_cast<std::uint64_t>(i)));
        ASSERT_FALSE(a.tail);
        ASSERT_EQ(a.tail_wait_ns, 0);
        if (b.tail) {
            ++in_tail;
            ASSERT_EQ(b.ttft_ns, 8 * a.ttft_ns) << i;
            ASSERT_EQ(b.tail_wait_ns, 7 * a.ttft_ns) << i;
        } else {
            ASSERT_EQ(b.ttft_ns, a.ttft_ns) << i;
            ASSERT_EQ(b.tail_wait_ns, 0);
        }
        // Its own stream: text, length, speed, gaps and chunks are the plain model's.
        ASSERT_EQ(b.tokens, a.tokens);
        ASSERT_EQ(b.token_offsets_ns, a.token_offsets_ns);
        ASSERT_EQ(b.chunks.size(), a.chunks.size());
        ASSERT_EQ(b.answer_seed, a.answer_seed);
    }
    const double sd = std::sqrt(kRuns * 0.05 * 0.95);  // binomial
    EXPECT_NEAR(in_tail, kRuns * 0.05, 4.5 * sd);
}

TEST(LatencyModel, TailHeaderDecidesAndAnExactTtftDrawsNoTail) {
    LatencyModel model(
        parse_profile("name = \"t\"\nmodels = [\"m\"]\n[ttft]\nbase_ms = 100\n[tail]\nrate = 1\n"
                      "ttft_multiplier = 4\n",
                      "t.toml"));
    PlanInput in = seeded(1);
    EXPECT_TRUE(model.plan(in).tail) << "rate 1";
    EXPECT_EQ(model.plan(in).ttft_ns, 400'000'000);
    in.overrides.tail = TailMode::never;
    EXPECT_FALSE(model.plan(in).tail);
    EXPECT_EQ(model.plan(in).ttft_ns, 100'000'000);

    in.overrides.tail.reset();
    in.overrides.ttft_ms = 30;
    EXPECT_FALSE(model.plan(in).tail) << "x-sim-ttft-ms is exact";
    EXPECT_EQ(model.plan(in).ttft_ns, 30'000'000);
    in.overrides.tail = TailMode::always;
    EXPECT_EQ(model.plan(in).ttft_ns, 120'000'000);
    EXPECT_EQ(model.plan(in).tail_wait_ns, 90'000'000);

    LatencyModel none(parse_profile("name = \"t\"\nmodels = [\"m\"]\n", "t.toml"));
    in.overrides.ttft_ms.reset();
    EXPECT_TRUE(none.plan(in).tail) << "always, even at rate 0";
    EXPECT_EQ(none.plan(in).tail_wait_ns, 0) << "multiplier 1 adds nothing";
}

TEST(LatencyModel, ConditionMultipliesTtftAndEveryGapExactlyOverridesToo) {
    LatencyModel model(load_profile("fixed", kProfilesDir));
    PlanInput in = seeded(5, 10);
    const RequestPlan normal = model.plan(in);
    in.condition = Condition{3, 2, 0};
    const RequestPlan slow = model.plan(in);
    EXPECT_EQ(slow.ttft_ns, 750'000'000);
    ASSERT_EQ(slow.token_offsets_ns.size(), 10u);
    for (std::size_t t = 0; t < 10; ++t) {
        EXPECT_EQ(slow.token_offsets_ns[t], static_cast<std::int64_t>(t) * 40'000'000);
    }
    EXPECT_EQ(slow.tokens, normal.tokens);
    EXPECT_EQ(slow.condition.ttft_multiplier, 3);
    EXPECT_FALSE(slow.tail);

    in.overrides.ttft_ms = 100;
    in.overrides.tpot_ms = 5;
    const RequestPlan overridden = model.plan(in);
    EXPECT_EQ(overridden.ttft_ns, 300'000'000);
    EXPECT_EQ(overridden.token_offsets_ns[1], 10'000'000);
}

TEST(LatencyModel, ConditionErrorRateAnswers503AtItsRate) {
    LatencyModel model(parse_profile(kNoisy, "noisy.toml"));
    constexpr int kRuns = 10'000;
    int failed = 0;
    for (int i = 0; i < kRuns; ++i) {
        PlanInput in = seeded(static_cast<std::uint64_t>(i));
        const RequestPlan plain = model.plan(in);
        in.condition.error_rate = 0.3;
        const RequestPlan plan = model.plan(in);
        if (plan.condition_error) {
            ++failed;
            ASSERT_EQ(plan.fault.kind, FaultKind::http_503);
            ASSERT_EQ(plan.output_tokens, 0);
            ASSERT_EQ(plan.ttft_ns, 200'000'000) << "after the network delay, as other 503s";
        } else {
            ASSERT_EQ(plan.ttft_ns, plain.ttft_ns) << "its own stream";
            ASSERT_EQ(plan.fault.kind, FaultKind::none);
        }
    }
    const double sd = std::sqrt(kRuns * 0.3 * 0.7);
    EXPECT_NEAR(failed, kRuns * 0.3, 4.5 * sd);

    PlanInput all = seeded(1);
    all.overrides.fault = FaultKind::none;
    all.condition.error_rate = 1;
    EXPECT_EQ(model.plan(all).fault.kind, FaultKind::http_503) << "whatever the request asked";
    all.condition.error_rate = 0;
    EXPECT_FALSE(model.plan(all).condition_error);
}

}  // namespace
}  // namespace tokenradar::sim

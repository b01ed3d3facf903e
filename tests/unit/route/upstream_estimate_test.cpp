#include <tokenradar/route/upstream_estimate.hpp>

#include <gtest/gtest.h>

namespace tokenradar::route {
namespace {

UpstreamLimits limits(double weight, std::int64_t max_in_flight = 0, std::int64_t max_tpm = 0) {
    UpstreamLimits l;
    l.weight = weight;
    l.max_in_flight = max_in_flight;
    l.max_tokens_per_minute = max_tpm;
    return l;
}

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kS = 1'000 * kMs;

// One successful attempt observed at `now` with this TTFT.
void ok(UpstreamEstimate& e, std::int64_t now, std::int64_t ttft, std::int64_t prompt = 0) {
    e.started(now);
    e.first_token(now + ttft, ttft, prompt);
    e.finished(now + ttft, 10, 0);
}

TEST(UpstreamEstimate, PeakEwmaTakesASlowdownAtOnceAndARecoverySlowly) {
    UpstreamEstimate e({}, {});
    EXPECT_FALSE(e.measured());
    ok(e, 0, 200 * kMs);
    EXPECT_DOUBLE_EQ(e.estimate_ns(200 * kMs), 200.0 * kMs);
    ok(e, 1 * kS, 600 * kMs);  // slower: taken at once
    EXPECT_DOUBLE_EQ(e.estimate_ns(1 * kS + 600 * kMs), 600.0 * kMs);
    ok(e, 1 * kS + 600 * kMs, 200 * kMs);  // faster: averaged in by the elapsed time
    const double after = e.estimate_ns(1 * kS + 800 * kMs);
    EXPECT_GT(after, 500.0 * kMs);
    EXPECT_LT(after, 600.0 * kMs);
}

TEST(UpstreamEstimate, TheEstimateDecaysWhileNothingIsObservedSoASlowUpstreamIsRetried) {
    UpstreamEstimate e({}, {});
    ok(e, 0, 900 * kMs);
    const double at = e.estimate_ns(900 * kMs);
    // decay 10 s: after ln(3) * 10 s idle a third is left.
    EXPECT_NEAR(e.estimate_ns(900 * kMs + 10'986 * kMs), at / 3, at * 0.001);
}

TEST(UpstreamEstimate, TtftIsNormalisedByThePromptSoALongPromptIsNotASlowUpstream) {
    UpstreamEstimate a({}, {});
    UpstreamEstimate b({}, {});
    ok(a, 0, 200 * kMs, 0);
    ok(b, 0, 400 * kMs, 1024);  // twice the TTFT for a prompt of one extra unit
    EXPECT_DOUBLE_EQ(a.estimate_ns(200 * kMs), b.estimate_ns(200 * kMs));
}

TEST(UpstreamEstimate, CostGrowsWithInFlightAndShrinksWithWeight) {
    UpstreamEstimate light({}, limits(1.0));
    UpstreamEstimate heavy({}, limits(2.0));
    ok(light, 0, 100 * kMs);
    ok(heavy, 0, 100 * kMs);
    const std::int64_t now = 100 * kMs;
    EXPECT_DOUBLE_EQ(light.cost(now, 0), 100.0 * kMs);
    EXPECT_DOUBLE_EQ(heavy.cost(now, 0), 50.0 * kMs);
    light.started(now);
    light.started(now);
    EXPECT_DOUBLE_EQ(light.cost(now, 0), 300.0 * kMs);
    UpstreamEstimate fresh({}, {});
    EXPECT_DOUBLE_EQ(fresh.cost(now, 42.0), 42.0);  // unmeasured: the caller's figure
}

TEST(UpstreamEstimate, FailuresRaiseTheCostAndOpenTheBreakerWhichProbesBack) {
    EstimatePolicy policy;
    policy.breaker_failures = 3;
    policy.breaker_cooldown_ns = 5 * kS;
    UpstreamEstimate e(policy, {});
    ok(e, 0, 100 * kMs);
    std::int64_t now = 1 * kS;
    for (int i = 0; i < 2; ++i) {
        e.started(now);
        e.failed(now, 1 * kMs);
    }
    EXPECT_GE(e.estimate_ns(now), 1.0 * kS);  // at least the penalty
    EXPECT_EQ(e.snapshot(now).breaker, BreakerState::closed);
    e.started(now);
    e.failed(now, 1 * kMs);
    EXPECT_EQ(e.snapshot(now).breaker, BreakerState::open);
    EXPECT_FALSE(e.available(now + 4 * kS));
    // After the cooldown one probe may go; while it is out nobody else.
    now += 5 * kS;
    EXPECT_TRUE(e.available(now));
    e.started(now);
    EXPECT_EQ(e.snapshot(now).breaker, BreakerState::half_open);
    EXPECT_FALSE(e.available(now));
    // The probe fails: open again, for twice as long.
    e.failed(now, 1 * kMs);
    EXPECT_FALSE(e.available(now + 9 * kS));
    EXPECT_TRUE(e.available(now + 10 * kS));
    now += 10 * kS;
    e.started(now);
    e.first_token(now + 50 * kMs, 50 * kMs, 0);  // the probe answers: closed
    e.finished(now + 60 * kMs, 10, 0);
    EXPECT_EQ(e.snapshot(now).breaker, BreakerState::closed);
    EXPECT_TRUE(e.available(now));
    EXPECT_EQ(e.snapshot(now).breaker_opens, 2u);
    EXPECT_EQ(e.snapshot(now).failures, 4u);
}

TEST(UpstreamEstimate, AWholeAnswerClosesTheBreakerWithoutATtftSample) {
    EstimatePolicy policy;
    policy.breaker_failures = 1;
    UpstreamEstimate e(policy, {});
    e.started(0);
    e.failed(0, 1);
    const std::int64_t later = policy.breaker_cooldown_ns;
    e.started(later);
    e.answered(later + 5 * kS);  // a 5 s whole answer: the probe succeeded
    e.finished(later + 5 * kS, 100, 0);
    EXPECT_EQ(e.snapshot(later + 5 * kS).breaker, BreakerState::closed);
    EXPECT_EQ(e.ttft_quantile_ns(0.5, 0, 1), 0);  // no sample taken of its 5 s
}

TEST(UpstreamEstimate, AnAbandonedProbeLetsAnotherRequestProbe) {
    EstimatePolicy policy;
    policy.breaker_failures = 1;
    UpstreamEstimate e(policy, {});
    e.started(0);
    e.failed(0, 1);
    const std::int64_t later = policy.breaker_cooldown_ns;
    e.started(later);
    EXPECT_FALSE(e.available(later));
    e.abandoned();
    EXPECT_TRUE(e.available(later));
}

TEST(UpstreamEstimate, CapsOnInFlightAndTokensPerMinute) {
    UpstreamEstimate e({}, limits(1.0, 2, 1000));
    e.started(0);
    EXPECT_TRUE(e.available(0));
    e.started(0);
    EXPECT_FALSE(e.available(0));
    e.finished(1 * kS, 600, 0);
    EXPECT_TRUE(e.available(1 * kS));
    e.finished(2 * kS, 500, 0);
    EXPECT_EQ(e.snapshot(2 * kS).tokens_last_minute, 1100);
    EXPECT_FALSE(e.available(2 * kS));           // 1,100 tokens in the last minute
    EXPECT_TRUE(e.available(2 * kS + 60 * kS));  // a minute later they are gone
    EXPECT_EQ(e.snapshot(70 * kS).tokens_last_minute, 0);
}

TEST(UpstreamEstimate, TtftQuantileOfRecentSamplesScaledToThePrompt) {
    UpstreamEstimate e({}, {});
    EXPECT_EQ(e.ttft_quantile_ns(0.95, 0, 20), 0);
    for (int i = 1; i <= 100; ++i) ok(e, i * kS, i * kMs);
    EXPECT_EQ(e.ttft_quantile_ns(0.95, 0, 20), 95 * kMs);
    EXPECT_EQ(e.ttft_quantile_ns(0.95, 1024, 20), 190 * kMs);
    EXPECT_EQ(e.ttft_quantile_ns(0.9, 0, 20), 90 * kMs);
    EXPECT_EQ(e.ttft_quantile_ns(0.95, 0, 101), 0);  // too few samples
}

TEST(UpstreamEstimate, HedgeCountersAndTpot) {
    UpstreamEstimate e({}, {});
    e.hedge_sent();
    e.hedge_sent();
    e.hedge_won();
    e.hedge_lost();
    e.started(0);
    e.first_token(10, 10, 0);
    e.finished(20, 5, 20.0 * kMs);
    const UpstreamSnapshot s = e.snapshot(20);
    EXPECT_EQ(s.hedges_sent, 2u);
    EXPECT_EQ(s.hedges_won, 1u);
    EXPECT_EQ(s.hedges_lost, 1u);
    EXPECT_DOUBLE_EQ(s.tpot_ms, 20.0);
    EXPECT_EQ(s.in_flight, 0);
    EXPECT_EQ(s.attempts, 1u);
}

}  // namespace
}  // namespace tokenradar::route

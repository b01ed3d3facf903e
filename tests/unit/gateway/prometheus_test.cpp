#include <tokenradar/gateway/prometheus.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <string>

namespace tokenradar::gateway {
namespace {

using namespace std::string_literals;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(GatewayMetrics, LabelValuesAreEscapedAsTheExpositionFormatSays) {
    EXPECT_EQ(prometheus_labels({{"model", "a\"b\\c\nd"}, {"status", "ok"}}),
              R"(model="a\"b\\c\nd",status="ok")");
    EXPECT_EQ(prometheus_labels({{"model", "\"\"\\"}}), R"(model="\"\"\\")");
    EXPECT_EQ(prometheus_labels({{"model", ""}}), R"(model="")");
    EXPECT_EQ(prometheus_labels({}), "");
}

// An attempt of `provider`/`model` that ended with `status` after 20 ms; a stream when
// `first_token_ms` is set.
Measurement attempt(std::string provider, std::string model, std::string status,
                    std::optional<std::int64_t> first_token_ms = std::nullopt) {
    Measurement m;
    m.labels.provider = std::move(provider);
    m.labels.model = std::move(model);
    m.labels.route = Route::primary;
    m.status = parse_request_status(status).value();
    m.t.send = 1'000'000'000;
    m.t.done = m.t.send + 20'000'000;
    if (first_token_ms) m.t.first_token = m.t.send + *first_token_ms * 1'000'000;
    m.output_tokens = 5;
    return m;
}

TEST(GatewayMetrics, AnAttemptsSeriesAreFoundAgainAndAppearOnlyOnceObserved) {
    Metrics metrics;
    metrics.observe_attempt(attempt("p", "m", "ok"));  // whole response: no first token
    std::string text = metrics.render();
    EXPECT_THAT(
        text,
        HasSubstr(
            R"(gen_ai_server_request_duration_seconds_count{provider="p",model="m",status="ok"} 1)"));
    EXPECT_THAT(text, Not(HasSubstr("gen_ai_server_time_to_first_token_seconds_count")));
    EXPECT_THAT(text, Not(HasSubstr(R"(type="input")")));  // no prompt tokens reported

    metrics.observe_attempt(attempt("p", "m", "ok", 7));
    metrics.observe_attempt(attempt("p", "m", "http_500"));
    text = metrics.render();
    EXPECT_THAT(
        text,
        HasSubstr(
            R"(gen_ai_server_request_duration_seconds_count{provider="p",model="m",status="ok"} 2)"));
    EXPECT_THAT(
        text,
        HasSubstr(
            R"(gen_ai_server_time_to_first_token_seconds_count{provider="p",model="m",status="ok"} 1)"));
    EXPECT_THAT(
        text,
        HasSubstr(
            R"(gen_ai_server_request_duration_seconds_count{provider="p",model="m",status="http_500"} 1)"));
    EXPECT_THAT(text,
                HasSubstr(R"(gen_ai_usage_tokens_total{provider="p",model="m",type="output"} 15)"));
    EXPECT_THAT(
        text,
        HasSubstr(
            R"(tokenradar_upstream_attempts_total{provider="p",model="m",status="ok",route="primary"} 2)"));
}

TEST(GatewayMetrics, LabelSetsThatConcatenateAlikeStayApart) {
    // Joined with any separator byte, these two would be one cache key.
    Metrics metrics;
    metrics.observe_attempt(attempt("a\0b"s, "c", "ok"));
    metrics.observe_attempt(attempt("a", "b\0c"s, "ok"));
    const std::string text = metrics.render();
    EXPECT_THAT(
        text,
        HasSubstr("gen_ai_usage_tokens_total{provider=\"a\0b\",model=\"c\",type=\"output\"} 5"s));
    EXPECT_THAT(
        text,
        HasSubstr("gen_ai_usage_tokens_total{provider=\"a\",model=\"b\0c\",type=\"output\"} 5"s));
}

TEST(GatewayMetrics, HistogramQuantilesInterpolateWithinTheirBucket) {
    constexpr std::array<double, 3> bounds{0.1, 0.2, 0.4};
    HistogramSeries h(bounds);
    EXPECT_FALSE(h.quantile(0.5));
    for (int i = 0; i < 4; ++i) h.observe(0.15);  // (0.1, 0.2]
    EXPECT_DOUBLE_EQ(*h.quantile(0.5), 0.15);     // rank 2 of 4 in that bucket
    EXPECT_DOUBLE_EQ(*h.quantile(1.0), 0.2);
    h.observe(0.05);  // [0, 0.1]
    h.observe(9.0);   // +Inf: reported as the highest bound
    EXPECT_DOUBLE_EQ(*h.quantile(0.99), 0.4);
    EXPECT_NEAR(*h.quantile(0.1), 0.06, 1e-12);  // rank 0.6 of the first bucket's 1
    EXPECT_EQ(h.count(), 6u);
    EXPECT_NEAR(h.sum_seconds(), 4 * 0.15 + 0.05 + 9.0, 1e-9);
}

TEST(GatewayMetrics, TtftIsSplitByProviderCacheHitForOkStreamsOnly) {
    Metrics metrics;
    Measurement cold = attempt("p", "m", "ok", 300);
    cold.cached_prompt_tokens = 0;
    Measurement warm = attempt("p", "m", "ok", 100);
    warm.cached_prompt_tokens = 2048;
    Measurement unreported = attempt("p", "m", "ok", 500);  // no cached count: a miss
    metrics.observe_attempt(cold);
    metrics.observe_attempt(warm);
    metrics.observe_attempt(unreported);
    metrics.observe_attempt(attempt("p", "m", "ok"));            // whole: no TTFT
    metrics.observe_attempt(attempt("p", "m", "http_500", 50));  // not ok
    metrics.observe_attempt(attempt("a", "z", "ok", 40));
    const auto rows = metrics.provider_cache_ttft();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].provider, "a");  // by provider, then model
    const ProviderCacheTtft& p = rows[1];
    EXPECT_EQ(p.provider, "p");
    EXPECT_EQ(p.model, "m");
    EXPECT_EQ(p.hit.samples, 1u);
    EXPECT_EQ(p.miss.samples, 2u);
    EXPECT_NEAR(*p.hit.mean_ms, 100.0, 1e-6);
    EXPECT_NEAR(*p.miss.mean_ms, 400.0, 1e-6);
    EXPECT_GT(*p.miss.p50_ms, *p.hit.p50_ms);
    EXPECT_FALSE(rows[0].hit.mean_ms);
    const std::string text = metrics.render();
    EXPECT_THAT(text, HasSubstr(R"(tokenradar_provider_cache_ttft_seconds_count{provider="p",)"
                                R"(model="m",provider_cache="hit"} 1)"));
    EXPECT_THAT(text, HasSubstr(R"(tokenradar_provider_cache_ttft_seconds_count{provider="p",)"
                                R"(model="m",provider_cache="miss"} 2)"));
    EXPECT_THAT(text, Not(HasSubstr(R"(provider="a",model="z",provider_cache="hit")")));
}

}  // namespace
}  // namespace tokenradar::gateway

#include <tokenradar/gateway/prometheus.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tokenradar::gateway

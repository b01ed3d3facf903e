#include <tokenradar/core/measurement.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar {
namespace {

constexpr std::int64_t kMs = 1'000'000;

Measurement sample() {
    Measurement m;
    m.request_id = "r1";
    m.response_id = "chatcmpl-1";
    m.ts_us = 1'700'000'000'000'000;
    m.labels.provider = "sim";
    m.labels.model = "gpt-4o-like";
    m.labels.api = "openai";
    m.labels.task = "gen-500";
    m.labels.source = "bench";
    m.t.sched = 1000 * kMs - 5 * kMs;
    m.t.send = 1000 * kMs;
    m.t.headers = m.t.send + 20 * kMs;
    m.t.first_chunk = m.t.send + 240 * kMs;
    m.t.first_token = m.t.send + 250 * kMs;
    m.t.first_answer = m.t.send + 250 * kMs;
    m.t.last_token = *m.t.first_token + 499 * 20 * kMs;
    m.t.done = *m.t.last_token + 1 * kMs;
    m.output_tokens = 500;
    m.prompt_tokens = 50;
    m.output_events = 250;
    return m;
}

TEST(Measurement, DerivesMetricsAsSpecified) {
    auto d = derive(sample());
    EXPECT_DOUBLE_EQ(*d.ttft_ms, 250);
    EXPECT_DOUBLE_EQ(*d.ttft_sched_ms, 255);
    EXPECT_DOUBLE_EQ(*d.ttfb_ms, 20);
    EXPECT_DOUBLE_EQ(*d.tpot_ms, 20);
    EXPECT_DOUBLE_EQ(*d.decode_tps, 50);
    EXPECT_DOUBLE_EQ(*d.e2e500_ms, 250 + 499 * 20);
    EXPECT_DOUBLE_EQ(*d.e2e_ms, 250 + 499 * 20 + 1);
    EXPECT_DOUBLE_EQ(*d.tokens_per_chunk, 2);
}

TEST(Measurement, TpotUndefinedBelowTwoTokens) {
    auto m = sample();
    m.output_tokens = 1;
    auto d = derive(m);
    EXPECT_FALSE(d.tpot_ms);
    EXPECT_FALSE(d.decode_tps);
    EXPECT_FALSE(d.e2e500_ms);
    EXPECT_TRUE(d.ttft_ms);
}

TEST(Measurement, JsonRoundTripIsRelativeToSend) {
    auto m = sample();
    auto json = to_json(m);
    EXPECT_EQ(json.at("first_token_ns").as_int64(), 250 * kMs);
    EXPECT_EQ(json.at("sched_offset_ns").as_int64(), -5 * kMs);
    EXPECT_EQ(json.at("metrics_spec").as_int64(), 1);
    auto back = measurement_from_json(boost::json::parse(boost::json::serialize(json))).value();
    // Rebased to send = 0; everything else identical.
    auto expected = m;
    const auto shift = [&](std::optional<std::int64_t>& v) { *v -= m.t.send; };
    expected.t.sched -= m.t.send;
    shift(expected.t.headers);
    shift(expected.t.first_chunk);
    shift(expected.t.first_token);
    shift(expected.t.first_answer);
    shift(expected.t.last_token);
    shift(expected.t.done);
    expected.t.send = 0;
    EXPECT_EQ(back, expected);
}

TEST(Measurement, ParseErrorsNameTheField) {
    const auto error_of = [](std::string_view text) {
        auto r = measurement_from_json(boost::json::parse(text));
        return r ? std::string("no error") : r.error().message;
    };
    using ::testing::HasSubstr;
    EXPECT_THAT(error_of(R"({"ts_us":1})"), HasSubstr("request_id"));
    EXPECT_THAT(error_of(R"({"request_id":"a","ts_us":1,"status":"weird"})"), HasSubstr("status"));
    EXPECT_THAT(error_of(R"({"request_id":"a","ts_us":1,"output_tokens":-1})"),
                HasSubstr("output_tokens"));
    EXPECT_THAT(error_of(R"({"request_id":"a","ts_us":1,"metrics_spec":2})"),
                HasSubstr("metrics_spec"));
    EXPECT_THAT(error_of(R"({"request_id":"a","ts_us":1,"first_token_ns":5,"done_ns":4})"),
                HasSubstr("timestamps"));
    EXPECT_THAT(error_of(R"({"request_id":"a","ts_us":1,"cache":"maybe"})"), HasSubstr("cache"));
    EXPECT_EQ(error_of(R"({"request_id":"a","ts_us":1,"status":"http_429"})"), "no error");
}

}  // namespace
}  // namespace tokenradar

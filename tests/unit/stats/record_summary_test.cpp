#include <tokenradar/stats/record_summary.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace tokenradar::stats {
namespace {

constexpr std::int64_t kMs = 1'000'000;

Measurement ok_record(std::int64_t ttft_ms, std::int64_t tpot_ms, std::int64_t tokens) {
    Measurement m;
    m.t.sched = -2 * kMs;
    m.t.first_token = ttft_ms * kMs;
    m.t.last_token = *m.t.first_token + tpot_ms * kMs * (tokens - 1);
    m.t.done = *m.t.last_token;
    m.output_tokens = tokens;
    m.output_events = tokens;
    m.prompt_tokens = 100;
    m.cached_prompt_tokens = 40;
    return m;
}

TEST(RecordSummary, SuccessesGivePercentilesFailuresCountAsInfinity) {
    RecordSummarizer s;
    for (int i = 1; i <= 19; ++i) s.add(ok_record(10 * i, 20, 11));  // TTFT 10..190 ms
    Measurement failed;
    failed.status = RequestStatus::timeout_first_token;
    s.add(failed);
    Measurement estimated = ok_record(1000, 25, 5);
    estimated.token_source = TokenSource::estimate;
    estimated.prompt_tokens.reset();
    estimated.cached_prompt_tokens.reset();
    s.add(estimated);
    EXPECT_EQ(s.size(), 21u);
    const RecordSummary r = s.finish();
    EXPECT_EQ(s.size(), 0u);
    EXPECT_EQ(r.requests, 21u);
    EXPECT_EQ(r.errors, 1u);
    EXPECT_EQ(r.statuses.at("timeout_first_token"), 1u);
    ASSERT_TRUE(r.ttft_ms);
    EXPECT_EQ(r.ttft_ms->count, 20u);
    EXPECT_DOUBLE_EQ(r.ttft_ms->p50, 105);  // 10..190 and 1000: position 9.5
    EXPECT_DOUBLE_EQ(r.tpot_ms->p50, 20);
    EXPECT_DOUBLE_EQ(r.decode_tps->p50, 50);
    EXPECT_EQ(r.token_source_estimate, 1u);
    EXPECT_EQ(r.token_source_usage, 19u);
    EXPECT_DOUBLE_EQ(r.cached_share(), 0.4);
    EXPECT_DOUBLE_EQ(r.sched_lag_ms->p50, 2);
    // 21 samples with one +infinity: p95 at position 19 is the largest success, p99 at 19.8
    // touches the failure.
    ASSERT_TRUE(r.ttft_adjusted[1].value);
    EXPECT_DOUBLE_EQ(*r.ttft_adjusted[1].value, 1000);
    EXPECT_TRUE(r.ttft_adjusted[2].above_max);
    EXPECT_DOUBLE_EQ(r.error_rate(), 1.0 / 21.0);
}

TEST(RecordSummary, SpanAndStreamingAgree) {
    std::vector<Measurement> records;
    for (int i = 1; i <= 7; ++i) records.push_back(ok_record(i * 3, i, 2 + i));
    RecordSummarizer s;
    for (const auto& m : records) s.add(m);
    const RecordSummary a = s.finish();
    const RecordSummary b = summarize_records(records);
    EXPECT_DOUBLE_EQ(a.e2e_ms->p95, b.e2e_ms->p95);
    EXPECT_DOUBLE_EQ(a.tpot_ms->p99, b.tpot_ms->p99);
    EXPECT_EQ(a.requests, b.requests);
}

TEST(RecordSummary, CellsAndJson) {
    const RecordSummary empty = summarize_records({});
    EXPECT_EQ(format_cell(empty.ttft_ms, &Summary::p50), "-");
    EXPECT_EQ(format_cell(AdjustedPercentile{std::nullopt, true}), "> max");
    EXPECT_EQ(format_cell(AdjustedPercentile{12.345, false}), "12.3");

    std::vector<Measurement> records{ok_record(250, 20, 3)};
    Measurement failed;
    failed.status = RequestStatus::http(503);
    records.push_back(failed);
    boost::json::object o;
    put_json(o, summarize_records(records));
    EXPECT_EQ(o.at("requests").as_uint64(), 2u);
    EXPECT_EQ(o.at("failures").at("http_503").as_uint64(), 1u);
    EXPECT_DOUBLE_EQ(o.at("ttft_ms").at("p50").as_double(), 250);
    EXPECT_EQ(o.at("error_adjusted").at("ttft_ms").at("p95").as_string(), "> max");
    EXPECT_TRUE(o.at("decode_tps").at("p50").is_double());
    EXPECT_EQ(o.at("token_source").at("usage").as_uint64(), 1u);
}

}  // namespace
}  // namespace tokenradar::stats

#include <tokenradar/bench/report.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::bench {
namespace {

using ::testing::HasSubstr;
constexpr std::int64_t kMs = 1'000'000;

Measurement ok_record(double ttft_ms, double tpot_ms, std::int64_t tokens) {
    Measurement m;
    m.labels.api = "openai";
    m.labels.model = "m";
    m.t.send = 0;
    m.t.sched = 0;
    m.t.headers = 1 * kMs;
    m.t.first_token = static_cast<std::int64_t>(ttft_ms * kMs);
    m.t.first_answer = m.t.first_token;
    m.t.last_token = *m.t.first_token + static_cast<std::int64_t>(tpot_ms * kMs) * (tokens - 1);
    m.t.done = *m.t.last_token;
    m.output_tokens = tokens;
    m.output_events = tokens;
    m.prompt_tokens = 100;
    m.cached_prompt_tokens = 25;
    return m;
}

TEST(Report, SummarisesSuccessesAndCountsFailures) {
    std::vector<Measurement> records;
    for (int i = 1; i <= 9; ++i) records.push_back(ok_record(100.0 * i, 20, 11));
    Measurement failed;
    failed.status = RequestStatus::http(429);
    records.push_back(failed);
    auto r = summarize_target("t", records);
    EXPECT_EQ(r.requests, 10u);
    EXPECT_EQ(r.errors, 1u);
    EXPECT_EQ(r.statuses.at("http_429"), 1u);
    EXPECT_DOUBLE_EQ(r.ttft_ms->p50, 500);  // successes only: 100..900
    EXPECT_EQ(r.ttft_ms->count, 9u);
    EXPECT_DOUBLE_EQ(r.tpot_ms->p50, 20);
    EXPECT_DOUBLE_EQ(r.decode_tps->p50, 50);
    EXPECT_DOUBLE_EQ(r.cached_share(), 0.25);
    EXPECT_DOUBLE_EQ(*r.ttft_adjusted[0].value, 550);  // 10 samples with +inf last
    EXPECT_TRUE(r.ttft_adjusted[1].above_max);
}

TEST(Report, RendersEveryFormat) {
    std::vector<Measurement> records{ok_record(250, 20, 500), ok_record(260, 20, 500)};
    std::vector<TargetReport> reports{summarize_target("fixed", records)};
    EXPECT_THAT(render_table(reports), HasSubstr("TTFT ms"));
    EXPECT_THAT(render_markdown(reports), HasSubstr("| fixed | m | 255.0 | 50.0 |"));
    auto csv = render_csv(reports);
    EXPECT_THAT(csv, HasSubstr("target,api,model"));
    EXPECT_THAT(csv, HasSubstr("fixed,openai,m,2,0,255.0"));
    auto json = to_json(reports[0]);
    EXPECT_EQ(json.at("requests").as_uint64(), 2u);
    EXPECT_DOUBLE_EQ(json.at("ttft_ms").at("p50").as_double(), 255);
    for (auto key : {"ttft_ms", "tpot_ms", "decode_tps", "e2e_ms", "e2e500_ms"}) {
        for (auto q : {"p50", "p90", "p95", "p99"})
            EXPECT_TRUE(json.at(key).as_object().contains(q));
    }
}

}  // namespace
}  // namespace tokenradar::bench

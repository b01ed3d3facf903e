#include "../../support/store_records.hpp"

#include <tokenradar/store/sqlite_store.hpp>
#include <tokenradar/store/stats_report.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::store {
namespace {

using ::testing::HasSubstr;
using testing::kMsNs;

// TTFT `ttft_ms`, `tokens` tokens at `tpot_ms` each, one provider/model/task.
Measurement record(std::string provider, std::string model, std::int64_t ttft_ms,
                   std::int64_t tpot_ms, std::int64_t tokens, std::int64_t ts_us = 1000) {
    Measurement m;
    m.labels.provider = std::move(provider);
    m.labels.model = std::move(model);
    m.labels.task = "chat";
    m.ts_us = ts_us;
    m.t.first_token = ttft_ms * kMsNs;
    m.t.last_token = *m.t.first_token + tpot_ms * kMsNs * (tokens - 1);
    m.t.done = *m.t.last_token + kMsNs;
    m.output_tokens = tokens;
    return m;
}

TEST(StatsReport, ParsesLabelNames) {
    auto labels = parse_labels("provider,model,stream,client_region");
    ASSERT_TRUE(labels);
    EXPECT_EQ(*labels,
              (std::vector{Label::provider, Label::model, Label::stream, Label::client_region}));
    auto unknown = parse_labels("provider,region");
    ASSERT_FALSE(unknown);
    EXPECT_THAT(unknown.error().message,
                HasSubstr("unknown label 'region': expected provider, model, "));
    auto twice = parse_labels("model,model");
    ASSERT_FALSE(twice);
    EXPECT_THAT(twice.error().message, HasSubstr("'model' is given twice"));
    EXPECT_FALSE(parse_labels("provider,"));
    auto none = parse_labels("");
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    for (Label l : {Label::provider, Label::upstream_region, Label::api, Label::stream}) {
        auto back = parse_labels(label_name(l));
        ASSERT_TRUE(back);
        EXPECT_EQ(back->front(), l);
    }
    Labels values;
    values.stream = false;
    values.cache = Cache::exact;
    EXPECT_EQ(label_value(values, Label::stream), "false");
    EXPECT_EQ(label_value(values, Label::cache), "exact");
}

TEST(StatsReport, ParsesFormats) {
    EXPECT_EQ(parse_report_format("markdown").value(), ReportFormat::markdown);
    auto bad = parse_report_format("xml");
    ASSERT_FALSE(bad);
    EXPECT_THAT(bad.error().message, HasSubstr("unknown format 'xml'"));
}

TEST(StatsReport, GroupsByLabelValuesSortedByKey) {
    GroupSummarizer groups({Label::provider});
    groups.add(record("b", "m1", 300, 20, 11));
    groups.add(record("a", "m1", 100, 10, 11));
    groups.add(record("a", "m2", 200, 10, 11));
    Measurement failed = record("a", "m1", 0, 0, 0);
    failed.status = RequestStatus::http(500);
    groups.add(failed);
    auto reports = groups.finish();
    ASSERT_EQ(reports.size(), 2u);
    EXPECT_EQ(reports[0].key, std::vector<std::string>{"a"});
    EXPECT_EQ(reports[0].summary.requests, 3u);
    EXPECT_EQ(reports[0].summary.errors, 1u);
    EXPECT_DOUBLE_EQ(reports[0].summary.ttft_ms->p50, 150);
    EXPECT_EQ(reports[1].key, std::vector<std::string>{"b"});
    EXPECT_DOUBLE_EQ(reports[1].summary.decode_tps->p50, 50);
}

class StatsReportFromStore : public ::testing::Test {
  protected:
    void SetUp() override {
        auto opened = SqliteStore::open(db_.path());
        ASSERT_TRUE(opened);
        store_ = std::move(*opened);
        std::vector<Measurement> records;
        // gpt: TTFT 100..1000 ms in steps of 100 (10 records), TPOT 20 ms, one 429.
        for (int i = 1; i <= 10; ++i)
            records.push_back(record("gpt", "gpt-4o", 100 * i, 20, 101, 5000 + i));
        Measurement limited = record("gpt", "gpt-4o", 0, 0, 0, 5011);
        limited.status = RequestStatus::http(429);
        records.push_back(limited);
        // claude: two requests, one with an estimated token count.
        records.push_back(record("claude", "sonnet", 300, 25, 41, 5001));
        records.push_back(record("claude", "sonnet", 500, 25, 41, 5002));
        records.back().token_source = TokenSource::estimate;
        // Outside the window.
        records.push_back(record("old", "x", 1, 1, 2, 10));
        ASSERT_TRUE(store_->insert(records));
    }

    testing::TempDb db_;
    std::unique_ptr<SqliteStore> store_;
};

TEST_F(StatsReportFromStore, SummarisesTheWindowPerGroup) {
    auto report = build_stats_report(*store_, 5000, 6000, {Label::provider, Label::model});
    ASSERT_TRUE(report) << report.error().message;
    ASSERT_EQ(report->groups.size(), 2u);
    const auto& claude = report->groups[0];
    EXPECT_EQ(claude.key, (std::vector<std::string>{"claude", "sonnet"}));
    EXPECT_EQ(claude.summary.requests, 2u);
    EXPECT_EQ(claude.summary.token_source_estimate, 1u);
    EXPECT_DOUBLE_EQ(claude.summary.ttft_ms->p50, 400);
    EXPECT_DOUBLE_EQ(claude.summary.decode_tps->p50, 40);
    const auto& gpt = report->groups[1];
    EXPECT_EQ(gpt.summary.requests, 11u);
    EXPECT_EQ(gpt.summary.errors, 1u);
    EXPECT_DOUBLE_EQ(gpt.summary.ttft_ms->p50, 550);
    EXPECT_DOUBLE_EQ(gpt.summary.ttft_ms->p95, 955);
    // 11 samples, the 429 as +infinity: p95 position 9.5 touches it.
    EXPECT_TRUE(gpt.summary.ttft_adjusted[1].above_max);
    // E2E = TTFT + 100 * 20 ms + 1 ms.
    EXPECT_DOUBLE_EQ(gpt.summary.e2e_ms->p95, 955 + 2001);
    EXPECT_DOUBLE_EQ(gpt.summary.tpot_ms->p50, 20);

    const std::string csv = render_stats_report(*report, ReportFormat::csv);
    EXPECT_THAT(csv,
                HasSubstr("provider,model,requests,errors,error_rate_pct,ttft_p50_ms,ttft_p95_ms,"
                          "ttft_p95_error_adjusted_ms,decode_tps_p50,tpot_p50_ms,e2e_p95_ms,"
                          "e2e_p95_error_adjusted_ms,token_source_estimate\n"));
    EXPECT_THAT(csv,
                HasSubstr("claude,sonnet,2,0,0.0,400.0,490.0,490.0,40.0,25.0,1491.0,1491.0,1\n"));
    EXPECT_THAT(csv, HasSubstr("gpt,gpt-4o,11,1,9.1,550.0,955.0,> max,50.0,20.0,2956.0,> max,0\n"));

    const std::string markdown = render_stats_report(*report, ReportFormat::markdown);
    EXPECT_THAT(
        markdown,
        HasSubstr("| provider | model | requests | errors | error rate (%) | median TTFT (ms) |"));
    EXPECT_THAT(markdown,
                HasSubstr("| gpt | gpt-4o | 11 | 1 | 9.1 | 550.0 | 955.0 | > max | 50.0 |"));

    const std::string table = render_stats_report(*report, ReportFormat::table);
    EXPECT_THAT(table,
                HasSubstr("13 requests from 1970-01-01T00:00:00Z to 1970-01-01T00:00:00Z\n"));
    EXPECT_THAT(table, HasSubstr("TTFT p95*"));
    EXPECT_THAT(table, HasSubstr("error-adjusted"));

    const auto json = boost::json::parse(render_stats_report(*report, ReportFormat::json));
    EXPECT_EQ(json.at("metrics_spec").as_int64(), 1);
    EXPECT_EQ(json.at("window").at("from_ts_us").as_int64(), 5000);
    EXPECT_EQ(json.at("by").as_array().size(), 2u);
    const auto& g = json.at("groups").as_array().at(1);
    EXPECT_EQ(g.at("key").at("provider").as_string(), "gpt");
    EXPECT_EQ(g.at("requests").to_number<std::uint64_t>(), 11u);
    EXPECT_DOUBLE_EQ(g.at("ttft_ms").at("p50").as_double(), 550);
    EXPECT_EQ(g.at("error_adjusted").at("ttft_ms").at("p95").as_string(), "> max");
}

TEST_F(StatsReportFromStore, NoGroupingLabelsIsOneRowAndAnEmptyWindowNoRows) {
    auto all = build_stats_report(*store_, 0, 100'000, {});
    ASSERT_TRUE(all);
    ASSERT_EQ(all->groups.size(), 1u);
    EXPECT_EQ(all->groups[0].summary.requests, 14u);
    EXPECT_THAT(render_stats_report(*all, ReportFormat::table), HasSubstr("14 requests up to "));

    auto empty = build_stats_report(*store_, 7000, 8000, {Label::provider});
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->groups.empty());
    EXPECT_EQ(render_stats_report(*empty, ReportFormat::table),
              "0 requests from 1970-01-01T00:00:00Z to 1970-01-01T00:00:00Z\n");
    EXPECT_THAT(render_stats_report(*empty, ReportFormat::csv),
                ::testing::StartsWith("provider,requests"));
}

}  // namespace
}  // namespace tokenradar::store

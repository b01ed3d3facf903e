// Tests of src/observatory/csv_export.cpp (private) and of format=csv through QueryApi.
#include "../../../src/observatory/csv_export.hpp"

#include "observatory_records.hpp"

#include <tokenradar/observatory/query_api.hpp>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace tokenradar::observatory {
namespace {

using test::kDay0;
using test::record;
namespace json = boost::json;

constexpr std::int64_t kNow = kDay0 + 12 * kHourUs + 30 * kMinuteUs;
// A model name a spreadsheet must neither split, unquote nor run.
const std::string kNastyModel = "=cmd(),\"quoted\"\nline two";

// A strict RFC 4180 reader: CRLF after every record, quoted fields with doubled quotes.
std::vector<std::vector<std::string>> read_csv(std::string_view text) {
    std::vector<std::vector<std::string>> rows(1);
    std::string field;
    bool quoted = false;
    bool field_started = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                field += c;
            }
        } else if (c == '"' && !field_started) {
            quoted = field_started = true;
        } else if (c == ',') {
            rows.back().push_back(std::move(field));
            field.clear();
            field_started = false;
        } else if (c == '\r') {
            EXPECT_EQ(text.at(i + 1), '\n') << "a bare CR at " << i;
            ++i;
            rows.back().push_back(std::move(field));
            field.clear();
            field_started = false;
            rows.emplace_back();
        } else {
            EXPECT_NE(c, '\n') << "a bare LF outside quotes at " << i;
            field += c;
            field_started = true;
        }
    }
    EXPECT_FALSE(quoted);
    EXPECT_TRUE(rows.back().empty() && field.empty()) << "the last record lacks its CRLF";
    rows.pop_back();
    return rows;
}

// Rows as column name -> cell.
std::vector<std::map<std::string, std::string>> records_of(std::string_view text) {
    const auto rows = read_csv(text);
    std::vector<std::map<std::string, std::string>> out;
    if (rows.empty()) return out;
    for (std::size_t r = 1; r < rows.size(); ++r) {
        EXPECT_EQ(rows[r].size(), rows[0].size()) << "row " << r;
        auto& record = out.emplace_back();
        for (std::size_t c = 0; c < rows[r].size() && c < rows[0].size(); ++c)
            record[rows[0][c]] = rows[r][c];
    }
    return out;
}

std::string number_text(const json::value& v) {
    if (v.is_null()) return "";
    if (v.is_int64()) return fmt::format("{}", v.as_int64());
    if (v.is_uint64()) return fmt::format("{}", v.as_uint64());
    return fmt::format("{}", v.as_double());
}

TEST(CsvField, QuotesAndGuardsAsRfc4180AndSpreadsheetsNeed) {
    EXPECT_EQ(csv_field("plain", true), "plain");
    EXPECT_EQ(csv_field("a,b", true), "\"a,b\"");
    EXPECT_EQ(csv_field("say \"hi\"", true), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_field("two\nlines", true), "\"two\nlines\"");
    EXPECT_EQ(csv_field("=cmd()", true), "'=cmd()");
    EXPECT_EQ(csv_field("+1", true), "'+1");
    EXPECT_EQ(csv_field("-1", true), "'-1");
    EXPECT_EQ(csv_field("@SUM(A1)", true), "'@SUM(A1)");
    EXPECT_EQ(csv_field("\tx", true), "'\tx");
    EXPECT_EQ(csv_field("\rx", true), "\"'\rx\"");
    EXPECT_EQ(csv_field("-1.5", false), "-1.5");  // a number is not text
    EXPECT_EQ(csv_field("", true), "");
}

class CsvExportTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::vector<Measurement> records;
        for (int i = 0; i < 40; ++i) {
            Measurement m = record("p", kNow - (i + 1) * kMinuteUs, 200 + i);
            m.labels.model = kNastyModel;
            m.request_id = fmt::format("n{}", i);
            records.push_back(std::move(m));
            Measurement plain = record("q", kNow - (i + 1) * kMinuteUs, 400 + 2 * i);
            plain.request_id = fmt::format("q{}", i);
            if (i < 4) plain.status = RequestStatus::http(429);
            records.push_back(std::move(plain));
        }
        index_.add(records);
    }

    ApiResponse get(std::string_view target) { return api_.get(target, "", kNow); }

    RollupIndex index_;
    QueryApi api_{index_};
};

TEST_F(CsvExportTest, LeaderboardRowsMatchTheJsonNumbersAndKeepNastyLabelsIntact) {
    const ApiResponse csv = get("/api/v1/leaderboard?format=csv");
    ASSERT_EQ(csv.status, 200) << csv.body;
    EXPECT_EQ(csv.content_type, "text/csv; charset=utf-8");
    EXPECT_EQ(csv.filename, "tokenradar-leaderboard-24h.csv");
    EXPECT_EQ(csv.cache_control, "public, max-age=10");
    const ApiResponse js = get("/api/v1/leaderboard");
    EXPECT_EQ(js.content_type, "application/json");
    EXPECT_TRUE(js.filename.empty());
    EXPECT_NE(csv.etag, js.etag);
    EXPECT_EQ(api_.get("/api/v1/leaderboard?format=csv", csv.etag, kNow).status, 304);

    const auto header = read_csv(csv.body).at(0);
    EXPECT_THAT(header,
                ::testing::ElementsAre(
                    "provider", "model", "samples", "errors", "error_rate", "insufficient",
                    "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "ttft_samples",
                    "ttft_insufficient", "tpot_p50_ms", "tpot_p95_ms", "tpot_p99_ms",
                    "tpot_samples", "tpot_insufficient", "decode_tps_p50", "e2e_p50_ms",
                    "e2e_p95_ms", "e2e_p99_ms", "e2e_samples", "e2e_insufficient", "e2e500_p50_ms",
                    "e2e500_p95_ms", "e2e500_p99_ms", "e2e500_samples", "e2e500_insufficient"));
    const auto rows = records_of(csv.body);
    const auto doc = json::parse(js.body).as_object();
    const auto& json_rows = doc.at("rows").as_array();
    ASSERT_EQ(rows.size(), json_rows.size());
    ASSERT_EQ(rows.size(), 2U);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto& j = json_rows[r].as_object();
        const auto& c = rows[r];
        const std::string model(j.at("model").as_string());
        // The text comes back whole, with the formula guard in front of '='.
        EXPECT_EQ(c.at("model"), model == kNastyModel ? "'" + kNastyModel : model);
        EXPECT_EQ(c.at("samples"), number_text(j.at("samples")));
        EXPECT_EQ(c.at("errors"), number_text(j.at("errors")));
        EXPECT_EQ(c.at("error_rate"), number_text(j.at("error_rate")));
        EXPECT_EQ(c.at("insufficient"), "false");
        for (const char* metric : {"ttft", "tpot", "e2e"}) {
            const auto& o = j.at(fmt::format("{}_ms", metric)).as_object();
            for (const char* q : {"p50", "p95", "p99"}) {
                EXPECT_EQ(c.at(fmt::format("{}_{}_ms", metric, q)), number_text(o.at(q)));
            }
            EXPECT_EQ(c.at(fmt::format("{}_samples", metric)), number_text(o.at("samples")));
        }
        EXPECT_EQ(c.at("decode_tps_p50"), number_text(j.at("decode_tps_p50")));
    }
    EXPECT_EQ(rows[0].at("provider"), "p");  // the faster one first, as in the JSON
    EXPECT_EQ(rows[1].at("errors"), "4");
    EXPECT_EQ(rows[1].at("error_rate"), "0.1");
}

TEST_F(CsvExportTest, TimeSeriesAreOneRowPerPointWithTheSeriesLabelsRepeated) {
    const std::string target = "/api/v1/timeseries?window=1h&q=0.5,0.95&provider=q";
    const auto doc = json::parse(get(target).body).as_object();
    const auto& points = doc.at("series").as_array().at(0).as_object().at("points").as_array();
    const ApiResponse csv = get(target + "&format=csv");
    EXPECT_EQ(csv.filename, "tokenradar-timeseries-1h.csv");
    EXPECT_THAT(
        read_csv(csv.body).at(0),
        ::testing::ElementsAre("provider", "model", "t", "samples", "insufficient", "p50", "p95"));
    const auto rows = records_of(csv.body);
    ASSERT_EQ(points.size(), 40U);  // one a minute from 11:50 to 12:29
    ASSERT_EQ(rows.size(), points.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& point = points[i].as_object();
        EXPECT_EQ(rows[i].at("provider"), "q");
        EXPECT_EQ(rows[i].at("model"), "m");
        EXPECT_EQ(rows[i].at("t"), point.at("t").as_string());
        EXPECT_EQ(rows[i].at("samples"), number_text(point.at("samples")));
        EXPECT_EQ(rows[i].at("p50"), "");  // one sample a minute: insufficient, null
    }
    EXPECT_EQ(rows.front().at("t"), "2025-11-30T11:50:00Z");
}

TEST_F(CsvExportTest, DistributionPointsAreValueAndFraction) {
    const std::string target = "/api/v1/distribution?points=5&provider=q";
    const auto doc = json::parse(get(target).body).as_object();
    const auto& cdf = doc.at("series").as_array().at(0).as_object().at("cdf").as_array();
    const auto rows = records_of(get(target + "&format=csv").body);
    ASSERT_EQ(rows.size(), cdf.size());
    ASSERT_FALSE(rows.empty());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i].at("value"), number_text(cdf[i].as_array()[0]));
        EXPECT_EQ(rows[i].at("fraction"), number_text(cdf[i].as_array()[1]));
        EXPECT_EQ(rows[i].at("samples"), "36");
    }
    EXPECT_EQ(rows.back().at("fraction"), "1");
}

TEST_F(CsvExportTest, GatewayIsOneRowAndLabelsOneRowPerValue) {
    const auto gateway = records_of(get("/api/v1/gateway?format=csv").body);
    ASSERT_EQ(gateway.size(), 1U);
    EXPECT_EQ(gateway[0].at("attempts"), "80");
    EXPECT_EQ(gateway[0].at("status_http_429"), "4");
    EXPECT_EQ(gateway[0].at("status_ok"), "76");
    EXPECT_EQ(gateway[0].count("overhead_p50_ms"), 1U);

    const auto labels = records_of(get("/api/v1/labels?format=csv").body);
    std::vector<std::string> models;
    for (const auto& row : labels) {
        if (row.at("label") == "model") models.push_back(row.at("value"));
    }
    EXPECT_THAT(models, ::testing::ElementsAre("'" + kNastyModel, "m"));
}

TEST_F(CsvExportTest, StatusBucketsCarryTheirModel) {
    const ApiResponse csv = get("/api/v1/status?provider=q&format=csv");
    ASSERT_EQ(csv.status, 200) << csv.body;
    EXPECT_EQ(csv.filename, "tokenradar-status-24h.csv");
    EXPECT_THAT(read_csv(csv.body).at(0),
                ::testing::ElementsAre("provider", "model", "state", "open_incident", "bucket_t",
                                       "bucket_state", "bucket_samples", "bucket_errors",
                                       "bucket_ttft_p50_ms", "bucket_baseline_ttft_p50_ms",
                                       "bucket_ratio", "bucket_incidents"));
    const auto rows = records_of(csv.body);
    ASSERT_EQ(rows.size(), 24U);
    EXPECT_EQ(rows[22].at("bucket_samples"), "10");  // 11:50 to 11:59
    EXPECT_EQ(rows[23].at("bucket_samples"), "30");
    EXPECT_EQ(rows[23].at("bucket_state"), "green");
    EXPECT_EQ(rows[23].at("open_incident"), "");
}

TEST_F(CsvExportTest, AnotherFormatIs400NamingIt) {
    const ApiResponse r = get("/api/v1/regions?format=xlsx");
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(r.body, ::testing::HasSubstr(R"("param":"format")"));
    EXPECT_THAT(r.body, ::testing::HasSubstr("format: expected json or csv, got 'xlsx'"));
    EXPECT_EQ(r.content_type, "application/json");
}

}  // namespace
}  // namespace tokenradar::observatory

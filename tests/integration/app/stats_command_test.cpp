// `tokenradar stats` over a database filled with known records: the numbers it prints, the
// window it applies, and its bad-input contract (one line naming the problem, exit code 2).

#include "../../support/clickhouse_server.hpp"
#include "../../support/postgres_server.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/store_records.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/postgres_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <vector>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;
using testing::kMsNs;
using testing::run_cli;

constexpr std::int64_t kMinuteUs = 60'000'000;

Measurement record(std::string provider, std::string task, std::int64_t ttft_ms,
                   std::int64_t tpot_ms, std::int64_t tokens, std::int64_t ts_us) {
    Measurement m;
    m.labels.provider = std::move(provider);
    m.labels.model = "m-" + m.labels.provider;
    m.labels.task = std::move(task);
    m.ts_us = ts_us;
    m.t.first_token = ttft_ms * kMsNs;
    m.t.last_token = *m.t.first_token + tpot_ms * kMsNs * (tokens - 1);
    m.t.done = *m.t.last_token;
    m.output_tokens = tokens;
    return m;
}

// The same records and the same answers from every store backend.
enum class Backend { sqlite, postgres, clickhouse };
const char* name_of(Backend b) {
    return b == Backend::sqlite ? "Sqlite" : b == Backend::postgres ? "Postgres" : "ClickHouse";
}
void PrintTo(Backend b, std::ostream* os) { *os << name_of(b); }

class StatsCommand : public ::testing::TestWithParam<Backend> {
  protected:
    void SetUp() override {
        std::unique_ptr<store::MeasurementStore> store;
        if (GetParam() == Backend::postgres) {
            if (!testing::PostgresServer::available())
                GTEST_SKIP() << testing::PostgresServer::skip_reason();
            pg_.emplace();
            db_ = pg_->url();
            store = store::PostgresStore::open(db_).value();
        } else if (GetParam() == Backend::clickhouse) {
            if (!testing::ClickHouseServer::available())
                GTEST_SKIP() << testing::ClickHouseServer::skip_reason();
            ch_.emplace();
            db_ = ch_->url();
            store = store::ClickHouseStore::open(db_).value();
        } else {
            db_ = file_.path();
            store = store::SqliteStore::open(db_).value();
        }
        const std::int64_t now = wall_now_us();
        std::vector<Measurement> records;
        // Last hour. fast/chat: TTFT 100, 200, 300, 400 ms at 20 ms/token (50 tokens/s), 101
        // tokens, plus one timeout. fast/code: one record. slow/chat: TTFT 1000 ms, 40 ms/token,
        // token count estimated.
        for (int i = 1; i <= 4; ++i)
            records.push_back(record("fast", "chat", 100 * i, 20, 101, now - i * kMinuteUs));
        Measurement timeout = record("fast", "chat", 0, 0, 0, now - 5 * kMinuteUs);
        timeout.status = RequestStatus::timeout_first_token;
        timeout.t.first_token.reset();
        timeout.t.last_token.reset();
        timeout.t.done.reset();
        timeout.output_tokens.reset();
        records.push_back(timeout);
        records.push_back(record("fast", "code", 150, 10, 11, now - 6 * kMinuteUs));
        Measurement slow = record("slow", "chat", 1000, 40, 51, now - 7 * kMinuteUs);
        slow.token_source = TokenSource::estimate;
        records.push_back(slow);
        // Two hours ago: outside the default window.
        records.push_back(record("old", "chat", 5, 1, 3, now - 120 * kMinuteUs));
        ASSERT_TRUE(store->insert(records));
    }

    testing::TempDb file_;
    std::optional<testing::PostgresServer> pg_;
    std::optional<testing::ClickHouseServer> ch_;
    std::string db_;  // the file's path or the server's URL
};

INSTANTIATE_TEST_SUITE_P(Backends, StatsCommand,
                         ::testing::Values(Backend::sqlite, Backend::postgres, Backend::clickhouse),
                         [](const auto& test) { return std::string(name_of(test.param)); });

TEST_P(StatsCommand, CsvByProviderOverTheLastHour) {
    auto o = run_cli("stats --db " + db_ + " --format csv --by provider");
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out,
              "provider,requests,errors,error_rate_pct,ttft_p50_ms,ttft_p95_ms,"
              "ttft_p95_error_adjusted_ms,decode_tps_p50,tpot_p50_ms,e2e_p95_ms,"
              "e2e_p95_error_adjusted_ms,token_source_estimate\n"
              // TTFT 100, 150, 200, 300, 400: p50 200, p95 380; with the timeout as +inf (6
              // samples, p95 at position 4.75) "> max". TPOT 20, 10, 20, 20, 20: p50 20.
              // E2E 2100, 250, 2200, 2300, 2400: p95 2380.
              "fast,6,1,16.7,200.0,380.0,> max,50.0,20.0,2380.0,> max,0\n"
              "slow,1,0,0.0,1000.0,1000.0,1000.0,25.0,40.0,3000.0,3000.0,1\n");
}

TEST_P(StatsCommand, WindowAndGroupingChangeTheRows) {
    auto o = run_cli("stats --db " + db_ + " --window 3h --by task,provider --format json");
    ASSERT_EQ(o.exit_code, 0) << o.err;
    const auto json = boost::json::parse(o.out);
    const auto& groups = json.at("groups").as_array();
    ASSERT_EQ(groups.size(), 4u);  // chat/fast, chat/old, chat/slow, code/fast
    EXPECT_EQ(groups[1].at("key").at("task").as_string(), "chat");
    EXPECT_EQ(groups[1].at("key").at("provider").as_string(), "old");
    EXPECT_EQ(groups[0].at("requests").to_number<int>(), 5);
    EXPECT_DOUBLE_EQ(groups[0].at("ttft_ms").at("p50").as_double(), 250);
    EXPECT_EQ(groups[3].at("requests").to_number<int>(), 1);

    auto all = run_cli("stats --db " + db_ + " --window all --by '' --format csv");
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_THAT(all.out, HasSubstr("\n8,1,12.5,"));
}

TEST_P(StatsCommand, TableAndMarkdown) {
    auto table = run_cli("stats --db " + db_);
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_THAT(table.out, HasSubstr("7 requests from "));
    EXPECT_THAT(table.out,
                ::testing::ContainsRegex("fast +m-fast +6 +1 +16.7 +200.0 +380.0 +> max"));
    auto markdown = run_cli("stats --db " + db_ + " --format markdown");
    ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
    EXPECT_THAT(
        markdown.out,
        HasSubstr("| provider | model | requests | errors | error rate (%) | median TTFT (ms) |"));
    EXPECT_THAT(
        markdown.out,
        HasSubstr("| slow | m-slow | 1 | 0 | 0.0 | 1000.0 | 1000.0 | 1000.0 | 25.0 | 40.0 |"));
}

TEST(StatsCommandInput, BadInputIsOneLineAndExitCode2) {
    testing::TempDb db;
    { ASSERT_TRUE(store::SqliteStore::open(db.path())); }
    testing::TempDb not_created;
    const testing::TempPath garbage("stats_garbage", ".db");
    garbage.write(std::string(4096, 'x'));
    struct Case {
        std::string args;
        std::string says;
    } cases[] = {
        {"stats --db " + not_created.path(), not_created.path() + ": no such database file"},
        {"stats --db " + garbage.path(),
         garbage.path() + ": set WAL journal: file is not a database"},
        {"stats --db " + db.path() + " --by provider,region",
         "--by: unknown label 'region': expected provider, model"},
        {"stats --db " + db.path() + " --window 10parsecs",
         "--window: invalid duration '10parsecs'"},
        {"stats --db " + db.path() + " --window 0s", "--window: expected a positive duration"},
        {"stats --db " + db.path() + " --format xml", "--format: unknown format 'xml'"},
        // No server there: the URL is named with its password redacted.
        {"stats --db postgresql://u:s3cret@127.0.0.1:1/db",
         "--db postgresql://u:[redacted]@127.0.0.1:1/db"},
        {"stats --db clickhouse://u:s3cret@127.0.0.1:1/db",
         "--db clickhouse://u:[redacted]@127.0.0.1:1/db"},
        {"stats --db clickhouse://u:s3cret@127.0.0.1:1",
         "no /database; expected clickhouse://[user[:password]@]host[:port]/database"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.args);
        auto o = run_cli(c.args);
        EXPECT_EQ(o.exit_code, 2);
        EXPECT_THAT(o.err, HasSubstr(c.says));
        EXPECT_EQ(testing::count_lines(o.err), 1) << o.err;
        EXPECT_TRUE(o.out.empty()) << o.out;
        EXPECT_EQ(o.err.find("s3cret"), std::string::npos) << o.err;
    }
    EXPECT_FALSE(std::filesystem::exists(not_created.path())) << "stats must not create a database";
}

}  // namespace
}  // namespace tokenradar

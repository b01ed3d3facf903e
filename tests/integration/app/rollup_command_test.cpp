// `tokenradar rollup --rebuild` over a database with known records: the saved rollup rows it
// writes (damaged and deleted rows come back right), what it prints, and its bad-input
// contract (one line naming the problem, exit code 2, nothing created).

#include "../../support/clickhouse_server.hpp"
#include "../../support/postgres_server.hpp"
#include "../../support/run_cli.hpp"
#include "../../support/store_records.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/observatory/rollup.hpp>
#include <tokenradar/observatory/rollup_keeper.hpp>
#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/postgres_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <unistd.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <vector>

namespace tokenradar {
namespace {

using observatory::Label;
using observatory::Metric;
using ::testing::HasSubstr;
using testing::kMsNs;
using testing::run_cli;

constexpr std::int64_t kSecondUs = 1'000'000;

// A successful streamed request: TTFT `ttft_ms`, 10 more tokens 20 ms apart.
Measurement record(const std::string& provider, int i, std::int64_t ttft_ms, std::int64_t ts_us,
                   const std::string& client) {
    Measurement m;
    m.request_id = provider + "-" + std::to_string(i);
    m.client_id = client;
    m.labels.provider = provider;
    m.labels.model = "m-" + provider;
    m.labels.task = "chat";
    m.labels.source = "gateway";
    m.labels.api = "openai";
    m.ts_us = ts_us;
    m.t.first_chunk = ttft_ms * kMsNs;
    m.t.first_token = ttft_ms * kMsNs;
    m.t.last_token = *m.t.first_token + 10 * 20 * kMsNs;
    m.t.done = m.t.last_token;
    m.output_tokens = 11;
    return m;
}

// The saved rollups as `tokenradar serve` loads them at start.
struct Loaded {
    observatory::Groups by_provider;
    std::int64_t watermark = -1;
    std::size_t rows = 0;
};

Loaded load(store::MeasurementStore& store) {
    observatory::RollupIndex index;
    Loaded out;
    auto watermark = store.load_rollups([&](store::RollupRow&& row) {
        if (auto hour = observatory::from_store_row(row)) {
            index.load_hour(std::move(*hour));
            ++out.rows;
        }
    });
    out.watermark = watermark.value();
    observatory::Query q;
    q.from_us = 0;
    q.to_us = wall_now_us() + observatory::kHourUs;
    q.by = {Label::provider};
    out.by_provider = index.query(q);
    return out;
}

Loaded load(const std::string& path) { return load(*store::SqliteStore::open(path).value()); }

const observatory::Aggregate* group(const Loaded& l, const std::string& provider) {
    const auto it = l.by_provider.find(observatory::GroupKey{{provider}, -1});
    return it == l.by_provider.end() ? nullptr : &it->second;
}

void exec(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
}

// fast: TTFT 100, 110, ..., 390 ms (p50 = the 15th = 240 ms) over the last 3 hours, plus one
// timeout; slow: 1000, 1020, ..., 1480 ms (p50 = the 13th = 1240 ms). Stored into `store`;
// returns its last id.
std::int64_t store_known_records(store::MeasurementStore& store) {
    const std::int64_t now = wall_now_us();
    std::vector<Measurement> records;
    for (int i = 0; i < 30; ++i)
        records.push_back(record("fast", i, 100 + 10 * i, now - i * 360 * kSecondUs, ""));
    Measurement timeout = record("fast", 30, 0, now - 100 * kSecondUs, "");
    timeout.status = RequestStatus::timeout_first_token;
    timeout.t = {};
    timeout.output_tokens.reset();
    records.push_back(timeout);
    for (int i = 0; i < 25; ++i)
        records.push_back(record("slow", i, 1000 + 20 * i, now - i * 60 * kSecondUs, "key:x"));
    EXPECT_TRUE(store.insert(records));
    return store.last_id().value();
}

// The numbers of store_known_records, as the saved rollups give them.
void expect_right(const Loaded& l, std::int64_t last_id) {
    EXPECT_EQ(l.watermark, last_id);
    const auto* fast = group(l, "fast");
    ASSERT_NE(fast, nullptr);
    EXPECT_EQ(fast->samples, 31u);
    EXPECT_EQ(fast->errors(), 1u);
    EXPECT_DOUBLE_EQ(fast->sketch(Metric::ttft).count(), 30.0);
    EXPECT_NEAR(fast->sketch(Metric::ttft).quantile(0.5).value(), 240.0, 2.4);
    EXPECT_NEAR(fast->sketch(Metric::tpot).quantile(0.5).value(), 20.0, 0.2);
    const auto* slow = group(l, "slow");
    ASSERT_NE(slow, nullptr);
    EXPECT_EQ(slow->samples, 25u);
    EXPECT_EQ(slow->errors(), 0u);
    EXPECT_NEAR(slow->sketch(Metric::ttft).quantile(0.5).value(), 1240.0, 12.4);
    EXPECT_NEAR(slow->sketch(Metric::ttft).quantile(1.0).value(), 1480.0, 14.8);
}

class RollupCommand : public ::testing::Test {
  protected:
    void SetUp() override {
        auto store = store::SqliteStore::open(db_.path());
        ASSERT_TRUE(store);
        last_id_ = store_known_records(**store);
    }
    void expect_right(const Loaded& l) { tokenradar::expect_right(l, last_id_); }

    testing::TempDb db_;
    std::int64_t last_id_ = 0;
};

TEST_F(RollupCommand, RebuildsDamagedAndDeletedRowsFromTheRecords) {
    // Records stored without rollups (another writer): the rebuild makes them.
    EXPECT_EQ(load(db_.path()).rows, 0u);
    auto first = run_cli("rollup --rebuild --db " + db_.path());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_THAT(first.out,
                ::testing::MatchesRegex(
                    "tokenradar rollup: 56 records rolled up in [0-9]+\\.[0-9][0-9] s \\(.*\\)\n"));
    const Loaded rebuilt = load(db_.path());
    expect_right(rebuilt);

    // One provider's rows damaged, the other's deleted, the watermark gone: the numbers are
    // wrong now (the test can fail)...
    exec(db_.path(),
         "UPDATE rollup_hours SET aggregate = x'01ff' WHERE provider = 'fast';"
         "DELETE FROM rollup_hours WHERE provider = 'slow';"
         "DELETE FROM store_state WHERE key = 'rollup_watermark';");
    const Loaded damaged = load(db_.path());
    EXPECT_EQ(damaged.rows, 0u);
    EXPECT_EQ(group(damaged, "fast"), nullptr);
    EXPECT_EQ(group(damaged, "slow"), nullptr);

    // ...and right again after the rebuild, row for row.
    auto second = run_cli("rollup --rebuild --db " + db_.path());
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_THAT(second.out, HasSubstr("56 records rolled up"));
    const Loaded again = load(db_.path());
    expect_right(again);
    EXPECT_EQ(again.rows, rebuilt.rows);
    EXPECT_TRUE(second.err.empty()) << second.err;
}

TEST_F(RollupCommand, IsRefusedWhileAServerOwnsTheDatabase) {
    store::SqliteOptions owner_options;
    owner_options.exclusive = true;  // as serve and demo open their store
    auto server = store::SqliteStore::open(db_.path(), owner_options);
    ASSERT_TRUE(server) << server.error().message;
    auto refused = run_cli("rollup --rebuild --db " + db_.path());
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_THAT(refused.err, HasSubstr(db_.path() + ": in use by another tokenradar process (pid " +
                                       std::to_string(::getpid()) + ")"));
    EXPECT_EQ(load(db_.path()).rows, 0u) << "nothing rebuilt under the owner";
    server->reset();
    auto after = run_cli("rollup --rebuild --db " + db_.path());
    EXPECT_EQ(after.exit_code, 0) << after.err;
}

// The same over PostgreSQL: the rebuild takes the rollups' advisory lock, so it is refused
// while a server owns them, and prints the URL without its password.
TEST(RollupCommandOverPostgres, RebuildsTheRollupsAndIsRefusedWhileAServerOwnsThem) {
    if (!testing::PostgresServer::available())
        GTEST_SKIP() << testing::PostgresServer::skip_reason();
    testing::PostgresServer pg;
    auto store = store::PostgresStore::open(pg.url()).value();
    const std::int64_t last_id = store_known_records(*store);
    EXPECT_EQ(load(*store).rows, 0u);
    {
        store::PostgresOptions owner_options;
        owner_options.exclusive = true;  // as serve opens its store with the observatory on
        auto server = store::PostgresStore::open(pg.url(), owner_options);
        ASSERT_TRUE(server) << server.error().message;
        auto refused = run_cli("rollup --rebuild --db " + pg.url());
        EXPECT_EQ(refused.exit_code, 2);
        EXPECT_THAT(refused.err, HasSubstr("in use by another tokenradar process"));
        EXPECT_EQ(refused.err.find(testing::PostgresServer::kPassword), std::string::npos)
            << refused.err;
        EXPECT_EQ(load(*store).rows, 0u) << "nothing rebuilt under the owner";
    }
    auto rebuilt = run_cli("rollup --rebuild --db " + pg.url());
    ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
    EXPECT_THAT(rebuilt.out, HasSubstr("56 records rolled up"));
    EXPECT_THAT(rebuilt.out, HasSubstr("[redacted]"));
    EXPECT_EQ(rebuilt.out.find(testing::PostgresServer::kPassword), std::string::npos);
    const Loaded loaded = load(*store);
    expect_right(loaded, last_id);
    EXPECT_GT(loaded.rows, 0u);
}

// The same over ClickHouse (no owner lock there: README "ClickHouse"): the rollups rebuilt
// from the records, the URL printed without its password.
TEST(RollupCommandOverClickHouse, RebuildsTheRollups) {
    if (!testing::ClickHouseServer::available())
        GTEST_SKIP() << testing::ClickHouseServer::skip_reason();
    testing::ClickHouseServer ch;
    auto store = store::ClickHouseStore::open(ch.url()).value();
    const std::int64_t last_id = store_known_records(*store);
    EXPECT_EQ(load(*store).rows, 0u);
    auto rebuilt = run_cli("rollup --rebuild --db " + ch.url());
    ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
    EXPECT_THAT(rebuilt.out, HasSubstr("56 records rolled up"));
    EXPECT_THAT(rebuilt.out, HasSubstr("[redacted]"));
    EXPECT_EQ(rebuilt.out.find(testing::ClickHouseServer::kPassword), std::string::npos);
    const Loaded loaded = load(*store);
    expect_right(loaded, last_id);
    EXPECT_GT(loaded.rows, 0u);
}

TEST(RollupCommandInput, BadInputIsOneLineAndExitCode2) {
    testing::TempDb not_created;
    testing::TempDb foreign;  // a SQLite database, not a TokenRadar one
    exec(foreign.path(), "CREATE TABLE t (x INTEGER);");
    const testing::TempPath garbage("rollup_garbage", ".db");
    garbage.write(std::string(4096, 'x'));
    testing::TempDb db;
    { ASSERT_TRUE(store::SqliteStore::open(db.path())); }
    struct Case {
        std::string args;
        std::string says;
    } cases[] = {
        {"rollup --rebuild --db " + not_created.path(),
         not_created.path() + ": no such database file"},
        {"rollup --rebuild --db " + foreign.path(), foreign.path() + ": not a TokenRadar database"},
        {"rollup --rebuild --db " + garbage.path(), "file is not a database"},
        {"rollup --db " + db.path(), "rollup: expected --rebuild"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.args);
        auto o = run_cli(c.args);
        EXPECT_EQ(o.exit_code, 2);
        EXPECT_THAT(o.err, HasSubstr(c.says));
        EXPECT_EQ(testing::count_lines(o.err), 1) << o.err;
        EXPECT_TRUE(o.out.empty()) << o.out;
    }
    EXPECT_FALSE(std::filesystem::exists(not_created.path()))
        << "rollup must not create a database";
    // An empty TokenRadar database is fine: nothing to roll up.
    auto empty = run_cli("rollup --rebuild --db " + db.path());
    EXPECT_EQ(empty.exit_code, 0) << empty.err;
    EXPECT_THAT(empty.out, HasSubstr("0 records rolled up"));
}

}  // namespace
}  // namespace tokenradar

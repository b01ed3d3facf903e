#include "../../../src/store/sqlite_migrations.hpp"

#include "../../support/store_records.hpp"

#include <tokenradar/store/sqlite_store.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <climits>
#include <array>
#include <string>
#include <vector>

namespace tokenradar::store {
namespace {

using ::testing::HasSubstr;

class Migrations : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(sqlite3_open(db_.path().c_str(), &raw_), SQLITE_OK); }
    void TearDown() override { sqlite3_close(raw_); }

    std::int64_t integer(const char* sql) {
        sqlite3_stmt* s = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(raw_, sql, -1, &s, nullptr), SQLITE_OK)
            << sqlite3_errmsg(raw_);
        std::int64_t v = -1;
        if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return v;
    }
    std::int64_t tables() {
        return integer("SELECT count(*) FROM sqlite_schema WHERE type = 'table'");
    }

    testing::TempDb db_;
    sqlite3* raw_ = nullptr;
};

constexpr std::array<Migration, 2> kTwo = {{
    {1, "0001_a.sql", "CREATE TABLE a (x INTEGER);"},
    {2, "0002_b.sql", "CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (7);"},
}};

TEST_F(Migrations, AppliesEachInOrderOnceAndIsIdempotent) {
    auto version = migrate(raw_, db_.path(), kTwo);
    ASSERT_TRUE(version) << version.error().message;
    EXPECT_EQ(*version, 2);
    EXPECT_EQ(integer("PRAGMA user_version"), 2);
    EXPECT_EQ(tables(), 2);
    EXPECT_EQ(integer("SELECT x FROM a"), 7);
    // Again: nothing runs (the INSERT would add a second row, CREATE TABLE would fail).
    version = migrate(raw_, db_.path(), kTwo);
    ASSERT_TRUE(version) << version.error().message;
    EXPECT_EQ(*version, 2);
    EXPECT_EQ(integer("SELECT count(*) FROM a"), 1);
}

TEST_F(Migrations, AppliesOnlyTheMissingOnes) {
    ASSERT_TRUE(migrate(raw_, db_.path(), std::span(kTwo).first(1)));
    EXPECT_EQ(integer("PRAGMA user_version"), 1);
    EXPECT_EQ(tables(), 1);
    auto version = migrate(raw_, db_.path(), kTwo);
    ASSERT_TRUE(version);
    EXPECT_EQ(*version, 2);
    EXPECT_EQ(tables(), 2);
}

TEST_F(Migrations, AFailingMigrationLeavesThePreviousVersionIntact) {
    constexpr std::array<Migration, 3> kBroken = {{
        kTwo[0],
        kTwo[1],
        {3, "0003_broken.sql", "CREATE TABLE c (z INTEGER); INSERT INTO a VALUES (8); NOT SQL;"},
    }};
    auto version = migrate(raw_, db_.path(), kBroken);
    ASSERT_FALSE(version);
    EXPECT_THAT(version.error().message, HasSubstr(db_.path() + ": migration 0003_broken.sql:"));
    EXPECT_THAT(version.error().message, HasSubstr("syntax error"));
    // 1 and 2 were committed; 3's table and row were rolled back with it.
    EXPECT_EQ(integer("PRAGMA user_version"), 2);
    EXPECT_EQ(tables(), 2);
    EXPECT_EQ(integer("SELECT count(*) FROM a"), 1);
}

TEST_F(Migrations, ANewerDatabaseIsRefusedUntouched) {
    ASSERT_EQ(sqlite3_exec(raw_, "PRAGMA user_version = 5", nullptr, nullptr, nullptr), SQLITE_OK);
    auto version = migrate(raw_, db_.path(), kTwo);
    ASSERT_FALSE(version);
    EXPECT_EQ(version.error().code, make_error_code(Errc::unsupported));
    EXPECT_THAT(version.error().message, HasSubstr("schema version 5 is newer than this tokenradar "
                                                   "(it knows versions up to 2)"));
    EXPECT_EQ(tables(), 0);
}

TEST_F(Migrations, BuiltinMigrationsAreNumberedFromOneWithoutGaps) {
    const auto builtin = builtin_migrations();
    ASSERT_FALSE(builtin.empty());
    for (std::size_t i = 0; i < builtin.size(); ++i) {
        EXPECT_EQ(builtin[i].version, static_cast<int>(i + 1));
        EXPECT_THAT(std::string(builtin[i].sql), HasSubstr(";"));
    }
    EXPECT_EQ(builtin[0].name, "0001_measurements.sql");
    EXPECT_THAT(std::string(builtin[0].sql), HasSubstr("CREATE TABLE measurements"));
}

// Schema version 2 as the store wrote it before migration 3: every field a column, the
// derived metrics too. The columns and bindings of that version's bind_record().
void insert_version_2(sqlite3* db, std::int64_t id, const Measurement& m) {
    static constexpr const char* kSql =
        "INSERT INTO measurements (id, ts_us, received_us, request_id, response_id, client_id, "
        "attempt, provider, model, endpoint, upstream_region, client_region, task, source, "
        "cache, route, api, stream, status, http_status, sched_offset_ns, headers_ns, "
        "first_chunk_ns, first_token_ns, first_answer_ns, last_token_ns, done_ns, connect_ns, "
        "tls_ns, prompt_tokens, cached_prompt_tokens, cache_creation_tokens, output_tokens, "
        "reasoning_tokens, token_source, output_events, chunk_gap_p50_ns, chunk_gap_p99_ns, "
        "chunk_gap_max_ns, overhead_ns, relay_p50_ns, relay_max_ns, ttft_ms, ttft_sched_ms, "
        "ttfat_ms, ttfb_ms, e2e_ms, tpot_ms, decode_tps, tokens_per_chunk, e2e_tps, e2e500_ms) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
        "?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, "
        "?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44, ?45, ?46, ?47, ?48, ?49, ?50, ?51, ?52)";
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, kSql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    int i = 1;
    const auto integer = [&](std::int64_t v) { sqlite3_bind_int64(s, i++, v); };
    const auto text = [&](std::string_view v) {
        sqlite3_bind_text(s, i++, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    };
    const auto optional = [&](const std::optional<std::int64_t>& v) {
        v ? integer(*v) : static_cast<void>(sqlite3_bind_null(s, i++));
    };
    const auto real = [&](const std::optional<double>& v) {
        v ? static_cast<void>(sqlite3_bind_double(s, i++, *v))
          : static_cast<void>(sqlite3_bind_null(s, i++));
    };
    const std::int64_t send = m.t.send;
    integer(id);
    integer(m.ts_us);
    optional(m.received_us == 0 ? std::nullopt : std::optional<std::int64_t>(m.received_us));
    text(m.request_id);
    text(m.response_id);
    text(m.client_id);
    integer(m.attempt);
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::client_key) continue;  // a label from version 4 on
        if (label.label == Label::stream) {
            integer(m.labels.stream ? 1 : 0);
        } else {
            text(label_value(m.labels, label.label));
        }
    }
    text(to_string(m.status));
    integer(m.http_status);
    integer(m.t.sched - send);
    for (const auto* stamp : {&m.t.headers, &m.t.first_chunk, &m.t.first_token, &m.t.first_answer,
                              &m.t.last_token, &m.t.done}) {
        optional(*stamp ? std::optional(**stamp - send) : std::nullopt);
    }
    integer(m.connect_ns);
    integer(m.tls_ns);
    for (const auto* tokens : {&m.prompt_tokens, &m.cached_prompt_tokens, &m.cache_creation_tokens,
                               &m.output_tokens, &m.reasoning_tokens}) {
        optional(*tokens);
    }
    text(to_string(m.token_source));
    integer(m.output_events);
    for (const auto* ns : {&m.chunk_gap_p50_ns, &m.chunk_gap_p99_ns, &m.chunk_gap_max_ns,
                           &m.overhead_ns, &m.relay_p50_ns, &m.relay_max_ns}) {
        optional(*ns);
    }
    const Derived d = derive(m);
    for (const auto* v :
         {&d.ttft_ms, &d.ttft_sched_ms, &d.ttfat_ms, &d.ttfb_ms, &d.e2e_ms, &d.tpot_ms,
          &d.decode_tps, &d.tokens_per_chunk, &d.e2e_tps, &d.e2e500_ms}) {
        real(*v);
    }
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE) << sqlite3_errmsg(db);
    sqlite3_finalize(s);
}

// Records of every shape a version 2 file can hold, in ts order.
std::vector<Measurement> version_2_records() {
    constexpr std::int64_t kTs = 1'764'460'800'000'000;
    std::vector<Measurement> out;
    out.push_back(testing::full_record(1, kTs));  // submitted (client id), every field set
    Measurement local = testing::full_record(2, kTs);
    local.client_id.clear();  // measured here
    local.received_us = 0;
    out.push_back(local);
    Measurement mixed = testing::full_record(3, kTs);
    mixed.status = RequestStatus::http(429);
    mixed.http_status = 429;
    mixed.token_source = TokenSource::usage;
    mixed.t.first_answer.reset();
    mixed.reasoning_tokens.reset();
    mixed.output_tokens = 0;         // present, 0
    mixed.t.headers = mixed.t.send;  // present, 0 after send
    out.push_back(mixed);
    Measurement extreme = testing::full_record(4, kTs);
    extreme.t.send = 0;
    extreme.t.sched = INT64_MIN / 2;  // derive() (the derived columns) subtracts it
    extreme.t.done = INT64_MAX;
    extreme.connect_ns = INT64_MAX;
    extreme.prompt_tokens = INT64_MIN;
    extreme.http_status = INT_MAX;
    extreme.response_id = std::string(300, 'r');
    extreme.labels.model = "模型-ü";  // any UTF-8
    out.push_back(extreme);
    out.push_back(testing::bare_record(kTs + 100));          // every optional absent
    for (Measurement& m : out) m.labels.client_key.clear();  // no such label before version 4
    return out;
}

// Migration 3 packs a version 2 file's rows: opened by this build, the file gives back the
// same records it gave before, under the same ids, and keeps what else it held.
TEST_F(Migrations, AVersionTwoFileReadsBackTheSameRecordsAfterMigrationThree) {
    const std::vector<Measurement> records = version_2_records();
    const std::vector<std::int64_t> ids = {3, 4, 9, 10, 12};  // gaps: retention, ignored rows
    ASSERT_TRUE(migrate(raw_, db_.path(), builtin_migrations().first(2)));
    for (std::size_t i = 0; i < records.size(); ++i) insert_version_2(raw_, ids[i], records[i]);
    ASSERT_EQ(sqlite3_exec(raw_,
                           "INSERT INTO store_state (key, value) VALUES ('rollup_watermark', 9);"
                           "INSERT INTO rollup_hours VALUES (0, 'p', 'm', 't', 's', 'openai', '', "
                           "'', 1, '', x'0102');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(raw_);
    EXPECT_EQ(integer("PRAGMA user_version"), 2);

    auto store = SqliteStore::open(db_.path());
    ASSERT_TRUE(store) << store.error().message;
    EXPECT_EQ((*store)->schema_version(), 4);
    EXPECT_EQ(integer("PRAGMA user_version"), 4);
    auto back = (*store)->select({});
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        EXPECT_EQ((*back)[i], testing::relative_to_send(records[i])) << "record " << i;
    }
    // The same ids: the rollup watermark still says which records the rollups hold.
    EXPECT_EQ((*store)->last_id().value(), 12);
    store::RecordQuery after_watermark;
    after_watermark.after_id = 9;
    auto newer = (*store)->select(after_watermark);
    ASSERT_TRUE(newer);
    ASSERT_EQ(newer->size(), 2U);
    EXPECT_EQ(newer->front(), testing::relative_to_send(records[3]));
    std::vector<RollupRow> rollups;
    EXPECT_EQ(
        (*store)->load_rollups([&](RollupRow&& r) { rollups.push_back(std::move(r)); }).value(), 9);
    ASSERT_EQ(rollups.size(), 1U);
    EXPECT_EQ(rollups[0].aggregate, (std::vector<std::uint8_t>{1, 2}));
    EXPECT_EQ(integer("SELECT count(*) FROM label_sets"), 5);  // one per combination
    // The submitter's record is still a duplicate when it comes again; new records go on from
    // the last id.
    auto again = (*store)->insert(std::vector{records[0], testing::full_record(5)});
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, (std::vector<bool>{false, true}));
    EXPECT_EQ((*store)->last_id().value(), 13);
    // The old table's indexes are on the new one, which has 8 columns instead of 52.
    EXPECT_EQ(integer("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN "
                      "('measurements_ts', 'measurements_submitted')"),
              2);
    EXPECT_EQ(integer("SELECT count(*) FROM pragma_table_info('measurements')"), 8);
    EXPECT_EQ(integer("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"),
              1);
    EXPECT_EQ(integer("SELECT count(*) FROM pragma_foreign_key_check"), 0);
}

// The migration's function only exists on a tokenradar connection: another program (the
// sqlite3 shell) cannot half-apply it.
TEST_F(Migrations, MigrationThreeNeedsTheStoresFunction) {
    ASSERT_TRUE(migrate(raw_, db_.path(), builtin_migrations().first(2)));
    insert_version_2(raw_, 1, testing::full_record(1));
    auto version = migrate(raw_, db_.path(), builtin_migrations());
    ASSERT_FALSE(version);
    EXPECT_THAT(version.error().message, HasSubstr("no such function: tokenradar_pack"));
    EXPECT_EQ(integer("PRAGMA user_version"), 2);
    EXPECT_EQ(integer("SELECT count(*) FROM measurements"), 1);
    ASSERT_TRUE(add_migration_functions(raw_, db_.path()));
    EXPECT_EQ(migrate(raw_, db_.path(), builtin_migrations()).value(), 4);
}

// Migration 4 adds client_key to label_sets and rollup_hours: a version 3 file keeps its
// records (client_key '', the same ids and label sets) and rollups, and a record that differs
// from a stored one only in its client key gets a label set of its own.
TEST_F(Migrations, MigrationFourGivesEveryStoredRowAnEmptyClientKey) {
    ASSERT_TRUE(add_migration_functions(raw_, db_.path()));
    ASSERT_EQ(migrate(raw_, db_.path(), builtin_migrations().first(3)).value(), 3);
    Measurement old = testing::full_record(1);
    old.labels.client_key.clear();
    ASSERT_EQ(
        sqlite3_exec(raw_,
                     "INSERT INTO label_sets (id, provider, model, endpoint, upstream_region, "
                     "client_region, task, source, cache, route, api, stream) VALUES (7, "
                     "'prov-1', 'model-1', 'api.example.com', 'us-east', 'eu-west', "
                     "'gen-500', 'gateway', 'miss', 'hedge', 'anthropic', 0);"
                     "INSERT INTO rollup_hours VALUES (3600000000, 'p', 'm', 't', 's', "
                     "'openai', '', '', 1, 'c', x'0102');",
                     nullptr, nullptr, nullptr),
        SQLITE_OK)
        << sqlite3_errmsg(raw_);
    {
        // The record through a version 3 store's own insert: the label set found is row 7.
        sqlite3_stmt* s = nullptr;
        ASSERT_EQ(sqlite3_prepare_v2(raw_,
                                     "INSERT INTO measurements (id, ts_us, request_id, client_id, "
                                     "attempt, label_set, status, packed) VALUES (5, ?1, ?2, ?3, "
                                     "?4, 7, 'ok', x'')",
                                     -1, &s, nullptr),
                  SQLITE_OK)
            << sqlite3_errmsg(raw_);
        sqlite3_bind_int64(s, 1, old.ts_us);
        sqlite3_bind_text(s, 2, old.request_id.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 3, old.client_id.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 4, old.attempt);
        ASSERT_EQ(sqlite3_step(s), SQLITE_DONE) << sqlite3_errmsg(raw_);
        sqlite3_finalize(s);
    }

    auto store = SqliteStore::open(db_.path());
    ASSERT_TRUE(store) << store.error().message;
    EXPECT_EQ((*store)->schema_version(), 4);
    EXPECT_EQ(integer("SELECT count(*) FROM label_sets WHERE id = 7 AND client_key = ''"), 1);
    EXPECT_EQ(integer("SELECT count(*) FROM measurements_labelled WHERE id = 5 AND "
                      "client_key = '' AND provider = 'prov-1'"),
              1);
    std::vector<RollupRow> rollups;
    ASSERT_TRUE((*store)->load_rollups([&](RollupRow&& r) { rollups.push_back(std::move(r)); }));
    ASSERT_EQ(rollups.size(), 1U);
    EXPECT_EQ(rollups[0].labels.back(), "");  // client_key
    EXPECT_EQ(rollups[0].client_id, "c");
    EXPECT_EQ(rollups[0].aggregate, (std::vector<std::uint8_t>{1, 2}));

    // Row 7's labels with a client key: a new label set; the same labels without one: row 7.
    Measurement keyed = testing::full_record(1);
    keyed.request_id = "req-keyed";
    ASSERT_EQ(keyed.labels.client_key, "team-1");
    Measurement unkeyed = keyed;
    unkeyed.request_id = "req-unkeyed";
    unkeyed.labels.client_key.clear();
    ASSERT_TRUE((*store)->insert(std::vector{keyed, unkeyed}));
    EXPECT_EQ(integer("SELECT count(*) FROM label_sets"), 2);
    EXPECT_EQ(integer("SELECT label_set FROM measurements WHERE request_id = 'req-unkeyed'"), 7);
    RecordQuery after;
    after.after_id = 5;
    auto back = (*store)->select(after);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), 2U);
    EXPECT_EQ((*back)[0].labels.client_key, "team-1");
    EXPECT_EQ((*back)[1].labels.client_key, "");
    EXPECT_EQ(integer("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"),
              1);
    EXPECT_EQ(integer("SELECT count(*) FROM pragma_foreign_key_check"), 0);
}

}  // namespace
}  // namespace tokenradar::store

// The MeasurementStore contract, one suite run against every backend: SQLite (a temporary
// file), PostgreSQL loading records measured here by COPY, and PostgreSQL loading them by
// multi-row INSERT (a real server per test, tests/support/postgres_server.hpp), and
// ClickHouse (a real clickhouse-server per test, tests/support/clickhouse_server.hpp). What
// only one backend has (WAL checkpoints, the owner lock, reconnects) is in
// sqlite_store_test.cpp, postgres_store_test.cpp and clickhouse_store_test.cpp.
//
// Where ClickHouse differs, the test says so: its ids are time-based, not 1, 2, 3 (read from
// SQL instead); it has no label_sets table (labels are columns); a failing row is made with a
// MATERIALIZED throwIf column (it has no triggers); rows are changed by mutations
// (ALTER TABLE ... UPDATE, waited for).

#include <tokenradar/store/measurement_store.hpp>

#include "../../support/clickhouse_server.hpp"
#include "../../support/postgres_server.hpp"
#include "../../support/store_records.hpp"
#include "raw_db.hpp"

#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/postgres_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::store {
namespace {

using testing::bare_record;
using testing::ClickHouseServer;
using testing::full_record;
using ::testing::HasSubstr;
using testing::PostgresServer;
using testing::relative_to_send;

enum class Backend { sqlite, postgres_copy, postgres_insert, clickhouse };

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    switch (info.param) {
        case Backend::sqlite:
            return "sqlite";
        case Backend::postgres_copy:
            return "postgres_copy";
        case Backend::postgres_insert:
            return "postgres_insert";
        case Backend::clickhouse:
            return "clickhouse";
    }
    return "unknown";
}

class StoreContract : public ::testing::TestWithParam<Backend> {
  protected:
    void SetUp() override {
        if (sqlite()) return;
        if (clickhouse()) {
            if (!ClickHouseServer::available()) GTEST_SKIP() << ClickHouseServer::skip_reason();
            clickhouse_ = std::make_unique<ClickHouseServer>();
            return;
        }
        if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::skip_reason();
        server_ = std::make_unique<PostgresServer>();
    }

    [[nodiscard]] bool sqlite() const { return GetParam() == Backend::sqlite; }
    [[nodiscard]] bool clickhouse() const { return GetParam() == Backend::clickhouse; }

    std::unique_ptr<MeasurementStore> open() {
        if (sqlite()) {
            auto s = SqliteStore::open(db_.path());
            EXPECT_TRUE(s) << (s ? "" : s.error().message);
            return s ? std::move(*s) : nullptr;
        }
        if (clickhouse()) {
            auto s = ClickHouseStore::open(clickhouse_->url());
            EXPECT_TRUE(s) << (s ? "" : s.error().message);
            return s ? std::move(*s) : nullptr;
        }
        PostgresOptions options;
        options.loader = GetParam() == Backend::postgres_copy ? PostgresOptions::Loader::copy
                                                              : PostgresOptions::Loader::insert;
        auto s = PostgresStore::open(server_->url(), options);
        EXPECT_TRUE(s) << (s ? "" : s.error().message);
        return s ? std::move(*s) : nullptr;
    }

    // What the store's errors start with: the file, or the URL with its password redacted.
    [[nodiscard]] std::string name() const {
        if (clickhouse()) return redact_clickhouse_url(clickhouse_->url());
        return sqlite() ? db_.path() : redact_postgres_url(server_->url());
    }

    // SQL on a connection of its own, as another process would run it.
    void exec(const std::string& sql) {
        if (sqlite()) {
            testing::RawDb(db_.path()).exec(sql);
        } else if (clickhouse()) {
            clickhouse_->exec(sql, "tokenradar");
        } else {
            server_->exec("tokenradar", sql);
        }
    }
    std::string text(const std::string& sql) {
        if (clickhouse()) {
            std::string rows = clickhouse_->query(sql, "tokenradar");
            if (!rows.empty() && rows.back() == '\n') rows.pop_back();
            return rows;
        }
        return sqlite() ? testing::RawDb(db_.path()).text(sql) : server_->query("tokenradar", sql);
    }
    // ClickHouse: an ALTER TABLE ... UPDATE, waited for until done.
    void mutate(const std::string& sql) {
        exec(sql);
        while (integer("SELECT count() FROM system.mutations WHERE database = 'tokenradar' AND "
                       "is_done = 0") != 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    // The id of the record with this request id (ClickHouse's ids are time-based).
    std::int64_t id_of(const std::string& request_id) {
        return integer("SELECT id FROM measurements WHERE request_id = '" + request_id + "'");
    }
    std::int64_t integer(const std::string& sql) { return std::stoll(text(sql)); }

    // A trigger that refuses to store the record with request id `request_id`, and its removal.
    void refuse(const std::string& request_id) {
        if (clickhouse()) {  // no triggers: a column computed at insert that throws
            exec(
                "ALTER TABLE measurements ADD COLUMN refuse UInt8 MATERIALIZED throwIf("
                "request_id = '" +
                request_id + "')");
            return;
        }
        if (sqlite()) {
            exec("CREATE TRIGGER refuse BEFORE INSERT ON measurements WHEN NEW.request_id = '" +
                 request_id + "' BEGIN SELECT RAISE(ABORT, 'refused'); END");
        } else {
            exec(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE "
                "EXCEPTION 'refused'; END $$");
            exec(
                "CREATE TRIGGER refuse BEFORE INSERT ON measurements FOR EACH ROW WHEN "
                "(NEW.request_id = '" +
                request_id + "') EXECUTE FUNCTION refuse()");
        }
    }
    void stop_refusing() {
        if (clickhouse()) {
            exec("ALTER TABLE measurements DROP COLUMN refuse");
            return;
        }
        exec(sqlite() ? "DROP TRIGGER refuse" : "DROP TRIGGER refuse ON measurements");
        if (!sqlite()) exec("DROP FUNCTION refuse");
    }
    // What the refusal's error says (ClickHouse 18.16's throwIf takes no message).
    [[nodiscard]] std::string refusal() const { return clickhouse() ? "throwIf" : "refused"; }
    // An SQL literal of the bytes with these hex digits.
    [[nodiscard]] std::string bytes(const std::string& hex) const {
        if (clickhouse()) return "unhex('" + hex + "')";
        return sqlite() ? "x'" + hex + "'" : "'\\x" + hex + "'::bytea";
    }

    testing::TempDb db_;
    std::unique_ptr<PostgresServer> server_;
    std::unique_ptr<ClickHouseServer> clickhouse_;
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreContract,
                         ::testing::Values(Backend::sqlite, Backend::postgres_copy,
                                           Backend::postgres_insert, Backend::clickhouse),
                         backend_name);

TEST_P(StoreContract, EveryFieldRoundTrips) {
    auto store = open();
    ASSERT_TRUE(store);
    std::vector<Measurement> records{full_record(1), bare_record(1'764'460'800'000'100),
                                     full_record(2)};
    records[2].token_source = TokenSource::usage;
    records[2].status = RequestStatus::http(429);
    records[2].http_status = 429;
    records[2].t.first_answer.reset();  // a mix of present and absent stamps
    records[2].reasoning_tokens.reset();
    ASSERT_TRUE(store->insert(records));
    auto back = store->select({});
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), 3u);
    // Oldest first: full_record(1) (ts + 1), full_record(2) (ts + 2), bare (ts + 100).
    EXPECT_EQ((*back)[0], relative_to_send(records[0]));
    EXPECT_EQ((*back)[1], relative_to_send(records[2]));
    EXPECT_EQ((*back)[2], relative_to_send(records[1]));
    if (clickhouse()) {  // labels are columns (text, as label_value writes them)
        EXPECT_EQ(text("SELECT concat(provider, ' ', model, ' ', api, ' ', stream, ' ', status, "
                       "' ', toString(attempt), ' ', client_id) FROM measurements WHERE "
                       "request_id = 'req-1'"),
                  "prov-1 model-1 anthropic false ok 2 client-1");
        EXPECT_EQ(text("SELECT toTypeName(packed) FROM measurements WHERE request_id = 'bare'"),
                  "String");
        return;
    }
    // For SQL: ids, status and ts as columns, the labels through the view (each combination
    // once in label_sets), every other field packed.
    EXPECT_EQ(text("SELECT provider || ' ' || model || ' ' || api || ' ' || "
                   "CASE WHEN stream THEN 1 ELSE 0 END || ' ' || status || ' ' || attempt || ' ' "
                   "|| client_id FROM measurements_labelled WHERE request_id = 'req-1'"),
              "prov-1 model-1 anthropic 0 ok 2 client-1");
    EXPECT_EQ(text("SELECT status FROM measurements_labelled WHERE request_id = 'req-2'"),
              "http_429");
    EXPECT_EQ(integer("SELECT count(*) FROM label_sets"), 3);
    EXPECT_EQ(
        text(sqlite() ? "SELECT typeof(packed) FROM measurements WHERE request_id = 'bare'"
                      : "SELECT pg_typeof(packed) FROM measurements WHERE request_id = 'bare'"),
        sqlite() ? "blob" : "bytea");
}

TEST_P(StoreContract, ScanSelectsAWindowInOrderWithALimit) {
    auto store = open();
    ASSERT_TRUE(store);
    std::vector<Measurement> records;
    for (int i = 0; i < 10; ++i) records.push_back(full_record(i, 1000));  // ts 1000..1009
    ASSERT_TRUE(store->insert(records));
    RecordQuery q;
    q.from_ts_us = 1003;
    q.to_ts_us = 1007;
    auto window = store->select(q);
    ASSERT_TRUE(window);
    ASSERT_EQ(window->size(), 4u);
    EXPECT_EQ(window->front().ts_us, 1003);
    EXPECT_EQ(window->back().ts_us, 1006);
    q.newest_first = true;
    q.limit = 2;
    auto newest = store->select(q);
    ASSERT_TRUE(newest);
    ASSERT_EQ(newest->size(), 2u);
    EXPECT_EQ((*newest)[0].ts_us, 1006);
    EXPECT_EQ((*newest)[1].ts_us, 1005);
    std::size_t visited = 0;
    auto count = store->scan({}, [&](const Measurement&) { ++visited; });
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 10u);
    EXPECT_EQ(visited, 10u);
}

// Equal stamps come back in insertion order (newest first: its reverse), and a scan longer
// than one fetch of a cursor sees every record once.
TEST_P(StoreContract, EqualStampsKeepInsertionOrderAcrossLongScans) {
    auto store = open();
    ASSERT_TRUE(store);
    std::vector<Measurement> records;
    for (int i = 0; i < 10'000; ++i) {
        Measurement m = full_record(i, 0);
        m.ts_us = 5 + i / 1000;  // ten stamps, a thousand records each
        m.client_id.clear();
        records.push_back(m);
    }
    ASSERT_TRUE(store->insert(records));
    auto all = store->select({});
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        ASSERT_EQ((*all)[i].request_id, records[i].request_id) << i;
    }
    RecordQuery q;
    q.newest_first = true;
    q.limit = 5'000;
    auto newest = store->select(q);
    ASSERT_TRUE(newest);
    ASSERT_EQ(newest->size(), 5'000u);
    EXPECT_EQ(newest->front().request_id, records.back().request_id);
    EXPECT_EQ(newest->back().request_id, records[5'000].request_id);
}

TEST_P(StoreContract, ASubmittersDuplicateIsSkippedAndLocalRecordsNeverAre) {
    auto store = open();
    ASSERT_TRUE(store);
    Measurement submitted = full_record(1);
    Measurement local = full_record(2);
    local.client_id.clear();
    auto first = store->insert(std::vector{submitted, local});
    ASSERT_TRUE(first);
    EXPECT_EQ(*first, (std::vector<bool>{true, true}));
    Measurement retry = submitted;
    retry.attempt = submitted.attempt + 1;  // another attempt of the same request is its own record
    Measurement other_client = submitted;
    other_client.client_id = "someone-else";
    auto second = store->insert(std::vector{submitted, local, retry, other_client, retry});
    ASSERT_TRUE(second);
    // The second `retry` repeats one stored by the same insert.
    EXPECT_EQ(*second, (std::vector<bool>{false, true, true, true, false}));
    auto all = store->select({});
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 5u);
}

// Records measured here go in multi-row INSERTs (SQLite), by COPY or multi-row INSERTs
// (PostgreSQL); submitted ones beside them. A batch mixing both, with empty optionals at
// varying row offsets, round-trips every field in order, and only the submitter's repeated
// record is reported as not stored.
TEST_P(StoreContract, LocalRecordsRoundTripBesideSubmittedOnes) {
    auto store = open();
    ASSERT_TRUE(store);
    constexpr std::int64_t kTs = 1'764'460'800'000'000;
    std::vector<Measurement> records;
    for (int i = 0; i < 141; ++i) {  // locals 0-19 and 21-140: a run past 64 rows
        Measurement m = i % 7 == 3 ? bare_record(kTs + i) : full_record(i, kTs);
        if (i != 20) m.client_id.clear();
        records.push_back(m);
    }
    auto first = store->insert(records);
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(*first, std::vector<bool>(records.size(), true));
    auto again = store->insert(records);
    ASSERT_TRUE(again);
    std::vector<bool> expected(records.size(), true);
    expected[20] = false;  // the submitted record, seen before
    EXPECT_EQ(*again, expected);

    auto back = store->select({});
    ASSERT_TRUE(back);
    ASSERT_EQ(back->size(), 2 * records.size() - 1);
    std::size_t locals = 0;
    for (const Measurement& got : *back) locals += got.client_id.empty() ? 1 : 0;
    EXPECT_EQ(locals, 2 * (records.size() - 1));
    // Each record and its second copy sit side by side in ts order (the ids tell the copies
    // apart); every field matches the original's.
    for (std::size_t i = 0; i < records.size(); ++i) {
        SCOPED_TRACE(i);
        const std::size_t at = i < 20 ? 2 * i : (i == 20 ? 40 : 2 * i - 1);
        EXPECT_EQ((*back)[at], relative_to_send(records[i]));
        if (i != 20) {
            EXPECT_EQ((*back)[at + 1], relative_to_send(records[i]));
        }
    }
}

TEST_P(StoreContract, ScanAfterAnIdSeesOnlyNewerRecords) {
    auto store = open();
    ASSERT_TRUE(store);
    EXPECT_EQ(store->last_id().value(), 0);
    std::vector<Measurement> records;
    for (int i = 0; i < 5; ++i) records.push_back(full_record(i));
    ASSERT_TRUE(store->insert(records));
    const std::int64_t mark = store->last_id().value();
    EXPECT_EQ(mark, clickhouse() ? id_of("req-4") : 5);
    records.clear();
    for (int i = 5; i < 8; ++i) records.push_back(full_record(i));
    ASSERT_TRUE(store->insert(records));
    RecordQuery q;
    q.after_id = mark;
    auto newer = store->select(q);
    ASSERT_TRUE(newer);
    ASSERT_EQ(newer->size(), 3u);
    EXPECT_EQ(newer->front().request_id, "req-5");
    q.up_to_id = clickhouse() ? id_of("req-5") : mark + 1;
    auto one = store->select(q);
    ASSERT_TRUE(one);
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ(one->front().request_id, "req-5");
}

TEST_P(StoreContract, RollupRowsAreReplacedLoadedAndClearedWithTheirWatermark) {
    auto store = open();
    ASSERT_TRUE(store);
    RollupRow row;
    row.hour_us = 3'600'000'000;
    row.labels = {"openai", "gpt-4o", "chat", "gateway", "openai", "us-east", "eu-west"};
    row.stream = false;
    row.client_id = "";
    row.aggregate = {1, 2, 3};
    RollupRow other = row;
    other.client_id = "key:team";
    other.aggregate = {9};
    ASSERT_TRUE(store->save_rollups(std::vector{row, other}, 41));
    row.aggregate = {4, 5};  // same key: replaced
    RollupRow stale = row;
    stale.aggregate = {0};  // and within one call the last row for a key wins
    ASSERT_TRUE(store->save_rollups(std::vector{stale, row}, 42));
    std::vector<RollupRow> loaded;
    auto watermark = store->load_rollups([&](RollupRow&& r) { loaded.push_back(std::move(r)); });
    ASSERT_TRUE(watermark) << watermark.error().message;
    EXPECT_EQ(*watermark, 42);
    ASSERT_EQ(loaded.size(), 2u);
    const RollupRow& mine = loaded[0].client_id.empty() ? loaded[0] : loaded[1];
    EXPECT_EQ(mine.aggregate, (std::vector<std::uint8_t>{4, 5}));
    EXPECT_EQ(mine.labels, row.labels);
    EXPECT_FALSE(mine.stream);
    EXPECT_EQ(mine.hour_us, row.hour_us);
    // Rows come back in hour order whatever order they were saved in (the observatory folds
    // each closed hour as the load passes it).
    std::vector<RollupRow> hours;
    for (std::int64_t h : {7, 2, 9, 2, 5}) {
        RollupRow r = other;
        r.hour_us = h * 3'600'000'000;
        r.client_id = "c" + std::to_string(hours.size());
        hours.push_back(std::move(r));
    }
    ASSERT_TRUE(store->save_rollups(hours, 43));
    std::vector<std::int64_t> order;
    ASSERT_TRUE(store->load_rollups([&](RollupRow&& r) { order.push_back(r.hour_us); }));
    EXPECT_EQ(order.size(), 7u);
    EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
    ASSERT_TRUE(store->clear_rollups());
    loaded.clear();
    EXPECT_EQ(store->load_rollups([&](RollupRow&& r) { loaded.push_back(std::move(r)); }).value(),
              0);
    EXPECT_TRUE(loaded.empty());
}

TEST_P(StoreContract, DeleteBeforeRemovesOnlyOlderRecords) {
    auto store = open();
    ASSERT_TRUE(store);
    std::vector<Measurement> records;
    for (int i = 0; i < 25'000; ++i) records.push_back(full_record(i, 0));  // ts 0..24999
    ASSERT_TRUE(store->insert(records));
    auto deleted = store->delete_before(20'500);  // three chunks of at most 10,000
    ASSERT_TRUE(deleted);
    EXPECT_EQ(*deleted, 20'500u);
    auto rest = store->select({});
    ASSERT_TRUE(rest);
    ASSERT_EQ(rest->size(), 4'500u);
    EXPECT_EQ(rest->front().ts_us, 20'500);
    auto none = store->delete_before(0);
    ASSERT_TRUE(none);
    EXPECT_EQ(*none, 0u);
}

// A failure in the middle of an insert rolls back the rows before it: in a run of records
// measured here (SQLite's multi-row INSERT, PostgreSQL's COPY) and among submitted ones.
TEST_P(StoreContract, AFailingRowRollsBackTheWholeInsert) {
    auto store = open();
    ASSERT_TRUE(store);
    std::vector<Measurement> records;
    for (int i = 0; i < 40; ++i) {
        records.push_back(full_record(i));
        if (i < 30) records.back().client_id.clear();
    }
    for (const char* refused : {"req-25", "req-35"}) {
        SCOPED_TRACE(refused);
        refuse(refused);
        auto failed = store->insert(records);
        ASSERT_FALSE(failed);
        EXPECT_THAT(failed.error().message, HasSubstr(refusal()));
        EXPECT_THAT(failed.error().message, HasSubstr(name() + ": insert"));
        EXPECT_EQ(integer("SELECT count(*) FROM measurements"), 0);
        stop_refusing();
    }
    auto stored = store->insert(records);
    ASSERT_TRUE(stored) << stored.error().message;
    EXPECT_EQ(integer("SELECT count(*) FROM measurements"), 40);
}

// The label set a failed insert added was rolled back with it, and the database may hand its
// id to the next one: the store must not keep using that id for the first labels.
TEST_P(StoreContract, LabelsFirstSeenInARolledBackInsertAreStoredAgainLater) {
    auto store = open();
    ASSERT_TRUE(store);
    refuse("req-2");
    Measurement x = full_record(1);
    x.labels.provider = "x";
    Measurement refused = full_record(2);
    ASSERT_FALSE(store->insert(std::vector{x, refused}));
    stop_refusing();
    Measurement y = full_record(3);
    y.labels.provider = "y";
    ASSERT_TRUE(store->insert(std::vector{y}));
    ASSERT_TRUE(store->insert(std::vector{x}));
    auto back = store->select({});
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), 2U);
    EXPECT_EQ((*back)[0], relative_to_send(x));
    EXPECT_EQ((*back)[1], relative_to_send(y));
    if (clickhouse()) return;  // no label_sets
    EXPECT_EQ(integer("SELECT count(*) FROM label_sets"), 2);
}

// Rows damaged outside the store (a disk error, a hand-made UPDATE): scan() stops with an
// error that names the row, after the rows before it.
TEST_P(StoreContract, ADamagedRowIsAnErrorNamingItsId) {
    auto store = open();
    ASSERT_TRUE(store);
    std::vector<Measurement> records{full_record(1), full_record(2), full_record(3)};
    ASSERT_TRUE(store->insert(records));
    std::vector<std::string> seen;
    const auto scan = [&] {
        seen.clear();
        return store->scan({}, [&](const Measurement& m) { seen.push_back(m.request_id); });
    };
    const std::int64_t id2 = clickhouse() ? id_of("req-2") : 2;
    const std::int64_t id3 = clickhouse() ? id_of("req-3") : 3;
    if (clickhouse()) {
        mutate("ALTER TABLE measurements UPDATE packed = " + bytes("01ff") +
               " WHERE id = " + std::to_string(id2));
    } else {
        exec("UPDATE measurements SET packed = " + bytes("01ff") + " WHERE id = 2");
    }
    auto damaged = scan();
    ASSERT_FALSE(damaged);
    EXPECT_EQ(damaged.error().code, make_error_code(Errc::internal));
    EXPECT_EQ(damaged.error().message,
              name() + ": measurement " + std::to_string(id2) +
                  ": packed fields: 2 bytes, shorter than the 14-byte header");
    EXPECT_EQ(seen, std::vector<std::string>{"req-1"});
    if (clickhouse()) {
        // No label sets: a label column with a value no label takes is the damage there.
        const std::string packed3 =
            text("SELECT hex(packed) FROM measurements WHERE id = " + std::to_string(id3));
        mutate("ALTER TABLE measurements UPDATE packed = " + bytes(packed3) +
               " WHERE id = " + std::to_string(id2));
        mutate("ALTER TABLE measurements UPDATE cache = 'bogus' WHERE id = " + std::to_string(id3));
        auto bad = scan();
        ASSERT_FALSE(bad);
        EXPECT_EQ(bad.error().message,
                  name() + ": measurement " + std::to_string(id3) +
                      ": cache: expected one of miss, exact, semantic, bypass");
        EXPECT_EQ(seen.size(), 2U);
        EXPECT_EQ(store->last_id().value(), id3);
        return;
    }
    exec(
        "UPDATE measurements SET packed = (SELECT packed FROM measurements WHERE id = 3) "
        "WHERE id = 2");
    exec("UPDATE measurements SET label_set = 99 WHERE id = 3");
    auto orphan = scan();
    ASSERT_FALSE(orphan);
    EXPECT_EQ(orphan.error().message, name() + ": measurement 3: label set 99 is missing");
    EXPECT_EQ(seen.size(), 2U);
    // The store is still usable after a failed scan.
    EXPECT_EQ(store->last_id().value(), 3);
}

}  // namespace
}  // namespace tokenradar::store

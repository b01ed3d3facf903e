#include "../../support/store_records.hpp"

#include <tokenradar/store/sqlite_store.hpp>

#include <unistd.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

namespace tokenradar::store {
namespace {

using testing::bare_record;
using testing::full_record;
using ::testing::HasSubstr;
using testing::relative_to_send;
using testing::TempDb;

// A second, raw connection to the same file, as another process would have.
class RawDb {
  public:
    explicit RawDb(const std::string& path) {
        EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
        sqlite3_busy_timeout(db_, 5000);
    }
    ~RawDb() { sqlite3_close(db_); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;

    void exec(const std::string& sql) {
        char* error = nullptr;
        ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
    }
    // The first column of the first row as text ("" for NULL or no row).
    std::string text(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
        std::string out;
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0) != nullptr) {
            out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        }
        sqlite3_finalize(s);
        return out;
    }
    std::int64_t integer(const std::string& sql) { return std::stoll(text(sql)); }

  private:
    sqlite3* db_ = nullptr;
};

std::unique_ptr<SqliteStore> open_ok(const std::string& path, SqliteOptions options = {}) {
    auto store = SqliteStore::open(path, options);
    EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
    return store ? std::move(*store) : nullptr;
}

TEST(SqliteStore, OpenCreatesTheSchemaInWalMode) {
    TempDb db;
    auto store = open_ok(db.path());
    ASSERT_TRUE(store);
    EXPECT_EQ(store->schema_version(), SqliteStore::latest_schema_version());
    EXPECT_GE(SqliteStore::latest_schema_version(), 1);
    RawDb raw(db.path());
    EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw.integer("PRAGMA user_version"), SqliteStore::latest_schema_version());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                          "name = 'measurements_ts'"),
              1);
    // The time-window query (scan()'s) uses the ts_us index for both the range and the order.
    sqlite3* check = nullptr;
    ASSERT_EQ(sqlite3_open(db.path().c_str(), &check), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(check,
                                 "EXPLAIN QUERY PLAN SELECT * FROM measurements WHERE ts_us >= 1 "
                                 "AND ts_us < 2 ORDER BY ts_us, id",
                                 -1, &s, nullptr),
              SQLITE_OK);
    std::string plan;
    while (sqlite3_step(s) == SQLITE_ROW)
        plan += reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
    sqlite3_finalize(s);
    sqlite3_close(check);
    EXPECT_THAT(plan, HasSubstr("measurements_ts"));
    EXPECT_THAT(plan, ::testing::Not(HasSubstr("TEMP B-TREE")));
}

TEST(SqliteStore, ReopenKeepsDataAndAppliesNothingTwice) {
    TempDb db;
    {
        auto store = open_ok(db.path());
        ASSERT_TRUE(store);
        std::vector<Measurement> records{full_record(1)};
        ASSERT_TRUE(store->insert(records));
    }
    for (int i = 0; i < 2; ++i) {
        auto store = open_ok(db.path());
        ASSERT_TRUE(store);
        EXPECT_EQ(store->schema_version(), SqliteStore::latest_schema_version());
        auto all = store->select({});
        ASSERT_TRUE(all);
        EXPECT_EQ(all->size(), 1u);
    }
    RawDb raw(db.path());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_schema WHERE name = 'measurements'"), 1);
}

TEST(SqliteStore, RefusesADatabaseFromANewerTokenRadar) {
    TempDb db;
    {
        RawDb raw(db.path());
        raw.exec("PRAGMA user_version = 99");
    }
    auto store = SqliteStore::open(db.path());
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, make_error_code(Errc::unsupported));
    EXPECT_THAT(store.error().message, HasSubstr(db.path()));
    EXPECT_THAT(store.error().message, HasSubstr("schema version 99 is newer"));
}

TEST(SqliteStore, WithoutMigrateAnOlderSchemaIsAnErrorAndLeftAlone) {
    TempDb db;
    SqliteOptions options;
    options.migrate = false;
    // A new file is schema version 0: older than any binary.
    auto old = SqliteStore::open(db.path(), options);
    ASSERT_FALSE(old);
    EXPECT_EQ(old.error().code, make_error_code(Errc::unsupported));
    EXPECT_THAT(
        old.error().message,
        HasSubstr(db.path() + ": database schema version 0 is older than this tokenradar's"));
    {
        RawDb raw(db.path());
        EXPECT_EQ(raw.integer("PRAGMA user_version"), 0);
        EXPECT_EQ(raw.integer("SELECT count(*) FROM sqlite_schema"), 0);
        raw.exec("PRAGMA user_version = 99");
    }
    auto newer = SqliteStore::open(db.path(), options);
    ASSERT_FALSE(newer);
    EXPECT_THAT(newer.error().message, HasSubstr("schema version 99 is newer"));
    EXPECT_FALSE(SqliteStore::open(db.path()));  // with migrate: refused as well, unchanged
    RawDb raw(db.path());
    EXPECT_EQ(raw.integer("PRAGMA user_version"), 99);
}

TEST(SqliteStore, WithoutCreateAMissingOrForeignFileIsAnError) {
    TempDb db;
    SqliteOptions options;
    options.create = false;
    auto missing = SqliteStore::open(db.path(), options);
    ASSERT_FALSE(missing);
    EXPECT_THAT(missing.error().message, HasSubstr(db.path() + ": no such database file"));
    EXPECT_FALSE(std::filesystem::exists(db.path()));

    { std::ofstream(db.path()) << ""; }  // an empty file is a valid, empty SQLite database
    auto empty = SqliteStore::open(db.path(), options);
    ASSERT_FALSE(empty);
    EXPECT_THAT(empty.error().message, HasSubstr("not a TokenRadar database"));

    {
        std::ofstream(db.path())
            << "this is not a database, but it is long enough to have a "
               "header........................................................................";
    }
    auto garbage = SqliteStore::open(db.path(), options);
    ASSERT_FALSE(garbage);
    EXPECT_THAT(garbage.error().message, HasSubstr(db.path()));
    EXPECT_THAT(garbage.error().message, HasSubstr("not a database"));
}

TEST(SqliteStore, EveryFieldRoundTrips) {
    TempDb db;
    auto store = open_ok(db.path());
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
    ASSERT_TRUE(back);
    ASSERT_EQ(back->size(), 3u);
    // Oldest first: full_record(1) (ts + 1), full_record(2) (ts + 2), bare (ts + 100).
    EXPECT_EQ((*back)[0], relative_to_send(records[0]));
    EXPECT_EQ((*back)[1], relative_to_send(records[2]));
    EXPECT_EQ((*back)[2], relative_to_send(records[1]));
    // For SQL: ids, status and ts as columns, the labels through the view (each combination
    // once in label_sets), every other field packed.
    RawDb raw(db.path());
    EXPECT_EQ(raw.text("SELECT provider || ' ' || model || ' ' || api || ' ' || stream || ' ' || "
                       "status || ' ' || attempt || ' ' || client_id FROM measurements_labelled "
                       "WHERE request_id = 'req-1'"),
              "prov-1 model-1 anthropic 0 ok 2 client-1");
    EXPECT_EQ(raw.text("SELECT status FROM measurements_labelled WHERE request_id = 'req-2'"),
              "http_429");
    EXPECT_EQ(raw.integer("SELECT count(*) FROM label_sets"), 3);
    EXPECT_EQ(raw.text("SELECT typeof(packed) FROM measurements WHERE request_id = 'bare'"),
              "blob");
}

TEST(SqliteStore, ScanSelectsAWindowInOrderWithALimit) {
    TempDb db;
    auto store = open_ok(db.path());
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

TEST(SqliteStore, ASubmittersDuplicateIsSkippedAndLocalRecordsNeverAre) {
    TempDb db;
    auto store = open_ok(db.path());
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
    auto second = store->insert(std::vector{submitted, local, retry, other_client});
    ASSERT_TRUE(second);
    EXPECT_EQ(*second, (std::vector<bool>{false, true, true, true}));
    auto all = store->select({});
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 5u);
}

// Records measured here (no client id) go in multi-row INSERTs of 16; the rest one by one.
// A batch mixing both, with empty optionals at varying row offsets, round-trips every field in
// order, and only the submitter's repeated record is reported as not stored.
TEST(SqliteStore, LocalRecordsInMultiRowInsertsRoundTripBesideSubmittedOnes) {
    TempDb db;
    auto store = open_ok(db.path());
    ASSERT_TRUE(store);
    constexpr std::int64_t kTs = 1'764'460'800'000'000;
    std::vector<Measurement> records;
    for (int i = 0; i < 41; ++i) {  // rows of 16: 0-15, then 21-36; the rest one at a time
        Measurement m = i % 7 == 3 ? bare_record(kTs + i) : full_record(i, kTs);
        if (i != 20) m.client_id.clear();
        records.push_back(m);
    }
    auto first = store->insert(records);
    ASSERT_TRUE(first);
    EXPECT_EQ(*first, std::vector<bool>(records.size(), true));
    EXPECT_EQ(store->insert_statements().multi_row, 2u);
    EXPECT_EQ(store->insert_statements().single_row, 9u);
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

TEST(SqliteStore, ScanAfterAnIdSeesOnlyNewerRecords) {
    TempDb db;
    auto store = open_ok(db.path());
    ASSERT_TRUE(store);
    EXPECT_EQ(store->last_id().value(), 0);
    std::vector<Measurement> records;
    for (int i = 0; i < 5; ++i) records.push_back(full_record(i));
    ASSERT_TRUE(store->insert(records));
    const std::int64_t mark = store->last_id().value();
    EXPECT_EQ(mark, 5);
    records.clear();
    for (int i = 5; i < 8; ++i) records.push_back(full_record(i));
    ASSERT_TRUE(store->insert(records));
    RecordQuery q;
    q.after_id = mark;
    auto newer = store->select(q);
    ASSERT_TRUE(newer);
    ASSERT_EQ(newer->size(), 3u);
    EXPECT_EQ(newer->front().request_id, "req-5");
}

TEST(SqliteStore, RollupRowsAreReplacedLoadedAndClearedWithTheirWatermark) {
    TempDb db;
    auto store = open_ok(db.path());
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
    ASSERT_TRUE(store->save_rollups(std::vector{row}, 42));
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
    ASSERT_TRUE(store->clear_rollups());
    loaded.clear();
    EXPECT_EQ(store->load_rollups([&](RollupRow&& r) { loaded.push_back(std::move(r)); }).value(),
              0);
    EXPECT_TRUE(loaded.empty());
}

TEST(SqliteStore, DeleteBeforeRemovesOnlyOlderRecords) {
    TempDb db;
    auto store = open_ok(db.path());
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

TEST(SqliteStore, InsertIsAllOrNothingAndABusyDatabaseIsAnOverloadError) {
    TempDb db;
    SqliteOptions options;
    options.busy_timeout = std::chrono::milliseconds(50);
    auto store = open_ok(db.path(), options);
    ASSERT_TRUE(store);
    RawDb other(db.path());
    other.exec("BEGIN IMMEDIATE");  // another writer holds the lock
    std::vector<Measurement> records{full_record(1), full_record(2)};
    auto busy = store->insert(records);
    ASSERT_FALSE(busy);
    EXPECT_EQ(busy.error().code, make_error_code(Errc::overloaded));
    EXPECT_THAT(busy.error().message, HasSubstr(db.path() + ": insert: database is locked"));
    other.exec("COMMIT");
    auto none = store->select({});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    // A constraint failure in the middle rolls back the rows before it.
    other.exec(
        "CREATE TRIGGER no_req_2 BEFORE INSERT ON measurements WHEN NEW.request_id = 'req-2' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END");
    auto refused = store->insert(records);
    ASSERT_FALSE(refused);
    EXPECT_THAT(refused.error().message, HasSubstr("refused"));
    EXPECT_EQ(other.integer("SELECT count(*) FROM measurements"), 0);
    other.exec("DROP TRIGGER no_req_2");
    ASSERT_TRUE(store->insert(records));
    EXPECT_EQ(other.integer("SELECT count(*) FROM measurements"), 2);
}

// The label set a failed insert added was rolled back with it, and SQLite hands its id to the
// next one: the store must not keep using that id for the first labels.
TEST(SqliteStore, LabelsFirstSeenInARolledBackInsertAreStoredAgainLater) {
    TempDb db;
    auto store = open_ok(db.path());
    ASSERT_TRUE(store);
    RawDb other(db.path());
    other.exec(
        "CREATE TRIGGER no_req_2 BEFORE INSERT ON measurements WHEN NEW.request_id = 'req-2' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END");
    Measurement x = full_record(1);
    x.labels.provider = "x";
    Measurement refused = full_record(2);
    ASSERT_FALSE(store->insert(std::vector{x, refused}));
    other.exec("DROP TRIGGER no_req_2");
    Measurement y = full_record(3);
    y.labels.provider = "y";
    ASSERT_TRUE(store->insert(std::vector{y}));
    ASSERT_TRUE(store->insert(std::vector{x}));
    auto back = store->select({});
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), 2U);
    EXPECT_EQ((*back)[0], relative_to_send(x));
    EXPECT_EQ((*back)[1], relative_to_send(y));
    EXPECT_EQ(other.integer("SELECT count(*) FROM label_sets"), 2);
}

// Rows damaged outside the store (a disk error, a hand-made UPDATE): scan() stops with an
// error that names the row, after the rows before it.
TEST(SqliteStore, ADamagedRowIsAnErrorNamingItsId) {
    TempDb db;
    auto store = open_ok(db.path());
    ASSERT_TRUE(store);
    std::vector<Measurement> records{full_record(1), full_record(2), full_record(3)};
    ASSERT_TRUE(store->insert(records));
    RawDb raw(db.path());
    std::vector<std::string> seen;
    const auto scan = [&] {
        seen.clear();
        return store->scan({}, [&](const Measurement& m) { seen.push_back(m.request_id); });
    };
    raw.exec("UPDATE measurements SET packed = x'01ff' WHERE id = 2");
    auto damaged = scan();
    ASSERT_FALSE(damaged);
    EXPECT_EQ(damaged.error().code, make_error_code(Errc::internal));
    EXPECT_EQ(
        damaged.error().message,
        db.path() + ": measurement 2: packed fields: 2 bytes, shorter than the 14-byte header");
    EXPECT_EQ(seen, std::vector<std::string>{"req-1"});
    raw.exec(
        "UPDATE measurements SET packed = (SELECT packed FROM measurements WHERE id = 3) "
        "WHERE id = 2");
    raw.exec("UPDATE measurements SET label_set = 99 WHERE id = 3");
    auto orphan = scan();
    ASSERT_FALSE(orphan);
    EXPECT_EQ(orphan.error().message, db.path() + ": measurement 3: label set 99 is missing");
    EXPECT_EQ(seen.size(), 2U);
}

// Inserts `batches` transactions of `size` records, numbered on from `next`.
void insert_batches(SqliteStore& store, std::int64_t& next, int batches, int size) {
    for (int b = 0; b < batches; ++b) {
        std::vector<Measurement> records;
        for (int i = 0; i < size; ++i) records.push_back(full_record(next++));
        ASSERT_TRUE(store.insert(records));
    }
}

// Commits one record at a time, waiting ever longer in between, until the WAL has restarted
// (a checkpoint completed between two commits, so the next one began at the WAL's start) or
// about 10 s passed; true if it restarted. A background checkpoint ends in an fsync, which
// can take longer than a short pause on a busy disk.
bool wal_restarts(SqliteStore& store, std::int64_t& next, int below_pages) {
    for (auto pause = std::chrono::milliseconds(10); pause < std::chrono::seconds(6); pause *= 2) {
        insert_batches(store, next, 1, 1);
        if (store.wal_pages() < below_pages) return true;
        std::this_thread::sleep_for(pause);
    }
    return false;
}

TEST(SqliteStore, ABackgroundThreadCheckpointsTheWalSoItRestarts) {
    TempDb db;
    SqliteOptions options;
    options.wal_checkpoint_pages = 50;
    std::int64_t next = 1;
    {
        auto store = open_ok(db.path(), options);
        ASSERT_TRUE(store);
        insert_batches(*store, next, 5, 200);  // ~140 pages: past the threshold
        // Nothing checkpoints on the committing thread: without the background thread the
        // WAL would only grow. (It may already have restarted during the inserts.)
        EXPECT_TRUE(wal_restarts(*store, next, 50)) << store->wal_pages();
        EXPECT_GE(store->wal_checkpoints().background, 1U);
        EXPECT_EQ(store->wal_checkpoints().on_writer, 0U);
    }
    auto reopened = open_ok(db.path(), options);
    ASSERT_TRUE(reopened);
    RawDb raw(db.path());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM measurements"), next - 1);
    EXPECT_EQ(raw.text("PRAGMA integrity_check"), "ok");
}

TEST(SqliteStore, AReaderPinningTheWalMakesTheWriterCheckpointPastSixteenTimesTheThreshold) {
    TempDb db;
    SqliteOptions options;
    options.wal_checkpoint_pages = 10;
    auto store = open_ok(db.path(), options);
    ASSERT_TRUE(store);
    std::int64_t next = 1;
    insert_batches(*store, next, 1, 1);
    RawDb reader(db.path());
    reader.exec("BEGIN");
    EXPECT_EQ(reader.integer("SELECT count(*) FROM measurements"), 1);  // holds its snapshot
    insert_batches(*store, next, 30, 100);
    EXPECT_GT(store->wal_pages(), 160);  // no checkpoint can pass the reader's snapshot
    EXPECT_GE(store->wal_checkpoints().on_writer, 1U);
    reader.exec("COMMIT");
    EXPECT_TRUE(wal_restarts(*store, next, 10)) << store->wal_pages();
    EXPECT_EQ(reader.integer("SELECT count(*) FROM measurements"), next - 1);
}

TEST(SqliteStore, WithoutBackgroundCheckpointsSqliteCheckpointsOnTheWriter) {
    TempDb db;
    SqliteOptions options;
    options.background_checkpoint = false;
    auto store = open_ok(db.path(), options);
    ASSERT_TRUE(store);
    std::int64_t next = 1;
    insert_batches(*store, next, 5, 200);
    EXPECT_EQ(store->wal_checkpoints().background, 0U);
    EXPECT_EQ(store->wal_pages(), 0);  // SQLite's own hook, not ours
    RawDb raw(db.path());
    EXPECT_EQ(raw.integer("SELECT count(*) FROM measurements"), 1000);
}

SqliteOptions exclusive() {
    SqliteOptions o;
    o.exclusive = true;
    return o;
}

TEST(SqliteStore, AnExclusiveOpenIsRefusedWhileAnotherOwnsTheFileAndNamesTheOwnersPid) {
    TempDb db;
    {
        auto owner = SqliteStore::open(db.path(), exclusive());
        ASSERT_TRUE(owner) << owner.error().message;
        auto second = SqliteStore::open(db.path(), exclusive());
        ASSERT_FALSE(second);
        EXPECT_EQ(second.error().code, Errc::forbidden);
        EXPECT_THAT(second.error().message,
                    HasSubstr(db.path() + ": in use by another tokenradar process (pid " +
                              std::to_string(::getpid()) + ")"));
        // Readers need no ownership.
        auto reader = SqliteStore::open(db.path());
        ASSERT_TRUE(reader) << reader.error().message;
        std::vector<Measurement> records{full_record(1), full_record(2)};
        ASSERT_TRUE((*owner)->insert(records));
        EXPECT_EQ((*reader)->select({}).value().size(), 2u);
    }
    // Released with the store.
    auto next = SqliteStore::open(db.path(), exclusive());
    ASSERT_TRUE(next) << next.error().message;
}

TEST(SqliteStore, ARefusedOwnerLeavesAMissingFileUncreated) {
    TempDb db;
    SqliteOptions o = exclusive();
    o.create = false;
    auto refused = SqliteStore::open(db.path(), o);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::not_found);
    EXPECT_FALSE(std::filesystem::exists(db.path()));
    EXPECT_FALSE(std::filesystem::exists(db.path() + ".lock"));
}

}  // namespace
}  // namespace tokenradar::store

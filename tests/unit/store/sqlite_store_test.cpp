#include <tokenradar/store/sqlite_store.hpp>

#include "../../support/store_records.hpp"
#include "raw_db.hpp"

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
using testing::RawDb;
using testing::relative_to_send;
using testing::TempDb;

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

// Records measured here (no client id) go in multi-row INSERTs of 16; the rest one by one
// (the records themselves round-trip in measurement_store_test.cpp).
TEST(SqliteStore, LocalRecordsGoSixteenToAnInsert) {
    TempDb db;
    auto store = open_ok(db.path());
    ASSERT_TRUE(store);
    std::vector<Measurement> records;
    for (int i = 0; i < 41; ++i) {  // rows of 16: 0-15, then 21-36; the rest one at a time
        records.push_back(full_record(i));
        if (i != 20) records.back().client_id.clear();
    }
    ASSERT_TRUE(store->insert(records));
    EXPECT_EQ(store->insert_statements().multi_row, 2u);
    EXPECT_EQ(store->insert_statements().single_row, 9u);
}

TEST(SqliteStore, ABusyDatabaseIsAnOverloadErrorAndWritesNothing) {
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
    ASSERT_TRUE(store->insert(records));
    EXPECT_EQ(other.integer("SELECT count(*) FROM measurements"), 2);
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

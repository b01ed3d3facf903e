#include "../../../src/store/sqlite_migrations.hpp"

#include "../../support/store_records.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>

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

}  // namespace
}  // namespace tokenradar::store

#include <tokenradar/keys/sqlite_key_registry.hpp>

#include "../../support/temp_path.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace tokenradar::keys {
namespace {

using testing::TempPath;

// The behaviour every registry shares: tests/unit/store/key_registry_contract_test.cpp.

TEST(SqliteKeyRegistry, RefusesAFileOfSomethingElse) {
    TempPath path("keys", ".db");
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(path.path().c_str(), &db), SQLITE_OK);
        sqlite3_exec(db, "CREATE TABLE measurements (x)", nullptr, nullptr, nullptr);
        sqlite3_close(db);
    }
    auto reg = SqliteKeyRegistry::open(path.path());
    ASSERT_FALSE(reg);
    EXPECT_NE(reg.error().message.find("not a TokenRadar key registry"), std::string::npos);
    EXPECT_NE(reg.error().message.find(path.path()), std::string::npos);
    TempPath text("keys", ".txt");
    text.write("hello, this is not sqlite at all, just some text");
    EXPECT_FALSE(SqliteKeyRegistry::open(text.path()));
}

}  // namespace
}  // namespace tokenradar::keys

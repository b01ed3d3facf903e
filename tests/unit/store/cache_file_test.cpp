#include <tokenradar/store/cache_file.hpp>

#include "../../support/temp_path.hpp"

#include <tokenradar/store/sqlite_store.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tokenradar::store {
namespace {

using ::testing::HasSubstr;
using testing::TempPath;

constexpr std::int64_t kNow = 1'800'000'000'000'000;  // us
constexpr std::int64_t kMinute = 60'000'000;

std::unique_ptr<CacheFile> open_file(const TempPath& path, CacheFileOptions options = {}) {
    auto file = CacheFile::open(path.path(), options);
    EXPECT_TRUE(file) << file.error().message;
    return file ? std::move(*file) : nullptr;
}

TEST(CacheFile, AnEntryOutlivesTheProcessThatStoredIt) {
    const TempPath path("cache_file", ".cache.db");
    {
        auto file = open_file(path);
        ASSERT_TRUE(file->put("k1", "first", kNow + kMinute, kNow).value());
        ASSERT_TRUE(file->put("k2", std::string("bin\0ary", 7), kNow + kMinute, kNow).value());
        ASSERT_TRUE(file->put("k1", "replaced", kNow + kMinute, kNow).value());
        EXPECT_EQ(file->stats().entries, 2u);
        EXPECT_EQ(file->stats().bytes, 8u + 7u);
    }
    auto file = open_file(path);
    EXPECT_EQ(file->get("k1", kNow).value(), "replaced");
    EXPECT_EQ(file->get("k2", kNow).value(), std::string("bin\0ary", 7));
    EXPECT_EQ(file->get("k3", kNow).value(), std::nullopt);
    // The totals are read back, not restarted from zero.
    EXPECT_EQ(file->stats().entries, 2u);
    EXPECT_EQ(file->stats().bytes, 15u);
}

TEST(CacheFile, AnExpiredEntryIsAbsentAndSweptAway) {
    const TempPath path("cache_file", ".cache.db");
    auto file = open_file(path);
    ASSERT_TRUE(file->put("short", "s", kNow + 10, kNow).value());
    ASSERT_TRUE(file->put("long", "l", kNow + kMinute, kNow).value());
    EXPECT_EQ(file->get("short", kNow + 9).value(), "s");
    EXPECT_EQ(file->get("short", kNow + 10).value(), std::nullopt);
    EXPECT_EQ(file->remove_expired(kNow + 10).value(), 1u);
    EXPECT_EQ(file->stats().entries, 1u);
    EXPECT_EQ(file->stats().expired, 1u);
    EXPECT_EQ(file->get("long", kNow + 10).value(), "l");
}

TEST(CacheFile, PutSweepsExpiredEntriesAtMostOncePerInterval) {
    const TempPath path("cache_file", ".cache.db");
    auto file = open_file(path);                               // default interval: a minute
    ASSERT_TRUE(file->put("a", "1", kNow + 5, kNow).value());  // sweeps (first put)
    ASSERT_TRUE(file->put("b", "2", kNow + kMinute * 10, kNow + 10).value());
    EXPECT_EQ(file->stats().expired, 0u);  // "a" expired, but the last sweep is too recent
    ASSERT_TRUE(file->put("c", "3", kNow + kMinute * 10, kNow + kMinute).value());
    EXPECT_EQ(file->stats().expired, 1u);
    EXPECT_EQ(file->stats().entries, 2u);
}

TEST(CacheFile, TheValuesStayUnderTheByteBoundSoonestToExpireFirst) {
    const TempPath path("cache_file", ".cache.db");
    CacheFileOptions options;
    options.max_bytes = 100;
    auto file = open_file(path, options);
    const std::string forty(40, 'x');
    ASSERT_TRUE(file->put("late", forty, kNow + 3 * kMinute, kNow).value());
    ASSERT_TRUE(file->put("soon", forty, kNow + kMinute, kNow).value());
    ASSERT_TRUE(file->put("new", forty, kNow + 2 * kMinute, kNow).value());  // 120 > 100
    EXPECT_EQ(file->stats().bytes, 80u);
    EXPECT_EQ(file->stats().evictions, 1u);
    EXPECT_EQ(file->get("soon", kNow).value(), std::nullopt);
    EXPECT_EQ(file->get("late", kNow).value(), forty);
    EXPECT_EQ(file->get("new", kNow).value(), forty);
    // A value larger than the whole bound is not stored, and evicts nothing.
    EXPECT_FALSE(file->put("huge", std::string(101, 'y'), kNow + kMinute, kNow).value());
    EXPECT_EQ(file->stats().entries, 2u);
    // Same expiry: the oldest goes first.
    ASSERT_TRUE(file->put("a", std::string(60, 'a'), kNow + 5 * kMinute, kNow + 1).value());
    EXPECT_EQ(file->stats().bytes, 100u);
    EXPECT_EQ(file->get("new", kNow).value(), std::nullopt);
    ASSERT_TRUE(file->put("b", std::string(30, 'b'), kNow + 5 * kMinute, kNow + 2).value());
    EXPECT_EQ(file->get("late", kNow).value(), std::nullopt);
    EXPECT_EQ(file->get("a", kNow).value(), std::string(60, 'a'));
    EXPECT_LE(file->stats().bytes, 100u);
}

TEST(CacheFile, AFileOfSomethingElseIsRefusedNamingIt) {
    const TempPath text("cache_file", ".txt");
    text.write(std::string(4096, 'n'));
    auto refused = CacheFile::open(text.path());
    ASSERT_FALSE(refused);
    EXPECT_THAT(refused.error().message, HasSubstr(text.path()));
    EXPECT_THAT(refused.error().message, HasSubstr("not a TokenRadar cache file"));

    // The measurement store is a SQLite file too, and is left alone.
    const TempPath db("cache_file", ".db");
    ASSERT_TRUE(SqliteStore::open(db.path()));
    auto store = CacheFile::open(db.path());
    ASSERT_FALSE(store);
    EXPECT_THAT(store.error().message, HasSubstr(db.path()));
    EXPECT_THAT(store.error().message, HasSubstr("not a TokenRadar cache file"));
    ASSERT_TRUE(SqliteStore::open(db.path(), {.create = false}));
}

TEST(CacheFile, APathThatCannotBeCreatedIsAnErrorNamingIt) {
    const TempPath dir("cache_file", "");
    const std::string path = dir.path() + "/missing/dir/x.cache.db";
    auto refused = CacheFile::open(path);
    ASSERT_FALSE(refused);
    EXPECT_THAT(refused.error().message, HasSubstr(path));
}

TEST(CacheFile, AnAnswerTooLargeToKeepDeletesTheOlderOne) {
    const TempPath path("cache_file", ".cache.db");
    CacheFileOptions options;
    options.max_bytes = 10;
    auto file = open_file(path, options);
    ASSERT_TRUE(file->put("k", "old", kNow + kMinute, kNow).value());
    EXPECT_FALSE(file->put("k", "eleven byte", kNow + kMinute, kNow).value());
    EXPECT_EQ(file->get("k", kNow).value(), std::nullopt);
    EXPECT_EQ(file->stats().entries, 0u);
    EXPECT_EQ(file->stats().bytes, 0u);
}

TEST(CacheFile, TheEntryBeingStoredIsNeverItsOwnVictim) {
    // A full file of long-lived answers and a short-lived newcomer: the newcomer expires
    // soonest, yet the long-lived ones make room for it.
    const TempPath path("cache_file", ".cache.db");
    CacheFileOptions options;
    options.max_bytes = 8;
    auto file = open_file(path, options);
    ASSERT_TRUE(file->put("week1", "aaaa", kNow + 10'000 * kMinute, kNow).value());
    ASSERT_TRUE(file->put("week2", "bbbb", kNow + 10'000 * kMinute, kNow + 1).value());
    ASSERT_TRUE(file->put("hour", "cccc", kNow + kMinute, kNow + 2).value());
    EXPECT_EQ(file->get("hour", kNow + 2).value(), "cccc");
    EXPECT_EQ(file->get("week1", kNow + 2).value(), std::nullopt);  // the older of the two
    EXPECT_EQ(file->get("week2", kNow + 2).value(), "bbbb");
    EXPECT_EQ(file->stats().bytes, 8u);
}

TEST(CacheFile, OneProcessAtATime) {
    // The byte total lives in memory: a second owner's evictions would make it drift.
    const TempPath path("cache_file", ".cache.db");
    auto first = open_file(path);
    auto second = CacheFile::open(path.path());
    ASSERT_FALSE(second);
    EXPECT_THAT(second.error().message, HasSubstr(path.path()));
    first.reset();
    EXPECT_TRUE(CacheFile::open(path.path()));
}

}  // namespace
}  // namespace tokenradar::store

#include "../../../src/store/label_sets.hpp"

#include "../../../src/store/sqlite_migrations.hpp"
#include "../../support/store_records.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>
#include <string>
#include <vector>

namespace tokenradar::store {
namespace {

class LabelSetsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(sqlite3_open(db_.path().c_str(), &raw_), SQLITE_OK);
        ASSERT_TRUE(add_migration_functions(raw_, db_.path()));
        ASSERT_TRUE(migrate(raw_, db_.path(), builtin_migrations()));
    }
    void TearDown() override { sqlite3_close(raw_); }

    void exec(const char* sql) {
        ASSERT_EQ(sqlite3_exec(raw_, sql, nullptr, nullptr, nullptr), SQLITE_OK)
            << sqlite3_errmsg(raw_);
    }
    std::int64_t rows() {
        sqlite3_stmt* s = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(raw_, "SELECT count(*) FROM label_sets", -1, &s, nullptr),
                  SQLITE_OK);
        std::int64_t n = -1;
        if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return n;
    }
    LabelSets sets() {
        auto sets = LabelSets::prepare(raw_, db_.path());
        EXPECT_TRUE(sets) << (sets ? "" : sets.error().message);
        return std::move(sets.value());
    }

    testing::TempDb db_;
    sqlite3* raw_ = nullptr;
};

Labels labels(const std::string& provider, const std::string& model) {
    Labels l = testing::full_record(1).labels;
    l.provider = provider;
    l.model = model;
    return l;
}

TEST_F(LabelSetsTest, EachCombinationIsStoredOnceAndReadBack) {
    const Labels a = labels("openai", "gpt-4o");
    const Labels b = labels("openai", "gpt-4o-mini");
    {
        LabelSets s = sets();
        exec("BEGIN IMMEDIATE");
        EXPECT_EQ(s.id_of(a).value(), 1);
        EXPECT_EQ(s.id_of(b).value(), 2);
        EXPECT_EQ(s.id_of(a).value(), 1);
        exec("COMMIT");
        EXPECT_EQ(*s.labels_of(1).value(), a);
        EXPECT_EQ(*s.labels_of(2).value(), b);
        EXPECT_EQ(s.labels_of(3).value(), nullptr);
    }
    // Another connection's object finds the stored rows instead of adding them again.
    LabelSets other = sets();
    exec("BEGIN IMMEDIATE");
    EXPECT_EQ(other.id_of(b).value(), 2);
    exec("COMMIT");
    EXPECT_EQ(rows(), 2);
    EXPECT_EQ(*other.labels_of(1).value(), a);
}

// The cache looks labels up by a hash of 8-byte words: texts that differ in any one byte, at
// any length, are other combinations. More of them than the cache keeps (it starts over).
TEST_F(LabelSetsTest, LabelsDifferingInOneByteAnywhereAreDifferentCombinations) {
    LabelSets s = sets();
    std::vector<Labels> all;
    for (std::size_t length = 0; length <= 40; ++length) {
        const std::string base(length, 'a');
        for (std::string Labels::*field :
             {&Labels::provider, &Labels::model, &Labels::endpoint, &Labels::upstream_region,
              &Labels::client_region, &Labels::task}) {  // the open ones: any text
            Labels l = labels("p", "m");
            l.*field = base;
            all.push_back(l);
            for (std::size_t at = 0; at < length; ++at) {
                l.*field = base;
                (l.*field)[at] = 'b';
                all.push_back(l);
            }
        }
    }
    Labels flags = labels("p", "m");
    for (const bool stream : {false, true}) {
        for (const Route route : {Route::primary, Route::hedge}) {
            for (const Cache cache : {Cache::miss, Cache::exact}) {
                flags.stream = stream;
                flags.route = route;
                flags.cache = cache;
                all.push_back(flags);
            }
        }
    }
    ASSERT_GT(all.size(), 4096U);
    std::vector<std::int64_t> ids;
    exec("BEGIN IMMEDIATE");
    for (const Labels& l : all) ids.push_back(s.id_of(l).value());
    // Asked again, after the cache started over: the same ids.
    for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(s.id_of(all[i]).value(), ids[i]) << i;
    exec("COMMIT");
    std::set<std::int64_t> distinct(ids.begin(), ids.end());
    // Some variants are equal (the empty text of each field is one combination).
    std::set<std::tuple<std::string, std::string, std::string, std::string, std::string,
                        std::string, std::string, bool, Route, Cache>>
        expected;
    for (const Labels& l : all) {
        expected.insert({l.provider, l.model, l.endpoint, l.upstream_region, l.client_region,
                         l.task, l.api, l.stream, l.route, l.cache});
    }
    EXPECT_EQ(distinct.size(), expected.size());
    EXPECT_EQ(rows(), static_cast<std::int64_t>(expected.size()));
    for (std::size_t i = 0; i < all.size(); ++i) {
        ASSERT_EQ(*s.labels_of(ids[i]).value(), all[i]) << i;
    }
}

// A rolled-back transaction takes its new rows with it, and SQLite gives their ids to the
// next rows: a cached id from it would label records with another combination.
TEST_F(LabelSetsTest, IdsFromARolledBackTransactionAreForgotten) {
    const Labels a = labels("openai", "gpt-4o");
    const Labels b = labels("anthropic", "claude");
    LabelSets s = sets();
    exec("BEGIN IMMEDIATE");
    EXPECT_EQ(s.id_of(a).value(), 1);
    exec("ROLLBACK");
    s.forget_ids();
    exec("BEGIN IMMEDIATE");
    EXPECT_EQ(s.id_of(b).value(), 1);
    EXPECT_EQ(s.id_of(a).value(), 2);
    exec("COMMIT");
    EXPECT_EQ(*s.labels_of(1).value(), b);
    EXPECT_EQ(*s.labels_of(2).value(), a);
}

TEST_F(LabelSetsTest, AStoredValueNoLongerAllowedReadsAsTheLabelsDefault) {
    exec(
        "INSERT INTO label_sets (id, provider, model, endpoint, upstream_region, client_region, "
        "task, source, cache, route, api, stream, client_key) VALUES (7, 'p', 'm', '', '', '', "
        "'', 'carrier-pigeon', 'warm', 'teleport', 'openai', 1, 'team-a')");
    LabelSets s = sets();
    const Labels* read = s.labels_of(7).value();
    ASSERT_NE(read, nullptr);
    EXPECT_EQ(read->provider, "p");
    EXPECT_EQ(read->source, Labels().source);
    EXPECT_EQ(read->cache, Labels().cache);
    EXPECT_EQ(read->route, Labels().route);
    EXPECT_EQ(read->api, "openai");
}

}  // namespace
}  // namespace tokenradar::store

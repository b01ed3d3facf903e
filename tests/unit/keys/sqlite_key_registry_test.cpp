#include <tokenradar/keys/sqlite_key_registry.hpp>

#include "../../support/temp_path.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace tokenradar::keys {
namespace {

using testing::TempPath;

VirtualKey key_named(std::string name, std::int64_t created_us) {
    VirtualKey k;
    k.id = new_key_id();
    k.sha256 = std::string(64, 'a');
    k.sha256[0] = static_cast<char>('a' + created_us % 6);
    k.spec.name = std::move(name);
    k.spec.models = {"fast", "slow"};
    k.spec.rpm = 60;
    k.spec.tpm = 1000;
    k.spec.budget_tokens = 5000;
    k.spec.budget_period = BudgetPeriod::month;
    k.created_us = created_us;
    return k;
}

AuditEntry audit_of(std::string action, const VirtualKey& k, std::int64_t ts) {
    AuditEntry a;
    a.ts_us = ts;
    a.actor = "ops";
    a.action = std::move(action);
    a.key_id = k.id;
    a.detail = "{}";
    return a;
}

TEST(SqliteKeyRegistry, KeysLiveThroughCreateRotateRevokeAndReopen) {
    TempPath path("keys", ".db");
    const VirtualKey a = key_named("team-a", 1);
    const VirtualKey b = key_named("team-b", 2);
    {
        auto reg = SqliteKeyRegistry::open(path.path());
        ASSERT_TRUE(reg) << reg.error().message;
        ASSERT_TRUE((*reg)->create(a, audit_of("create", a, 1)));
        ASSERT_TRUE((*reg)->create(b, audit_of("create", b, 2)));
        const std::string digest(64, 'f');
        auto rotated = (*reg)->rotate(a.id, digest, 3, audit_of("rotate", a, 3));
        ASSERT_TRUE(rotated && *rotated);
        auto revoked = (*reg)->revoke(b.id, 4, audit_of("revoke", b, 4));
        ASSERT_TRUE(revoked && *revoked);
        // A revoked key cannot be rotated or revoked again; an unknown id neither.
        EXPECT_FALSE(*(*reg)->revoke(b.id, 5, audit_of("revoke", b, 5)));
        EXPECT_FALSE(*(*reg)->rotate(b.id, digest, 5, audit_of("rotate", b, 5)));
        EXPECT_FALSE(*(*reg)->revoke("key_0000000000000000", 5, audit_of("revoke", b, 5)));
    }
    auto reg = SqliteKeyRegistry::open(path.path());
    ASSERT_TRUE(reg) << reg.error().message;
    auto active = (*reg)->list(false);
    ASSERT_TRUE(active);
    ASSERT_EQ(active->size(), 1U);
    VirtualKey expected = a;
    expected.sha256 = std::string(64, 'f');
    expected.rotated_us = 3;
    EXPECT_EQ(active->front(), expected);
    auto all = (*reg)->list(true);
    ASSERT_EQ(all->size(), 2U);
    EXPECT_EQ((*all)[1].revoked_us, 4);
    // Only the changes that happened are in the audit log, newest first.
    auto log = (*reg)->audit(10);
    ASSERT_TRUE(log);
    ASSERT_EQ(log->size(), 4U);
    EXPECT_EQ((*log)[0].action, "revoke");
    EXPECT_EQ((*log)[1].action, "rotate");
    EXPECT_EQ((*log)[3].key_id, a.id);
    EXPECT_EQ((*log)[3].actor, "ops");
    EXPECT_EQ((*reg)->audit(1)->size(), 1U);
}

TEST(SqliteKeyRegistry, ActiveNamesAreUniqueAndARevokedNameMayReturn) {
    TempPath path("keys", ".db");
    auto reg = SqliteKeyRegistry::open(path.path());
    ASSERT_TRUE(reg);
    const VirtualKey a = key_named("team", 1);
    ASSERT_TRUE((*reg)->create(a, audit_of("create", a, 1)));
    const VirtualKey again = key_named("team", 2);
    auto refused = (*reg)->create(again, audit_of("create", again, 2));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::bad_request);
    EXPECT_NE(refused.error().message.find("already named 'team'"), std::string::npos);
    EXPECT_EQ((*reg)->audit(10)->size(), 1U);  // the refused create left no entry
    ASSERT_TRUE(*(*reg)->revoke(a.id, 3, audit_of("revoke", a, 3)));
    EXPECT_TRUE((*reg)->create(again, audit_of("create", again, 4)));
}

TEST(SqliteKeyRegistry, UsageAddsUpAcrossWritersPerPeriod) {
    TempPath path("keys", ".db");
    auto one = SqliteKeyRegistry::open(path.path());
    auto two = SqliteKeyRegistry::open(path.path());  // another node on this host
    ASSERT_TRUE(one && two);
    const std::vector<KeyUsage> d1{{"key_a", 100, 2, 50}, {"key_b", 100, 1, 7}};
    const std::vector<KeyUsage> d2{{"key_a", 100, 3, 25}, {"key_a", 200, 1, 1}};
    ASSERT_TRUE((*one)->add_usage(d1));
    ASSERT_TRUE((*two)->add_usage(d2));
    auto rows = (*one)->usage(100);
    ASSERT_TRUE(rows);
    std::sort(rows->begin(), rows->end(), [](const KeyUsage& x, const KeyUsage& y) {
        return std::tie(x.key_id, x.period_start_us) < std::tie(y.key_id, y.period_start_us);
    });
    const std::vector<KeyUsage> expected{
        {"key_a", 100, 5, 75}, {"key_a", 200, 1, 1}, {"key_b", 100, 1, 7}};
    EXPECT_EQ(*rows, expected);
    EXPECT_EQ((*two)->usage(150)->size(), 1U);
}

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

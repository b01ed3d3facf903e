// What every virtual key registry does, run against each: SQLite (a file several processes on
// one host share) and PostgreSQL (one database nodes on several hosts share). Each test opens
// two registries on the same backing store, as two gateway nodes would.
#include <tokenradar/keys/sqlite_key_registry.hpp>
#include <tokenradar/store/postgres_key_registry.hpp>
#include <tokenradar/store/postgres_store.hpp>

#include "../../support/postgres_server.hpp"
#include "../../support/temp_path.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <tuple>

namespace tokenradar::store {
namespace {

using keys::AuditEntry;
using keys::KeyRegistry;
using keys::KeyUsage;
using keys::VirtualKey;
using ::testing::HasSubstr;
using testing::PostgresServer;

enum class Backend { sqlite, postgres };

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::sqlite ? "sqlite" : "postgres";
}

VirtualKey key_named(std::string name, std::int64_t created_us) {
    VirtualKey k;
    k.id = keys::new_key_id();
    k.sha256 = std::string(64, 'a');
    k.sha256[0] = static_cast<char>('a' + created_us % 6);
    k.spec.name = std::move(name);
    k.spec.models = {"fast", "slow"};
    k.spec.rpm = 60;
    k.spec.tpm = 1000;
    k.spec.budget_tokens = 5000;
    k.spec.budget_period = keys::BudgetPeriod::month;
    k.created_us = created_us;
    return k;
}

AuditEntry audit_of(std::string action, const VirtualKey& k, std::int64_t ts) {
    AuditEntry a;
    a.ts_us = ts;
    a.actor = "ops";
    a.action = std::move(action);
    a.key_id = k.id;
    a.detail = R"({"name":"x"})";
    return a;
}

class KeyRegistryContract : public ::testing::TestWithParam<Backend> {
  protected:
    void SetUp() override {
        if (GetParam() == Backend::sqlite) return;
        if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::skip_reason();
        server_ = std::make_unique<PostgresServer>();
    }

    // A registry as one more node opens it.
    std::unique_ptr<KeyRegistry> open() {
        if (GetParam() == Backend::sqlite) {
            auto r = keys::SqliteKeyRegistry::open(file_.path());
            EXPECT_TRUE(r) << (r ? "" : r.error().message);
            return r ? std::move(*r) : nullptr;
        }
        auto r = PostgresKeyRegistry::open(server_->url());
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return r ? std::move(*r) : nullptr;
    }

    testing::TempPath file_{"keys", ".db"};
    std::unique_ptr<PostgresServer> server_;
};

INSTANTIATE_TEST_SUITE_P(Backends, KeyRegistryContract,
                         ::testing::Values(Backend::sqlite, Backend::postgres), backend_name);

TEST_P(KeyRegistryContract, KeysLiveThroughCreateRotateRevokeAndReopen) {
    const VirtualKey a = key_named("team-a", 1);
    const VirtualKey b = key_named("team-b", 2);
    {
        auto reg = open();
        ASSERT_TRUE(reg);
        ASSERT_TRUE(reg->create(a, audit_of("create", a, 1)));
        ASSERT_TRUE(reg->create(b, audit_of("create", b, 2)));
        const std::string digest(64, 'f');
        auto rotated = reg->rotate(a.id, digest, 3, audit_of("rotate", a, 3));
        ASSERT_TRUE(rotated && *rotated);
        auto revoked = reg->revoke(b.id, 4, audit_of("revoke", b, 4));
        ASSERT_TRUE(revoked && *revoked);
        // A revoked key cannot be rotated or revoked again; an unknown id neither.
        EXPECT_FALSE(*reg->revoke(b.id, 5, audit_of("revoke", b, 5)));
        EXPECT_FALSE(*reg->rotate(b.id, digest, 5, audit_of("rotate", b, 5)));
        EXPECT_FALSE(*reg->revoke("key_0000000000000000", 5, audit_of("revoke", b, 5)));
    }
    auto reg = open();
    ASSERT_TRUE(reg);
    auto active = reg->list(false);
    ASSERT_TRUE(active);
    ASSERT_EQ(active->size(), 1U);
    VirtualKey expected = a;
    expected.sha256 = std::string(64, 'f');
    expected.rotated_us = 3;
    EXPECT_EQ(active->front(), expected);
    auto all = reg->list(true);
    ASSERT_EQ(all->size(), 2U);
    EXPECT_EQ((*all)[1].revoked_us, 4);
    // Only the changes that happened are in the audit log, newest first.
    auto log = reg->audit(10);
    ASSERT_TRUE(log);
    ASSERT_EQ(log->size(), 4U);
    EXPECT_EQ((*log)[0].action, "revoke");
    EXPECT_EQ((*log)[1].action, "rotate");
    EXPECT_EQ((*log)[3], audit_of("create", a, 1));
    EXPECT_EQ(reg->audit(1)->size(), 1U);
}

TEST_P(KeyRegistryContract, ActiveNamesAreUniqueAcrossNodesAndARevokedNameMayReturn) {
    auto one = open();
    auto two = open();  // another node
    ASSERT_TRUE(one && two);
    const VirtualKey a = key_named("team", 1);
    ASSERT_TRUE(one->create(a, audit_of("create", a, 1)));
    const VirtualKey again = key_named("team", 2);
    auto refused = two->create(again, audit_of("create", again, 2));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::bad_request);
    EXPECT_THAT(refused.error().message, HasSubstr("already named 'team'"));
    EXPECT_EQ(one->audit(10)->size(), 1U);  // the refused create left no entry
    EXPECT_EQ(two->list(true)->size(), 1U);
    ASSERT_TRUE(*one->revoke(a.id, 3, audit_of("revoke", a, 3)));
    EXPECT_TRUE(two->create(again, audit_of("create", again, 4)));
}

TEST_P(KeyRegistryContract, UsageAddsUpAcrossNodesPerPeriod) {
    auto one = open();
    auto two = open();
    ASSERT_TRUE(one && two);
    const std::vector<KeyUsage> d1{{"key_a", 100, 2, 50}, {"key_b", 100, 1, 7}};
    const std::vector<KeyUsage> d2{{"key_a", 100, 3, 25}, {"key_a", 200, 1, 1}};
    ASSERT_TRUE(one->add_usage(d1));
    ASSERT_TRUE(two->add_usage(d2));
    ASSERT_TRUE(two->add_usage({}));
    auto rows = one->usage(100);
    ASSERT_TRUE(rows);
    std::sort(rows->begin(), rows->end(), [](const KeyUsage& x, const KeyUsage& y) {
        return std::tie(x.key_id, x.period_start_us) < std::tie(y.key_id, y.period_start_us);
    });
    const std::vector<KeyUsage> expected{
        {"key_a", 100, 5, 75}, {"key_a", 200, 1, 1}, {"key_b", 100, 1, 7}};
    EXPECT_EQ(*rows, expected);
    EXPECT_EQ(two->usage(150)->size(), 1U);
}

// PostgreSQL only: the network between the node and its registry.

class PostgresKeyRegistryTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::skip_reason();
        server_ = std::make_unique<PostgresServer>();
    }
    std::unique_ptr<PostgresServer> server_;
};

TEST_F(PostgresKeyRegistryTest, ACallAfterARestartReconnectsAndTheFailedOneSaysWhy) {
    auto reg = PostgresKeyRegistry::open(server_->url());
    ASSERT_TRUE(reg) << reg.error().message;
    const VirtualKey a = key_named("team", 1);
    ASSERT_TRUE((*reg)->create(a, audit_of("create", a, 1)));
    server_->stop();
    auto down = (*reg)->list(false);
    ASSERT_FALSE(down);
    EXPECT_THAT(down.error().message, HasSubstr(redact_postgres_url(server_->url())));
    EXPECT_THAT(down.error().message, ::testing::Not(HasSubstr(PostgresServer::kPassword)));
    server_->start();
    auto back = (*reg)->list(false);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), 1U);
    EXPECT_EQ(back->front(), a);
}

TEST_F(PostgresKeyRegistryTest, SharesTheStoresDatabaseAndSchemaInEitherOrder) {
    auto reg = PostgresKeyRegistry::open(server_->url());
    ASSERT_TRUE(reg) << reg.error().message;
    auto store = PostgresStore::open(server_->url(), PostgresOptions{});
    ASSERT_TRUE(store) << store.error().message;
    EXPECT_EQ((*store)->migrations_applied(), 0);  // the registry brought the schema up
    EXPECT_EQ((*store)->schema_version(), PostgresStore::latest_schema_version());
    EXPECT_EQ(server_->query("tokenradar", "SELECT count(*) FROM virtual_keys"), "0");
}

TEST_F(PostgresKeyRegistryTest, AnUnreachableServerIsRefusedNamingTheRedactedUrl) {
    const std::string url = server_->url();
    server_->stop();
    auto reg = PostgresKeyRegistry::open(url, std::chrono::milliseconds(500));
    ASSERT_FALSE(reg);
    EXPECT_EQ(reg.error().code, Errc::connect_failed);
    EXPECT_THAT(reg.error().message, HasSubstr(redact_postgres_url(url)));
    EXPECT_THAT(reg.error().message, ::testing::Not(HasSubstr(PostgresServer::kPassword)));
    auto bad = PostgresKeyRegistry::open("mysql://somewhere/db");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, Errc::bad_request);
}

}  // namespace
}  // namespace tokenradar::store

// What only ClickHouseStore has (the contract it shares is measurement_store_test.cpp): its
// URL, migrations, label columns added from core's label table, time-based ids across several
// writers, retention by partitions, rollup rows saved with fewer labels, and outages. A real
// clickhouse-server per test (tests/support/clickhouse_server.hpp).

#include <tokenradar/store/clickhouse_store.hpp>

#include "../../../src/store/clickhouse_wire.hpp"
#include "../../support/clickhouse_server.hpp"
#include "../../support/store_records.hpp"
#include "../../support/test_pki.hpp"

#include <tokenradar/core/labels.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::store {
namespace {

using testing::ClickHouseServer;
using testing::full_record;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::relative_to_send;

constexpr std::int64_t kDay = 86'400'000'000;

std::string error_of(const std::string& url, const ClickHouseOptions& options = {}) {
    auto s = ClickHouseStore::open(url, options);
    return s ? std::string("opened") : s.error().message;
}

// Malformed URLs are refused before any connection, naming what is wrong and the form.
TEST(ClickHouseStoreUrl, ErrorsNameTheFormExpectedAndNeverThePassword) {
    EXPECT_EQ(error_of("clickhouse://app:s3cret@db.example:8123"),
              "store URL clickhouse://app:[redacted]@db.example:8123: no /database; expected "
              "clickhouse://[user[:password]@]host[:port]/database[?secure=true[&ca_file=PATH]]");
    EXPECT_THAT(error_of("clickhouse://app:s3cret@db.example:http/tr"),
                HasSubstr("port 'http' is not a number in 1-65535"));
    EXPECT_THAT(error_of("clickhouse://db.example:8123/"), HasSubstr("no database name"));
    EXPECT_THAT(error_of("clickhouse://db.example/tr;drop"),
                HasSubstr("database 'tr;drop': letters, digits and '_' only"));
    EXPECT_THAT(error_of("clickhouse://:8123/tr"), HasSubstr("no host"));
    EXPECT_THAT(error_of("clickhouse://a:%zz@db/tr"), HasSubstr("password: a '%' without"));
    EXPECT_THAT(error_of("clickhouse://a:%zz@db/tr"), Not(HasSubstr("%zz")));
    ClickHouseOptions options;
    options.node = 1024;
    EXPECT_THAT(error_of("clickhouse://db/tr", options), HasSubstr("node 1024 is not in 0-1023"));
    EXPECT_EQ(redact_clickhouse_url("clickhouse://u:p%40ss@h:1/d"),
              "clickhouse://u:[redacted]@h:1/d");
}

// secure=true is HTTPS (port 8443 unless given); ca_file only with it; nothing else.
TEST(ClickHouseStoreUrl, SecureTakesTheHttpsPortAndACaFile) {
    const auto parsed = [](std::string_view url) { return parse_clickhouse_url(url); };
    EXPECT_FALSE(parsed("clickhouse://db/tr")->secure);
    EXPECT_EQ(parsed("clickhouse://db/tr")->port, 8123);
    const auto secure = parsed("clickhouse://db/tr?secure=true");
    ASSERT_TRUE(secure);
    EXPECT_TRUE(secure->secure);
    EXPECT_EQ(secure->port, 8443);
    EXPECT_EQ(secure->database, "tr");
    const auto both = parsed("clickhouse://db:9443/tr?secure=true&ca_file=/etc/ca%20dir/ca.pem");
    ASSERT_TRUE(both);
    EXPECT_EQ(both->port, 9443);
    EXPECT_EQ(both->ca_file, "/etc/ca dir/ca.pem");
    EXPECT_FALSE(parsed("clickhouse://db/tr?secure=false")->secure);
    EXPECT_THAT(error_of("clickhouse://db/tr?secure=yes"),
                HasSubstr("secure 'yes' is not true or false"));
    EXPECT_THAT(error_of("clickhouse://db/tr?ca_file=/ca.pem"),
                HasSubstr("ca_file without secure=true"));
    EXPECT_THAT(error_of("clickhouse://db/tr?sslmode=require"),
                HasSubstr("unknown parameter 'sslmode' (secure, ca_file)"));
}

// Over HTTPS the store works as over HTTP; the server's certificate must chain to ca_file (or
// the system's CAs) and name the URL's host, else the open fails with the reason.
TEST(ClickHouseStoreUrl, SecureUrlsSpeakTlsAndCheckTheCertificate) {
    if (!ClickHouseServer::available()) GTEST_SKIP() << ClickHouseServer::skip_reason();
    const testing::TempDir pki("ch_pki");
    ASSERT_TRUE(testing::make_test_pki(pki.dir(), "IP:127.0.0.1"));
    ClickHouseServer server(pki.dir());
    const std::string ca = (pki.dir() / "ca.pem").string();
    auto store = ClickHouseStore::open(server.secure_url(ca));
    ASSERT_TRUE(store) << store.error().message;
    const Measurement m = full_record(1);
    ASSERT_TRUE((*store)->insert(std::vector{m}));
    const auto back = (*store)->select({}).value();
    ASSERT_EQ(back.size(), 1U);
    EXPECT_EQ(back[0], relative_to_send(m));
    // A batch of a few MB: TLS writes it in pieces over the kept connection.
    std::vector<Measurement> batch;
    for (int i = 2; i < 5'002; ++i) batch.push_back(full_record(i));
    ASSERT_TRUE((*store)->insert(batch));
    EXPECT_EQ((*store)->select({}).value().size(), 5'001U);

    const auto refused = [](const std::string& url) {
        auto s = ClickHouseStore::open(url);
        EXPECT_FALSE(s);
        if (s) return std::string();
        EXPECT_EQ(s.error().code, make_error_code(Errc::tls_failed)) << s.error().message;
        EXPECT_THAT(s.error().message, Not(HasSubstr(ClickHouseServer::kPassword)));
        return s.error().message;
    };
    EXPECT_THAT(refused(server.secure_url("")),  // the system's CAs do not know the test CA
                HasSubstr("certificate verify failed: unable to get local issuer certificate"));
    EXPECT_THAT(refused(server.secure_url(ca, "localhost")),  // the certificate names an IP
                HasSubstr("certificate verify failed: hostname mismatch"));
    EXPECT_THAT(refused(server.secure_url((pki.dir() / "missing.pem").string())),
                HasSubstr("missing.pem: not a readable PEM file of CA certificates"));
    // A plain URL to the HTTPS port fails (ClickHouse answers garbage or closes), never hangs.
    const std::string plain = "clickhouse://default:" + std::string(ClickHouseServer::kPassword) +
                              "@127.0.0.1:" + std::to_string(server.https_port()) + "/tokenradar";
    EXPECT_FALSE(ClickHouseStore::open(plain));
}

TEST(ClickHouseStoreUrl, AnUnreachableServerOrAWrongPasswordIsConnectFailed) {
    const std::string dead = "clickhouse://app:s3cret@127.0.0.1:" +
                             std::to_string(testing::PostgresServer::free_port()) + "/tr";
    auto down = ClickHouseStore::open(dead);
    ASSERT_FALSE(down);
    EXPECT_EQ(down.error().code, make_error_code(Errc::connect_failed));
    EXPECT_THAT(down.error().message, HasSubstr("clickhouse://app:[redacted]@127.0.0.1:"));
    EXPECT_THAT(down.error().message, HasSubstr("cannot connect"));
    EXPECT_THAT(down.error().message, Not(HasSubstr("s3cret")));
    if (!ClickHouseServer::available()) GTEST_SKIP() << ClickHouseServer::skip_reason();
    ClickHouseServer server;
    const std::string wrong =
        "clickhouse://default:nope@127.0.0.1:" + std::to_string(server.port()) + "/tr";
    auto refused = ClickHouseStore::open(wrong);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, make_error_code(Errc::connect_failed));
    EXPECT_THAT(refused.error().message, Not(HasSubstr("nope")));
}

class ClickHouseStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!ClickHouseServer::available()) GTEST_SKIP() << ClickHouseServer::skip_reason();
        server_ = std::make_unique<ClickHouseServer>();
    }
    std::unique_ptr<ClickHouseStore> open(ClickHouseOptions options = {}) {
        auto s = ClickHouseStore::open(server_->url(), options);
        EXPECT_TRUE(s) << (s ? "" : s.error().message);
        return s ? std::move(*s) : nullptr;
    }
    std::string text(const std::string& sql) {
        std::string rows = server_->query(sql, "tokenradar");
        if (!rows.empty() && rows.back() == '\n') rows.pop_back();
        return rows;
    }

    std::unique_ptr<ClickHouseServer> server_;
};

TEST_F(ClickHouseStoreTest, MigrationsAreRecordedOnceAndAReaderRefusesOtherVersions) {
    ClickHouseOptions reader;
    reader.migrate = false;
    EXPECT_THAT(error_of(server_->url(), reader),
                HasSubstr("read the schema version: Code: 81: Database tokenradar doesn't exist"));
    server_->exec("CREATE DATABASE tokenradar");
    EXPECT_THAT(error_of(server_->url(), reader),
                HasSubstr("database schema version 0 is older than this tokenradar's (1)"));
    auto first = open();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->schema_version(), ClickHouseStore::latest_schema_version());
    EXPECT_EQ(first->migrations_applied(), 1);
    auto second = open();
    ASSERT_TRUE(second);
    EXPECT_EQ(second->migrations_applied(), 0);
    EXPECT_EQ(text("SELECT count() FROM tokenradar_migrations"), "1");
    EXPECT_TRUE(ClickHouseStore::open(server_->url(), reader));
    server_->exec("INSERT INTO tokenradar_migrations (version, name) VALUES (99, 'x')",
                  "tokenradar");
    EXPECT_THAT(error_of(server_->url()),
                HasSubstr("database schema version 99 is newer than this tokenradar"));
}

// Each label of core's table is a column, added at open when missing (a label added to the
// table later needs no migration); a reader of an older table leaves that label unset.
TEST_F(ClickHouseStoreTest, LabelColumnsFollowCoresLabelTable) {
    auto store = open();
    ASSERT_TRUE(store);
    for (const LabelInfo& label : kLabelTable) {
        EXPECT_EQ(text("SELECT count() FROM system.columns WHERE database = 'tokenradar' AND "
                       "table = 'measurements' AND name = '" +
                       std::string(label.name) + "'"),
                  "1")
            << label.name;
    }
    Measurement m = full_record(1);
    m.labels.route = Route::hedge;
    ASSERT_TRUE(store->insert(std::vector{m}));
    server_->exec("ALTER TABLE measurements DROP COLUMN route", "tokenradar");
    ClickHouseOptions reader;
    reader.migrate = false;
    auto old = ClickHouseStore::open(server_->url(), reader);
    ASSERT_TRUE(old) << old.error().message;
    auto back = (*old)->select({}).value();
    ASSERT_EQ(back.size(), 1U);
    EXPECT_EQ(back[0].labels.route, Route::primary);  // unset: Labels' default
    auto migrated = open();
    ASSERT_TRUE(migrated);
    Measurement again = full_record(2);
    again.labels.route = Route::hedge;
    ASSERT_TRUE(migrated->insert(std::vector{again}));
    back = migrated->select({}).value();
    ASSERT_EQ(back.size(), 2U);
    EXPECT_EQ(back[0].labels.route, Route::primary);  // stored before the column came back
    EXPECT_EQ(back[1], relative_to_send(again));
}

// Two writers (two nodes) on one database: every record once, each writer's ids increasing in
// its own insertion order, last_id() the largest, and after_id sees what came after.
TEST_F(ClickHouseStoreTest, TwoNodesWriteOneDatabase) {
    ClickHouseOptions a_options;
    a_options.node = 1;
    ClickHouseOptions b_options;
    b_options.node = 2;
    auto a = open(a_options);
    auto b = open(b_options);
    ASSERT_TRUE(a && b);
    for (int i = 0; i < 10; ++i) {
        auto& store = i % 2 == 0 ? a : b;
        Measurement m = full_record(i, 1000);
        m.client_id.clear();
        ASSERT_TRUE(store->insert(std::vector{m}));
    }
    const auto ids = text(
        "SELECT arrayStringConcat(groupArray(toString(id)), ',') FROM "
        "(SELECT id FROM measurements ORDER BY request_id)");
    std::vector<std::int64_t> by_request;
    for (std::size_t at = 0; at < ids.size();) {
        std::size_t end = ids.find(',', at);
        if (end == std::string::npos) end = ids.size();
        by_request.push_back(std::stoll(ids.substr(at, end - at)));
        at = end + 1;
    }
    ASSERT_EQ(by_request.size(), 10U);
    for (std::size_t i = 0; i < by_request.size(); ++i) {
        EXPECT_EQ(by_request[i] % 1024, i % 2 == 0 ? 1 : 2) << i;
        if (i > 0) {
            EXPECT_GT(by_request[i], by_request[i - 1]) << i;  // one after the other
        }
    }
    EXPECT_EQ(a->last_id().value(), by_request.back());
    EXPECT_EQ(b->last_id().value(), by_request.back());
    RecordQuery q;
    q.after_id = by_request[6];
    EXPECT_EQ(a->select(q).value().size(), 3U);
    EXPECT_EQ(b->select({}).value().size(), 10U);
}

// A submitted record seen by another node before is a duplicate here too (the lookup reads
// the shared table).
TEST_F(ClickHouseStoreTest, DuplicatesAreFoundAcrossNodes) {
    auto a = open();
    auto b = open();
    ASSERT_TRUE(a && b);
    const Measurement m = full_record(1);
    EXPECT_EQ(a->insert(std::vector{m}).value(), std::vector<bool>{true});
    EXPECT_EQ(b->insert(std::vector{m}).value(), std::vector<bool>{false});
    EXPECT_EQ(b->counts().lookups, 1U);
}

// Whole days before the cut are dropped as partitions; the day it falls in is a mutation.
TEST_F(ClickHouseStoreTest, DeleteBeforeDropsWholeDaysAndMutatesTheRest) {
    auto store = open();
    ASSERT_TRUE(store);
    std::vector<Measurement> records;
    for (int day = 0; day < 3; ++day) {
        for (int i = 0; i < 10; ++i) {
            Measurement m = full_record(day * 10 + i, 0);
            m.ts_us = 20'000 * kDay + day * kDay + i * (kDay / 10);
            records.push_back(m);
        }
    }
    ASSERT_TRUE(store->insert(records));
    EXPECT_EQ(text("SELECT count() FROM system.parts WHERE database = 'tokenradar' AND "
                   "table = 'measurements' AND active"),
              "3");  // one part per day: one INSERT, three partitions
    const std::int64_t cut = 20'000 * kDay + kDay + 5 * (kDay / 10);
    EXPECT_EQ(store->delete_before(cut).value(), 15U);
    EXPECT_EQ(store->counts().partitions, 1U);
    EXPECT_EQ(store->counts().mutations, 1U);
    auto rest = store->select({}).value();
    ASSERT_EQ(rest.size(), 15U);
    EXPECT_EQ(rest.front().ts_us, cut);
    EXPECT_EQ(text("SELECT count() FROM submitted_keys"), "15");  // the duplicate index too
    EXPECT_EQ(store->delete_before(cut).value(), 0U);
}

// A rollup row saved before RollupRow grew a label loads with the new label empty.
TEST_F(ClickHouseStoreTest, RollupRowsSavedWithFewerLabelsLoadWithTheRestEmpty) {
    auto store = open();
    ASSERT_TRUE(store);
    server_->exec(
        "INSERT INTO rollup_hours (hour_us, labels, stream, client_id, aggregate, version) "
        "VALUES (3600000000, ['openai', 'gpt'], 1, 'c', 'xy', 1)",
        "tokenradar");
    std::vector<RollupRow> rows;
    ASSERT_TRUE(store->load_rollups([&](RollupRow&& r) { rows.push_back(std::move(r)); }));
    ASSERT_EQ(rows.size(), 1U);
    EXPECT_EQ(rows[0].labels[0], "openai");
    EXPECT_EQ(rows[0].labels[1], "gpt");
    EXPECT_EQ(rows[0].labels[2], "");
    EXPECT_EQ(rows[0].aggregate, (std::vector<std::uint8_t>{'x', 'y'}));
}

// While the server is down a call fails with a connection error naming the URL; after it is
// back the same store goes on (a new connection per failure).
TEST_F(ClickHouseStoreTest, AStoreOutlivesAnOutage) {
    auto store = open();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->insert(std::vector{full_record(1)}));
    server_->stop();
    auto failed = store->insert(std::vector{full_record(2)});
    ASSERT_FALSE(failed);
    EXPECT_THAT(failed.error().message, HasSubstr("clickhouse://default:[redacted]@127.0.0.1"));
    EXPECT_THAT(failed.error().message, Not(HasSubstr(ClickHouseServer::kPassword)));
    server_->start();
    ASSERT_TRUE(store->insert(std::vector{full_record(2)}));
    EXPECT_EQ(store->select({}).value().size(), 2U);
}

}  // namespace
}  // namespace tokenradar::store

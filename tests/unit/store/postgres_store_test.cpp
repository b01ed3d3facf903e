// What only PostgresStore has: migrations under an advisory lock, URL errors that never show
// the password, and reconnecting when the server goes away (the contract both backends share
// is measurement_store_test.cpp). Each test starts a real PostgreSQL server
// (tests/support/postgres_server.hpp).

#include <tokenradar/store/postgres_store.hpp>

#include "../../../src/store/pg_migrations.hpp"

#include "../../support/postgres_server.hpp"
#include "../../support/store_records.hpp"

#include <tokenradar/store/batch_writer.hpp>

#include <libpq-fe.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::store {
namespace {

using testing::full_record;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::PostgresServer;
using testing::relative_to_send;

class PostgresStoreTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::skip_reason();
        server_ = std::make_unique<PostgresServer>();
    }

    std::unique_ptr<PostgresStore> open_ok(const std::string& url,
                                           const PostgresOptions& options = {}) {
        auto store = PostgresStore::open(url, options);
        EXPECT_TRUE(store) << (store ? "" : store.error().message);
        return store ? std::move(*store) : nullptr;
    }
    std::int64_t count(const std::string& sql) {
        return std::stoll(server_->query("tokenradar", sql));
    }

    std::unique_ptr<PostgresServer> server_;
};

// Records measured here, numbered from `first`.
std::vector<Measurement> local_records(int first, int n) {
    std::vector<Measurement> out;
    for (int i = first; i < first + n; ++i) {
        out.push_back(full_record(i));
        out.back().client_id.clear();
    }
    return out;
}

TEST_F(PostgresStoreTest, OpenCreatesTheSchemaAndAReopenAppliesNothing) {
    {
        auto store = open_ok(server_->url());
        ASSERT_TRUE(store);
        EXPECT_EQ(store->schema_version(), PostgresStore::latest_schema_version());
        EXPECT_EQ(store->migrations_applied(), PostgresStore::latest_schema_version());
        ASSERT_TRUE(store->insert(local_records(1, 3)));
    }
    auto again = open_ok(server_->url());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->migrations_applied(), 0);
    EXPECT_EQ(again->select({}).value().size(), 3u);
    EXPECT_EQ(count("SELECT count(*) FROM tokenradar_migrations"),
              PostgresStore::latest_schema_version());
    // scan()'s window query can read the (ts_us, id) index in its order, with no sort (three
    // rows alone would be read whole: the planner is told to prefer the index).
    const std::string plan =
        server_->query("tokenradar",
                       "SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN (COSTS OFF) "
                       "SELECT * FROM measurements "
                       "WHERE ts_us >= 1 AND ts_us < 2 ORDER BY ts_us, id");
    EXPECT_THAT(plan, HasSubstr("Index Scan using measurements_ts"));
    EXPECT_THAT(plan, Not(HasSubstr("Sort")));
}

// Several nodes starting at once against a new database: each migration is applied once (the
// others wait for the advisory lock, then find it applied) and every opener succeeds.
TEST_F(PostgresStoreTest, ConcurrentOpenersApplyEachMigrationOnce) {
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(round);
        const std::string url = server_->create_database("race_" + std::to_string(round));
        constexpr int kOpeners = 4;
        std::atomic<int> waiting{kOpeners};
        std::vector<int> applied(kOpeners, -1);
        std::vector<std::string> errors(kOpeners);
        std::vector<std::thread> threads;
        for (int i = 0; i < kOpeners; ++i) {
            threads.emplace_back([&, i] {
                waiting.fetch_sub(1);
                while (waiting.load() > 0) std::this_thread::yield();
                auto store = PostgresStore::open(url);
                if (store) {
                    applied[i] = (*store)->migrations_applied();
                } else {
                    errors[i] = store.error().message;
                }
            });
        }
        for (auto& t : threads) t.join();
        int total = 0;
        for (int i = 0; i < kOpeners; ++i) {
            EXPECT_EQ(errors[i], "") << i;
            EXPECT_GE(applied[i], 0);
            total += applied[i];
        }
        EXPECT_EQ(total, PostgresStore::latest_schema_version());
        EXPECT_EQ(std::stoll(server_->query("race_" + std::to_string(round),
                                            "SELECT count(*) FROM tokenradar_migrations")),
                  PostgresStore::latest_schema_version());
    }
}

// Schema version 3 adds client_key to label_sets and rollup_hours: a version 2 database keeps
// its label sets and rollups with client_key '', and a record that differs from a stored one
// only in its client key gets a label set of its own.
TEST_F(PostgresStoreTest, VersionThreeGivesEveryStoredRowAnEmptyClientKey) {
    {
        auto db = PgConnection::parse(server_->url());
        ASSERT_TRUE(db) << db.error().message;
        ASSERT_TRUE(db->connect(std::chrono::seconds(5)));
        auto schema = pg_migrate(*db, builtin_pg_migrations().first(2), true);
        ASSERT_TRUE(schema) << schema.error().message;
        ASSERT_EQ(schema->version, 2);
    }
    server_->exec("tokenradar",
                  "INSERT INTO label_sets (provider, model, endpoint, upstream_region, "
                  "client_region, task, source, cache, route, api, stream) VALUES ('prov-1', "
                  "'model-1', 'api.example.com', 'us-east', 'eu-west', 'gen-500', 'gateway', "
                  "'miss', 'hedge', 'anthropic', false);"
                  "INSERT INTO rollup_hours VALUES (3600000000, 'p', 'm', 't', 's', 'openai', '', "
                  "'', true, 'c', '\\x0102')");
    auto store = open_ok(server_->url());
    ASSERT_TRUE(store);
    EXPECT_EQ(store->schema_version(), 3);
    EXPECT_EQ(count("SELECT count(*) FROM label_sets WHERE client_key = ''"), 1);
    std::vector<RollupRow> rollups;
    ASSERT_TRUE(store->load_rollups([&](RollupRow&& r) { rollups.push_back(std::move(r)); }));
    ASSERT_EQ(rollups.size(), 1U);
    EXPECT_EQ(rollups[0].labels.back(), "");  // client_key
    EXPECT_EQ(rollups[0].aggregate, (std::vector<std::uint8_t>{1, 2}));
    // The same cell and hour under a client key is another row, not an overwrite.
    RollupRow keyed = rollups[0];
    keyed.labels.back() = "team-a";
    ASSERT_TRUE(store->save_rollups(std::vector{keyed}, 0));
    EXPECT_EQ(count("SELECT count(*) FROM rollup_hours"), 2);

    std::vector<Measurement> records = local_records(1, 1);  // prov-1/model-1, client key team-1
    records.push_back(records[0]);
    records[1].request_id = "req-unkeyed";
    records[1].labels.client_key.clear();
    ASSERT_TRUE(store->insert(records));
    EXPECT_EQ(count("SELECT count(*) FROM label_sets"), 2);
    auto back = store->select({});
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->size(), 2U);
    EXPECT_EQ((*back)[0], relative_to_send(records[0]));
    EXPECT_EQ((*back)[1], relative_to_send(records[1]));
}

TEST_F(PostgresStoreTest, RefusesADatabaseFromANewerTokenRadar) {
    ASSERT_TRUE(open_ok(server_->url()));
    server_->exec("tokenradar",
                  "INSERT INTO tokenradar_migrations (version, name) VALUES "
                  "(99, '0099_future.sql')");
    auto store = PostgresStore::open(server_->url());
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, make_error_code(Errc::unsupported));
    EXPECT_THAT(store.error().message, HasSubstr(redact_postgres_url(server_->url())));
    EXPECT_THAT(store.error().message, HasSubstr("schema version 99 is newer"));
    EXPECT_THAT(store.error().message, Not(HasSubstr(PostgresServer::kPassword)));
}

TEST_F(PostgresStoreTest, WithoutMigrateAnOlderSchemaIsAnErrorAndLeftAlone) {
    PostgresOptions options;
    options.migrate = false;
    auto store = PostgresStore::open(server_->url(), options);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, make_error_code(Errc::unsupported));
    EXPECT_THAT(store.error().message, HasSubstr("schema version 0 is older"));
    EXPECT_EQ(server_->query("tokenradar",
                             "SELECT count(*) FROM pg_tables WHERE schemaname = "
                             "'public'"),
              "0");
}

TEST(PostgresStoreUrl, TheDisplayedUrlHidesThePassword) {
    EXPECT_EQ(redact_postgres_url("postgresql://app:s3cret@db.example:5432/tr"),
              "postgresql://app:[redacted]@db.example:5432/tr");
    EXPECT_EQ(redact_postgres_url("postgres://app@db/tr?password=s3cret&sslmode=require"),
              "postgres://app@db/tr?password=[redacted]&sslmode=require");
    EXPECT_EQ(redact_postgres_url("postgresql://db/tr"), "postgresql://db/tr");
    // An '@' in the password itself (percent-encoded or not) stays hidden.
    EXPECT_EQ(redact_postgres_url("postgresql://app:a@b@db/tr"),
              "postgresql://app:[redacted]@db/tr");
}

TEST(PostgresStoreUrl, ABadUrlIsAnErrorNamingItWithoutThePassword) {
    auto scheme = PostgresStore::open("mysql://app:s3cret@127.0.0.1/tr");
    ASSERT_FALSE(scheme);
    EXPECT_EQ(scheme.error().code, make_error_code(Errc::bad_request));
    EXPECT_THAT(scheme.error().message, HasSubstr("mysql://app:[redacted]@127.0.0.1/tr"));
    EXPECT_THAT(scheme.error().message, HasSubstr("expected a postgresql://"));

    auto query = PostgresStore::open("postgresql://app:s3cret@127.0.0.1:5432/tr?nonsense=1");
    ASSERT_FALSE(query);
    EXPECT_EQ(query.error().code, make_error_code(Errc::bad_request));
    EXPECT_THAT(query.error().message,
                HasSubstr("postgresql://app:[redacted]@127.0.0.1:5432/tr?nonsense=1: "));
    EXPECT_THAT(query.error().message, HasSubstr("nonsense"));
    EXPECT_THAT(query.error().message, Not(HasSubstr("s3cret")));
}

TEST(PostgresStoreUrl, AnUnreachableServerIsAConnectErrorNamingTheUrl) {
    const std::string url =
        "postgresql://app:s3cret@127.0.0.1:" + std::to_string(PostgresServer::free_port()) + "/tr";
    auto store = PostgresStore::open(url);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, make_error_code(Errc::connect_failed));
    EXPECT_THAT(store.error().message, HasSubstr(redact_postgres_url(url) + ": cannot connect: "));
    EXPECT_THAT(store.error().message, HasSubstr("Connection refused"));
    EXPECT_THAT(store.error().message, Not(HasSubstr("s3cret")));
    EXPECT_THAT(store.error().message, Not(HasSubstr("\n")));
}

TEST_F(PostgresStoreTest, AWrongPasswordIsRefusedWithoutShowingIt) {
    const std::string url =
        "postgresql://tokenradar:not-the-Pw-9@127.0.0.1:" + std::to_string(server_->port()) +
        "/tokenradar";
    auto store = PostgresStore::open(url);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error().code, make_error_code(Errc::connect_failed));
    EXPECT_THAT(store.error().message, HasSubstr("password authentication failed"));
    EXPECT_THAT(store.error().message, HasSubstr("postgresql://tokenradar:[redacted]@127.0.0.1"));
    EXPECT_THAT(store.error().message, Not(HasSubstr("not-the-Pw-9")));
}

// A restart while the store is idle costs nothing: the dead connection is found at BEGIN,
// before anything of the insert was sent, and replaced at once. While the server is down,
// calls fail fast with the last reason; once it is back, the store reconnects by itself.
TEST_F(PostgresStoreTest, ReconnectsAfterTheServerRestarts) {
    PostgresOptions options;
    options.reconnect_min = std::chrono::milliseconds(50);
    options.reconnect_max = std::chrono::milliseconds(200);
    auto store = open_ok(server_->url(), options);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->insert(local_records(0, 10)));
    server_->restart();
    auto after_restart = store->insert(local_records(10, 10));
    ASSERT_TRUE(after_restart) << after_restart.error().message;
    EXPECT_EQ(store->counts().reconnects, 1u);

    server_->stop();
    auto down = store->insert(local_records(20, 10));
    ASSERT_FALSE(down);
    // Found at BEGIN, so the store tried to reconnect at once, and could not.
    EXPECT_THAT(down.error().message, HasSubstr("cannot connect"));
    auto fast = store->insert(local_records(20, 10));
    ASSERT_FALSE(fast);
    EXPECT_THAT(fast.error().message, HasSubstr(redact_postgres_url(server_->url())));
    EXPECT_THAT(fast.error().message, Not(HasSubstr(PostgresServer::kPassword)));
    EXPECT_THAT(fast.error().message,
                ::testing::AnyOf(HasSubstr("next attempt in"), HasSubstr("cannot connect")));
    EXPECT_FALSE(store->last_id());

    server_->start();
    Result<std::vector<bool>> back = Error(Errc::internal, "not tried");
    for (int i = 0; i < 100 && !back; ++i) {
        back = store->insert(local_records(20, 10));
        if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(store->counts().reconnects, 2u);
    EXPECT_GE(store->counts().failed_connects, 1u);
    auto all = store->select({});
    ASSERT_TRUE(all) << all.error().message;
    ASSERT_EQ(all->size(), 30u);
    const auto expected = local_records(0, 30);
    for (std::size_t i = 0; i < 30; ++i) EXPECT_EQ((*all)[i], relative_to_send(expected[i]));
}

// The gateway's path: a BatchWriter over PostgreSQL keeps accepting while the server is
// restarted and then down for a while; once it is back every accepted record is stored.
TEST_F(PostgresStoreTest, ABatchWriterLosesNoRecordAcrossAnOutage) {
    PostgresOptions options;
    options.reconnect_min = std::chrono::milliseconds(20);
    options.reconnect_max = std::chrono::milliseconds(100);
    BatchWriterOptions writer_options;
    writer_options.flush_interval = std::chrono::milliseconds(10);
    auto opened = PostgresStore::open(server_->url(), options);
    ASSERT_TRUE(opened) << opened.error().message;
    BatchWriter writer(std::move(*opened), writer_options);
    std::atomic<bool> pushing{true};
    std::atomic<int> pushed{0};
    std::thread producer([&] {
        for (int i = 0; pushing.load(); ++i) {
            Measurement m = full_record(i);
            m.client_id.clear();
            if (writer.try_push(std::move(m))) pushed.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server_->restart();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server_->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    server_->start();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    pushing = false;
    producer.join();
    writer.stop();
    const auto c = writer.counters();
    EXPECT_EQ(c.accepted, static_cast<std::uint64_t>(pushed.load()));
    EXPECT_EQ(c.dropped, 0u);
    EXPECT_EQ(c.lost, 0u);
    EXPECT_GE(c.write_errors, 1u);  // the outage was seen
    EXPECT_EQ(c.written, c.accepted);
    // Every accepted record is stored (a COMMIT cut off in flight could add a second copy).
    EXPECT_EQ(count("SELECT count(DISTINCT request_id) FROM measurements"), pushed.load());
}

// Ids are handed out in insertion order across stores (the insert lock), so a reader that
// remembers last_id() sees every later record after it.
TEST_F(PostgresStoreTest, TwoWritersIdsFollowTheirCommits) {
    auto a = open_ok(server_->url());
    auto b = open_ok(server_->url());
    ASSERT_TRUE(a && b);
    std::atomic<bool> failed{false};
    const auto write = [&](PostgresStore& store, int first) {
        for (int batch = 0; batch < 20; ++batch) {
            if (!store.insert(local_records(first + batch * 500, 500))) failed = true;
        }
    };
    std::thread ta([&] { write(*a, 0); });
    std::thread tb([&] { write(*b, 100'000); });
    ta.join();
    tb.join();
    ASSERT_FALSE(failed);
    // Each batch's 500 ids are consecutive: no other writer's rows interleave with them.
    EXPECT_EQ(count("SELECT count(*) FROM (SELECT substr(request_id, 5)::int / 500 AS batch, "
                    "max(id) - min(id) AS span FROM measurements GROUP BY 1) AS t "
                    "WHERE span <> 499"),
              0)
        << "ids of the two writers interleave";
    EXPECT_EQ(count("SELECT count(*) FROM measurements"), 20'000);
    EXPECT_EQ(a->last_id().value(), 20'000);
}

// The owner of the rollups (serve with its observatory): one at a time per database, while
// writers without ownership come and go.
TEST_F(PostgresStoreTest, AnExclusiveOpenIsRefusedWhileAnotherOwnsTheDatabase) {
    PostgresOptions exclusive;
    exclusive.exclusive = true;
    {
        auto owner = open_ok(server_->url(), exclusive);
        ASSERT_TRUE(owner);
        auto second = PostgresStore::open(server_->url(), exclusive);
        ASSERT_FALSE(second);
        EXPECT_EQ(second.error().code, make_error_code(Errc::forbidden));
        EXPECT_THAT(second.error().message,
                    HasSubstr(redact_postgres_url(server_->url()) +
                              ": in use by another tokenradar process (server pid "));
        EXPECT_THAT(second.error().message, HasSubstr(", client 127.0.0.1)"));
        auto writer = open_ok(server_->url());  // no ownership needed
        ASSERT_TRUE(writer);
        ASSERT_TRUE(writer->insert(local_records(0, 2)));
        EXPECT_EQ(owner->select({}).value().size(), 2u);
        // Another database on the same server is another owner's.
        EXPECT_TRUE(open_ok(server_->create_database("other"), exclusive));
    }
    EXPECT_TRUE(open_ok(server_->url(), exclusive));  // released with the connection
}

// What keeps ids in commit order: every insert waits for the insert lock. Another session
// holding it holds the insert back; releasing it lets the insert through.
TEST_F(PostgresStoreTest, AnInsertWaitsForTheInsertLock) {
    auto store = open_ok(server_->url());
    ASSERT_TRUE(store);
    PGconn* holder = PQconnectdb(server_->url().c_str());
    ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
    const auto run = [&](const std::string& sql) {
        PGresult* r = PQexec(holder, sql.c_str());
        EXPECT_NE(PQresultStatus(r), PGRES_FATAL_ERROR) << PQresultErrorMessage(r);
        PQclear(r);
    };
    run("BEGIN; SELECT pg_advisory_xact_lock(" + std::to_string(PostgresStore::kInsertLock) + ")");
    std::atomic<bool> done{false};
    std::thread writer([&] {
        EXPECT_TRUE(store->insert(local_records(0, 10)));
        done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(done.load()) << "the insert did not wait for the lock";
    run("COMMIT");
    writer.join();
    EXPECT_TRUE(done.load());
    PQfinish(holder);
    EXPECT_EQ(count("SELECT count(*) FROM measurements"), 10);
}

TEST_F(PostgresStoreTest, CountsCopiesAndInserts) {
    auto store = open_ok(server_->url());
    ASSERT_TRUE(store);
    std::vector<Measurement> records = local_records(0, 100);
    records[50].client_id = "submitter";  // splits the locals into two runs
    ASSERT_TRUE(store->insert(records));
    EXPECT_EQ(store->counts().copies, 2u);
    EXPECT_EQ(store->counts().insert_rows, 1u);
    PostgresOptions options;
    options.loader = PostgresOptions::Loader::insert;
    auto by_insert = open_ok(server_->url(), options);
    ASSERT_TRUE(by_insert);
    ASSERT_TRUE(by_insert->insert(local_records(100, 130)));  // 64 + 64 + 2
    EXPECT_EQ(by_insert->counts().copies, 0u);
    EXPECT_EQ(by_insert->counts().insert_rows, 3u);
    EXPECT_EQ(store->last_id().value(), 230);
}

}  // namespace
}  // namespace tokenradar::store

// bench --submit and [observatory] forward_to against a real observatory (serve::Service
// with a store and ingest keys) on 127.0.0.1.

#include <tokenradar/observatory/submit.hpp>

#include "../../support/service_fixture.hpp"
#include "../../support/store_records.hpp"

#include <tokenradar/store/sqlite_store.hpp>

#include <gtest/gtest.h>

namespace tokenradar::observatory {
namespace {

using namespace std::chrono_literals;
constexpr std::string_view kKey = "ingest-key-for-tests";

// An observatory with ingest keys on a temp store.
class Observatory : public testing::ServiceFixture {
  public:
    explicit Observatory(const std::string& db)
        : ServiceFixture(fmt::format(R"(
[listener]
port = 0
[auth]
mode = "none"
[store]
path = "{}"
flush_interval = "50ms"
[observatory]
ingest = "keys"
[[observatory.ingest_keys]]
name = "bench-box"
sha256 = "{}"
)",
                                     db, net::hash_api_key(kKey))) {}
};

std::vector<Measurement> records(std::size_t n) {
    std::vector<Measurement> out;
    const std::int64_t now = wall_now_us();
    for (std::size_t i = 0; i < n; ++i) {
        Measurement m = testing::full_record(static_cast<std::int64_t>(i), now - 60'000'000);
        m.labels.source = "bench";
        out.push_back(std::move(m));
    }
    return out;
}

Result<SubmitOutcome> submit(const SubmitTarget& target, std::vector<Measurement> rs,
                             SubmitOptions options = {}) {
    net::asio::io_context io;
    net::HttpClient client(io.get_executor());
    return testing::run_sync(io, submit_records(client, target, std::move(rs), options));
}

std::size_t stored_from(const std::string& db, std::string_view client_id) {
    auto store = store::SqliteStore::open(db).value();
    std::size_t n = 0;
    EXPECT_TRUE(
        store->scan({}, [&](const Measurement& m) { n += m.client_id == client_id ? 1 : 0; }));
    return n;
}

TEST(ObservatorySubmit, BatchesAreStoredOnceUnderTheKeysName) {
    testing::TempDb db;
    Observatory obs(db.path());
    const SubmitTarget target{measurements_url(obs.base_url(), "url").value(),
                              Secret(std::string(kKey))};
    SubmitOptions options;
    options.batch = 700;  // several requests
    auto first = submit(target, records(2'000), options);
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(first->accepted, 2'000u);
    EXPECT_EQ(first->rejected, 0u);
    auto again = submit(target, records(2'000), options);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->accepted, 0u);
    EXPECT_EQ(again->duplicates, 2'000u);
    obs.stop();
    EXPECT_EQ(stored_from(db.path(), "key:bench-box"), 2'000u);
}

TEST(ObservatorySubmit, AWrongKeyFailsAtOnceAndAnUnreachableServerAfterTheRetries) {
    testing::TempDb db;
    Observatory obs(db.path());
    const SubmitTarget wrong{obs.url("/api/v1/measurements"), Secret(std::string("not-the-key"))};
    const auto began = std::chrono::steady_clock::now();
    auto refused = submit(wrong, records(3));
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("answered 401"), std::string::npos)
        << refused.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);  // 401 is not retried

    const SubmitTarget gone{net::parse_url("http://127.0.0.1:1/api/v1/measurements").value(),
                            Secret()};
    SubmitOptions quick;
    quick.max_attempts = 3;
    quick.first_backoff = 20ms;
    auto unreachable = submit(gone, records(3), quick);
    ASSERT_FALSE(unreachable);
    EXPECT_EQ(unreachable.error().code, make_error_code(Errc::connect_failed))
        << unreachable.error().message;
}

TEST(ObservatorySubmit, TheForwarderDeliversWhatAGatewayPushes) {
    testing::TempDb db;
    Observatory obs(db.path());
    ForwarderOptions options;
    options.interval = 50ms;
    Forwarder forwarder({obs.url("/api/v1/measurements"), Secret(std::string(kKey))}, options);
    for (const Measurement& m : records(30)) EXPECT_TRUE(forwarder.push(m));
    forwarder.stop();
    EXPECT_FALSE(forwarder.push(records(1).front()));
    const auto c = forwarder.counters();
    EXPECT_EQ(c.accepted, 30u);
    EXPECT_EQ(c.failed, 0u);
    EXPECT_EQ(c.dropped, 1u);
    obs.stop();
    EXPECT_EQ(stored_from(db.path(), "key:bench-box"), 30u);
}

TEST(ObservatorySubmit, UrlsAreTheBaseOrTheEndpoint) {
    EXPECT_EQ(measurements_url("http://obs.example:8080", "--submit").value().target,
              "/api/v1/measurements");
    EXPECT_EQ(
        measurements_url("https://obs.example/api/v1/measurements", "--submit").value().target,
        "/api/v1/measurements");
    const auto bad = measurements_url("http://obs.example/other", "--submit");
    ASSERT_FALSE(bad);
    EXPECT_EQ(
        bad.error().message,
        "--submit: expected the observatory's base URL or its /api/v1/measurements endpoint, got "
        "'http://obs.example/other'");
    EXPECT_FALSE(measurements_url("ftp://x", "--submit"));
}

}  // namespace
}  // namespace tokenradar::observatory

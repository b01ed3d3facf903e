// [observatory] geoip_db: a public observatory (serve::Service with a store) on 127.0.0.1
// stamps submitted records that carry no client_region with the region its MaxMind DB gives
// the submitter's address; records with their own region keep it.

#include "../../support/mmdb_writer.hpp"
#include "../../support/service_fixture.hpp"
#include "../../support/store_records.hpp"

#include <tokenradar/observatory/submit.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <gtest/gtest.h>

#include <map>

namespace tokenradar::observatory {
namespace {

namespace mmdb = testing::mmdb;

// 127.0.0.0/8 is "ZZ" (the test's submitter), 10.0.0.0/8 only has a continent.
std::string geoip_database() {
    mmdb::Writer w(6, 24);
    w.insert("127.0.0.0/8", mmdb::map({{"country", mmdb::map({{"iso_code", mmdb::utf8("ZZ")}})}}));
    w.insert("10.0.0.0/8", mmdb::map({{"continent", mmdb::map({{"code", mmdb::utf8("EU")}})}}));
    return w.bytes();
}

TEST(ObservatoryGeoIp, RecordsWithoutARegionGetTheSubmittersCountry) {
    testing::TempDb db;
    mmdb::TempFile geoip(geoip_database());
    testing::ServiceFixture service(fmt::format(R"(
[listener]
port = 0
[auth]
mode = "none"
[store]
path = "{}"
flush_interval = "50ms"
[observatory]
ingest = "public"
geoip_db = "{}"
)",
                                                db.path(), geoip.path()));

    std::vector<Measurement> records;
    const std::int64_t now = wall_now_us();
    for (std::int64_t i = 0; i < 4; ++i) {
        Measurement m = testing::full_record(i, now - 60'000'000);
        m.labels.source = "bench";
        m.labels.client_region = i % 2 == 0 ? "" : "eu-west";  // full_record's own
        records.push_back(std::move(m));
    }
    const SubmitTarget target{service.url("/api/v1/measurements"), Secret()};
    net::asio::io_context io;
    net::HttpClient client(io.get_executor());
    auto outcome = testing::run_sync(io, submit_records(client, target, std::move(records)));
    ASSERT_TRUE(outcome) << outcome.error().message;
    EXPECT_EQ(outcome->accepted, 4u);
    EXPECT_EQ(outcome->rejected, 0u);
    service.stop();

    std::map<std::string, std::string> region_by_request;
    auto store = store::SqliteStore::open(db.path()).value();
    ASSERT_TRUE(store->scan({}, [&](const Measurement& m) {
        EXPECT_EQ(m.client_id, "ip:127.0.0.1");
        region_by_request[m.request_id] = m.labels.client_region;
    }));
    const std::map<std::string, std::string> want{
        {"req-0", "ZZ"}, {"req-1", "eu-west"}, {"req-2", "ZZ"}, {"req-3", "eu-west"}};
    EXPECT_EQ(region_by_request, want);
}

}  // namespace
}  // namespace tokenradar::observatory

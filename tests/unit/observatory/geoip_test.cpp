#include "../../support/mmdb_writer.hpp"

#include <tokenradar/observatory/geoip.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace tokenradar::observatory {
namespace {

namespace mmdb = testing::mmdb;

mmdb::Value country(std::string_view iso) {
    return mmdb::map({{"country", mmdb::map({{"iso_code", mmdb::utf8(iso)}})}});
}

// A database like GeoLite2-Country: country and continent maps, plus the odd cases.
std::string test_database(int ip_version, int record_size) {
    mmdb::Writer w(ip_version, record_size);
    w.insert("127.0.0.0/8", country("ZZ"));
    w.insert("10.0.0.0/8", mmdb::map({{"continent", mmdb::map({{"code", mmdb::utf8("EU")}})}}));
    // Both: the country wins. Extra fields as a real database has them.
    w.insert(
        "192.0.2.0/24",
        mmdb::map({{"continent",
                    mmdb::map({{"code", mmdb::utf8("NA")}, {"geoname_id", mmdb::uint32(6255149)}})},
                   {"country",
                    mmdb::map({{"geoname_id", mmdb::uint32(6252001)},
                               {"iso_code", mmdb::utf8("US")},
                               {"names", mmdb::map({{"en", mmdb::utf8("United States")}})}})}}));
    // A country code of another type, or not a usable label: the continent instead.
    w.insert("198.51.100.0/25",
             mmdb::map({{"country", mmdb::map({{"iso_code", mmdb::uint16(49)}})},
                        {"continent", mmdb::map({{"code", mmdb::utf8("AF")}})}}));
    w.insert("198.51.100.128/25",
             mmdb::map({{"country", mmdb::map({{"iso_code", mmdb::utf8("D\nE")}})},
                        {"continent", mmdb::map({{"code", mmdb::utf8("AS")}})}}));
    // Data without either: no region.
    w.insert("203.0.113.0/24",
             mmdb::map({{"traits", mmdb::map({{"is_anycast", mmdb::uint16(1)}})}}));
    if (ip_version == 6) w.insert("2001:db8::/32", country("XY"));
    return w.bytes();
}

class GeoIpLayouts : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(GeoIpLayouts, CountryElseContinentElseNothing) {
    const auto [ip_version, record_size] = GetParam();
    mmdb::TempFile file(test_database(ip_version, record_size));
    auto geo = GeoIp::open(file.path());
    ASSERT_TRUE(geo) << geo.error().message;
    EXPECT_EQ(geo->path(), file.path());
    EXPECT_EQ(geo->region_of("127.0.0.1"), "ZZ");
    EXPECT_EQ(geo->region_of("127.255.255.255"), "ZZ");
    EXPECT_EQ(geo->region_of("10.20.30.40"), "EU");
    EXPECT_EQ(geo->region_of("192.0.2.200"), "US");
    EXPECT_EQ(geo->region_of("198.51.100.1"), "AF");
    EXPECT_EQ(geo->region_of("198.51.100.200"), "AS");
    EXPECT_EQ(geo->region_of("203.0.113.9"), "");
    // Misses: next to a network, and an empty database branch.
    EXPECT_EQ(geo->region_of("126.255.255.255"), "");
    EXPECT_EQ(geo->region_of("128.0.0.0"), "");
    EXPECT_EQ(geo->region_of("8.8.8.8"), "");
    // A dual-stack socket's IPv4 peer, in either kind of database.
    EXPECT_EQ(geo->region_of("::ffff:127.0.0.1"), "ZZ");
    EXPECT_EQ(geo->region_of("::FFFF:10.0.0.1"), "EU");
    // IPv6: found in an IPv6 database; an IPv4 one cannot hold it.
    EXPECT_EQ(geo->region_of("2001:db8::1"), ip_version == 6 ? "XY" : "");
    EXPECT_EQ(geo->region_of("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"),
              ip_version == 6 ? "XY" : "");
    EXPECT_EQ(geo->region_of("2001:db9::1"), "");
    EXPECT_EQ(geo->region_of("::1"), "");
}

INSTANTIATE_TEST_SUITE_P(VersionsAndRecordSizes, GeoIpLayouts,
                         ::testing::Combine(::testing::Values(4, 6),
                                            ::testing::Values(24, 28, 32)));

TEST(GeoIp, TextThatIsNotAnAddressHasNoRegion) {
    mmdb::TempFile file(test_database(6, 28));
    auto geo = GeoIp::open(file.path()).value();
    for (std::string_view bad :
         {"", "localhost", "127.0.0.1 ", " 127.0.0.1", "127.0.0.1:8080", "127.0.0.256", "127.1",
          "127.0.0.1/8", "fe80::1%eth0", "2001:db8::1::2", "[2001:db8::1]"}) {
        EXPECT_EQ(geo.region_of(bad), "") << bad;
    }
    EXPECT_EQ(geo.region_of(std::string_view("127.0.0.1\0junk", 14)), "");
    EXPECT_EQ(geo.region_of(std::string(100, '1')), "");
    EXPECT_EQ(geo.region_of(std::string_view("127.0.0.1x", 9)),
              "ZZ");  // a view is not NUL-terminated
}

// Records past 2^24 use the high bits a 28-bit record keeps in the node's middle byte: a
// 16 MiB value pushes the next network's data there.
TEST(GeoIp, TwentyEightBitRecordsAboveTwentyFourBits) {
    mmdb::Writer w(6, 28);
    w.insert("10.0.0.0/8",
             mmdb::map({{"padding", mmdb::utf8(std::string((1u << 24) + 1024, 'x'))}}));
    w.insert("127.0.0.0/8", country("ZZ"));
    w.insert("2001:db8::/32", country("XY"));
    mmdb::TempFile file(w.bytes());
    auto geo = GeoIp::open(file.path());
    ASSERT_TRUE(geo) << geo.error().message;
    EXPECT_EQ(geo->region_of("127.0.0.1"), "ZZ");
    EXPECT_EQ(geo->region_of("2001:db8::7"), "XY");
    EXPECT_EQ(geo->region_of("10.0.0.1"), "");
}

TEST(GeoIp, OpenErrorsNameTheFile) {
    const std::string missing =
        (std::filesystem::temp_directory_path() / "tokenradar_no_such_geoip.mmdb").string();
    auto absent = GeoIp::open(missing);
    ASSERT_FALSE(absent);
    EXPECT_EQ(absent.error().message, "geoip: cannot open '" + missing +
                                          "' as a MaxMind DB: Error opening the specified MaxMind "
                                          "DB file (No such file or directory)");

    mmdb::TempFile text("this is a TOML file, not a database\n");
    auto garbage = GeoIp::open(text.path());
    ASSERT_FALSE(garbage);
    EXPECT_EQ(garbage.error().message,
              "geoip: cannot open '" + text.path() +
                  "' as a MaxMind DB: The MaxMind DB file contains invalid metadata");

    mmdb::TempFile empty("");
    auto nothing = GeoIp::open(empty.path());
    ASSERT_FALSE(nothing);
    EXPECT_NE(nothing.error().message.find("geoip: cannot open '" + empty.path() + "'"),
              std::string::npos)
        << nothing.error().message;

    // A database cut short: the metadata is gone with its end.
    const std::string whole = test_database(6, 24);
    mmdb::TempFile cut(whole.substr(0, whole.size() - 40));
    auto truncated = GeoIp::open(cut.path());
    ASSERT_FALSE(truncated);
    EXPECT_NE(truncated.error().message.find(cut.path()), std::string::npos)
        << truncated.error().message;

    auto directory = GeoIp::open(std::filesystem::temp_directory_path().string());
    ASSERT_FALSE(directory);
    EXPECT_NE(directory.error().message.find("geoip: cannot open"), std::string::npos);
}

TEST(GeoIp, MovesKeepTheDatabase) {
    mmdb::TempFile file(test_database(4, 24));
    auto geo = GeoIp::open(file.path()).value();
    GeoIp moved(std::move(geo));
    EXPECT_EQ(moved.region_of("127.0.0.1"), "ZZ");
    auto other = GeoIp::open(file.path()).value();
    other = std::move(moved);
    EXPECT_EQ(other.region_of("10.0.0.1"), "EU");
}

TEST(GeoIp, ConcurrentLookupsAgree) {
    mmdb::TempFile file(test_database(6, 28));
    const auto geo = GeoIp::open(file.path()).value();
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&geo, &wrong, t] {
            for (int i = 0; i < 5'000; ++i) {
                const std::string ip =
                    fmt::format("{}.{}.{}.{}", (i + t) % 2 == 0 ? 127 : 10, i % 256, t, i % 200);
                const std::string want = (i + t) % 2 == 0 ? "ZZ" : "EU";
                if (geo.region_of(ip) != want) ++wrong;
                if (geo.region_of("2001:db8::42") != "XY") ++wrong;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace tokenradar::observatory

#include "../../support/mmdb_writer.hpp"

#include <tokenradar/observatory/config.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::observatory {
namespace {

namespace mmdb = testing::mmdb;

ObservatoryConfig load(const std::string& toml) {
    const auto root = ConfigTable::parse(toml, "test.toml");
    return load_observatory_config(root.table("observatory"),
                                   [](const char*) -> const char* { return nullptr; });
}

std::string config_error(const std::string& toml) {
    try {
        load(toml);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

// Each of `values` for observatory.`key` is refused with an error that names the key.
void expect_refused(std::string_view key, std::initializer_list<const char*> values) {
    for (const char* bad : values) {
        EXPECT_NE(config_error(fmt::format("[observatory]\n{} = {}\n", key, bad))
                      .find(fmt::format("observatory.{}", key)),
                  std::string::npos)
            << key << " = " << bad;
    }
}

TEST(ObservatoryConfig, GeoIpIsOffUnlessADatabaseIsGiven) {
    EXPECT_EQ(load("[observatory]\n").geoip, nullptr);
    const auto empty = load("[observatory]\ngeoip_db = \"\"\n");
    EXPECT_EQ(empty.geoip, nullptr);
    EXPECT_EQ(empty.geoip_db, "");
}

TEST(ObservatoryConfig, GeoIpDatabaseIsOpenedAtLoad) {
    mmdb::Writer w(6);
    w.insert("127.0.0.0/8", mmdb::map({{"country", mmdb::map({{"iso_code", mmdb::utf8("ZZ")}})}}));
    mmdb::TempFile file(w.bytes());
    const auto c =
        load(fmt::format("[observatory]\ningest = \"public\"\ngeoip_db = \"{}\"\n", file.path()));
    EXPECT_EQ(c.geoip_db, file.path());
    ASSERT_NE(c.geoip, nullptr);
    EXPECT_EQ(c.geoip->region_of("127.0.0.1"), "ZZ");
}

TEST(ObservatoryConfig, AMissingOrInvalidGeoIpDatabaseIsAnErrorNamingTheKey) {
    const std::string missing =
        (std::filesystem::temp_directory_path() / "tokenradar_no_such_geoip.mmdb").string();
    EXPECT_EQ(
        config_error(fmt::format("[observatory]\n\ngeoip_db = \"{}\"\n", missing)),
        fmt::format(
            "test.toml:3: observatory.geoip_db: expected a MaxMind DB file (geoip: cannot open "
            "'{0}' as a MaxMind DB: Error opening the specified MaxMind DB file (No such file or "
            "directory)), got the string \"{0}\"",
            missing));
    mmdb::TempFile text("not a database");
    const std::string invalid =
        config_error(fmt::format("[observatory]\ngeoip_db = \"{}\"\n", text.path()));
    EXPECT_EQ(
        invalid.rfind(
            "test.toml:2: observatory.geoip_db: expected a MaxMind DB file (geoip: cannot open '" +
                text.path() + "'",
            0),
        0u)
        << invalid;
    EXPECT_NE(invalid.find("invalid metadata"), std::string::npos) << invalid;
    EXPECT_NE(config_error("[observatory]\ngeoip_db = 7\n")
                  .find("observatory.geoip_db: expected a string"),
              std::string::npos);
}

TEST(ObservatoryConfig, TrustedProxiesAreParsedAndABadOneIsNamed) {
    EXPECT_TRUE(load("[observatory]\n").trusted_proxies.empty());
    const auto c = load("[observatory]\ntrusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\"]\n");
    EXPECT_EQ(c.trusted_proxies.client_address("10.2.3.4", "198.51.100.1"), "198.51.100.1");
    EXPECT_EQ(c.trusted_proxies.client_address("11.2.3.4", "198.51.100.1"), "11.2.3.4");
    const std::string bad =
        config_error("[observatory]\n\ntrusted_proxies = [\"10.0.0.0/8\", \"proxy.local\"]\n");
    EXPECT_EQ(bad.rfind("test.toml:3: observatory.trusted_proxies: expected IP addresses or CIDR "
                        "networks of your reverse proxies ('proxy.local': expected an IP address",
                        0),
              0u)
        << bad;
}

TEST(ObservatoryConfig, LabelBudgetsHaveDefaultsAndAreConfigurable) {
    const LabelBudgetOptions d = load("[observatory]\n").label_budget;
    EXPECT_EQ(d.new_values_per_submitter, 50u);
    EXPECT_EQ(d.max_values, 1000u);
    EXPECT_EQ(d.new_cells_per_submitter, 1000u);
    EXPECT_EQ(d.max_cells, 20000u);
    const LabelBudgetOptions c =
        load(
            "[observatory]\nmax_new_label_values = 5\nmax_label_values = 200\n"
            "max_new_label_cells = 30\nmax_label_cells = 4000\n")
            .label_budget;
    EXPECT_EQ(c.new_values_per_submitter, 5u);
    EXPECT_EQ(c.max_values, 200u);
    EXPECT_EQ(c.new_cells_per_submitter, 30u);
    EXPECT_EQ(c.max_cells, 4000u);
    EXPECT_NE(
        config_error("[observatory]\nmax_label_values = -1\n").find("observatory.max_label_values"),
        std::string::npos);
}

TEST(ObservatoryConfig, LateAllowanceIsADurationFromAMinuteToAWeek) {
    EXPECT_EQ(load("[observatory]\n").late_allowance, std::chrono::hours(24 * 7));
    EXPECT_EQ(load("[observatory]\nlate_allowance = \"6h\"\n").late_allowance,
              std::chrono::minutes(360));
    expect_refused("late_allowance", {"\"30s\"", "\"8d\"", "60"});
    // Public ingestion: an hour unless given (its open buckets hold a part per submitter).
    EXPECT_EQ(load("[observatory]\ningest = \"public\"\n").late_allowance, std::chrono::hours(1));
    EXPECT_EQ(load("[observatory]\ningest = \"public\"\nlate_allowance = \"2d\"\n").late_allowance,
              std::chrono::hours(48));
}

// "auto" (the default) keeps in memory what a query reads: the status page's week and its four
// baseline weeks, and a day (the 30-day windows fit inside); "0s" keeps every hour.
TEST(ObservatoryConfig, RollupRetentionIsAutoWholeHoursOrForEver) {
    EXPECT_FALSE(load("[observatory]\n").rollup_retention.has_value());
    EXPECT_FALSE(load("[observatory]\nrollup_retention = \"auto\"\n").rollup_retention);
    EXPECT_EQ(load("[observatory]\nrollup_retention = \"90d\"\n").rollup_retention,
              std::chrono::hours(90 * 24));
    EXPECT_EQ(load("[observatory]\nrollup_retention = \"0s\"\n").rollup_retention,
              std::chrono::hours(0));
    expect_refused("rollup_retention", {"\"90m\"", "\"sometimes\"", "30"});
    EXPECT_EQ(rollup_hours_read(std::chrono::hours(30 * 24), 4), std::chrono::hours(36 * 24));
    EXPECT_EQ(rollup_hours_read(std::chrono::hours(30 * 24), 1), std::chrono::hours(31 * 24));
    EXPECT_EQ(rollup_hours_read(std::chrono::hours(30 * 24), 52), std::chrono::hours(372 * 24));
}

TEST(ObservatoryConfig, FollowLagIsADurationUpToTenMinutes) {
    EXPECT_EQ(load("[observatory]\n").follow_lag, std::chrono::seconds(10));
    EXPECT_EQ(load("[observatory]\nfollow_lag = \"0s\"\n").follow_lag, std::chrono::seconds(0));
    EXPECT_EQ(load("[observatory]\nfollow_lag = \"2500ms\"\n").follow_lag,
              std::chrono::milliseconds(2500));
    EXPECT_NE(
        config_error("[observatory]\nfollow_lag = \"11m\"\n").find("a duration from 0s to 10m"),
        std::string::npos);
}

TEST(ObservatoryConfig, GatewayKeysMustNameIngestKeys) {
    const std::string keys =
        "[observatory]\ningest = \"keys\"\n"
        "[[observatory.ingest_keys]]\nname = \"edge-1\"\nsha256 = \"" +
        std::string(64, 'a') + "\"\n";
    EXPECT_TRUE(load("[observatory]\n").gateway_keys.empty());
    const std::string trusted = "[observatory]\ningest = \"keys\"\ngateway_keys = [\"edge-1\"]\n" +
                                keys.substr(keys.find("[[obs"));
    EXPECT_EQ(load(trusted).gateway_keys, std::vector<std::string>{"edge-1"});
    const std::string unknown =
        config_error("[observatory]\ningest = \"keys\"\ngateway_keys = [\"edge-2\"]\n" +
                     keys.substr(keys.find("[[obs")));
    EXPECT_NE(unknown.find("observatory.gateway_keys: expected names of "
                           "[[observatory.ingest_keys]] entries ('edge-2' is none)"),
              std::string::npos)
        << unknown;
}

}  // namespace
}  // namespace tokenradar::observatory

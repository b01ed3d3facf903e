#include <tokenradar/observatory/config.hpp>

#include <tokenradar/net/url.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace tokenradar::observatory {
namespace {

std::chrono::hours whole_hours(const ConfigTable& t, std::string_view key,
                               std::chrono::hours fallback) {
    const auto value = t.get_duration(key, fallback);
    if (value.count() < 0 || value % std::chrono::hours(1) != std::chrono::nanoseconds(0)) {
        t.fail(key, "a whole number of hours (\"6h\", \"30d\"), or \"0s\"");
    }
    return std::chrono::duration_cast<std::chrono::hours>(value);
}

}  // namespace

std::chrono::hours rollup_hours_read(std::chrono::hours max_window, int baseline_weeks) {
    constexpr std::chrono::hours kWeek(7 * 24);
    return std::max(max_window, kWeek * (baseline_weeks + 1)) + std::chrono::hours(24);
}

std::string_view to_string(IngestMode mode) noexcept {
    switch (mode) {
        case IngestMode::off:
            return "off";
        case IngestMode::keys:
            return "keys";
        case IngestMode::open:
            return "public";
    }
    return "off";
}

namespace {

// Sample threshold, retention of minute and rollup buckets, query cache.
void read_aggregation(const ConfigTable& t, ObservatoryConfig& c) {
    c.enabled = t.get_bool("enabled", c.enabled);
    c.min_samples = static_cast<std::size_t>(t.get_integer("min_samples", 20, 1, 1'000'000));
    c.minute_retention = whole_hours(t, "minute_retention", c.minute_retention);
    if (c.minute_retention > std::chrono::hours(48)) t.fail("minute_retention", "at most 48h");
    if (t.get_string("rollup_retention", "auto") != "auto")
        c.rollup_retention = whole_hours(t, "rollup_retention", std::chrono::hours(0));
    // Public ingestion takes records from anyone: a week of open buckets would hold a part per
    // submitter per cell-hour for a week (a memory bound by submitters, not cells). An hour
    // unless the table says otherwise (rollup.hpp, Folding).
    const auto late = t.get_duration(
        "late_allowance", c.ingest == IngestMode::open ? kPublicLateAllowance : c.late_allowance);
    if (late < std::chrono::minutes(1) || late > std::chrono::days(7))
        t.fail("late_allowance", "a duration from 1m to 7d");
    c.late_allowance = std::chrono::duration_cast<std::chrono::minutes>(late);
    const auto ttl = t.get_duration("cache_ttl", c.cache_ttl);
    if (ttl.count() < 0 || ttl > std::chrono::minutes(10))
        t.fail("cache_ttl", "a duration from 0s to 10m");
    c.cache_ttl = std::chrono::duration_cast<std::chrono::milliseconds>(ttl);
    const auto lag = t.get_duration("follow_lag", c.follow_lag);
    if (lag.count() < 0 || lag > std::chrono::minutes(10))
        t.fail("follow_lag", "a duration from 0s to 10m");
    c.follow_lag = std::chrono::duration_cast<std::chrono::milliseconds>(lag);
}

// Who may submit measurements, and how much at once.
void read_ingest(const ConfigTable& t, ObservatoryConfig& c) {
    const std::string ingest = t.get_string("ingest", "off");
    if (ingest == "off") {
        c.ingest = IngestMode::off;
    } else if (ingest == "keys") {
        c.ingest = IngestMode::keys;
    } else if (ingest == "public") {
        c.ingest = IngestMode::open;
    } else {
        t.fail("ingest", "\"off\", \"keys\" or \"public\"");
    }
    c.ingest_keys = net::load_api_keys(t.tables("ingest_keys"));
    if (c.ingest == IngestMode::keys && c.ingest_keys.empty()) {
        t.fail("ingest_keys",
               "at least one [[observatory.ingest_keys]] entry when ingest = \"keys\"");
    }
    c.public_rate = t.get_number("public_rate", c.public_rate, 0.001, 1e6);
    c.public_burst = t.get_number("public_burst", c.public_burst, 1, 1e6);
    c.max_records = static_cast<std::size_t>(t.get_integer("max_records", 10'000, 1, 100'000));
    c.max_body_bytes = static_cast<std::size_t>(t.get_integer(
        "max_body_bytes", static_cast<std::int64_t>(c.max_body_bytes), 1024, 1LL << 30));
}

// Forwarding of accepted measurements to another observatory.
void read_forwarding(const ConfigTable& t, const std::function<const char*(const char*)>& getenv_fn,
                     ObservatoryConfig& c) {
    c.forward_to = t.get_string("forward_to", "");
    if (!c.forward_to.empty()) {
        auto url = net::parse_url(c.forward_to);
        if (!url || url->target.find("/api/v1/measurements") == std::string::npos) {
            t.fail("forward_to",
                   "the measurements URL of an observatory (http(s)://host/api/v1/measurements)");
        }
    }
    c.forward_key_env = t.get_string("forward_key_env", "");
    if (!c.forward_key_env.empty()) {
        const char* key = getenv_fn(c.forward_key_env.c_str());
        if (key == nullptr || *key == '\0') {
            t.fail("forward_key_env",
                   fmt::format("an environment variable that is set (${} is empty)",
                               c.forward_key_env));
        }
        c.forward_key = Secret(key);
    }
}

// Where submissions come from: the GeoIP database, the reverse proxies to trust for client
// addresses, and the ingest keys that belong to gateways.
void read_submitters(const ConfigTable& t, ObservatoryConfig& c) {
    c.geoip_db = t.get_string("geoip_db", "");
    if (!c.geoip_db.empty()) {
        auto geoip = GeoIp::open(c.geoip_db);
        if (!geoip)
            t.fail("geoip_db", fmt::format("a MaxMind DB file ({})", geoip.error().message));
        c.geoip = std::make_shared<const GeoIp>(std::move(*geoip));
    }
    auto proxies = net::TrustedProxies::parse(t.get_strings("trusted_proxies"));
    if (!proxies) {
        t.fail("trusted_proxies", fmt::format("IP addresses or CIDR networks of your reverse "
                                              "proxies ({})",
                                              proxies.error().message));
    }
    c.trusted_proxies = std::move(*proxies);
    c.gateway_keys = t.get_strings("gateway_keys");
    for (const std::string& name : c.gateway_keys) {
        const bool known = std::any_of(c.ingest_keys.begin(), c.ingest_keys.end(),
                                       [&](const net::ApiKey& k) { return k.name == name; });
        if (!known) {
            t.fail("gateway_keys", fmt::format("names of [[observatory.ingest_keys]] entries "
                                               "('{}' is none)",
                                               name));
        }
    }
}

void read_label_budget(const ConfigTable& t, LabelBudgetOptions& b) {
    const auto count = [&](std::string_view key, std::size_t fallback, std::int64_t max) {
        return static_cast<std::size_t>(
            t.get_integer(key, static_cast<std::int64_t>(fallback), 0, max));
    };
    b.new_values_per_submitter =
        count("max_new_label_values", b.new_values_per_submitter, 1'000'000);
    b.max_values = count("max_label_values", b.max_values, 1'000'000);
    b.new_cells_per_submitter = count("max_new_label_cells", b.new_cells_per_submitter, 10'000'000);
    b.max_cells = count("max_label_cells", b.max_cells, 10'000'000);
}

}  // namespace

ObservatoryConfig load_observatory_config(
    const std::optional<ConfigTable>& table,
    const std::function<const char*(const char*)>& getenv_fn) {
    ObservatoryConfig c;
    if (!table) return c;
    const ConfigTable& t = *table;
    t.reject_unknown_keys({"enabled",
                           "min_samples",
                           "minute_retention",
                           "rollup_retention",
                           "late_allowance",
                           "cache_ttl",
                           "follow_lag",
                           "ingest",
                           "ingest_keys",
                           "public_rate",
                           "public_burst",
                           "max_records",
                           "max_body_bytes",
                           "forward_to",
                           "forward_key_env",
                           "geoip_db",
                           "trusted_proxies",
                           "gateway_keys",
                           "max_new_label_values",
                           "max_label_values",
                           "max_new_label_cells",
                           "max_label_cells"});
    read_ingest(t, c);  // first: the late allowance's default depends on it
    read_aggregation(t, c);
    read_forwarding(t, getenv_fn, c);
    read_submitters(t, c);
    read_label_budget(t, c.label_budget);
    return c;
}

}  // namespace tokenradar::observatory

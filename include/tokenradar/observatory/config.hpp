#pragma once
// The observatory's part of `tokenradar serve`'s configuration, the [observatory] table:
//
//   [observatory]
//   enabled = true              # /api/v1/* (the dashboard reads it)
//   min_samples = 20            # fewer samples in a cell: "insufficient"
//   minute_retention = "6h"     # minute buckets (short windows, minute time series)
//   rollup_retention = "auto"   # hour buckets in memory: "auto" keeps what a query can read
//                               # (rollup_hours_read()); "0s" keeps them for ever
//   late_allowance = "7d"       # a bucket takes records this long after its end, then is
//                               # folded; later records are not rolled up (rollup.hpp);
//                               # "1h" by default with ingest = "public"
//   cache_ttl = "5s"            # computed answers are reused this long (0s: never)
//   follow_lag = "10s"          # a store other nodes write (ClickHouse): their records reach
//                               # this node's rollups this long after their insert began
//   ingest = "off"              # POST /api/v1/measurements: "off", "keys" or "public"
//   public_rate = 1.0           # "public": requests/s per client IP...
//   public_burst = 10           # ...and the burst above it
//   max_records = 10000         # per request
//   max_body_bytes = 33554432   # per request, compressed or not (and after gunzip)
//   forward_to = ""             # also send this gateway's records to another observatory
//   forward_key_env = ""        # ...with the ingest key in this environment variable
//   geoip_db = ""               # a MaxMind DB (GeoLite2-Country.mmdb): records without a
//                               # client_region get the submitter's country (geoip.hpp)
//   trusted_proxies = []        # reverse proxies ("127.0.0.1", "10.0.0.0/8") whose
//                               # X-Forwarded-For names the client (rate limit, GeoIP)
//   gateway_keys = []           # ingest keys whose records may say source = "gateway"
//   max_new_label_values = 50   # submitted records: new values per label per submitter per day
//   max_label_values = 1000     # ...distinct values per label in total
//   max_new_label_cells = 1000  # ...new label combinations per submitter per day
//   max_label_cells = 20000     # ...label combinations in total (label_budget.hpp)
//   [[observatory.ingest_keys]] # "keys": who may submit (tokenradar serve --hash-key)
//   name = "team-a"
//   sha256 = "..."

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/secret.hpp>
#include <tokenradar/net/api_keys.hpp>
#include <tokenradar/net/forwarded.hpp>
#include <tokenradar/observatory/geoip.hpp>
#include <tokenradar/observatory/label_budget.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tokenradar::observatory {

enum class IngestMode { off, keys, open };  // open = "public"

// The late allowance of a public observatory unless configured: its open buckets hold a part
// per submitter, so they must close soon.
inline constexpr std::chrono::minutes kPublicLateAllowance{60};

struct ObservatoryConfig {
    bool enabled = true;
    std::size_t min_samples = 20;
    std::chrono::hours minute_retention{6};
    std::optional<std::chrono::hours> rollup_retention;  // nullopt: "auto"
    // As long as ingestion accepts a record (IngestLimits::max_age), so nothing accepted is
    // left out of the rollups; kPublicLateAllowance with public ingestion (fewer client parts).
    std::chrono::minutes late_allowance{7 * 24 * 60};
    std::chrono::milliseconds cache_ttl{5000};
    std::chrono::milliseconds follow_lag{10'000};  // RollupKeeperOptions::follow_lag
    IngestMode ingest = IngestMode::off;
    std::vector<net::ApiKey> ingest_keys;
    double public_rate = 1.0;
    double public_burst = 10;
    std::size_t max_records = 10'000;
    std::size_t max_body_bytes = 32 * 1024 * 1024;
    std::string forward_to;  // the measurements URL (checked); "" = no forwarding
    std::string forward_key_env;
    Secret forward_key;
    std::string geoip_db;                 // "" = no lookup
    std::shared_ptr<const GeoIp> geoip;   // geoip_db, opened (and so checked) at load
    net::TrustedProxies trusted_proxies;  // empty: the peer is the client
    // Names of ingest_keys whose records keep source "gateway"/"sim" (IngestContext::
    // trusted_source); everyone else's become "submitted".
    std::vector<std::string> gateway_keys;
    LabelBudgetOptions label_budget;
};

// The hours of rollups some query reads: the longest window of /api/v1 (`max_window`), or the
// status page's week with `baseline_weeks` before it (the same hours of earlier weeks; the
// incident monitor reads less), and a day more. Older hours are never read from memory.
std::chrono::hours rollup_hours_read(std::chrono::hours max_window, int baseline_weeks);

// Reads the [observatory] table (missing: the defaults). Throws ConfigError naming
// file:line and key (a geoip_db that is missing or not a MaxMind DB included).
// `getenv_fn` reads forward_key_env.
ObservatoryConfig load_observatory_config(const std::optional<ConfigTable>& table,
                                          const std::function<const char*(const char*)>& getenv_fn);

std::string_view to_string(IngestMode mode) noexcept;

}  // namespace tokenradar::observatory

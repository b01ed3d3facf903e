#include <tokenradar/serve/config.hpp>
#include <tokenradar/store/postgres_store.hpp>

#include <fmt/format.h>

#include <cstdlib>

namespace tokenradar::serve {
namespace {

// fail() quotes the value it got, and a store URL may carry a password: the message shows the
// URL redacted (store::redact_postgres_url).
[[noreturn]] void fail_url(const ConfigTable& s, const std::string& url,
                           std::string_view expected) {
    try {
        s.fail("url", expected);
    } catch (const ConfigError& e) {
        std::string message = e.what();
        const std::string shown = store::redact_postgres_url(url);
        for (std::size_t at = 0; !url.empty() && (at = message.find(url, at)) != std::string::npos;
             at += shown.size()) {
            message.replace(at, url.size(), shown);
        }
        throw ConfigError(message);
    }
}

StoreConfig load_store(const std::optional<ConfigTable>& table) {
    StoreConfig c;
    if (!table) return c;
    const ConfigTable& s = *table;
    s.reject_unknown_keys({"path", "url", "flush_interval", "queue", "retention"});
    c.path = s.get_string("path", c.path.string());
    if (s.contains("url")) {
        c.url = s.get_string("url", "");
        if (s.contains("path")) {
            fail_url(s, c.url, "either path (SQLite) or url (PostgreSQL, ClickHouse), not both");
        }
        if (!c.url.starts_with("postgresql://") && !c.url.starts_with("postgres://") &&
            !c.url.starts_with("clickhouse://")) {
            fail_url(s, c.url,
                     "a postgresql://[user[:password]@]host[:port]/database or "
                     "clickhouse://[user[:password]@]host[:port]/database URL");
        }
        c.path.clear();
    }
    c.flush_interval = std::chrono::duration_cast<std::chrono::milliseconds>(
        s.get_duration("flush_interval", c.flush_interval));
    if (c.flush_interval.count() < 1) s.fail("flush_interval", "at least 1ms");
    c.queue = static_cast<std::size_t>(
        s.get_integer("queue", static_cast<std::int64_t>(c.queue), 1, 100'000'000));
    if (s.contains("retention")) {
        c.retention = std::chrono::duration_cast<std::chrono::hours>(
            s.get_duration("retention", std::chrono::hours(0)));
        if (c.retention->count() < 1) s.fail("retention", "at least 1h");
    }
    return c;
}

// The response cache's local shared tier: only when a model caches and there is no Redis;
// "auto" puts it beside the store (tokenradar.db -> tokenradar.cache.db), or nowhere
// without a store.
std::filesystem::path local_cache_path(const gateway::GatewayConfig& g, const StoreConfig& store) {
    const gateway::CacheConfig& cache = g.cache;
    if (!gateway::any_model_caches(g) || !cache.redis_url.empty() || cache.local == "off") {
        return {};
    }
    if (cache.local != "auto") return cache.local;
    if (store.path.empty()) return {};
    std::filesystem::path path = store.path;
    return path.replace_extension(".cache.db");
}

bool is_postgres_url(std::string_view text) {
    return text.starts_with("postgresql://") || text.starts_with("postgres://");
}

// The virtual key registry: a path or URL as given; "auto" (with admin keys) beside a SQLite
// store (tokenradar.db -> tokenradar.keys.db) or in a PostgreSQL store's database. Admin keys
// with nowhere to keep keys are refused.
void resolve_key_registry(gateway::GatewayConfig& g, const StoreConfig& store) {
    if (!gateway::has_key_registry(g)) return;
    if (g.key_registry == "auto" && store.url.starts_with("clickhouse://")) {
        throw ConfigError(fmt::format(
            "{}: auth.registry: [[auth.admin_keys]] need somewhere to keep keys, and ClickHouse "
            "(store.url) cannot (no transactions for budgets): set auth.registry to a file path "
            "or a postgresql:// URL",
            g.source));
    }
    if (g.key_registry == "auto" && !store.url.empty()) {
        g.key_registry_url = store.url;
    } else if (is_postgres_url(g.key_registry)) {
        g.key_registry_url = g.key_registry;
    } else if (g.key_registry != "auto") {
        g.key_registry_path = g.key_registry;
    } else if (store.path.empty()) {
        throw ConfigError(fmt::format(
            "{}: auth.registry: [[auth.admin_keys]] need somewhere to keep keys: a file path, a "
            "postgresql:// URL, or a [store] to put them beside",
            g.source));
    } else {
        g.key_registry_path = store.path;
        g.key_registry_path.replace_extension(".keys.db");
    }
    g.key_registry_shown = g.key_registry_url.empty()
                               ? g.key_registry_path.string()
                               : "postgresql " + store::redact_postgres_url(g.key_registry_url);
}

}  // namespace

bool ServeConfig::serves_observatory() const noexcept {
    return observatory.enabled || observatory.ingest != observatory::IngestMode::off;
}

ServeConfig load_serve_config(const ConfigTable& root, const gateway::EnvLookup& getenv_fn,
                              const std::filesystem::path& workloads_dir) {
    root.reject_unknown_keys({"listener", "auth", "limits", "cache", "store", "dashboard",
                              "observatory", "providers", "models", "probes", "incidents"});
    ServeConfig c;
    c.observatory = observatory::load_observatory_config(root.table("observatory"), getenv_fn);
    c.store = load_store(root.table("store"));
    c.gateway = gateway::load_gateway_config(root, getenv_fn);
    c.gateway.cache.local_path = local_cache_path(c.gateway, c.store);
    resolve_key_registry(c.gateway, c.store);
    c.probes = load_probe_config(root.table("probes"), c.gateway, workloads_dir);
    const std::optional<ConfigTable> incidents = root.table("incidents");
    c.incidents = observatory::load_incident_config(incidents);
    if (c.incidents.enabled && !c.observatory.enabled) {
        incidents->fail("enabled",
                        "false, or [observatory] enabled = true (incidents read its rollups)");
    }
    if (c.incidents.enabled && c.store.path.empty() && c.store.url.empty()) {
        incidents->fail("enabled", "false, or a [store] (the rollups are kept beside it)");
    }
    // No providers and no models: an observatory that relays nothing, which is fine when it
    // serves the observatory.
    if (c.gateway.providers.empty() && !c.serves_observatory()) {
        throw ConfigError(
            fmt::format("{}: providers: expected at least one [[providers]] table (or an "
                        "[observatory] to serve)",
                        c.gateway.source));
    }
    return c;
}

ServeConfig load_serve_config_file(const std::filesystem::path& path) {
    return load_serve_config(ConfigTable::load_file(path),
                             [](const char* name) { return std::getenv(name); });
}

std::string describe(const ServeConfig& c) {
    const std::string where =
        c.store.url.empty() ? c.store.path.string() : store::redact_postgres_url(c.store.url);
    std::string services = where.empty() ? std::string("store     off\n")
                                         : fmt::format("store     {} (flush every {} ms)\n", where,
                                                       c.store.flush_interval.count());
    const auto& o = c.observatory;
    services +=
        !o.enabled
            ? std::string("observatory off\n")
            : fmt::format("observatory /api/v1 (min {} samples, minutes kept {} h), ingest {}{}\n",
                          o.min_samples, o.minute_retention.count(),
                          observatory::to_string(o.ingest),
                          o.ingest == observatory::IngestMode::keys
                              ? fmt::format(" ({} key(s))", o.ingest_keys.size())
                              : std::string());
    const ProbeConfig& p = c.probes;
    if (!p.targets.empty()) {
        services += fmt::format(
            "probes    {} target(s), workload {}, every {}s from region '{}': {} requests and up "
            "to {} tokens a day per target (caps {}, {})\n",
            p.targets.size(), p.workload.name, p.interval.count(), p.region, p.requests_per_day(),
            p.tokens_per_day(), p.max_requests_per_day, p.max_tokens_per_day);
    }
    if (c.incidents.enabled) {
        services +=
            fmt::format("incidents every {}s over the last {}s vs {} week(s), {} webhook(s)\n",
                        c.incidents.every.count(), c.incidents.window.count(),
                        c.incidents.baseline_weeks, c.incidents.webhooks.size());
    }
    return gateway::describe(c.gateway, services);
}

}  // namespace tokenradar::serve

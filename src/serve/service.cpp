#include <tokenradar/serve/service.hpp>

#include "incident_watch.hpp"
#include "local_tier.hpp"
#include "region_latency.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/keys/sqlite_key_registry.hpp>
#include <tokenradar/observatory/http_api.hpp>
#include <tokenradar/observatory/rollup_keeper.hpp>
#include <tokenradar/observatory/submit.hpp>
#include <tokenradar/serve/prober.hpp>
#include <tokenradar/store/batch_writer.hpp>
#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/postgres_key_registry.hpp>
#include <tokenradar/store/postgres_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <fmt/format.h>

#include <random>

namespace tokenradar::serve {
namespace {

void store_metrics(const store::BatchWriter::Counters& c, PrometheusText& out) {
    constexpr std::string_view kRecords = "tokenradar_store_records_total";
    out.family(kRecords, MetricType::counter, "Measurement records by what became of them.");
    out.sample(kRecords, {{"outcome", "written"}}, c.written);
    out.sample(kRecords, {{"outcome", "dropped"}}, c.dropped);
    out.sample(kRecords, {{"outcome", "lost"}}, c.lost);
    constexpr std::string_view kErrors = "tokenradar_store_write_errors_total";
    out.family(kErrors, MetricType::counter, "Failed store transactions (retried).");
    out.sample(kErrors, c.write_errors);
    constexpr std::string_view kDepth = "tokenradar_store_queue_depth";
    out.family(kDepth, MetricType::gauge, "Records accepted, not yet written.");
    out.sample(kDepth, c.queue_depth);
}

// SQLite's file (this process saves the rollups: one owner per file), or PostgreSQL, where
// several gateways may write and the one that saves rollups (`owns_rollups`) owns the database,
// or ClickHouse, where several nodes write and nothing enforces one rollup owner (README
// "ClickHouse").
Result<std::unique_ptr<store::MeasurementStore>> open_store(const StoreConfig& sc,
                                                            bool owns_rollups) {
    if (sc.url.starts_with("clickhouse://")) {
        auto ch = store::ClickHouseStore::open(sc.url);
        if (!ch) return ch.error();
        return std::unique_ptr<store::MeasurementStore>(std::move(*ch));
    }
    if (!sc.url.empty()) {
        store::PostgresOptions options;
        options.exclusive = owns_rollups;
        auto pg = store::PostgresStore::open(sc.url, options);
        if (!pg) return pg.error();
        return std::unique_ptr<store::MeasurementStore>(std::move(*pg));
    }
    store::SqliteOptions options;
    options.exclusive = true;
    auto sqlite = store::SqliteStore::open(sc.path.string(), options);
    if (!sqlite) return sqlite.error();
    return std::unique_ptr<store::MeasurementStore>(std::move(*sqlite));
}

// The virtual key registry the configuration names (none: null). One that cannot be opened
// stops the start, naming the setting.
std::shared_ptr<keys::KeyRegistry> open_key_registry(const gateway::GatewayConfig& g) {
    const auto refused = [&g](const Error& e) {
        return ConfigError(fmt::format("{}: auth.registry: {}", g.source, e.message));
    };
    if (!g.key_registry_url.empty()) {
        auto opened = store::PostgresKeyRegistry::open(g.key_registry_url);
        if (!opened) throw refused(opened.error());
        return std::move(*opened);
    }
    if (!g.key_registry_path.empty()) {
        auto opened = keys::SqliteKeyRegistry::open(g.key_registry_path.string());
        if (!opened) throw refused(opened.error());
        return std::move(*opened);
    }
    return nullptr;
}

}  // namespace

Service::Service(ServeConfig config, gateway::GatewayHooks hooks) : config_(std::move(config)) {
    const observatory::ObservatoryConfig& obs = config_.observatory;
    if (config_.serves_observatory()) {
        observatory::RollupOptions rollup_options;
        rollup_options.minute_retention = obs.minute_retention;
        // The store keeps every hour; memory, what some query reads ("auto").
        rollup_options.hour_retention =
            obs.rollup_retention.value_or(observatory::rollup_hours_read(
                observatory::QueryApiOptions{}.max_window, config_.incidents.baseline_weeks));
        rollup_options.late_allowance = obs.late_allowance;
        rollups_ = std::make_shared<observatory::RollupIndex>(rollup_options);
        api_ = std::make_unique<observatory::HttpApi>(obs, rollups_);
        observatory::HttpApi* api = api_.get();
        hooks.api_routes = [api](net::Request& request, net::ResponseWriter& writer) {
            return api->handle(request, writer);
        };
        hooks.api_head_check = [api](const net::Request& head, std::size_t default_limit) {
            return api->check_head(head, default_limit);
        };
        // Nearest-region routing measures from these rollups, and places clients by GeoIP.
        region_latency_ = std::make_unique<RegionLatency>(*api);
        hooks.region_ttft = [regions = region_latency_.get()](std::string_view client,
                                                              std::string_view provider,
                                                              std::string_view model) {
            return regions->ttft_ms(client, provider, model);
        };
        if (obs.geoip) {
            hooks.client_region = [api](const net::Request& request,
                                        const net::ResponseWriter& writer) {
                return api->client_region(request, writer);
            };
        }
    }
    if (obs.ingest != observatory::IngestMode::off) hooks.api_max_body_bytes = obs.max_body_bytes;
    if (!obs.forward_to.empty()) {
        observatory::ForwarderOptions options;
        options.client.ca_file = hooks.ca_file;
        forwarder_ = std::make_unique<observatory::Forwarder>(
            observatory::SubmitTarget{*net::parse_url(obs.forward_to), obs.forward_key}, options);
    }
    if (const auto& cache = config_.gateway.cache; !cache.local_path.empty()) {
        auto tier = LocalTier::open(cache.local_path.string(), cache.local_bytes);
        if (!tier) {
            throw ConfigError(
                fmt::format("{}: cache.local: {}", config_.gateway.source, tier.error().message));
        }
        cache_tier_ = std::move(*tier);
        hooks.cache_tier = cache_tier_;
    }
    hooks.key_registry = open_key_registry(config_.gateway);
    const StoreConfig& sc = config_.store;
    if (!sc.path.empty() || !sc.url.empty()) {
        Result<std::unique_ptr<store::MeasurementStore>> opened =
            open_store(sc, rollups_ != nullptr);
        if (!opened) {
            throw ConfigError(
                fmt::format("{}: store: {}", config_.gateway.source, opened.error().message));
        }
        store::BatchWriterOptions options;
        options.flush_interval = sc.flush_interval;
        options.queue_capacity = sc.queue;
        // ClickHouse makes a part of every INSERT and merges them in the background: a few
        // large batches, not hundreds of small ones a second (bench/README.md "ClickHouse").
        if (sc.url.starts_with("clickhouse://")) options.max_batch = 10'000;
        if (sc.retention) options.retention = *sc.retention;
        if (rollups_) {
            observatory::RollupKeeperOptions keeper_options;
            keeper_options.follow_lag = config_.observatory.follow_lag;
            keeper_ = std::make_shared<observatory::RollupKeeper>(rollups_, keeper_options);
        }
        writer_ = std::make_unique<store::BatchWriter>(std::move(*opened), options, keeper_);
        store::BatchWriter* w = writer_.get();
        if (api_) api_->attach_writer(w);
        observatory::HttpApi* api = api_.get();
        hooks.extra_metrics = [w, api](PrometheusText& out) {
            store_metrics(w->counters(), out);
            if (api != nullptr) api->metrics(out);
        };
    }
    if (cache_tier_) {
        std::function<void(PrometheusText&)> also = std::move(hooks.extra_metrics);
        hooks.extra_metrics = [tier = cache_tier_.get(), also](PrometheusText& out) {
            if (also) also(out);
            const LocalTier::Counters counters = tier->counters();
            constexpr std::string_view kDropped = "tokenradar_cache_local_dropped_writes_total";
            out.family(kDropped, MetricType::counter,
                       "Answers not written to the local cache file: its thread had 1024 writes "
                       "or 64 MiB waiting (they stay in memory).");
            out.sample(kDropped, counters.dropped_writes);
            constexpr std::string_view kSkipped = "tokenradar_cache_local_skipped_reads_total";
            out.family(kSkipped, MetricType::counter,
                       "Lookups that did not read the local cache file (a miss at once): over 64 "
                       "writes were queued ahead of them.");
            out.sample(kSkipped, counters.skipped_reads);
        };
    }
    if (writer_ || forwarder_) {
        // Every attempt's record: to the forwarder's queue (a copy), the caller's sink (a
        // copy, tests), and the store (moved, the common case: no copy).
        store::BatchWriter* w = writer_.get();
        observatory::Forwarder* forwarder = forwarder_.get();
        gateway::RecordSink also = std::move(hooks.sink);
        hooks.sink = [w, forwarder, also](Measurement&& m) {
            if (forwarder != nullptr) forwarder->push(m);
            if (w == nullptr) {
                if (also) also(std::move(m));
                return;
            }
            if (also) also(Measurement(m));
            w->try_push(std::move(m));
        };
    }
    if (config_.incidents.enabled && rollups_ && keeper_) {
        observatory::RollupKeeper* keeper = keeper_.get();
        incidents_ = std::make_unique<IncidentWatch>(
            *rollups_, config_.incidents, [keeper] { return keeper->loaded(); }, hooks.ca_file);
        observatory::IncidentMonitor* monitor = &incidents_->monitor();
        api_->add_route("/api/v1/incidents", [monitor](std::string_view target, std::int64_t now) {
            return monitor->answer(target, now);
        });
    }
    if (api_) {
        // The status page judges hours as the incident detector does, with or without it.
        api_->attach_incidents(incidents_ ? &incidents_->monitor() : nullptr,
                               observatory::StatusJudgement{config_.incidents.detector,
                                                            config_.incidents.baseline_weeks});
    }
    if (!config_.probes.targets.empty()) {
        net::ClientOptions client;
        client.ca_file = hooks.ca_file;
        // The same way as the gateway's records: forwarder, caller's sink, store.
        prober_ = std::make_unique<Prober>(config_.probes, config_.gateway.providers, hooks.sink,
                                           std::move(client), std::random_device{}());
    }
    if (incidents_ || prober_) {
        std::function<void(PrometheusText&)> also = std::move(hooks.extra_metrics);
        hooks.extra_metrics = [watch = incidents_.get(), prober = prober_.get(),
                               also](PrometheusText& out) {
            if (also) also(out);
            if (watch != nullptr) watch->metrics(out);
            if (prober != nullptr) prober->metrics(out);
        };
    }
    if (keeper_) {
        observatory::RollupKeeper* keeper = keeper_.get();
        // Until the rollups are loaded, queries are 503 like /readyz, not partial answers.
        api_->attach_readiness([keeper] { return keeper->loaded(); });
        std::function<bool()> also = std::move(hooks.ready);
        hooks.ready = [keeper, also] { return keeper->loaded() && (!also || also()); };
    }
    server_ = std::make_unique<gateway::GatewayServer>(config_.gateway, std::move(hooks));
}

Service::~Service() { stop(); }

Result<std::uint16_t> Service::start() {
    auto port = server_->start();
    if (!port) return port;
    if (incidents_) incidents_->start();
    if (prober_) prober_->start();
    return port;
}

bool Service::ready() const noexcept { return !keeper_ || keeper_->loaded(); }

void Service::stop() {
    if (prober_) prober_->stop();  // its last records still reach the writer
    if (incidents_) incidents_->stop();
    server_->stop(config_.gateway.shutdown_grace);
    if (api_) api_->stop();  // no request is left to use the workers or the writer
    if (writer_) writer_->stop();
    // The gateway dropped its reference at close; its writes are done (the I/O thread waited
    // for them): this closes the file.
    cache_tier_.reset();
    if (forwarder_) forwarder_->stop();
}

std::string Service::store_summary() const {
    if (!writer_) return {};
    const auto c = writer_->counters();
    const StoreConfig& sc = config_.store;
    return fmt::format("{} records written to {}, {} dropped", c.written,
                       sc.url.empty() ? sc.path.string() : store::redact_postgres_url(sc.url),
                       c.dropped + c.lost);
}

}  // namespace tokenradar::serve

#include "response_cache.hpp"

#include <tokenradar/cache/request_key.hpp>
#include <tokenradar/core/clock.hpp>
#include <tokenradar/gateway/prometheus.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <array>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;

// x-tokenradar-cache values, in the order the per-model counters keep them.
constexpr std::array<std::string_view, 5> kResults = {"miss", "exact", "semantic", "refresh",
                                                      "bypass"};
constexpr std::array<double, 10> kSimilarityBounds = {0.5, 0.6,   0.7,  0.8,   0.85,
                                                      0.9, 0.925, 0.95, 0.975, 0.99};

std::size_t result_index(std::string_view header) {
    for (std::size_t i = 0; i < kResults.size(); ++i) {
        if (kResults[i] == header) return i;
    }
    return kResults.size() - 1;
}

// Every Cache-Control field of the request, as one list (HTTP allows the directives to be
// split over several fields).
cache::CacheControl request_cache_control(const net::Request& request) {
    std::string joined;
    for (const auto& field : request) {
        if (field.name() != http::field::cache_control) continue;
        if (!joined.empty()) joined += ',';
        joined.append(field.value());
    }
    return cache::parse_cache_control(joined);
}

}  // namespace

struct ResponseCache::ModelSeries {
    std::string labels;  // model="..."
    std::array<std::atomic<std::uint64_t>, kResults.size()> results{};
    std::atomic<std::uint64_t> saved_ns{0};
    HistogramSeries similarity{kSimilarityBounds};
    // The histogram's counts per bucket (not cumulative) for the JSON view.
    std::array<std::atomic<std::uint64_t>, kSimilarityBounds.size() + 1> similarity_counts{};

    void observe_similarity(double s) {
        similarity.observe(s);
        std::size_t i = 0;
        while (i < kSimilarityBounds.size() && s > kSimilarityBounds[i]) ++i;
        similarity_counts[i].fetch_add(1, std::memory_order_relaxed);
    }
};

bool ResponseCache::wanted(const GatewayConfig& config) {
    for (const auto& m : config.models) {
        if (m.cache.mode != ModelCache::Mode::off) return true;
    }
    return false;
}

ResponseCache::ResponseCache(const GatewayConfig& config)
    : config_(config), memory_({config.cache.memory_bytes, 16}) {
    for (const auto& m : config.models) {
        auto series = std::make_unique<ModelSeries>();
        series->labels = prometheus_labels({{"model", m.name}});
        series_.push_back(std::move(series));
    }
}

ResponseCache::~ResponseCache() = default;

ResponseCache::ModelSeries& ResponseCache::series_of(const VirtualModel& model) const {
    return *series_[static_cast<std::size_t>(&model - config_.models.data())];
}

void ResponseCache::count(const VirtualModel& model, std::string_view header) const {
    series_of(model).results[result_index(header)].fetch_add(1, std::memory_order_relaxed);
}

CacheLookup ResponseCache::lookup(const VirtualModel& model, std::string_view tenant,
                                  const dialect::ChatRequest& chat, const net::Request& request) {
    CacheLookup l;
    l.model = &model;
    const ModelCache& settings = model.cache;
    const cache::CacheControl cc = request_cache_control(request);
    l.only_if_cached = cc.only_if_cached;
    const bool shared_tenant = !config_.auth_required && !config_.cache.keyless;
    if (settings.mode == ModelCache::Mode::off || shared_tenant || cc.no_store ||
        cache::not_cacheable(chat.original, settings.sampling)) {
        if (settings.mode != ModelCache::Mode::off) count(model, l.header);
        return l;
    }
    l.key = cache::exact_key(tenant, model.name, chat.original);
    l.label = Cache::miss;
    if (cc.no_cache) {
        l.header = "refresh";
        count(model, l.header);
        return l;
    }
    l.header = "miss";
    std::optional<std::int64_t> max_age_us;
    if (cc.max_age_s) max_age_us = *cc.max_age_s * 1'000'000;
    if (auto hit = memory_.get(l.key, wall_now_us(), max_age_us)) {
        l.hit = std::move(hit);
        l.label = Cache::exact;
        l.header = "exact";
    }
    l.found_ns = steady_now_ns();
    count(model, l.header);
    return l;
}

void ResponseCache::store(const CacheLookup& lookup, cache::CachedAnswer answer) {
    if (!lookup.stores() || answer.text.size() > lookup.model->cache.max_entry_bytes) return;
    const std::int64_t ttl_us =
        std::chrono::duration_cast<std::chrono::microseconds>(lookup.model->cache.ttl).count();
    const std::int64_t expires_at_us = answer.stored_at_us + ttl_us;
    memory_.put(lookup.key, std::make_shared<const cache::CachedAnswer>(std::move(answer)),
                expires_at_us);
}

void ResponseCache::observe_hit(const CacheLookup& lookup, std::int64_t saved_ns) {
    ModelSeries& series = series_of(*lookup.model);
    if (saved_ns > 0)
        series.saved_ns.fetch_add(static_cast<std::uint64_t>(saved_ns), std::memory_order_relaxed);
}

std::string ResponseCache::stats_json() const {
    namespace json = boost::json;
    json::array models;
    for (std::size_t m = 0; m < series_.size(); ++m) {
        const VirtualModel& model = config_.models[m];
        if (model.cache.mode == ModelCache::Mode::off) continue;
        const ModelSeries& s = *series_[m];
        json::object results;
        for (std::size_t r = 0; r < kResults.size(); ++r) {
            results[kResults[r]] = s.results[r].load(std::memory_order_relaxed);
        }
        json::array counts;
        for (const auto& c : s.similarity_counts)
            counts.push_back(c.load(std::memory_order_relaxed));
        models.push_back(json::object{
            {"model", model.name},
            {"mode", model.cache.mode == ModelCache::Mode::semantic ? "semantic" : "exact"},
            {"requests", std::move(results)},
            {"saved_seconds",
             static_cast<double>(s.saved_ns.load(std::memory_order_relaxed)) / 1e9},
            {"similarity", json::object{{"bounds", json::array(kSimilarityBounds.begin(),
                                                               kSimilarityBounds.end())},
                                        {"counts", std::move(counts)}}},
        });
    }
    const cache::MemoryTier::Stats memory = memory_.stats();
    return json::serialize(json::object{
        {"models", std::move(models)},
        {"memory", json::object{{"bytes", memory.bytes},
                                {"max_bytes", memory_.max_bytes()},
                                {"entries", memory.entries},
                                {"evictions", memory.evictions}}},
    });
}

void ResponseCache::render(PrometheusText& out) const {
    out.family("tokenradar_cache_requests_total", MetricType::counter,
               "Chat requests by what the response cache did (x-tokenradar-cache).");
    for (std::size_t m = 0; m < series_.size(); ++m) {
        if (config_.models[m].cache.mode == ModelCache::Mode::off) continue;
        for (std::size_t r = 0; r < kResults.size(); ++r) {
            out.sample("tokenradar_cache_requests_total",
                       {{"model", config_.models[m].name}, {"result", kResults[r]}},
                       series_[m]->results[r].load(std::memory_order_relaxed));
        }
    }
    out.family("tokenradar_cache_saved_seconds_total", MetricType::counter,
               "Upstream time the cache's hits avoided: the original answers' end-to-end "
               "latency less the hits'.");
    for (std::size_t m = 0; m < series_.size(); ++m) {
        if (config_.models[m].cache.mode == ModelCache::Mode::off) continue;
        out.series("tokenradar_cache_saved_seconds_total", series_[m]->labels,
                   static_cast<double>(series_[m]->saved_ns.load(std::memory_order_relaxed)) / 1e9);
    }
    out.family("tokenradar_cache_semantic_similarity", MetricType::histogram,
               "Best cosine similarity found by each semantic lookup.");
    for (std::size_t m = 0; m < series_.size(); ++m) {
        if (config_.models[m].cache.mode != ModelCache::Mode::semantic) continue;
        series_[m]->similarity.render("tokenradar_cache_semantic_similarity", series_[m]->labels,
                                      out);
    }
    const cache::MemoryTier::Stats memory = memory_.stats();
    out.family("tokenradar_cache_memory_bytes", MetricType::gauge,
               "Bytes held by the in-process cache tier.");
    out.sample("tokenradar_cache_memory_bytes", memory.bytes);
    out.family("tokenradar_cache_memory_entries", MetricType::gauge,
               "Answers held by the in-process cache tier.");
    out.sample("tokenradar_cache_memory_entries", memory.entries);
    out.family("tokenradar_cache_memory_evictions_total", MetricType::counter,
               "Answers the in-process tier dropped for room.");
    out.sample("tokenradar_cache_memory_evictions_total", memory.evictions);
}

}  // namespace tokenradar::gateway

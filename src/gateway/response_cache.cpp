#include "response_cache.hpp"

#include "redis_tier.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/gateway/prometheus.hpp>
#include <tokenradar/net/log_completion.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
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
// The shared tier's key names: a version, so a new entry format never reads an old one.
constexpr std::string_view kSharedPrefix = "tokenradar:cache:v1:";
// A semantic question longer than this is not embedded (a document, not a question).
constexpr std::size_t kMaxQuestionBytes = 4096;
// Expired semantic entries are swept at most this often (an insert does it).
constexpr std::int64_t kSweepIntervalUs = 60'000'000;
// Semantic inserts waiting for the indexer thread; beyond, an answer is stored unindexed.
constexpr std::size_t kMaxPendingInserts = 1024;

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

std::int64_t ttl_us(const VirtualModel& model) {
    return std::chrono::duration_cast<std::chrono::microseconds>(model.cache.ttl).count();
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

// A semantic model's index, made with the first vector's dimension (an upstream embedder's
// is known only from its first answer).
struct ResponseCache::Semantic {
    std::size_t max_entries = 0;
    std::mutex mutex;  // index creation and the sweep time
    std::unique_ptr<cache::SemanticIndex> index;
    std::int64_t next_sweep_us = 0;

    // Null when `dimension` is not the index's (the embedder's model changed under it).
    cache::SemanticIndex* index_for(std::size_t dimension) {
        const std::lock_guard lock(mutex);
        if (!index) {
            cache::SemanticIndexOptions options;
            options.dimension = dimension;
            options.max_entries = max_entries;
            index = std::make_unique<cache::SemanticIndex>(options);
        }
        return index->dimension() == dimension ? index.get() : nullptr;
    }
    // The index once made (it is never replaced), without waiting on anything but the mutex.
    cache::SemanticIndex* existing() {
        const std::lock_guard lock(mutex);
        return index.get();
    }
    bool sweep_due(std::int64_t now_us) {
        const std::lock_guard lock(mutex);
        if (now_us < next_sweep_us) return false;
        next_sweep_us = now_us + kSweepIntervalUs;
        return true;
    }
};

namespace {

// The shared tier's write, in the background: the client has its answer already. The tier
// and counters are held by shared_ptr, so a write still pending at shutdown is safe.
struct SharedWrite {
    std::shared_ptr<SharedTier> tier;
    std::shared_ptr<std::atomic<std::uint64_t>> errors;
};

net::asio::awaitable<void> write_shared(SharedWrite target, std::string key, std::string bytes,
                                        std::chrono::milliseconds ttl) {
    auto stored = co_await target.tier->set(std::move(key), std::move(bytes), ttl);
    if (!stored) target.errors->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

template <typename T>
net::asio::awaitable<T> ResponseCache::on_tier_executor(net::asio::awaitable<T> call) const {
    // Named steps: GCC 12 miscompiled `co_return co_await` on a by-value awaitable parameter
    // (the frame pointer read back was garbage).
    const net::asio::any_io_executor here = co_await net::asio::this_coro::executor;
    if (here == executor_) {
        T result = co_await std::move(call);
        co_return result;
    }
    T result = co_await net::asio::co_spawn(executor_, std::move(call), net::asio::use_awaitable);
    co_return result;
}

bool ResponseCache::wanted(const GatewayConfig& config) { return any_model_caches(config); }

ResponseCache::ResponseCache(const GatewayConfig& config, const net::asio::any_io_executor& ex,
                             std::shared_ptr<SharedTier> local)
    : config_(config), executor_(ex), memory_({config.cache.memory_bytes, 16}) {
    net::asio::post(indexer_, [] { name_this_thread("tr-cache"); });
    std::size_t semantic_models = 0;
    for (const auto& m : config.models) {
        auto series = std::make_unique<ModelSeries>();
        series->labels = prometheus_labels({{"model", m.name}});
        series_.push_back(std::move(series));
        if (m.cache.mode == ModelCache::Mode::semantic) ++semantic_models;
    }
    for (const auto& m : config.models) {
        std::unique_ptr<Semantic> semantic;
        if (m.cache.mode == ModelCache::Mode::semantic) {
            semantic = std::make_unique<Semantic>();
            semantic->max_entries =
                std::max<std::size_t>(1, config.cache.semantic_max_entries / semantic_models);
        }
        semantic_.push_back(std::move(semantic));
    }
    if (!config.cache.redis_url.empty()) {
        auto url = net::parse_redis_url(config.cache.redis_url);  // checked by the config
        net::RedisOptions options;
        options.command_timeout = config.cache.redis_timeout;
        options.connect_timeout = config.cache.redis_timeout * 2;
        shared_ = std::make_shared<RedisTier>(ex, std::move(*url), options);
    } else {
        shared_ = std::move(local);
    }
}

ResponseCache::~ResponseCache() = default;

void ResponseCache::close() {
    if (const auto shared = shared_.exchange(nullptr)) shared->close();
}

ResponseCache::ModelSeries& ResponseCache::series_of(const VirtualModel& model) const {
    return *series_[static_cast<std::size_t>(&model - config_.models.data())];
}

void ResponseCache::count(const VirtualModel& model, std::string_view header) const {
    series_of(model).results[result_index(header)].fetch_add(1, std::memory_order_relaxed);
}

void ResponseCache::shared_failed(const Error& error) {
    shared_errors_->fetch_add(1, std::memory_order_relaxed);
    if (!shared_down_.exchange(true, std::memory_order_relaxed)) {
        spdlog::warn("cache: the shared tier failed, serving from memory alone: {}", error.message);
    }
}

void ResponseCache::shared_answered() {
    if (shared_down_.exchange(false, std::memory_order_relaxed)) {
        spdlog::info("cache: the shared tier answers again");
    }
}

net::asio::awaitable<cache::AnswerPtr> ResponseCache::find(const std::string& key,
                                                           std::int64_t now_us,
                                                           std::optional<std::int64_t> max_age_us,
                                                           std::int64_t ttl) {
    if (auto answer = memory_.get(key, now_us, max_age_us)) co_return answer;
    const std::shared_ptr<SharedTier> shared = shared_.load();  // close() may drop it meanwhile
    if (!shared) co_return nullptr;
    std::string shared_key = std::string(kSharedPrefix) + cache::hex(key);
    auto got = co_await on_tier_executor(shared->get(std::move(shared_key)));
    if (!got) {
        // A tier closed under the lookup (shutdown) is a miss, not an outage to warn of.
        if (errc_of(got.error(), Errc::internal) != Errc::cancelled) shared_failed(got.error());
        co_return nullptr;
    }
    shared_answered();
    if (!*got) co_return nullptr;
    auto decoded = cache::decode(**got);
    if (!decoded) {
        // Another version's or a corrupt entry: a miss (the fresh answer overwrites it).
        shared_errors_->fetch_add(1, std::memory_order_relaxed);
        co_return nullptr;
    }
    if (max_age_us && now_us - decoded->stored_at_us > *max_age_us) co_return nullptr;
    // The model's TTL now, not the one the entry was written with (a lowered TTL applies to
    // the answers a shared tier already holds).
    const std::int64_t expires_at_us = decoded->stored_at_us + ttl;
    if (expires_at_us <= now_us) co_return nullptr;
    auto answer = std::make_shared<const cache::CachedAnswer>(std::move(*decoded));
    memory_.put(key, answer, expires_at_us);
    shared_hits_.fetch_add(1, std::memory_order_relaxed);
    co_return answer;
}

net::asio::awaitable<CacheLookup> ResponseCache::look_up(const VirtualModel& model,
                                                         std::string_view tenant,
                                                         const dialect::ChatRequest& chat,
                                                         const net::Request& request,
                                                         const Embed& embed) {
    CacheLookup l;
    l.model = &model;
    const ModelCache& settings = model.cache;
    const cache::CacheControl cc = request_cache_control(request);
    l.only_if_cached = cc.only_if_cached;
    const bool shared_tenant = !config_.auth_required && !config_.cache.keyless;
    if (settings.mode == ModelCache::Mode::off || shared_tenant || cc.no_store ||
        cache::not_cacheable(chat.original, settings.sampling)) {
        if (settings.mode != ModelCache::Mode::off) count(model, l.header);
        co_return l;
    }
    l.key = cache::exact_key(tenant, model.name, chat.original);
    l.label = Cache::miss;
    if (cc.no_cache) {
        l.header = "refresh";
        count(model, l.header);
        co_return l;
    }
    l.header = "miss";
    std::optional<std::int64_t> max_age_us;
    if (cc.max_age_s) max_age_us = *cc.max_age_s * 1'000'000;
    auto hit = co_await find(l.key, wall_now_us(), max_age_us, ttl_us(model));
    if (hit) {
        l.hit = std::move(hit);
        l.label = Cache::exact;
        l.header = "exact";
    } else if (settings.mode == ModelCache::Mode::semantic) {
        co_await find_similar(l, tenant, chat, max_age_us, embed);
    }
    count(model, l.header);
    co_return l;
}

net::asio::awaitable<void> ResponseCache::find_similar(CacheLookup& l, std::string_view tenant,
                                                       const dialect::ChatRequest& chat,
                                                       std::optional<std::int64_t> max_age_us,
                                                       const Embed& embed) {
    const VirtualModel& model = *l.model;
    const ModelCache& settings = model.cache;
    auto query = cache::semantic_query(tenant, model.name, chat.original,
                                       settings.semantic_max_turns, kMaxQuestionBytes);
    if (!query) co_return;
    std::vector<float> vector;
    if (settings.embedder) {
        auto embedded = co_await embed(*settings.embedder, query->question);
        if (!embedded) {
            spdlog::info("cache: model {}: no embedding ({}): exact cache only", model.name,
                         embedded.error().message);
            co_return;
        }
        vector = std::move(*embedded);
    } else {
        vector = builtin_.embed(query->question);
    }
    Semantic& semantic = *semantic_[static_cast<std::size_t>(&model - config_.models.data())];
    cache::SemanticIndex* index = semantic.index_for(vector.size());
    if (index == nullptr) co_return;
    const std::int64_t now_us = wall_now_us();
    const float threshold = static_cast<float>(
        settings.semantic_threshold.value_or(cache::BuiltinEmbedder::kDefaultThreshold));
    const cache::SemanticLookup found =
        index->find(query->scope, vector, query->question, threshold, now_us);
    if (found.best_similarity >= 0) series_of(model).observe_similarity(found.best_similarity);
    l.semantic = std::move(query);
    l.vector = std::move(vector);
    if (!found.hit) co_return;
    auto answer = co_await find(found.hit->payload, now_us, max_age_us, ttl_us(model));
    if (!answer) {
        // Its exact twin is gone (expired or evicted; not merely older than max-age accepts):
        // erased on the indexer thread (an erase may start a graph rebuild).
        if (!max_age_us) forget_question(*l.model, l.semantic->scope, found.hit->payload);
        co_return;
    }
    l.hit = std::move(answer);
    l.label = Cache::semantic;
    l.header = "semantic";
    l.similarity = found.hit->similarity;
}

void ResponseCache::store(const CacheLookup& lookup, cache::CachedAnswer answer) {
    if (!lookup.stores() || answer.text.size() > lookup.model->cache.max_entry_bytes) return;
    const VirtualModel& model = *lookup.model;
    const std::int64_t now_us = answer.stored_at_us;
    const std::int64_t expires_at_us = now_us + ttl_us(model);
    if (auto shared = shared_.load()) {
        std::string key = std::string(kSharedPrefix) + cache::hex(lookup.key);
        net::asio::co_spawn(
            executor_,
            write_shared({std::move(shared), shared_errors_}, std::move(key), cache::encode(answer),
                         std::chrono::duration_cast<std::chrono::milliseconds>(model.cache.ttl)),
            net::LogCompletion{"cache: shared write"});
    }
    memory_.put(lookup.key, std::make_shared<const cache::CachedAnswer>(std::move(answer)),
                expires_at_us);
    if (lookup.semantic && !lookup.vector.empty()) index_question(lookup, expires_at_us, now_us);
}

void ResponseCache::index_question(const CacheLookup& lookup, std::int64_t expires_at_us,
                                   std::int64_t now_us) {
    if (pending_inserts_.fetch_add(1, std::memory_order_relaxed) >= kMaxPendingInserts) {
        pending_inserts_.fetch_sub(1, std::memory_order_relaxed);
        dropped_inserts_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    Semantic* semantic =
        semantic_[static_cast<std::size_t>(lookup.model - config_.models.data())].get();
    net::asio::post(indexer_, [this, semantic, scope = lookup.semantic->scope,
                               question = lookup.semantic->question, vector = lookup.vector,
                               key = lookup.key, expires_at_us, now_us] {
        if (cache::SemanticIndex* index = semantic->index_for(vector.size())) {
            index->insert(scope, vector, question, key, expires_at_us, now_us);
            if (semantic->sweep_due(now_us)) index->remove_expired(now_us);
        }
        pending_inserts_.fetch_sub(1, std::memory_order_relaxed);
    });
}

void ResponseCache::forget_question(const VirtualModel& model, std::string scope, std::string key) {
    Semantic* semantic = semantic_[static_cast<std::size_t>(&model - config_.models.data())].get();
    net::asio::post(indexer_, [semantic, scope = std::move(scope), key = std::move(key)] {
        if (cache::SemanticIndex* index = semantic->existing()) index->erase(scope, key);
    });
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
    json::value shared_value = nullptr;
    if (const auto shared = shared_.load()) {
        shared_value = json::object{{"kind", shared->kind()},
                                    {"up", shared->up()},
                                    {"hits", shared_hits_.load(std::memory_order_relaxed)},
                                    {"errors", shared_errors_->load(std::memory_order_relaxed)}};
    }
    return json::serialize(json::object{
        {"models", std::move(models)},
        {"memory", json::object{{"bytes", memory.bytes},
                                {"max_bytes", memory_.max_bytes()},
                                {"entries", memory.entries},
                                {"evictions", memory.evictions}}},
        {"shared", std::move(shared_value)},
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
    std::size_t semantic_entries = 0;
    for (std::size_t m = 0; m < series_.size(); ++m) {
        if (!semantic_[m]) continue;
        series_[m]->similarity.render("tokenradar_cache_semantic_similarity", series_[m]->labels,
                                      out);
        if (cache::SemanticIndex* index = semantic_[m]->existing()) {
            semantic_entries += index->stats().entries;
        }
    }
    out.family("tokenradar_cache_semantic_entries", MetricType::gauge,
               "Questions held by the semantic indexes.");
    out.sample("tokenradar_cache_semantic_entries", semantic_entries);
    out.family("tokenradar_cache_semantic_unindexed_total", MetricType::counter,
               "Stored answers whose question was not indexed: the indexer was behind.");
    out.sample("tokenradar_cache_semantic_unindexed_total",
               dropped_inserts_.load(std::memory_order_relaxed));
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
    if (const auto shared = shared_.load()) {
        out.family("tokenradar_cache_shared_hits_total", MetricType::counter,
                   "Answers found in the shared tier (Redis or the local file) and not in "
                   "memory.");
        out.sample("tokenradar_cache_shared_hits_total",
                   shared_hits_.load(std::memory_order_relaxed));
        out.family("tokenradar_cache_shared_errors_total", MetricType::counter,
                   "Shared-tier (Redis or the local file) calls that failed or returned an "
                   "unreadable entry; the cache served from memory alone.");
        out.sample("tokenradar_cache_shared_errors_total",
                   shared_errors_->load(std::memory_order_relaxed));
        out.family("tokenradar_cache_shared_up", MetricType::gauge,
                   "1 while the shared tier (Redis or the local file) is reachable.");
        out.sample("tokenradar_cache_shared_up", shared->up() ? 1 : 0);
    }
}

}  // namespace tokenradar::gateway

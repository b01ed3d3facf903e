#pragma once
// Private to the gateway: the response cache of the chat route (README "Response cache").
//
// lookup() decides, before routing, whether a request may be answered from the cache or its
// answer stored (tenant, Cache-Control, the model's settings, what the request asks for),
// finds a hit in the tiers, and says what the x-tokenradar-cache header and the attempts'
// `cache` label are. The relay feeds a miss's answer to store() once it completed; replay()
// answers a hit. Tiers: the in-process MemoryTier; the shared tier and the semantic index
// plug in here too.

#include <tokenradar/cache/answer.hpp>
#include <tokenradar/cache/cache_control.hpp>
#include <tokenradar/cache/memory_tier.hpp>
#include <tokenradar/core/labels.hpp>
#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/net/http_server.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::gateway {

// What the cache said of one request.
struct CacheLookup {
    // x-tokenradar-cache: miss, exact, semantic, refresh (no-cache: fresh answer stored) or
    // bypass (not cacheable, no-store, or the model has no cache).
    std::string_view header = "bypass";
    Cache label = Cache::bypass;  // the record's: miss (refresh too) or bypass; a hit's kind
    const VirtualModel* model = nullptr;
    std::string key;                   // where a completed answer is stored; "" = store nothing
    cache::AnswerPtr hit;              // answer from the cache
    std::optional<double> similarity;  // a semantic hit's
    bool only_if_cached = false;       // a miss is answered 504
    std::int64_t found_ns = 0;         // steady time the lookup ended

    [[nodiscard]] bool stores() const noexcept { return !key.empty(); }
};

class ResponseCache {
  public:
    explicit ResponseCache(const GatewayConfig& config);
    ~ResponseCache();
    ResponseCache(const ResponseCache&) = delete;
    ResponseCache& operator=(const ResponseCache&) = delete;

    // `tenant`: the client key's name ("" on a keyless listener).
    CacheLookup lookup(const VirtualModel& model, std::string_view tenant,
                       const dialect::ChatRequest& chat, const net::Request& request);

    // A miss's answer, complete: stored under the lookup's key until the model's TTL.
    void store(const CacheLookup& lookup, cache::CachedAnswer answer);

    // A hit answered: `saved_ns` is the upstream time it avoided (the original's E2E less the
    // hit's).
    void observe_hit(const CacheLookup& lookup, std::int64_t saved_ns);

    // tokenradar_cache_* families for /metrics.
    void render(PrometheusText& out) const;
    // The same since start as JSON, for the dashboard (GET /api/v1/gateway/cache): per model
    // what the cache did, the time it saved and the similarity histogram; the tiers' sizes.
    [[nodiscard]] std::string stats_json() const;

    // Whether any model caches: without one the gateway has no ResponseCache.
    static bool wanted(const GatewayConfig& config);

  private:
    struct ModelSeries;
    ModelSeries& series_of(const VirtualModel& model) const;
    void count(const VirtualModel& model, std::string_view header) const;

    const GatewayConfig& config_;
    cache::MemoryTier memory_;
    std::vector<std::unique_ptr<ModelSeries>> series_;  // by model index
};

}  // namespace tokenradar::gateway

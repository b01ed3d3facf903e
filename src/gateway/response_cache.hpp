#pragma once
// Private to the gateway: the response cache of the chat route (README "Response cache").
//
// look_up() decides, before routing, whether a request may be answered from the cache or its
// answer stored (tenant, Cache-Control, the model's settings, what the request asks for) and
// finds a hit: the exact key in the in-process tier (L1), then in the shared tier (L2: Redis or
// the local file, shared_tier.hpp; backfilling L1),
// then, for a semantic model, the nearest cached question of the same scope (its answer by
// that question's exact key, through the same tiers). It says what the x-tokenradar-cache
// header and the attempts' `cache` label are. The relay feeds a miss's completed answer to
// store(); replay_hit() answers a hit.
//
// An L2 outage never reaches the client: Redis calls fail within `redis_timeout` and, while
// it is down, at once (RedisClient's backoff), a local file's errors are values too; the cache
// then works from L1 alone, with a warning per outage and tokenradar_cache_shared_errors_total.

#include <tokenradar/cache/answer.hpp>
#include <tokenradar/cache/cache_control.hpp>
#include <tokenradar/cache/embedder.hpp>
#include <tokenradar/cache/memory_tier.hpp>
#include <tokenradar/cache/request_key.hpp>
#include <tokenradar/cache/semantic_index.hpp>
#include <tokenradar/core/labels.hpp>
#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/gateway/shared_tier.hpp>
#include <tokenradar/net/http_server.hpp>

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
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
    // A semantic model's question and its vector: indexed with the answer once stored.
    std::optional<cache::SemanticQuery> semantic;
    std::vector<float> vector;

    [[nodiscard]] bool stores() const noexcept { return !key.empty(); }
};

class ResponseCache {
  public:
    // `ex`: the first I/O thread's executor (the Redis client's; the shared tier is called
    // there). `local`: the shared tier when
    // `[cache] redis` is empty (serve's file; may be null: memory alone).
    ResponseCache(const GatewayConfig& config, const net::asio::any_io_executor& ex,
                  std::shared_ptr<SharedTier> local = nullptr);
    ~ResponseCache();
    ResponseCache(const ResponseCache&) = delete;
    ResponseCache& operator=(const ResponseCache&) = delete;

    // The exact tiers, the semantic index and the embedder (built in, or `embed` for an
    // upstream one). `tenant`: the client key's name ("" on a keyless listener).
    using Embed = std::function<net::asio::awaitable<Result<std::vector<float>>>(const UpstreamRef&,
                                                                                 std::string_view)>;
    net::asio::awaitable<CacheLookup> look_up(const VirtualModel& model, std::string_view tenant,
                                              const dialect::ChatRequest& chat,
                                              const net::Request& request, const Embed& embed);

    // A miss's answer, complete: stored under the lookup's key until the model's TTL, in L1 at
    // once and in L2 in the background; its question indexed for a semantic model.
    void store(const CacheLookup& lookup, cache::CachedAnswer answer);

    // A hit answered: `saved_ns` is the upstream time it avoided (the original's E2E less the
    // hit's).
    void observe_hit(const CacheLookup& lookup, std::int64_t saved_ns);

    // Closes the shared tier (calls in flight finish with it: Redis's connection closes
    // after them); later lookups and stores use memory alone. On the gateway's executor, at
    // shutdown.
    void close();

    // tokenradar_cache_* families for /metrics.
    void render(PrometheusText& out) const;
    // The same since start as JSON, for the dashboard (GET /api/v1/gateway/cache): per model
    // what the cache did, the time it saved and the similarity histogram; the tiers' sizes.
    [[nodiscard]] std::string stats_json() const;

    // Whether any model caches: without one the gateway has no ResponseCache.
    static bool wanted(const GatewayConfig& config);

  private:
    struct ModelSeries;
    struct Semantic;
    ModelSeries& series_of(const VirtualModel& model) const;
    void count(const VirtualModel& model, std::string_view header) const;
    // The answer under an exact key: L1, then L2 (backfilling L1).
    // `ttl`: the model's, for the L1 copy of an L2 answer.
    net::asio::awaitable<cache::AnswerPtr> find(const std::string& key, std::int64_t now_us,
                                                std::optional<std::int64_t> max_age_us,
                                                std::int64_t ttl);
    net::asio::awaitable<void> find_similar(CacheLookup& l, std::string_view tenant,
                                            const dialect::ChatRequest& chat,
                                            std::optional<std::int64_t> max_age_us,
                                            const Embed& embed);
    // Queues the question's insert into its model's index (the indexer thread).
    void index_question(const CacheLookup& lookup, std::int64_t expires_at_us, std::int64_t now_us);
    // Erases a question whose answer is gone from every tier (the indexer thread).
    void forget_question(const VirtualModel& model, std::string scope, std::string key);
    // Runs a shared-tier call on executor_: there at once, from another I/O thread by a hop
    // there and back (the Redis client is single-threaded).
    template <typename T>
    net::asio::awaitable<T> on_tier_executor(net::asio::awaitable<T> call) const;
    void shared_failed(const Error& error);
    void shared_answered();

    const GatewayConfig& config_;
    net::asio::any_io_executor executor_;
    cache::MemoryTier memory_;
    // L2, when configured; on executor_ (the first I/O thread), where lookups from the
    // other threads go (on_tier_executor). Atomic: close() drops it while they read it.
    std::atomic<std::shared_ptr<SharedTier>> shared_;
    cache::BuiltinEmbedder builtin_;
    std::vector<std::unique_ptr<ModelSeries>> series_;  // by model index
    std::vector<std::unique_ptr<Semantic>> semantic_;   // by model index; null unless semantic
    // Semantic inserts run here, off the I/O thread (an insert into a large HNSW graph costs
    // about a millisecond); declared after semantic_, so it is joined before they go.
    net::asio::thread_pool indexer_{1};
    std::atomic<std::size_t> pending_inserts_{0};
    std::atomic<std::uint64_t> dropped_inserts_{0};  // the queue was full
    // Shared with background writes, which may outlive the cache at shutdown.
    std::shared_ptr<std::atomic<std::uint64_t>> shared_errors_ =
        std::make_shared<std::atomic<std::uint64_t>>(0);
    std::atomic<std::uint64_t> shared_hits_{0};
    std::atomic<bool> shared_down_{false};  // warned; cleared by the next answer
};

}  // namespace tokenradar::gateway

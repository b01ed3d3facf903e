#pragma once
// The response cache's shared tier (L2): where an answer is kept beyond this process's memory
// and found again after a miss in L1. Redis when `[cache] redis` is set (shared by every
// gateway node, src/gateway's RedisTier); otherwise the local file `serve` opens
// (`[cache] local`, src/serve's LocalTier), passed in through GatewayHooks::cache_tier.
//
// Keys and values are opaque bytes to a tier: the response cache names its keys (a versioned
// prefix and the exact key in hex) and encodes its answers (cache::encode).
//
// Executor: get() and set() are called from the gateway's I/O executor and complete on it; a
// tier that does disk I/O does it elsewhere. up() and close() on that executor too; kind()
// from any thread.
// Failure: errors are values; an error never reaches a client (the cache serves from memory).
// Cancellation: none beyond what each tier says; a call completes within its own bounds.

#include <tokenradar/core/error.hpp>
#include <tokenradar/net/asio.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::gateway {

class SharedTier {
  public:
    SharedTier() = default;
    virtual ~SharedTier() = default;
    SharedTier(const SharedTier&) = delete;
    SharedTier& operator=(const SharedTier&) = delete;

    // The bytes under `key`, nullopt when absent or expired. Suspends.
    virtual net::asio::awaitable<Result<std::optional<std::string>>> get(std::string key) = 0;
    // Stores `bytes` under `key` for `ttl` (positive). Suspends.
    virtual net::asio::awaitable<Result<void>> set(std::string key, std::string bytes,
                                                   std::chrono::milliseconds ttl) = 0;
    // Whether it is reachable now (a Redis connection is open; the local file is open).
    [[nodiscard]] virtual bool up() const = 0;
    // "redis" or "local", for /metrics and /api/v1/gateway/cache.
    [[nodiscard]] virtual std::string_view kind() const = 0;
    // Takes no new calls (they fail at once); calls in flight finish. At shutdown, on the
    // gateway's executor.
    virtual void close() = 0;
};

}  // namespace tokenradar::gateway
